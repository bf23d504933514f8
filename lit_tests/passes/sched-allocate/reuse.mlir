// sched-allocate: a buffer is live from the first to the last phase that
// touches it (through any view); buffers whose live ranges do not overlap may
// share bytes. Offsets are 256-byte aligned; `arena` is the peak.
// RUN: trainkernel-opt %s -p sched-allocate | filecheck %s

// A chain x -> t1 -> t2 -> t3 -> out, one phase each: t1 is dead after phase
// 1, so t3 (first written in phase 2) reuses its bytes; t2 overlaps both.
// CHECK-LABEL: sched.program @chain({{.*}}) inputs 1 results [1] arena 512 {
// CHECK-NEXT:    %t1 = sched.buffer offset 0 : memref<64xf32>
// CHECK-NEXT:    %t2 = sched.buffer offset 256 : memref<64xf32>
// CHECK-NEXT:    %t3 = sched.buffer offset 0 : memref<64xf32>
sched.program @chain(%x: memref<64xf32>, %out: memref<64xf32>) inputs 1 results [1] arena -1 {
  %t1 = sched.buffer : memref<64xf32>
  %t2 = sched.buffer : memref<64xf32>
  %t3 = sched.buffer : memref<64xf32>
  sched.phase {
    sched.compute ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t2 : memref<64xf32>) outs(%t3 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t3 : memref<64xf32>) outs(%out : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
}

// The same chain, but t1 is read again in the last phase: t1 is live through
// every phase, so nothing may share its bytes. Three buffers, three slots.
// CHECK-LABEL: sched.program @long_lived({{.*}}) inputs 1 results [1] arena 768 {
// CHECK-NEXT:    %u1 = sched.buffer offset 0 : memref<64xf32>
// CHECK-NEXT:    %u2 = sched.buffer offset 256 : memref<64xf32>
// CHECK-NEXT:    %u3 = sched.buffer offset 512 : memref<64xf32>
sched.program @long_lived(%y: memref<64xf32>, %out2: memref<64xf32>) inputs 1 results [1] arena -1 {
  %u1 = sched.buffer : memref<64xf32>
  %u2 = sched.buffer : memref<64xf32>
  %u3 = sched.buffer : memref<64xf32>
  sched.phase {
    sched.compute ins(%y : memref<64xf32>) outs(%u1 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%u1 : memref<64xf32>) outs(%u2 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%u2 : memref<64xf32>) outs(%u3 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%u3, %u1 : memref<64xf32>, memref<64xf32>) outs(%out2 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>, %b: tensor<64xf32>):
      %r = tk.add %a, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
}

// Liveness looks through views: v1 is last read as a 2-D view in phase 2,
// so v3 (written in phase 2) may not take its bytes; it takes those of v2,
// which nobody reads after phase 1.
// CHECK-LABEL: sched.program @through_view({{.*}}) inputs 1 results [1] arena 512 {
// CHECK-NEXT:    %v1 = sched.buffer offset 0 : memref<64xf32>
// CHECK-NEXT:    %v1v = sched.view %v1 : memref<64xf32> to memref<8x8xf32>
// CHECK-NEXT:    %v2 = sched.buffer offset 256 : memref<64xf32>
// CHECK-NEXT:    %v3 = sched.buffer offset 256 : memref<8x8xf32>
sched.program @through_view(%z: memref<64xf32>, %out3: memref<8x8xf32>) inputs 1 results [1] arena -1 {
  %v1 = sched.buffer : memref<64xf32>
  %v1v = sched.view %v1 : memref<64xf32> to memref<8x8xf32>
  %v2 = sched.buffer : memref<64xf32>
  %v3 = sched.buffer : memref<8x8xf32>
  sched.phase {
    sched.compute ins(%z : memref<64xf32>) outs(%v1 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%v1 : memref<64xf32>) outs(%v2 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%v1v : memref<8x8xf32>) outs(%v3 : memref<8x8xf32>) {
    ^bb0(%a: tensor<8x8xf32>):
      %r = tk.neg %a : tensor<8x8xf32>
      tk.yield %r : tensor<8x8xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%v3 : memref<8x8xf32>) outs(%out3 : memref<8x8xf32>) {
    ^bb0(%a: tensor<8x8xf32>):
      tk.yield %a : tensor<8x8xf32>
    }
  }
}

// A staged parameter update stays live until its commit.
// CHECK-LABEL: sched.program @staged({{.*}}) inputs 2 results [0] arena 512 {
// CHECK-NEXT:    %st = sched.buffer offset 0 : memref<64xf32>
// CHECK-NEXT:    %tmp = sched.buffer offset 256 : memref<64xf32>
sched.program @staged(%w: memref<64xf32>, %g: memref<64xf32>) inputs 2 results [0] arena -1 {
  %st = sched.buffer : memref<64xf32>
  %tmp = sched.buffer : memref<64xf32>
  sched.phase {
    sched.compute ins(%w, %g : memref<64xf32>, memref<64xf32>) outs(%st : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>, %b: tensor<64xf32>):
      %r = tk.sub %a, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%w : memref<64xf32>) outs(%tmp : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %r = tk.exp %a : tensor<64xf32>
      tk.yield %r : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%tmp : memref<64xf32>) outs(%g : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
    sched.commit %st to %w : memref<64xf32>
  }
}
