// tk.add, tk.sub, tk.mul, tk.div, tk.maximum: custom and generic round trips.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @same_shape
func.func @same_shape(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %add = tk.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // GENERIC: %add = "tk.add"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %add = tk.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %sub = tk.sub %add, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // GENERIC: %sub = "tk.sub"(%add, %b)
  %sub = tk.sub %add, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %mul = tk.mul %sub, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // GENERIC: %mul = "tk.mul"(%sub, %a)
  %mul = tk.mul %sub, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %div = tk.div %mul, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // GENERIC: %div = "tk.div"(%mul, %b)
  %div = tk.div %mul, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %max = tk.maximum %div, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // GENERIC: %max = "tk.maximum"(%div, %a)
  %max = tk.maximum %div, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %max : tensor<4x8xf32>
  func.return %max : tensor<4x8xf32>
}

// NumPy broadcasting: leading axes are added, size-1 axes stretch, on either side.
// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%m: tensor<4x8xbf16>, %row: tensor<8xbf16>, %col: tensor<4x1xbf16>, %r3: tensor<2x1x8xbf16>) {
  // CHECK-NEXT: %0 = tk.add %m, %row : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %0 = tk.add %m, %row : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  // CHECK-NEXT: %1 = tk.sub %col, %m : (tensor<4x1xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %1 = tk.sub %col, %m : (tensor<4x1xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  // CHECK-NEXT: %2 = tk.mul %col, %row : (tensor<4x1xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %2 = tk.mul %col, %row : (tensor<4x1xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  // CHECK-NEXT: %3 = tk.maximum %r3, %col : (tensor<2x1x8xbf16>, tensor<4x1xbf16>) -> tensor<2x4x8xbf16>
  %3 = tk.maximum %r3, %col : (tensor<2x1x8xbf16>, tensor<4x1xbf16>) -> tensor<2x4x8xbf16>
  func.return
}

// Rank-0 operands are scalars: they may have any floating type (PyTorch's
// wrapped-number rule); the result keeps the tensor operand's type.
// CHECK-LABEL: func.func @scalars
func.func @scalars(%h: tensor<4x8xf16>, %lr: tensor<f32>, %sb: tensor<bf16>) {
  // CHECK-NEXT: %0 = tk.mul %h, %lr : (tensor<4x8xf16>, tensor<f32>) -> tensor<4x8xf16>
  %0 = tk.mul %h, %lr : (tensor<4x8xf16>, tensor<f32>) -> tensor<4x8xf16>
  // CHECK-NEXT: %1 = tk.div %lr, %h : (tensor<f32>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %1 = tk.div %lr, %h : (tensor<f32>, tensor<4x8xf16>) -> tensor<4x8xf16>
  // Two scalars of different types make a scalar of either type.
  // CHECK-NEXT: %2 = tk.add %lr, %sb : (tensor<f32>, tensor<bf16>) -> tensor<f16>
  %2 = tk.add %lr, %sb : (tensor<f32>, tensor<bf16>) -> tensor<f16>
  // CHECK-NEXT: %3 = tk.sub %lr, %lr {tag} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // GENERIC: %3 = "tk.sub"(%lr, %lr) {tag} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %3 = tk.sub %lr, %lr {tag} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return
}
