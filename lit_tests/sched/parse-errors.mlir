// The custom syntax rejects what it cannot express, with a parse error that
// names the op.
// RUN: trainkernel-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// CHECK: sched.barrier expects `grid` or `block`
sched.program @p() inputs 0 results [] arena -1 {
  sched.barrier warp
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.buffer must have a memref type
sched.program @p() inputs 0 results [] arena -1 {
  %t = sched.buffer : tensor<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// (sched.compute's format is declarative: this message is xDSL's.)
// CHECK: expected 1 operand types but had 2
sched.program @p(%a: memref<4xf32>, %b: memref<4xf32>) inputs 2 results [] arena -1 {
  sched.phase {
    sched.compute ins(%a, %b : memref<4xf32>) outs() {
    ^bb0(%x: tensor<4xf32>):
      tk.yield
    }
  }
}
