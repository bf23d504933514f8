// tile.gemm engine = "wgmma" (the Hopper tile in grid kernels): what the
// verifier refuses; the valid form is made and printed by
// lit_tests/passes/sched-to-tile/engine.mlir.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// An engine the tile level does not know.
// CHECK: tile.gemm: engine 'tensor' is not one (only `wgmma`; mma.sync has none)
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 384 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 128, 64>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64, engine = "tensor"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// fp32 products have no wgmma path here (the tile multiplies bf16 and f16).
// CHECK: tile.gemm: the wgmma engine multiplies bf16 and f16, not simt.f32
tile.kernel @k(%a: memref<256x1024xf32>, %b: memref<1024x256xf32>, %c: memref<256x256xf32>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 384 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xf32>, memref<1024x256xf32>) outs(%c : memref<256x256xf32>) config {tile = array<i64: 128, 128, 64>, mma = "simt.f32", items = 4 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xf32>, %q: tensor<1024x256xf32>):
    %m = tk.matmul %p, %q : (tensor<256x1024xf32>, tensor<1024x256xf32>) -> tensor<256x256xf32>
    tk.yield %m : tensor<256x256xf32>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A tile the Hopper library does not have.
// CHECK: tile.gemm: a wgmma tile is 128 x {32, 64, 128, 256} x 64 or 64 x {32, 64, 128} x 64, got 64x64x32
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 384 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Rows TMA cannot address: 1020 bf16 are 2040 bytes, not whole 16 bytes.
// CHECK: tile.gemm: wgmma's TMA needs row strides of whole 16 bytes; the lhs rows are 1020 elements
tile.kernel @k(%a: memref<256x1020xbf16>, %b: memref<1020x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 384 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1020xbf16>, memref<1020x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 128, 64>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1020xbf16>, %q: tensor<1020x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1020xbf16>, tensor<1020x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// The pipeline needs its producer and two consumer warpgroups.
// CHECK: tile.kernel: a kernel of 128-row wgmma tiles runs 384 threads (a producer warpgroup and a consumer for each 64 rows), not 128
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 128, 64>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// The stages and barriers must fit the kernel's shared memory.
// CHECK: tile.kernel: smem 30720 is short of the wgmma pipeline's 218208 bytes
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 384 : i64, smem = 30720 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 128, 64>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A mixed kernel (target.mixed_gemm_engines): a gemm off the pipeline takes an
// mma.sync tile in the shared memory after the pipeline's; 142,464 bytes for the
// 64 x 64 pipeline alone are short of it.
// CHECK: tile.kernel: smem 142464 is short of the wgmma pipeline's 142464 bytes and, after it, its mma.sync tiles' 30720
tile.kernel @k(%a: memref<256x256xbf16>, %b: memref<256x512xbf16>, %c: memref<256x512xbf16>, %d: memref<512x10xbf16>, %e: memref<256x10xbf16>) inputs 3 results [2, 4] arena 0 config {grid = 4 : i64, threads = 256 : i64, smem = 142464 : i64} {
  tile.gemm ins(%a, %b : memref<256x256xbf16>, memref<256x512xbf16>) outs(%c : memref<256x512xbf16>) config {tile = array<i64: 64, 64, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x256xbf16>, %q: tensor<256x512xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x256xbf16>, tensor<256x512xbf16>) -> tensor<256x512xbf16>
    tk.yield %m : tensor<256x512xbf16>
  }
  tile.sync grid
  tile.gemm ins(%c, %d : memref<256x512xbf16>, memref<512x10xbf16>) outs(%e : memref<256x10xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64} {
  ^bb0(%p: tensor<256x512xbf16>, %q: tensor<512x10xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x512xbf16>, tensor<512x10xbf16>) -> tensor<256x10xbf16>
    tk.yield %m : tensor<256x10xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// 64-row tiles (one consumer warpgroup) are at most 128 wide: the 256-wide
// tile's register hand-back is sized for two consumers.
// CHECK: tile.gemm: a wgmma tile is 128 x {32, 64, 128, 256} x 64 or 64 x {32, 64, 128} x 64, got 64x256x64
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 256 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 64, 256, 64>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A 64-row tile's kernel has one consumer warpgroup beside the producer: 256 threads.
// CHECK: tile.kernel: a kernel of 64-row wgmma tiles runs 256 threads (a producer warpgroup and a consumer for each 64 rows), not 384
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 384 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 64, 64, 64>, mma = "mma.bf16", items = 16 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A width wgmma has (n = 48) but the tile table does not.
// CHECK: tile.gemm: a wgmma tile is 128 x {32, 64, 128, 256} x 64 or 64 x {32, 64, 128} x 64, got 64x48x64
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 256 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 64, 48, 64>, mma = "mma.bf16", items = 24 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// The gemms of a kernel share one pipeline: one tile height (its consumer warpgroups) ...
// CHECK: tile.kernel: the wgmma gemms of a kernel share one tile height, and one width where a tile is wider than 128, got [(64, 64, 64), (128, 64, 64)]
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>, %d: memref<256x256xbf16>) inputs 2 results [2, 3] arena 0 config {grid = 8 : i64, threads = 384 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%d : memref<256x256xbf16>) config {tile = array<i64: 64, 64, 64>, mma = "mma.bf16", items = 16 : i64, offset = 8 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// ... and one width where a tile hands the producer's registers to the consumers (256 wide).
// CHECK: tile.kernel: the wgmma gemms of a kernel share one tile height, and one width where a tile is wider than 128, got [(128, 64, 64), (128, 256, 64)]
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>, %d: memref<256x256xbf16>) inputs 2 results [2, 3] arena 0 config {grid = 8 : i64, threads = 384 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 256, 64>, mma = "mma.bf16", items = 2 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%d : memref<256x256xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 8 : i64, offset = 2 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Widths up to 128 may differ (target.wgmma_gemm_widths): the kernel's pipeline is the widest's.
// CHECK: tile.kernel @k
// CHECK: tile = array<i64: 64, 128, 64>
// CHECK: tile = array<i64: 64, 32, 64>
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>, %d: memref<256x256xbf16>) inputs 2 results [2, 3] arena 0 config {grid = 8 : i64, threads = 256 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 64, 128, 64>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%d : memref<256x256xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 8 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// A valid 32-wide tile (B's 64-byte swizzle, tk::hopper::TileById<3>) at both heights.
// CHECK: tile.kernel @k
// CHECK-SAME: threads = 256
// CHECK: tile = array<i64: 64, 32, 64>
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 256 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tile.kernel @k
// CHECK-SAME: threads = 384
// CHECK: tile = array<i64: 128, 32, 64>
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 384 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 32, 64>, mma = "mma.bf16", items = 16 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// The valid 64-row kernel: nothing to report (the last split's output is the module).
// CHECK: tile.kernel @k
// CHECK-SAME: threads = 256
// CHECK: tile = array<i64: 64, 64, 64>
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 256 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 64, 64, 64>, mma = "mma.bf16", items = 16 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}
