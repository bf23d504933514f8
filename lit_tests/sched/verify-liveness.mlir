// Arena reuse by byte range: two arena buffers whose bytes overlap may not be
// live at the same time (live: from the first to the last phase that reads or
// writes them, through any view), whatever their SSA roots. The old rule
// compared roots only, so two live buffers moved onto the same bytes passed.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// %t1 is still read in phase 1 when %t2, on the same bytes, is written there.
// CHECK: sched.program: arena buffers %t1 (bytes 0..256, live in phases 0..1) and %t2 (bytes 0..256, live in phases 1..2) overlap while both are live
sched.program @p(%x: memref<64xf32>, %out: memref<64xf32>) inputs 1 results [1] arena 512 {
  %t1 = sched.buffer offset 0 : memref<64xf32>
  %t2 = sched.buffer offset 0 : memref<64xf32>
  sched.phase {
    sched.compute ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %n = tk.neg %a : tensor<64xf32>
      tk.yield %n : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t2 : memref<64xf32>) outs(%out : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A partial overlap counts: bytes 256..512 and 512..768 are disjoint, but a
// 512-byte buffer at 256 reaches into the second one.
// CHECK: sched.program: arena buffers %a1 (bytes 256..768, live in phases 0..1) and %a2 (bytes 512..768, live in phases 0..1) overlap while both are live
sched.program @p(%x: memref<128xf32>, %y: memref<64xf32>, %o1: memref<128xf32>, %o2: memref<64xf32>) inputs 2 results [2, 3] arena 1024 {
  %a1 = sched.buffer offset 256 : memref<128xf32>
  %a2 = sched.buffer offset 512 : memref<64xf32>
  sched.phase {
    sched.compute ins(%x : memref<128xf32>) outs(%a1 : memref<128xf32>) {
    ^bb0(%a: tensor<128xf32>):
      tk.yield %a : tensor<128xf32>
    }
    sched.compute ins(%y : memref<64xf32>) outs(%a2 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%a1 : memref<128xf32>) outs(%o1 : memref<128xf32>) {
    ^bb0(%a: tensor<128xf32>):
      tk.yield %a : tensor<128xf32>
    }
    sched.compute ins(%a2 : memref<64xf32>) outs(%o2 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Reading one buffer while writing another on the same bytes in one phase
// (an "in-place" reuse) is a race on the GPU.
// CHECK: sched.program: arena buffers %s (bytes 0..256, live in phases 0..1) and %d (bytes 0..256, live in phases 1..2) overlap while both are live
sched.program @p(%x: memref<64xf32>, %out: memref<64xf32>) inputs 1 results [1] arena 256 {
  %s = sched.buffer offset 0 : memref<64xf32>
  %d = sched.buffer offset 0 : memref<64xf32>
  sched.phase {
    sched.compute ins(%x : memref<64xf32>) outs(%s : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%s : memref<64xf32>) outs(%d : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %n = tk.neg %a : tensor<64xf32>
      tk.yield %n : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%d : memref<64xf32>) outs(%out : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Liveness looks through views: %t1 is read through %v in phase 1.
// CHECK: sched.program: arena buffers %t1 (bytes 0..256, live in phases 0..1) and %t2 (bytes 0..256, live in phases 1..2) overlap while both are live
sched.program @p(%x: memref<64xf32>, %out: memref<8x8xf32>) inputs 1 results [1] arena 512 {
  %t1 = sched.buffer offset 0 : memref<64xf32>
  %v = sched.view %t1 : memref<64xf32> to memref<8x8xf32>
  %t2 = sched.buffer offset 0 : memref<8x8xf32>
  sched.phase {
    sched.compute ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%v : memref<8x8xf32>) outs(%t2 : memref<8x8xf32>) {
    ^bb0(%a: tensor<8x8xf32>):
      tk.yield %a : tensor<8x8xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t2 : memref<8x8xf32>) outs(%out : memref<8x8xf32>) {
    ^bb0(%a: tensor<8x8xf32>):
      %r = tk.neg %a : tensor<8x8xf32>
      tk.yield %r : tensor<8x8xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Reuse after the last read is what sched-allocate does, and verifies:
// %t1 is dead after phase 1, %t3 is first written in phase 2.
// CHECK-NOT: error
// CHECK: sched.program @reuse
sched.program @reuse(%x: memref<64xf32>, %out: memref<64xf32>) inputs 1 results [1] arena 512 {
  %t1 = sched.buffer offset 0 : memref<64xf32>
  %t2 = sched.buffer offset 256 : memref<64xf32>
  %t3 = sched.buffer offset 0 : memref<64xf32>
  sched.phase {
    sched.compute ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t2 : memref<64xf32>) outs(%t3 : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t3 : memref<64xf32>) outs(%out : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      tk.yield %a : tensor<64xf32>
    }
  }
}
