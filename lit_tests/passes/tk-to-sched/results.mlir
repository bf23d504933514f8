// tk-to-sched: results that are not computed by a compute of their own get a
// copy compute into their output buffer (an argument returned as is, a fill,
// one value returned twice).
// RUN: trainkernel-opt %s -p tk-to-sched | filecheck %s

// CHECK-LABEL: sched.program @results(%w: memref<4xf32>, %x: memref<4xf32>, %out0: memref<4xf32>, %out1: memref<4xf32>, %out2: memref<4xf32>, %out3: memref<4xf32>) inputs 2 results [2, 3, 4, 5, 0] arena -1 {
// CHECK-NEXT:    sched.phase {
// The computed value goes straight into its (first) output buffer.
// CHECK-NEXT:      sched.compute ins(%x : memref<4xf32>) outs(%out2 : memref<4xf32>) {
// CHECK:             tk.exp
// An argument returned: a copy.
// CHECK:           sched.compute ins(%x : memref<4xf32>) outs(%out0 : memref<4xf32>) {
// CHECK-NEXT:      ^bb0(%[[A:.*]]: tensor<4xf32>):
// CHECK-NEXT:        tk.yield %[[A]] : tensor<4xf32>
// A constant returned: the fill is cloned into a compute with no inputs.
// CHECK:           sched.compute ins() outs(%out1 : memref<4xf32>) {
// CHECK-NEXT:        %z = tk.fill 0.0 : tensor<4xf32>
// CHECK-NEXT:        tk.yield %z : tensor<4xf32>
// CHECK:         sched.barrier grid
// The value returned a second time: copied from the first output buffer.
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%out2 : memref<4xf32>) outs(%out3 : memref<4xf32>) {
// The unchanged state (result 4 -> argument 0) needs nothing.
// CHECK-NOT:     sched.commit
func.func @results(%w: tensor<4xf32>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> {tk.updates = 0 : i64}) {
  %z = tk.fill 0.0 : tensor<4xf32>
  %e = tk.exp %x : tensor<4xf32>
  func.return %x, %z, %e, %e, %w : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
