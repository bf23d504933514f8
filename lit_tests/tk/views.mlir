// tk.reshape, tk.expand, tk.transpose, tk.slice: custom and generic round trips.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @reshape
func.func @reshape(%x: tensor<1x8xf32>, %s: tensor<f32>, %m: tensor<2x3x4xbf16>) {
  // CHECK-NEXT: %flat = tk.reshape %x : tensor<1x8xf32> -> tensor<8xf32>
  // GENERIC: %flat = "tk.reshape"(%x) : (tensor<1x8xf32>) -> tensor<8xf32>
  %flat = tk.reshape %x : tensor<1x8xf32> -> tensor<8xf32>
  // CHECK-NEXT: %up = tk.reshape %s : tensor<f32> -> tensor<1x1xf32>
  %up = tk.reshape %s : tensor<f32> -> tensor<1x1xf32>
  // CHECK-NEXT: %down = tk.reshape %up {tag} : tensor<1x1xf32> -> tensor<f32>
  // GENERIC: %down = "tk.reshape"(%up) {tag} : (tensor<1x1xf32>) -> tensor<f32>
  %down = tk.reshape %up {tag} : tensor<1x1xf32> -> tensor<f32>
  // CHECK-NEXT: %re = tk.reshape %m : tensor<2x3x4xbf16> -> tensor<6x4xbf16>
  %re = tk.reshape %m : tensor<2x3x4xbf16> -> tensor<6x4xbf16>
  func.return
}

// CHECK-LABEL: func.func @expand
func.func @expand(%row: tensor<1x8xf32>, %s: tensor<f16>, %v: tensor<8xi1>) {
  // CHECK-NEXT: %rows = tk.expand %row : tensor<1x8xf32> -> tensor<16x8xf32>
  // GENERIC: %rows = "tk.expand"(%row) : (tensor<1x8xf32>) -> tensor<16x8xf32>
  %rows = tk.expand %row : tensor<1x8xf32> -> tensor<16x8xf32>
  // Leading axes are added.
  // CHECK-NEXT: %lead = tk.expand %row : tensor<1x8xf32> -> tensor<3x4x8xf32>
  %lead = tk.expand %row : tensor<1x8xf32> -> tensor<3x4x8xf32>
  // CHECK-NEXT: %fill = tk.expand %s : tensor<f16> -> tensor<4x4xf16>
  %fill = tk.expand %s : tensor<f16> -> tensor<4x4xf16>
  // CHECK-NEXT: %same = tk.expand %v {tag} : tensor<8xi1> -> tensor<8xi1>
  %same = tk.expand %v {tag} : tensor<8xi1> -> tensor<8xi1>
  func.return
}

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<16x8xf32>, %m: tensor<2x3x4xi64>) {
  // CHECK-NEXT: %t = tk.transpose %x perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  // GENERIC: %t = "tk.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %t = tk.transpose %x perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: %p = tk.transpose %m perm [2, 0, 1] : tensor<2x3x4xi64> -> tensor<4x2x3xi64>
  // GENERIC: %p = "tk.transpose"(%m) <{perm = array<i64: 2, 0, 1>}> : (tensor<2x3x4xi64>) -> tensor<4x2x3xi64>
  %p = tk.transpose %m perm [2, 0, 1] : tensor<2x3x4xi64> -> tensor<4x2x3xi64>
  // The identity permutation is valid (canonicalize removes it).
  // CHECK-NEXT: %id = tk.transpose %x perm [0, 1] {tag} : tensor<16x8xf32> -> tensor<16x8xf32>
  %id = tk.transpose %x perm [0, 1] {tag} : tensor<16x8xf32> -> tensor<16x8xf32>
  func.return
}

// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<16x8xf32>, %v: tensor<10xbf16>) {
  // CHECK-NEXT: %s = tk.slice %x starts [0, 2] steps [1, 2] : tensor<16x8xf32> -> tensor<16x3xf32>
  // GENERIC: %s = "tk.slice"(%x) <{starts = array<i64: 0, 2>, steps = array<i64: 1, 2>}> : (tensor<16x8xf32>) -> tensor<16x3xf32>
  %s = tk.slice %x starts [0, 2] steps [1, 2] : tensor<16x8xf32> -> tensor<16x3xf32>
  // The last element read is start + (size - 1) * step = 9.
  // CHECK-NEXT: %odd = tk.slice %v starts [1] steps [2] : tensor<10xbf16> -> tensor<5xbf16>
  %odd = tk.slice %v starts [1] steps [2] : tensor<10xbf16> -> tensor<5xbf16>
  // CHECK-NEXT: %last = tk.slice %v starts [9] steps [1] {tag} : tensor<10xbf16> -> tensor<1xbf16>
  %last = tk.slice %v starts [9] steps [1] {tag} : tensor<10xbf16> -> tensor<1xbf16>
  // An empty slice may start anywhere.
  // CHECK-NEXT: %empty = tk.slice %v starts [10] steps [1] : tensor<10xbf16> -> tensor<0xbf16>
  %empty = tk.slice %v starts [10] steps [1] : tensor<10xbf16> -> tensor<0xbf16>
  func.return
}
