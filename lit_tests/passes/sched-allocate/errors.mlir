// sched-allocate diagnostics.
// RUN: trainkernel-opt %s -p sched-allocate --split-input-file --verify-diagnostics | filecheck %s

// A buffer nobody reads or writes has no live range.
// CHECK: sched-allocate: an arena buffer is never read or written
sched.program @p(%x: memref<4xf32>) inputs 1 results [] arena -1 {
  %t = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%x : memref<4xf32>) outs() {
    ^bb0(%a: tensor<4xf32>):
      tk.yield
    }
  }
}
