// RUN: trainkernel-opt %s -p canonicalize | filecheck %s

// Additive and multiplicative identities fold only when they are exact for
// every input, signed zeros included, and the result type is x's own.

// CHECK-LABEL: func.func @exact_identities
// CHECK-SAME:    (%x: tensor<4x8xbf16>)
// CHECK-NEXT:    func.return %x, %x, %x, %x, %x, %x : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>
func.func @exact_identities(%x: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %mzero = tk.fill -0.0 : tensor<f32>
  %zero = tk.fill 0.0 : tensor<bf16>
  %one = tk.fill 1.0 : tensor<f32>
  %ones = tk.fill 1.0 : tensor<8xbf16>
  %a = tk.add %x, %mzero : (tensor<4x8xbf16>, tensor<f32>) -> tensor<4x8xbf16>
  %b = tk.add %mzero, %x : (tensor<f32>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %c = tk.sub %x, %zero : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %d = tk.mul %x, %one : (tensor<4x8xbf16>, tensor<f32>) -> tensor<4x8xbf16>
  %e = tk.mul %ones, %x : (tensor<8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %f = tk.div %x, %ones : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  func.return %a, %b, %c, %d, %e, %f : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>
}

// x + 0.0 is not x when x is -0.0 (-0.0 + 0.0 = +0.0); x - (-0.0) likewise;
// 1 / x and 0 - x are not x; a broadcasting "identity" changes the shape.

// CHECK-LABEL: func.func @kept
// CHECK:         %a = tk.add %x, %zero
// CHECK-NEXT:    %b = tk.sub %x, %mzero
// CHECK-NEXT:    %c = tk.div %one, %x
// CHECK-NEXT:    %d = tk.sub %zero, %x
// CHECK-NEXT:    %e = tk.mul %x, %ones : (tensor<4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %a, %b, %c, %d, %e
func.func @kept(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>) {
  %zero = tk.fill 0.0 : tensor<f32>
  %mzero = tk.fill -0.0 : tensor<f32>
  %one = tk.fill 1.0 : tensor<f32>
  %ones = tk.fill 1.0 : tensor<2x4x8xf32>
  %a = tk.add %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %b = tk.sub %x, %mzero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %c = tk.div %one, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = tk.sub %zero, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = tk.mul %x, %ones : (tensor<4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %a, %b, %c, %d, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>
}

// A scalar x whose type is not the result's is not the result: keep the op.

// CHECK-LABEL: func.func @scalar_type_change_kept
// CHECK:         %r = tk.mul %s, %one : (tensor<f32>, tensor<bf16>) -> tensor<bf16>
func.func @scalar_type_change_kept(%s: tensor<f32>) -> tensor<bf16> {
  %one = tk.fill 1.0 : tensor<bf16>
  %r = tk.mul %s, %one : (tensor<f32>, tensor<bf16>) -> tensor<bf16>
  func.return %r : tensor<bf16>
}

// CHECK-LABEL: func.func @pow_neg_max
// CHECK-SAME:    (%x: tensor<3xf16>)
// CHECK-NEXT:    %p0 = tk.fill 1.0 : tensor<3xf16>
// CHECK-NEXT:    %p3 = tk.pow %x, 3.0 : tensor<3xf16>
// CHECK-NEXT:    func.return %x, %p0, %x, %x, %p3
func.func @pow_neg_max(%x: tensor<3xf16>) -> (tensor<3xf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf16>) {
  %p1 = tk.pow %x, 1.0 : tensor<3xf16>
  %p0 = tk.pow %x, 0.0 : tensor<3xf16>
  %n = tk.neg %x : tensor<3xf16>
  %nn = tk.neg %n : tensor<3xf16>
  %m = tk.maximum %x, %x : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
  %p3 = tk.pow %x, 3.0 : tensor<3xf16>
  func.return %p1, %p0, %nn, %m, %p3 : tensor<3xf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf16>
}

// CHECK-LABEL: func.func @empty_reductions
// CHECK-NEXT:    %r = tk.sum %x axes [1]
// CHECK-NEXT:    func.return %x, %x, %r
func.func @empty_reductions(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) {
  %a = tk.sum %x axes [] : tensor<2x3xf32> -> tensor<2x3xf32>
  %b = tk.mean %x axes [] : tensor<2x3xf32> -> tensor<2x3xf32>
  %r = tk.sum %x axes [1] : tensor<2x3xf32> -> tensor<2xf32>
  func.return %a, %b, %r : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>
}
