// sched-to-tile diagnostics.
// RUN: trainkernel-opt %s -p sched-to-tile --split-input-file --verify-diagnostics | filecheck %s

// The arena must be allocated first.
// CHECK: sched-to-tile: run sched-allocate first (the arena has no size)
sched.program @p(%x: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%x : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      tk.yield %a : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// One matmul per compute.
// CHECK: sched-to-tile: a compute may hold one matmul or one reduction
sched.program @p(%x: memref<4x4xf32>, %o: memref<4x4xf32>) inputs 1 results [1] arena 0 {
  sched.phase {
    sched.compute ins(%x : memref<4x4xf32>) outs(%o : memref<4x4xf32>) {
    ^bb0(%a: tensor<4x4xf32>):
      %m = tk.matmul %a, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %n = tk.matmul %m, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      tk.yield %n : tensor<4x4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Not a matmul and a reduction together.
// CHECK: sched-to-tile: a compute may hold one matmul or one reduction
sched.program @p(%x: memref<4x4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 {
  sched.phase {
    sched.compute ins(%x : memref<4x4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%a: tensor<4x4xf32>):
      %m = tk.matmul %a, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %s = tk.sum %m axes [0] : tensor<4x4xf32> -> tensor<4xf32>
      tk.yield %s : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Not two reductions.
// CHECK: sched-to-tile: a compute may hold one matmul or one reduction
sched.program @p(%x: memref<4x4xf32>, %o: memref<f32>) inputs 1 results [1] arena 0 {
  sched.phase {
    sched.compute ins(%x : memref<4x4xf32>) outs(%o : memref<f32>) {
    ^bb0(%a: tensor<4x4xf32>):
      %s = tk.sum %a axes [0] : tensor<4x4xf32> -> tensor<4xf32>
      %t = tk.max %s axes [0] : tensor<4xf32> -> tensor<f32>
      tk.yield %t : tensor<f32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A pointwise compute iterates over one shape.
// CHECK: sched-to-tile: a pointwise compute writes several shapes [(4,), (4, 4)]
sched.program @p(%x: memref<4x4xf32>, %y: memref<4xf32>, %o: memref<4x4xf32>, %q: memref<4xf32>) inputs 2 results [2, 3] arena 0 {
  sched.phase {
    sched.compute ins(%x, %y : memref<4x4xf32>, memref<4xf32>) outs(%o, %q : memref<4x4xf32>, memref<4xf32>) {
    ^bb0(%a: tensor<4x4xf32>, %b: tensor<4xf32>):
      %e = tk.exp %a : tensor<4x4xf32>
      %n = tk.neg %b : tensor<4xf32>
      tk.yield %e, %n : tensor<4x4xf32>, tensor<4xf32>
    }
  }
}
