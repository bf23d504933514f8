// tk.sum, tk.mean, tk.max, tk.argmax: custom and generic round trips.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<16x8xf32>, %h: tensor<2x3x4xbf16>) {
  // CHECK-NEXT: %rows = tk.sum %x axes [1] : tensor<16x8xf32> -> tensor<16xf32>
  // GENERIC: %rows = "tk.sum"(%x) <{axes = array<i64: 1>}> : (tensor<16x8xf32>) -> tensor<16xf32>
  %rows = tk.sum %x axes [1] : tensor<16x8xf32> -> tensor<16xf32>
  // CHECK-NEXT: %cols = tk.sum %x axes [0] keepdim : tensor<16x8xf32> -> tensor<1x8xf32>
  // GENERIC: %cols = "tk.sum"(%x) <{axes = array<i64: 0>, keepdim}> : (tensor<16x8xf32>) -> tensor<1x8xf32>
  %cols = tk.sum %x axes [0] keepdim : tensor<16x8xf32> -> tensor<1x8xf32>
  // All axes: a scalar.
  // CHECK-NEXT: %all = tk.sum %x axes [0, 1] : tensor<16x8xf32> -> tensor<f32>
  // GENERIC: %all = "tk.sum"(%x) <{axes = array<i64: 0, 1>}> : (tensor<16x8xf32>) -> tensor<f32>
  %all = tk.sum %x axes [0, 1] : tensor<16x8xf32> -> tensor<f32>
  // CHECK-NEXT: %allk = tk.sum %x axes [0, 1] keepdim : tensor<16x8xf32> -> tensor<1x1xf32>
  %allk = tk.sum %x axes [0, 1] keepdim : tensor<16x8xf32> -> tensor<1x1xf32>
  // No axes: no reduction (an identity).
  // CHECK-NEXT: %none = tk.sum %x axes [] : tensor<16x8xf32> -> tensor<16x8xf32>
  // GENERIC: %none = "tk.sum"(%x) <{axes = array<i64>}> : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %none = tk.sum %x axes [] : tensor<16x8xf32> -> tensor<16x8xf32>
  // CHECK-NEXT: %mid = tk.mean %h axes [0, 2] : tensor<2x3x4xbf16> -> tensor<3xbf16>
  // GENERIC: %mid = "tk.mean"(%h) <{axes = array<i64: 0, 2>}> : (tensor<2x3x4xbf16>) -> tensor<3xbf16>
  %mid = tk.mean %h axes [0, 2] : tensor<2x3x4xbf16> -> tensor<3xbf16>
  // CHECK-NEXT: %midk = tk.mean %h axes [1] keepdim {tag} : tensor<2x3x4xbf16> -> tensor<2x1x4xbf16>
  // GENERIC: %midk = "tk.mean"(%h) <{axes = array<i64: 1>, keepdim}> {tag} : (tensor<2x3x4xbf16>) -> tensor<2x1x4xbf16>
  %midk = tk.mean %h axes [1] keepdim {tag} : tensor<2x3x4xbf16> -> tensor<2x1x4xbf16>
  // CHECK-NEXT: %mx = tk.max %x axes [1] keepdim : tensor<16x8xf32> -> tensor<16x1xf32>
  // GENERIC: %mx = "tk.max"(%x) <{axes = array<i64: 1>, keepdim}> : (tensor<16x8xf32>) -> tensor<16x1xf32>
  %mx = tk.max %x axes [1] keepdim : tensor<16x8xf32> -> tensor<16x1xf32>
  // CHECK-NEXT: %mxall = tk.max %h axes [0, 1, 2] : tensor<2x3x4xbf16> -> tensor<bf16>
  %mxall = tk.max %h axes [0, 1, 2] : tensor<2x3x4xbf16> -> tensor<bf16>
  // CHECK-NEXT: %am = tk.argmax %x axes [1] : tensor<16x8xf32> -> tensor<16xi64>
  // GENERIC: %am = "tk.argmax"(%x) <{axes = array<i64: 1>}> : (tensor<16x8xf32>) -> tensor<16xi64>
  %am = tk.argmax %x axes [1] : tensor<16x8xf32> -> tensor<16xi64>
  // CHECK-NEXT: %amk = tk.argmax %h axes [0] keepdim : tensor<2x3x4xbf16> -> tensor<1x3x4xi64>
  %amk = tk.argmax %h axes [0] keepdim : tensor<2x3x4xbf16> -> tensor<1x3x4xi64>
  func.return
}

// A rank-0 input reduces over no axes.
// CHECK-LABEL: func.func @scalar
func.func @scalar(%s: tensor<f32>) -> tensor<f32> {
  // CHECK-NEXT: %0 = tk.sum %s axes [] : tensor<f32> -> tensor<f32>
  %0 = tk.sum %s axes [] : tensor<f32> -> tensor<f32>
  func.return %0 : tensor<f32>
}
