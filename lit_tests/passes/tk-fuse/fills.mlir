// tk-fuse clones a tk.fill into every group that reads it (a
// constant costs nothing per element) and erases the original once unused;
// views stay outside groups.
// RUN: trainkernel-opt %s -p tk-fuse | filecheck %s

// CHECK-LABEL: func.func @shared_fill(
// CHECK-NOT:     tk.fill
// CHECK:         tk.fused %x
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %lr = tk.fill 0.001 : tensor<f32>
// CHECK-NEXT:      tk.mul
// CHECK:         tk.fused %y
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %lr = tk.fill 0.001 : tensor<f32>
// CHECK-NEXT:      tk.mul
// CHECK-NOT:     tk.fill
// CHECK:         func.return
func.func @shared_fill(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %lr = tk.fill 0.001 : tensor<f32>
  %a = tk.mul %x, %lr : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %b = tk.mul %y, %lr : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %a, %b : tensor<4x8xf32>, tensor<8xf32>
}

// A fill returned as a result is not a group (tk-to-sched copies it out).
// CHECK-LABEL: func.func @returned_fill(
// CHECK-NEXT:    %z = tk.fill 0.0 : tensor<4xf32>
// CHECK-NEXT:    func.return %z
func.func @returned_fill() -> tensor<4xf32> {
  %z = tk.fill 0.0 : tensor<4xf32>
  func.return %z : tensor<4xf32>
}

// Reshapes are views: they stay between groups, not inside.
// CHECK-LABEL: func.func @reshape_between(
// CHECK:         %e = tk.fused %x
// CHECK:         tk.exp
// CHECK:         %r = tk.reshape %e : tensor<4x8xf32> -> tensor<32xf32>
// CHECK-NEXT:    %c = tk.fused %r
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tk.cast
func.func @reshape_between(%x: tensor<4x8xf32>) -> tensor<32xbf16> {
  %e = tk.exp %x : tensor<4x8xf32>
  %r = tk.reshape %e : tensor<4x8xf32> -> tensor<32xf32>
  %c = tk.cast %r : tensor<32xf32> to tensor<32xbf16>
  func.return %c : tensor<32xbf16>
}

// A tk.iota is a constant too: cloned into every group that reads it, never a
// group (or, after tk-to-sched, a buffer) of its own.
// CHECK-LABEL: func.func @shared_iota(
// CHECK-NOT:     tk.iota
// CHECK:         tk.fused %t, %x
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %c = tk.iota axis 1 : tensor<1x10xf32>
// CHECK-NEXT:      tk.cmp eq
// CHECK:         tk.fused %x
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %c = tk.iota axis 1 : tensor<1x10xf32>
// CHECK-NEXT:      tk.mul
// CHECK-NOT:     tk.iota
// CHECK:         func.return
func.func @shared_iota(%t: tensor<8x1xf32>, %x: tensor<8x10xf32>) -> (tensor<8x10xf32>, tensor<8x10xf32>) {
  %c = tk.iota axis 1 : tensor<1x10xf32>
  %hot = tk.cmp eq %t, %c : (tensor<8x1xf32>, tensor<1x10xf32>) -> tensor<8x10xf32>
  %sel = tk.select %hot, %x, %t : (tensor<8x10xf32>, tensor<8x10xf32>, tensor<8x1xf32>) -> tensor<8x10xf32>
  %w = tk.mul %x, %c : (tensor<8x10xf32>, tensor<1x10xf32>) -> tensor<8x10xf32>
  func.return %sel, %w : tensor<8x10xf32>, tensor<8x10xf32>
}
