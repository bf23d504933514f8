// tk-to-sched: a tk.reshape is a sched.view of its source's buffer (no copy,
// no compute); a producer whose result is returned through a reshape writes
// straight into (a view of) the output buffer.
// RUN: trainkernel-opt %s -p tk-to-sched | filecheck %s

// The bias gradient: sum(keepdim) -> reshape -> returned. The sum writes the
// output buffer through a 1x4 view of it.
// CHECK-LABEL: sched.program @bias_grad(%x: memref<2x4xf32>, %out0: memref<4xf32>) inputs 1 results [1] arena -1 {
// CHECK-NEXT:    %[[V:.*]] = sched.view %out0 : memref<4xf32> to memref<1x4xf32>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%x : memref<2x4xf32>) outs(%[[V]] : memref<1x4xf32>) {
// CHECK:             tk.sum
// CHECK-NOT:         tk.reshape
// CHECK:         }
// CHECK-NOT:     sched.compute
// CHECK-LABEL: sched.program @chain(
func.func @bias_grad(%x: tensor<2x4xf32>) -> tensor<4xf32> {
  %s = tk.sum %x axes [0] keepdim : tensor<2x4xf32> -> tensor<1x4xf32>
  %r = tk.reshape %s : tensor<1x4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// Reshapes of an argument and of a temporary: views, read by the computes.
// CHECK-SAME:  %xx: memref<2x4xf32>, %{{out0[_0-9]*}}: memref<2xf32>) inputs 1 results [1] arena -1 {
// CHECK-NEXT:    %[[XV:.*]] = sched.view %xx : memref<2x4xf32> to memref<8xf32>
// CHECK-NEXT:    %u = sched.buffer : memref<8xf32>
// CHECK-NEXT:    %[[UV:.*]] = sched.view %u : memref<8xf32> to memref<2x4xf32>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%[[XV]] : memref<8xf32>) outs(%u : memref<8xf32>) {
// CHECK:             tk.exp
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%[[UV]] : memref<2x4xf32>) outs(%{{out0[_0-9]*}} : memref<2xf32>) {
// CHECK:             tk.sum
// CHECK-NOT:     tk.reshape
func.func @chain(%xx: tensor<2x4xf32>) -> tensor<2xf32> {
  %t = tk.reshape %xx : tensor<2x4xf32> -> tensor<8xf32>
  %u = tk.exp %t : tensor<8xf32>
  %v = tk.reshape %u : tensor<8xf32> -> tensor<2x4xf32>
  %q = tk.sum %v axes [1] : tensor<2x4xf32> -> tensor<2xf32>
  func.return %q : tensor<2xf32>
}
