// Every buffer a phase reads holds a value: a step input, or a buffer an
// earlier phase wrote. Arena temporaries and output buffers start undefined,
// and within one phase every read sees memory as the phase began.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: sched.program: phase 0 (sched.compute) reads %t before any earlier phase writes it
sched.program @p(%out: memref<4xf32>) inputs 0 results [0] arena -1 {
  %t = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%t : memref<4xf32>) outs(%out : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      tk.yield %a : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// An output buffer is not an input: its old contents are undefined.
// CHECK: sched.program: phase 0 (sched.compute) reads %o before any earlier phase writes it
sched.program @p(%x: memref<4xf32>, %o: memref<4xf32>, %o2: memref<4xf32>) inputs 1 results [1, 2] arena -1 {
  sched.phase {
    sched.compute ins(%x, %o : memref<4xf32>, memref<4xf32>) outs(%o2 : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = tk.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      tk.yield %s : tensor<4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%x : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      tk.yield %a : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// One compute reading the buffer it writes first: it reads garbage.
// CHECK: sched.program: phase 1 (sched.compute) reads %t before any earlier phase writes it
sched.program @p(%x: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  %t = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%x : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      tk.yield %a : tensor<4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t : memref<4xf32>) outs(%t : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      tk.yield %a : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Read through a view after a write through another name: fine.
// CHECK-NOT: error
// CHECK: sched.program @ok
sched.program @ok(%x: memref<4xf32>, %o: memref<2x2xf32>) inputs 1 results [1] arena -1 {
  %t = sched.buffer : memref<4xf32>
  %v = sched.view %t : memref<4xf32> to memref<2x2xf32>
  sched.phase {
    sched.compute ins(%x : memref<4xf32>) outs(%t : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      tk.yield %a : tensor<4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%v : memref<2x2xf32>) outs(%o : memref<2x2xf32>) {
    ^bb0(%a: tensor<2x2xf32>):
      tk.yield %a : tensor<2x2xf32>
    }
  }
}
