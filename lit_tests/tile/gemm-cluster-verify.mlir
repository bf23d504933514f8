// tile.kernel's gemm_cluster (a grid kernel in clusters of two whose wgmma
// gemms walk as pairs): the form sched-to-tile{gemm_cluster=on} makes round-trips
// (lit_tests/passes/sched-to-tile/gemm-cluster.mlir prints it from a program),
// and what the verifier refuses: a cluster that is not two, an odd grid, a
// gemm on another engine (tile-resident drops it from a kernel it makes
// resident: tests/test_gemm_cluster_pairs.py).
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: config {grid = 8 : i64, threads = 384 : i64, smem = 218240 : i64, gemm_cluster = 2 : i64}
tile.kernel @k(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 8 : i64, threads = 384 : i64, smem = 218240 : i64, gemm_cluster = 2 : i64} {
  tile.gemm ins(%a, %b : memref<256x256xbf16>, memref<256x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x256xbf16>, %q: tensor<256x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Clusters of four.
// CHECK: tile.kernel: gemm_cluster is 2, for a grid kernel of an even grid (gemm_cluster 4, grid 8)
tile.kernel @k(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 8 : i64, threads = 384 : i64, smem = 218240 : i64, gemm_cluster = 4 : i64} {
  tile.gemm ins(%a, %b : memref<256x256xbf16>, memref<256x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x256xbf16>, %q: tensor<256x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// An odd grid: a cluster would straddle the last block.
// CHECK: tile.kernel: gemm_cluster is 2, for a grid kernel of an even grid (gemm_cluster 2, grid 7)
tile.kernel @k(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 7 : i64, threads = 384 : i64, smem = 218240 : i64, gemm_cluster = 2 : i64} {
  tile.gemm ins(%a, %b : memref<256x256xbf16>, memref<256x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x256xbf16>, %q: tensor<256x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// The mma.sync engine has no TMA pipeline to pair.
// CHECK: tile.kernel: gemm_cluster pairs the wgmma engine's gemms; this kernel has gemms on another engine
tile.kernel @k(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xbf16>) inputs 2 results [2] arena 0 config {grid = 8 : i64, threads = 128 : i64, smem = 30720 : i64, gemm_cluster = 2 : i64} {
  tile.gemm ins(%a, %b : memref<256x256xbf16>, memref<256x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 16 : i64, offset = 0 : i64} {
  ^bb0(%p: tensor<256x256xbf16>, %q: tensor<256x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// The pair's lockstep walk has no item flags: its phases keep grid barriers.
// CHECK: tile.kernel: `tile.sync items` orders a grid kernel's phases; a resident kernel or one of cluster pairs (gemm_cluster) orders them by barriers
tile.kernel @k(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>, %c: memref<256x256xbf16>, %d: memref<256x256xbf16>) inputs 2 results [2, 3] arena 0 config {grid = 8 : i64, threads = 384 : i64, smem = 218240 : i64, gemm_cluster = 2 : i64} {
  tile.gemm ins(%a, %b : memref<256x256xbf16>, memref<256x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x256xbf16>, %q: tensor<256x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
  tile.sync items
  tile.gemm ins(%c, %b : memref<256x256xbf16>, memref<256x256xbf16>) outs(%d : memref<256x256xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x256xbf16>, %q: tensor<256x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}
