// Names the CUDA printer pastes into C++ (the kernel is `tk_<name>_kernel`,
// arguments `b<i>_<name>`, arena buffers `t<i>_<name>`) must be C identifiers,
// in a sched.program and (through the shared verifier) in a tile.kernel.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The issue's injection: a newline and a C++ statement in the kernel name.
// CHECK: sched.program name 'a\nstatic int injected = 42;\n//' is not a C identifier ([A-Za-z_][A-Za-z0-9_]*); it is printed into the generated CUDA
sched.program @"a\0Astatic int injected = 42;\0A//"() inputs 0 results [] arena -1 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program name 'step.v2' is not a C identifier
sched.program @step.v2() inputs 0 results [] arena -1 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program name '2step' is not a C identifier
sched.program @"2step"() inputs 0 results [] arena -1 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program name '' is not a C identifier
sched.program @""() inputs 0 results [] arena -1 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// SSA names are printed too: `float* b0_a.b` would not compile.
// CHECK: sched.program: argument name 'a.b' is not a C identifier
sched.program @p(%a.b: memref<4xf32>) inputs 1 results [] arena -1 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program: argument name 'o$x' is not a C identifier
sched.program @p(%a: memref<4xf32>, %o$x: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o$x : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program: buffer name 't-1' is not a C identifier
sched.program @p(%a: memref<4xf32>) inputs 1 results [] arena -1 {
  %t-1 = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%t-1 : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// The rule is shared with tile.kernel.
// CHECK: tile.kernel name 'k;' is not a C identifier
tile.kernel @"k;"() inputs 0 results [] arena -1 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
}

// -----
// CHECK: {{^//}} {{-----$}}

// Names that are identifiers (and numbered values, which have no name) pass.
// CHECK-NOT: error
// CHECK: sched.program @_Step_2(%out0: memref<4xf32>, %0: memref<4xf32>) inputs 1 results [1] arena -1
sched.program @_Step_2(%out0: memref<4xf32>, %0: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%out0 : memref<4xf32>) outs(%0 : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}
