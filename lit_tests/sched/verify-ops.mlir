// Op-level verifiers: sched.compute region and yield types, sched.barrier
// scope, sched.commit types, sched.view element type and count.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Region arguments are the tensor types of `ins`: here f16 for an f32 buffer.
// CHECK: sched.compute: region arguments must be the tensor types of `ins`
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf16>):
      %c = tk.cast %x : tensor<4xf16> to tensor<4xf32>
      tk.yield %c : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// One region argument per `ins` buffer.
// CHECK: sched.compute: region arguments must be the tensor types of `ins`
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// The shape counts too.
// CHECK: sched.compute: region arguments must be the tensor types of `ins`
sched.program @p(%a: memref<2x2xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<2x2xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// tk.yield gives what `outs` stores: element type mismatch.
// CHECK: sched.compute: tk.yield gives tensor<4xf32> but `outs` need tensor<4xbf16>
sched.program @p(%a: memref<4xf32>, %o: memref<4xbf16>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xbf16>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Yield count mismatch: two outs, one value.
// CHECK: sched.compute: tk.yield gives tensor<4xf32> but `outs` need tensor<4xf32>, tensor<4xf32>
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>, %q: memref<4xf32>) inputs 1 results [1, 2] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o, %q : memref<4xf32>, memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Nothing yielded for an out.
// CHECK: sched.compute: tk.yield gives nothing but `outs` need tensor<4xf32>
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Yield shape mismatch.
// CHECK: sched.compute: tk.yield gives tensor<2x2xf32> but `outs` need tensor<4xf32>
sched.program @p(%a: memref<2x2xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<2x2xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<2x2xf32>):
      tk.yield %x : tensor<2x2xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// The body ends with tk.yield: an empty body is caught by the single-block
// region rule before sched.compute's own check ...
// CHECK: Operation sched.compute contains empty block in single-block region that expects at least a terminator
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// ... and so is a foreign terminator (by its own parent rule).
// CHECK: 'func.return' expects parent op 'func.func'
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      func.return %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A body without any terminator is rejected by the single-block region rule.
// CHECK: Operation tk.neg terminates block in single-block region but is not a terminator
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      %n = tk.neg %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Only tk ops compute inside.
// CHECK: sched.compute: only tk ops may compute inside, found sched.barrier
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      sched.barrier grid
      tk.yield %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// The barrier scope is grid or block (the custom syntax cannot even say
// anything else; the generic form reaches the verifier).
// CHECK: sched.barrier scope must be grid or block, got 'warp'
sched.program @p() inputs 0 results [] arena -1 {
  "sched.barrier"() <{scope = "warp"}> : () -> ()
}

// -----
// CHECK: {{^//}} {{-----$}}

// The staged value and the parameter have one type (the custom syntax names
// it once; the generic form can disagree and is rejected by the type constraint).
// CHECK: operand 'target' at position 1 does not verify:
// CHECK-NEXT: attribute memref<4xbf16> expected from variable 'T', but got memref<4xf32>
sched.program @p(%w: memref<4xf32>, %g: memref<4xbf16>) inputs 2 results [0] arena -1 {
  sched.phase {
    "sched.commit"(%g, %w) : (memref<4xbf16>, memref<4xf32>) -> ()
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Same element type, other shape.
// CHECK: operand 'target' at position 1 does not verify:
// CHECK-NEXT: attribute memref<2x2xf32> expected from variable 'T', but got memref<4xf32>
sched.program @p(%w: memref<4xf32>, %g: memref<2x2xf32>) inputs 2 results [0] arena -1 {
  sched.phase {
    "sched.commit"(%g, %w) : (memref<2x2xf32>, memref<4xf32>) -> ()
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A view keeps the element count ...
// CHECK: sched.view must keep element type and count: memref<2x4xf32> to memref<6xf32>
sched.program @p(%a: memref<2x4xf32>) inputs 1 results [] arena -1 {
  %v = sched.view %a : memref<2x4xf32> to memref<6xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// ... and the element type (a view is no bitcast).
// CHECK: sched.view must keep element type and count: memref<2x4xf32> to memref<8xbf16>
sched.program @p(%a: memref<2x4xf32>) inputs 1 results [] arena -1 {
  %v = sched.view %a : memref<2x4xf32> to memref<8xbf16>
}
