// Phase hazards: everything in one sched.phase runs concurrently on the whole
// grid, so no buffer may be written by one op and touched by another op of the
// same phase (directly or through a sched.view).
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Two computes writing one buffer.
// CHECK: sched.phase: two ops write the same buffer t
sched.program @p(%a: memref<4xf32>) inputs 1 results [] arena -1 {
  %t = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%t : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
    sched.compute ins(%a : memref<4xf32>) outs(%t : memref<4xf32>) {
    ^bb0(%y: tensor<4xf32>):
      %n = tk.neg %y : tensor<4xf32>
      tk.yield %n : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Two computes writing one buffer, one of them through a view.
// CHECK: sched.phase: two ops write the same buffer t
sched.program @p(%a: memref<4xf32>, %b: memref<2x2xf32>) inputs 2 results [] arena -1 {
  %t = sched.buffer : memref<4xf32>
  %v = sched.view %t : memref<4xf32> to memref<2x2xf32>
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%t : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
    sched.compute ins(%b : memref<2x2xf32>) outs(%v : memref<2x2xf32>) {
    ^bb0(%y: tensor<2x2xf32>):
      tk.yield %y : tensor<2x2xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A compute writing the parameter while a commit writes it too.
// CHECK: sched.phase: two ops write the same buffer w
sched.program @p(%w: memref<4xf32>, %g: memref<4xf32>) inputs 2 results [0] arena -1 {
  %s = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%g : memref<4xf32>) outs(%s : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%g : memref<4xf32>) outs(%w : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
    sched.commit %s to %w : memref<4xf32>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Read-after-write inside one phase: the relu reads what the matmul writes.
// CHECK: sched.phase: sched.compute reads a buffer that sched.compute writes in the same phase (read-after-write hazard: split the phase)
sched.program @p(%w: memref<4x4xf32>, %x: memref<2x4xf32>, %out: memref<2x4xf32>) inputs 2 results [2] arena -1 {
  %t = sched.buffer : memref<2x4xf32>
  sched.phase {
    sched.compute ins(%x, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%t : memref<2x4xf32>) {
    ^bb0(%a: tensor<2x4xf32>, %b: tensor<4x4xf32>):
      %p = tk.matmul %a, %b : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      tk.yield %p : tensor<2x4xf32>
    }
    sched.compute ins(%t : memref<2x4xf32>) outs(%out : memref<2x4xf32>) {
    ^bb0(%c: tensor<2x4xf32>):
      %r = tk.relu %c : tensor<2x4xf32>
      tk.yield %r : tensor<2x4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// The same hazard when the reader comes first in the phase (write-after-read):
// order inside a phase means nothing.
// CHECK: sched.phase: sched.compute reads a buffer that sched.compute writes in the same phase
sched.program @p(%x: memref<4xf32>, %out: memref<4xf32>) inputs 1 results [1] arena -1 {
  %t = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%t : memref<4xf32>) outs(%out : memref<4xf32>) {
    ^bb0(%c: tensor<4xf32>):
      tk.yield %c : tensor<4xf32>
    }
    sched.compute ins(%x : memref<4xf32>) outs(%t : memref<4xf32>) {
    ^bb0(%c: tensor<4xf32>):
      %e = tk.exp %c : tensor<4xf32>
      tk.yield %e : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Read-after-write through a sched.view: the reader sees the bytes of %t as
// a 1-D buffer, still the same bytes.
// CHECK: sched.phase: sched.compute reads a buffer that sched.compute writes in the same phase
sched.program @p(%x: memref<1x4xf32>, %out: memref<4xf32>) inputs 1 results [1] arena -1 {
  %t = sched.buffer : memref<1x4xf32>
  %v = sched.view %t : memref<1x4xf32> to memref<4xf32>
  sched.phase {
    sched.compute ins(%x : memref<1x4xf32>) outs(%t : memref<1x4xf32>) {
    ^bb0(%c: tensor<1x4xf32>):
      tk.yield %c : tensor<1x4xf32>
    }
    sched.compute ins(%v : memref<4xf32>) outs(%out : memref<4xf32>) {
    ^bb0(%c: tensor<4xf32>):
      tk.yield %c : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Through a view of a view of a program argument.
// CHECK: sched.phase: sched.compute reads a buffer that sched.compute writes in the same phase
sched.program @p(%w: memref<2x2xf32>, %out: memref<4xf32>) inputs 1 results [1] arena -1 {
  %v1 = sched.view %w : memref<2x2xf32> to memref<4xf32>
  %v2 = sched.view %v1 : memref<4xf32> to memref<4x1xf32>
  sched.phase {
    sched.compute ins(%v2 : memref<4x1xf32>) outs(%out : memref<4xf32>) {
    ^bb0(%c: tensor<4x1xf32>):
      %r = tk.reshape %c : tensor<4x1xf32> -> tensor<4xf32>
      tk.yield %r : tensor<4xf32>
    }
    sched.compute ins(%out : memref<4xf32>) outs(%w : memref<2x2xf32>) {
    ^bb0(%c: tensor<4xf32>):
      %r = tk.reshape %c : tensor<4xf32> -> tensor<2x2xf32>
      tk.yield %r : tensor<2x2xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A commit in the same phase as a reader of the old parameter value.
// CHECK: sched.phase: sched.compute reads a buffer that sched.commit writes in the same phase
sched.program @p(%w: memref<4xf32>, %g: memref<4xf32>, %out: memref<4xf32>) inputs 2 results [2, 0] arena -1 {
  %s = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%w, %g : memref<4xf32>, memref<4xf32>) outs(%s : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %n = tk.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      tk.yield %n : tensor<4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%w : memref<4xf32>) outs(%out : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      tk.yield %a : tensor<4xf32>
    }
    sched.commit %s to %w : memref<4xf32>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A commit of a staged value in the phase that produces it.
// CHECK: sched.phase: sched.commit reads a buffer that sched.compute writes in the same phase
sched.program @p(%w: memref<4xf32>, %g: memref<4xf32>) inputs 2 results [0] arena -1 {
  %s = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%g : memref<4xf32>) outs(%s : memref<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      tk.yield %b : tensor<4xf32>
    }
    sched.commit %s to %w : memref<4xf32>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Only computes and commits live in a phase.
// CHECK: sched.phase may only hold computes and commits, found sched.barrier
sched.program @p() inputs 0 results [] arena -1 {
  sched.phase {
    sched.barrier grid
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.phase may only hold computes and commits, found sched.phase
sched.program @p() inputs 0 results [] arena -1 {
  sched.phase {
    sched.phase {
      sched.compute ins() outs() {
        tk.yield
      }
    }
  }
}
