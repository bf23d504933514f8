// RUN: trainkernel-opt %s -p canonicalize | filecheck %s

// Scalar constant folding: the value is what the op computes in its own
// type (bf16: 0.1 + 0.2 gives 0.30078125; f16(0.1) is 0.0999755859375).
// CHECK-LABEL: func.func @fold_scalars
// CHECK-NEXT:    %[[A:.*]] = tk.fill 0.30078125 : tensor<bf16>
// CHECK-NEXT:    %[[B:.*]] = tk.fill 0.25 : tensor<f32>
// CHECK-NEXT:    %[[C:.*]] = tk.fill -3.0 : tensor<f16>
// CHECK-NEXT:    %[[D:.*]] = tk.fill 8.0 : tensor<f32>
// CHECK-NEXT:    %[[E:.*]] = tk.fill 0.0999755859375 : tensor<f16>
// CHECK-NEXT:    %[[F:.*]] = tk.fill 2.0 : tensor<f32>
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]], %[[F]]
func.func @fold_scalars() -> (tensor<bf16>, tensor<f32>, tensor<f16>, tensor<f32>, tensor<f16>, tensor<f32>) {
  %a1 = tk.fill 0.1 : tensor<bf16>
  %a2 = tk.fill 0.2 : tensor<bf16>
  %a = tk.add %a1, %a2 : (tensor<bf16>, tensor<bf16>) -> tensor<bf16>
  %b1 = tk.fill 1.0 : tensor<f32>
  %b2 = tk.fill 4.0 : tensor<f32>
  %b = tk.div %b1, %b2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %c1 = tk.fill 3.0 : tensor<f16>
  %c = tk.neg %c1 : tensor<f16>
  %d = tk.pow %b2, 1.5 : tensor<f32>
  %e1 = tk.fill 0.1 : tensor<f32>
  %e = tk.cast %e1 : tensor<f32> to tensor<f16>
  %f = tk.sqrt %b2 : tensor<f32>
  func.return %a, %b, %c, %d, %e, %f : tensor<bf16>, tensor<f32>, tensor<f16>, tensor<f32>, tensor<f16>, tensor<f32>
}

// Fills broadcast through views and fold with each other at any shape.
// CHECK-LABEL: func.func @fill_through_views
// CHECK-NEXT:    %[[E:.*]] = tk.fill 2.0 : tensor<4x8xf32>
// CHECK-NEXT:    %[[R:.*]] = tk.fill 2.0 : tensor<32xf32>
// CHECK-NEXT:    %[[M:.*]] = tk.fill 6.0 : tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[E]], %[[R]], %[[M]]
func.func @fill_through_views() -> (tensor<4x8xf32>, tensor<32xf32>, tensor<4x8xf32>) {
  %c = tk.fill 2.0 : tensor<1x8xf32>
  %e = tk.expand %c : tensor<1x8xf32> -> tensor<4x8xf32>
  %r = tk.reshape %e : tensor<4x8xf32> -> tensor<32xf32>
  %three = tk.fill 3.0 : tensor<f32>
  %m = tk.mul %e, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %e, %r, %m : tensor<4x8xf32>, tensor<32xf32>, tensor<4x8xf32>
}

// Non-finite results are not folded (tk.fill cannot spell them).
// CHECK-LABEL: func.func @no_fold_to_inf
// CHECK:         tk.div
// CHECK:         tk.log
func.func @no_fold_to_inf() -> (tensor<f32>, tensor<f32>) {
  %one = tk.fill 1.0 : tensor<f32>
  %zero = tk.fill 0.0 : tensor<f32>
  %inf = tk.div %one, %zero : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %ninf = tk.log %zero : tensor<f32>
  func.return %inf, %ninf : tensor<f32>, tensor<f32>
}

// Reductions and matmuls of constants are not folded (their rounding depends
// on the accumulation order).
// CHECK-LABEL: func.func @no_fold_reductions
// CHECK:         tk.sum
// CHECK:         tk.matmul
func.func @no_fold_reductions() -> (tensor<f32>, tensor<2x2xf32>) {
  %c = tk.fill 0.1 : tensor<1000xf32>
  %s = tk.sum %c axes [0] : tensor<1000xf32> -> tensor<f32>
  %m = tk.fill 0.1 : tensor<2x3xf32>
  %n = tk.fill 0.3 : tensor<3x2xf32>
  %p = tk.matmul %m, %n : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %s, %p : tensor<f32>, tensor<2x2xf32>
}
