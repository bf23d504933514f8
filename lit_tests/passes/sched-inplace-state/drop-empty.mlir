// sched-inplace-state: a phase left empty once its commit is gone is removed
// together with ONE adjacent barrier, so phases stay separated by exactly one
// barrier. A phase that still holds work is kept.
// RUN: trainkernel-opt %s -p sched-inplace-state | filecheck %s

// Before: [produce b] | [commit b] | [read new b]. After: [write b] | [read b].
// CHECK-LABEL: sched.program @middle(%b: memref<8xf32>, %g: memref<8xf32>, %o: memref<f32>) inputs 2 results [2, 0] arena -1 {
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%b, %g : memref<8xf32>, memref<8xf32>) outs(%b : memref<8xf32>) {
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%b : memref<8xf32>) outs(%o : memref<f32>) {
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
sched.program @middle(%b: memref<8xf32>, %g: memref<8xf32>, %o: memref<f32>) inputs 2 results [2, 0] arena -1 {
  %s = sched.buffer : memref<8xf32>
  sched.phase {
    sched.compute ins(%b, %g : memref<8xf32>, memref<8xf32>) outs(%s : memref<8xf32>) {
    ^bb0(%x: tensor<8xf32>, %y: tensor<8xf32>):
      %n = tk.sub %x, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      tk.yield %n : tensor<8xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %s to %b : memref<8xf32>
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%s : memref<8xf32>) outs(%o : memref<f32>) {
    ^bb0(%x: tensor<8xf32>):
      %r = tk.sum %x axes [0] : tensor<8xf32> -> tensor<f32>
      tk.yield %r : tensor<f32>
    }
  }
}

// Two commits in one phase, only one of which can go: the phase stays.
// CHECK-LABEL: sched.program @half(%p: memref<4xf32>, %q: memref<4x4xf32>, %gp: memref<4xf32>) inputs 3 results [0, 1] arena -1 {
// CHECK-NEXT:    %sq = sched.buffer : memref<4x4xf32>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%p, %gp : memref<4xf32>, memref<4xf32>) outs(%p : memref<4xf32>) {
// CHECK:           sched.compute ins(%q : memref<4x4xf32>) outs(%sq : memref<4x4xf32>) {
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.commit %sq to %q : memref<4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
sched.program @half(%p: memref<4xf32>, %q: memref<4x4xf32>, %gp: memref<4xf32>) inputs 3 results [0, 1] arena -1 {
  %sp = sched.buffer : memref<4xf32>
  %sq = sched.buffer : memref<4x4xf32>
  sched.phase {
    sched.compute ins(%p, %gp : memref<4xf32>, memref<4xf32>) outs(%sp : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
      %n = tk.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      tk.yield %n : tensor<4xf32>
    }
    sched.compute ins(%q : memref<4x4xf32>) outs(%sq : memref<4x4xf32>) {
    ^bb0(%x: tensor<4x4xf32>):
      %t = tk.transpose %x perm [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
      tk.yield %t : tensor<4x4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %sp to %p : memref<4xf32>
    sched.commit %sq to %q : memref<4x4xf32>
  }
}

// Every commit gone at the end: the trailing phase and its barrier go.
// CHECK-LABEL: sched.program @tail(%rp: memref<4xf32>) inputs 1 results [0] arena -1 {
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%rp : memref<4xf32>) outs(%rp : memref<4xf32>) {
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
sched.program @tail(%rp: memref<4xf32>) inputs 1 results [0] arena -1 {
  %sr = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%rp : memref<4xf32>) outs(%sr : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      %n = tk.neg %x : tensor<4xf32>
      tk.yield %n : tensor<4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %sr to %rp : memref<4xf32>
  }
}
