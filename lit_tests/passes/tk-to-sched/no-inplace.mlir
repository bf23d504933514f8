// tk-to-sched{inplace=false}: every result, state updates included, gets an
// output buffer of its own (a program argument after the inputs); no staging,
// no commits; parameters are only read.
// RUN: trainkernel-opt %s -p 'tk-to-sched{inplace=false}' | filecheck %s

// CHECK-LABEL: sched.program @late(%w: memref<4x4xf32>, %x: memref<2x4xf32>, %out0: memref<f32>, %out1: memref<4x4xf32>) inputs 2 results [2, 3] arena -1 {
// CHECK-NOT:     sched.commit
// CHECK-NOT:     outs(%w
// CHECK:         sched.compute ins(%w, %g : memref<4x4xf32>, memref<4x4xf32>) outs(%out1 : memref<4x4xf32>)
// CHECK-NOT:     sched.commit
// CHECK-NOT:     outs(%w
// CHECK-LABEL: sched.program @unchanged(
// CHECK-SAME:    %{{out1[_0-9]*}}: memref<4xf32>) inputs 2 results [2, 3] arena -1 {
// CHECK:         sched.compute ins(%u : memref<4xf32>) outs(%{{out1[_0-9]*}} : memref<4xf32>) {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<4xf32>):
// CHECK-NEXT:      tk.yield %[[A]] : tensor<4xf32>
// CHECK-NOT:     sched.commit
func.func @late(%w: tensor<4x4xf32>, %x: tensor<2x4xf32>) -> (tensor<f32>, tensor<4x4xf32> {tk.updates = 0 : i64}) {
  %g = tk.matmul %x, %x transpose_a : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %n = tk.sub %w, %g : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = tk.sum %g axes [0, 1] : tensor<4x4xf32> -> tensor<f32>
  %t = tk.mul %w, %s : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %l = tk.sum %t axes [0, 1] : tensor<4x4xf32> -> tensor<f32>
  func.return %l, %n : tensor<f32>, tensor<4x4xf32>
}

// A parameter returned unchanged is copied to its output buffer.
func.func @unchanged(%u: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32> {tk.updates = 0 : i64}) {
  %e = tk.exp %v : tensor<4xf32>
  func.return %e, %u : tensor<4xf32>, tensor<4xf32>
}
