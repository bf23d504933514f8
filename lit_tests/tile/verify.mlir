// tile verifiers: kernel launch bounds, tile op configs (tile shape, mma kind,
// items, offset, chunk, rows), one matmul per tile.gemm, sync scope.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// tile.kernel launch bounds: at least one block ...
// CHECK: tile.kernel: grid >= 1 and block a multiple of 32 up to 1024
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 0 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... at least one warp ...
// CHECK: tile.kernel: grid >= 1 and block a multiple of 32 up to 1024
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 16 : i64, smem = 0 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... whole warps ...
// CHECK: tile.kernel: grid >= 1 and block a multiple of 32 up to 1024
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 48 : i64, smem = 0 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... at most 1024 threads ...
// CHECK: tile.kernel: grid >= 1 and block a multiple of 32 up to 1024
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 1056 : i64, smem = 0 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... and shared memory within what one Hopper block may use (227 KiB).
// CHECK: tile.kernel: smem 232449 exceeds the 227 KiB a Hopper block may use
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 232449 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Negative shared memory.
// CHECK: tile.kernel: smem -1 exceeds the 227 KiB a Hopper block may use
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = -1 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// The limits themselves are fine: 1024 threads, 227 KiB exactly.
// CHECK: tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 1024 : i64, smem = 232448 : i64}
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 1024 : i64, smem = 232448 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// The launch shape is required.
// CHECK: property 'smem' expected
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Phases are sched-level structure: not allowed in a tile.kernel.
// CHECK: tile.kernel may hold buffers, views, tile ops and syncs, not sched.phase
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Nor a sched.barrier (tile.sync is the tile-level barrier).
// CHECK: tile.kernel may hold buffers, views, tile ops and syncs, not sched.barrier
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  sched.barrier grid
}
// -----
// CHECK: {{^//}} {{-----$}}

