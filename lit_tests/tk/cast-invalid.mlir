// tk.cast verifier errors.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @shape(%a: tensor<4x8xf32>) {
  // CHECK: tk.cast keeps the shape: tensor<4x8xf32> cannot become tensor<8x4xbf16>
  %0 = tk.cast %a : tensor<4x8xf32> to tensor<8x4xbf16>
  func.return
}

// -----

func.func @rank(%a: tensor<f32>) {
  // CHECK: tk.cast keeps the shape: tensor<f32> cannot become tensor<1xf16>
  %0 = tk.cast %a : tensor<f32> to tensor<1xf16>
  func.return
}

// -----

func.func @f64_target(%a: tensor<4xf32>) {
  // CHECK: tk tensors hold f32, bf16, f16, i1 or i64, got tensor<4xf64>
  %0 = tk.cast %a : tensor<4xf32> to tensor<4xf64>
  func.return
}

// -----

func.func @unsigned(%a: tensor<4xf32>) {
  // CHECK: tk tensors hold f32, bf16, f16, i1 or i64, got tensor<4xui64>
  %0 = tk.cast %a : tensor<4xf32> to tensor<4xui64>
  func.return
}
