// canonicalize folds a 2-D tk.transpose feeding a matmul into the matmul's
// transpose flags (toggling them), so backward-pass t() views never
// materialize; the only home of this rewrite (tk-fuse relies on it).
// RUN: trainkernel-opt %s -p canonicalize | filecheck %s

// lhs (dW = h^T @ d), rhs (dX = d @ W^T), and a transpose read twice.
// CHECK-LABEL: func.func @one_side(
// CHECK-NOT:     tk.transpose
// CHECK:         tk.matmul %{{.*}}, %{{.*}} transpose_a : (tensor<16x32xbf16>, tensor<16x64xbf16>) -> tensor<32x64xbf16>
// CHECK:         tk.matmul %{{.*}}, %{{.*}} transpose_b : (tensor<16x64xbf16>, tensor<8x64xbf16>) -> tensor<16x8xbf16>
// CHECK:         tk.matmul %{{.*}}, %{{.*}} transpose_a : (tensor<16x64xbf16>, tensor<16x32xbf16>) -> tensor<64x32xbf16>
// CHECK-NOT:     tk.transpose
// CHECK:         func.return
func.func @one_side(%a: tensor<16x32xbf16>, %b: tensor<16x64xbf16>, %c: tensor<8x64xbf16>) -> (tensor<32x64xbf16>, tensor<16x8xbf16>, tensor<64x32xbf16>) {
  %at = tk.transpose %a perm [1, 0] : tensor<16x32xbf16> -> tensor<32x16xbf16>
  %m1 = tk.matmul %at, %b : (tensor<32x16xbf16>, tensor<16x64xbf16>) -> tensor<32x64xbf16>
  %ct = tk.transpose %c perm [1, 0] : tensor<8x64xbf16> -> tensor<64x8xbf16>
  %m2 = tk.matmul %b, %ct : (tensor<16x64xbf16>, tensor<64x8xbf16>) -> tensor<16x8xbf16>
  %bt = tk.transpose %b perm [1, 0] : tensor<16x64xbf16> -> tensor<64x16xbf16>
  %m3 = tk.matmul %bt, %a : (tensor<64x16xbf16>, tensor<16x32xbf16>) -> tensor<64x32xbf16>
  func.return %m1, %m2, %m3 : tensor<32x64xbf16>, tensor<16x8xbf16>, tensor<64x32xbf16>
}

// Both operands at once.
// CHECK-LABEL: func.func @both(
// CHECK-NOT:     tk.transpose
// CHECK:         tk.matmul %{{.*}}, %{{.*}} transpose_a transpose_b : (tensor<16x32xf32>, tensor<64x16xf32>) -> tensor<32x64xf32>
func.func @both(%a: tensor<16x32xf32>, %b: tensor<64x16xf32>) -> tensor<32x64xf32> {
  %at = tk.transpose %a perm [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
  %bt = tk.transpose %b perm [1, 0] : tensor<64x16xf32> -> tensor<16x64xf32>
  %m = tk.matmul %at, %bt : (tensor<32x16xf32>, tensor<16x64xf32>) -> tensor<32x64xf32>
  func.return %m : tensor<32x64xf32>
}

// A transpose of an operand the matmul already transposes cancels: the flag
// flips off.
// CHECK-LABEL: func.func @flip(
// CHECK-NOT:     tk.transpose
// CHECK:         tk.matmul %{{[^ ]*}}, %{{[^ ]*}} : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
func.func @flip(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>) -> tensor<16x64xf32> {
  %at = tk.transpose %a perm [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
  %m = tk.matmul %at, %b transpose_a : (tensor<32x16xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return %m : tensor<16x64xf32>
}

// The same transpose on both sides of one matmul.
// CHECK-LABEL: func.func @twice(
// CHECK-NOT:     tk.transpose
// CHECK:         tk.matmul %[[S:[^ ,]*]], %[[S]] transpose_a transpose_b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
func.func @twice(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %at = tk.transpose %a perm [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %m = tk.matmul %at, %at : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %m : tensor<8x8xf32>
}

// A transpose with another user is folded into the matmul but stays for
// that user.
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %at = tk.transpose %a perm [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
// CHECK-NEXT:    %m = tk.matmul %a, %b transpose_a : (tensor<16x32xf32>, tensor<16x64xf32>) -> tensor<32x64xf32>
// CHECK-NEXT:    func.return %m, %at
func.func @kept(%a: tensor<16x32xf32>, %b: tensor<16x64xf32>) -> (tensor<32x64xf32>, tensor<32x16xf32>) {
  %at = tk.transpose %a perm [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
  %m = tk.matmul %at, %b : (tensor<32x16xf32>, tensor<16x64xf32>) -> tensor<32x64xf32>
  func.return %m, %at : tensor<32x64xf32>, tensor<32x16xf32>
}

// A transpose that feeds no matmul is left alone.
// CHECK-LABEL: func.func @not_matmul(
// CHECK-NEXT:    %t = tk.transpose %a perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %e = tk.exp %t
func.func @not_matmul(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %t = tk.transpose %a perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %e = tk.exp %t : tensor<8x4xf32>
  func.return %e : tensor<8x4xf32>
}
