// tk-to-sched with inplace=true (the default): a result marked
// `tk.updates = i` is computed into a staged arena buffer, and a sched.commit
// copies it over argument i in the phase after the LAST reader of the old
// value (sched-inplace-state removes the staging later where it is safe).
// RUN: trainkernel-opt %s -p tk-to-sched | filecheck %s
// RUN: trainkernel-opt %s -p 'tk-to-sched{inplace=true}' | filecheck %s

// The old %w is read in phase 2 (%t = %w * sum(g)), after the update %n is
// produced in phase 1: the commit goes to phase 3, next to the last compute.
// The update result is argument 0 in `results`; no output buffer for it.
// CHECK-LABEL: sched.program @late(%w: memref<4x4xf32>, %x: memref<2x4xf32>, %out0: memref<f32>) inputs 2 results [2, 0] arena -1 {
// CHECK:         %n = sched.buffer : memref<4x4xf32>
// CHECK:         sched.phase {
// CHECK-NEXT:      sched.compute ins(%x : memref<2x4xf32>) outs(%g : memref<4x4xf32>)
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%w, %g : memref<4x4xf32>, memref<4x4xf32>) outs(%n : memref<4x4xf32>)
// CHECK:           sched.compute ins(%g : memref<4x4xf32>) outs(%s : memref<f32>)
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%w, %s : memref<4x4xf32>, memref<f32>) outs(%t : memref<4x4xf32>)
// CHECK-NOT:       sched.commit
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%t : memref<4x4xf32>) outs(%out0 : memref<f32>)
// CHECK:           sched.commit %n to %w : memref<4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @late(%w: tensor<4x4xf32>, %x: tensor<2x4xf32>) -> (tensor<f32>, tensor<4x4xf32> {tk.updates = 0 : i64}) {
  %g = tk.matmul %x, %x transpose_a : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %n = tk.sub %w, %g : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = tk.sum %g axes [0, 1] : tensor<4x4xf32> -> tensor<f32>
  %t = tk.mul %w, %s : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %l = tk.sum %t axes [0, 1] : tensor<4x4xf32> -> tensor<f32>
  func.return %l, %n : tensor<f32>, tensor<4x4xf32>
}

// The last reader of %bias is the producer itself (phase 0): the commit needs a
// phase of its own after a barrier.
// CHECK-LABEL: sched.program @own_phase(%bias: memref<8xf32>, %gb: memref<8xf32>) inputs 2 results [0] arena -1 {
// CHECK-NEXT:    %[[NB:.*]] = sched.buffer : memref<8xf32>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%bias, %gb : memref<8xf32>, memref<8xf32>) outs(%[[NB]] : memref<8xf32>)
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.commit %[[NB]] to %bias : memref<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @own_phase(%bias: tensor<8xf32>, %gb: tensor<8xf32>) -> (tensor<8xf32> {tk.updates = 0 : i64}) {
  %n = tk.sub %bias, %gb : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %n : tensor<8xf32>
}

// Two parameters swapped: each new value is the other's old value (copies
// into staging), and both commits wait until both copies have read.
// CHECK-LABEL: sched.program @swap(%p: memref<4xf32>, %q: memref<4xf32>) inputs 2 results [0, 1] arena -1 {
// CHECK-NEXT:    %[[SP:.*]] = sched.buffer : memref<4xf32>
// CHECK-NEXT:    %[[SQ:.*]] = sched.buffer : memref<4xf32>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%q : memref<4xf32>) outs(%[[SP]] : memref<4xf32>)
// CHECK:           sched.compute ins(%p : memref<4xf32>) outs(%[[SQ]] : memref<4xf32>)
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.commit %[[SP]] to %p : memref<4xf32>
// CHECK-NEXT:      sched.commit %[[SQ]] to %q : memref<4xf32>
// CHECK-NEXT:    }
func.func @swap(%p: tensor<4xf32>, %q: tensor<4xf32>) -> (tensor<4xf32> {tk.updates = 0 : i64}, tensor<4xf32> {tk.updates = 1 : i64}) {
  func.return %q, %p : tensor<4xf32>, tensor<4xf32>
}

// A parameter returned unchanged as its own update: nothing to write at all.
// CHECK-LABEL: sched.program @unchanged(%u: memref<4xf32>, %v: memref<4xf32>, %{{out0[_0-9]*}}: memref<4xf32>) inputs 2 results [2, 0] arena -1 {
// CHECK-NOT:     sched.commit
// CHECK-NOT:     outs(%u
// CHECK:       }
func.func @unchanged(%u: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32> {tk.updates = 0 : i64}) {
  %e = tk.exp %v : tensor<4xf32>
  func.return %e, %u : tensor<4xf32>, tensor<4xf32>
}
