// Every tk operand and result is a statically shaped tensor of f32, bf16, f16,
// i1 or i64 (the constraint shared by all ops).
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @dynamic(%a: tensor<?x8xf32>) {
  // CHECK: tk tensors have static shapes, got tensor<?x8xf32>
  %0 = tk.neg %a : tensor<?x8xf32>
  func.return
}

// -----

func.func @dynamic_result(%a: tensor<4x8xf32>) {
  // CHECK: tk tensors have static shapes, got tensor<4x?xf32>
  %0 = tk.reshape %a : tensor<4x8xf32> -> tensor<4x?xf32>
  func.return
}

// -----

func.func @f64(%a: tensor<4xf64>) {
  // CHECK: tk tensors hold f32, bf16, f16, i1 or i64, got tensor<4xf64>
  %0 = tk.transpose %a perm [0] : tensor<4xf64> -> tensor<4xf64>
  func.return
}

// -----

func.func @i32(%a: tensor<4xi32>) {
  // CHECK: tk tensors hold f32, bf16, f16, i1 or i64, got tensor<4xi32>
  %0 = tk.expand %a : tensor<4xi32> -> tensor<2x4xi32>
  func.return
}

// -----

func.func @signed(%a: tensor<4xsi64>) {
  // CHECK: tk tensors hold f32, bf16, f16, i1 or i64, got tensor<4xsi64>
  %0 = tk.slice %a starts [0] steps [1] : tensor<4xsi64> -> tensor<4xsi64>
  func.return
}

// -----

func.func @not_a_tensor(%a: memref<4xf32>) {
  // CHECK: memref<4xf32> should be of base attribute tensor
  %0 = "tk.neg"(%a) : (memref<4xf32>) -> memref<4xf32>
  func.return
}

// -----

func.func @unranked(%a: tensor<*xf32>) {
  // CHECK: tensor<*xf32> should be of base attribute tensor
  %0 = "tk.relu"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @scalar_type(%a: f32) {
  // CHECK: f32 should be of base attribute tensor
  %0 = "tk.exp"(%a) : (f32) -> f32
  func.return
}

// -----

func.func @yield_dynamic(%a: tensor<4xf32>) {
  // CHECK: tk tensors have static shapes, got tensor<?xf32>
  "tk.fused"(%a) ({
  ^bb0(%x: tensor<?xf32>):
    "tk.yield"(%x) : (tensor<?xf32>) -> ()
  }) : (tensor<4xf32>) -> ()
  func.return
}