// tile ops inherit the compute rules: the yield must match `outs`.
// CHECK: tile.map: tk.yield gives tensor<4xf32> but `outs` need tensor<4xf32>, tensor<4xf32>
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>, %o2: memref<4xf32>) inputs 1 results [1, 2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o, %o2 : memref<4xf32>, memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// And the region arguments must match `ins`.
// CHECK: tile.gemm: region arguments must be the tensor types of `ins`
tile.kernel @k(%p: memref<4x4xbf16>, %q: memref<4x4xbf16>, %r: memref<4x4xbf16>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%p, %q : memref<4x4xbf16>, memref<4x4xbf16>) outs(%r : memref<4x4xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4x4xbf16>, %y: tensor<4x4xf16>):
    %m = tk.matmul %x, %x : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    tk.yield %m : tensor<4x4xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// tile.gemm holds exactly one tk.matmul: not zero ...
// CHECK: tile.gemm body must hold exactly one tk.matmul, found 0
tile.kernel @k(%p: memref<4x4xbf16>, %q: memref<4x4xbf16>, %r: memref<4x4xbf16>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%p, %q : memref<4x4xbf16>, memref<4x4xbf16>) outs(%r : memref<4x4xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4x4xbf16>, %y: tensor<4x4xbf16>):
    %m = tk.add %x, %y : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    tk.yield %m : tensor<4x4xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... and not two.
// CHECK: tile.gemm body must hold exactly one tk.matmul, found 2
tile.kernel @k(%p: memref<4x4xbf16>, %q: memref<4x4xbf16>, %r: memref<4x4xbf16>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%p, %q : memref<4x4xbf16>, memref<4x4xbf16>) outs(%r : memref<4x4xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4x4xbf16>, %y: tensor<4x4xbf16>):
    %m = tk.matmul %x, %y : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    %n = tk.matmul %m, %y : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    tk.yield %n : tensor<4x4xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// mma kinds: mma.bf16, mma.f16 or simt.f32.
// CHECK: tile.gemm mma must be one of mma.bf16, mma.f16, simt.f32
tile.kernel @k(%p: memref<4x4xbf16>, %q: memref<4x4xbf16>, %r: memref<4x4xbf16>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%p, %q : memref<4x4xbf16>, memref<4x4xbf16>) outs(%r : memref<4x4xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "wgmma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4x4xbf16>, %y: tensor<4x4xbf16>):
    %m = tk.matmul %x, %y : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    tk.yield %m : tensor<4x4xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// The mma kind is a string.
// CHECK: 3 : i64 should be of base attribute string
tile.kernel @k(%p: memref<4x4xbf16>, %q: memref<4x4xbf16>, %r: memref<4x4xbf16>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%p, %q : memref<4x4xbf16>, memref<4x4xbf16>) outs(%r : memref<4x4xbf16>) config {tile = array<i64: 64, 64, 32>, mma = 3 : i64, items = 1 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4x4xbf16>, %y: tensor<4x4xbf16>):
    %m = tk.matmul %x, %y : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    tk.yield %m : tensor<4x4xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// The tile shape has three extents (BM, BN, BK).
// CHECK: tile.gemm needs `tile = array<i64: BM, BN, BK>`
tile.kernel @k(%p: memref<4x4xbf16>, %q: memref<4x4xbf16>, %r: memref<4x4xbf16>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%p, %q : memref<4x4xbf16>, memref<4x4xbf16>) outs(%r : memref<4x4xbf16>) config {tile = array<i64: 64, 64>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4x4xbf16>, %y: tensor<4x4xbf16>):
    %m = tk.matmul %x, %y : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    tk.yield %m : tensor<4x4xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// At least one work item.
// CHECK: tile.gemm: items must be >= 1 and offset >= 0
tile.kernel @k(%p: memref<4x4xbf16>, %q: memref<4x4xbf16>, %r: memref<4x4xbf16>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%p, %q : memref<4x4xbf16>, memref<4x4xbf16>) outs(%r : memref<4x4xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 0 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4x4xbf16>, %y: tensor<4x4xbf16>):
    %m = tk.matmul %x, %y : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    tk.yield %m : tensor<4x4xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A non-negative start offset.
// CHECK: tile.gemm: items must be >= 1 and offset >= 0
tile.kernel @k(%p: memref<4x4xbf16>, %q: memref<4x4xbf16>, %r: memref<4x4xbf16>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%p, %q : memref<4x4xbf16>, memref<4x4xbf16>) outs(%r : memref<4x4xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = -1 : i64} {
  ^bb0(%x: tensor<4x4xbf16>, %y: tensor<4x4xbf16>):
    %m = tk.matmul %x, %y : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    tk.yield %m : tensor<4x4xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// items and offset are required.
// CHECK: property 'offset' expected
tile.kernel @k(%p: memref<4x4xbf16>, %q: memref<4x4xbf16>, %r: memref<4x4xbf16>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%p, %q : memref<4x4xbf16>, memref<4x4xbf16>) outs(%r : memref<4x4xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64} {
  ^bb0(%x: tensor<4x4xbf16>, %y: tensor<4x4xbf16>):
    %m = tk.matmul %x, %y : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    tk.yield %m : tensor<4x4xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// tile.map needs its chunk size.
// CHECK: property 'chunk' expected
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// tile.map items >= 1.
// CHECK: tile.map: items must be >= 1 and offset >= 0
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 0 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// tile.reduce needs its rows per work item.
// CHECK: property 'rows' expected
tile.kernel @k(%a: memref<4xf32>, %o: memref<f32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%a : memref<4xf32>) outs(%o : memref<f32>) config {items = 1 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4xf32>):
    %s = tk.sum %x axes [0] : tensor<4xf32> -> tensor<f32>
    tk.yield %s : tensor<f32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// tile.reduce offset >= 0.
// CHECK: tile.reduce: items must be >= 1 and offset >= 0
tile.kernel @k(%a: memref<4xf32>, %o: memref<f32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%a : memref<4xf32>) outs(%o : memref<f32>) config {items = 1 : i64, offset = -3 : i64, rows = 1 : i64} {
  ^bb0(%x: tensor<4xf32>):
    %s = tk.sum %x axes [0] : tensor<4xf32> -> tensor<f32>
    tk.yield %s : tensor<f32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// tile.sync scope: grid or block (generic form reaches the verifier).
// CHECK: tile.sync scope must be grid or block or items, got 'cluster'
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  "tile.sync"() <{scope = "cluster"}> : () -> ()
}
// -----
// CHECK: {{^//}} {{-----$}}

// The arena rules of sched.program hold in a tile.kernel too.
// CHECK: tile.kernel: buffer at offset 256 (64 bytes) overruns the 300-byte arena
tile.kernel @k() inputs 0 results [] arena 300 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  %t = sched.buffer offset 256 : memref<16xf32>
}
