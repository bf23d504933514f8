// tile.gemm's fixup = "cluster" and tile.kernel's fixup_cluster (target.split_k_cluster_fixup,
// perf-log step 124): what the verifier refuses. The valid form is made and printed by
// lit_tests/passes/sched-to-tile/cluster-fixup.mlir and round-trips in cluster-fixup-roundtrip.mlir.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A cluster fix-up in a kernel not launched in clusters.
// CHECK: tile.gemm: a cluster fix-up needs its kernel's fixup_cluster
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "cluster"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A fix-up that is not the cluster's.
// CHECK: tile.gemm: fixup 'l2' is not `cluster` (absent: the workspace's)
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "l2"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A cluster fix-up with a workspace too.
// CHECK: tile.gemm: a cluster fix-up splits a wgmma gemm's K into 2 or more slices that divide its 4 consumer warps, without a workspace (engine wgmma, ksplit 4, a workspace)
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, workspace = 0 : i64, fixup = "cluster"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Slices that do not divide the tile's consumer warps (3 of 4).
// CHECK: tile.gemm: a cluster fix-up splits a wgmma gemm's K into 2 or more slices that divide its 4 consumer warps, without a workspace (engine wgmma, ksplit 3)
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 24 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 3 : i64, fixup = "cluster"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A grid of part of a cluster.
// CHECK: tile.kernel: fixup_cluster is 2, 4 or 8 blocks, for a grid kernel of whole clusters and no gemm_cluster (fixup_cluster 4, grid 126)
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 126 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "cluster"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A cluster of 3.
// CHECK: tile.kernel: fixup_cluster is 2, 4 or 8 blocks, for a grid kernel of whole clusters and no gemm_cluster (fixup_cluster 3, grid 128)
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 3 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "cluster"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A split gemm's first unit off a multiple of its split: a tile's slices in two clusters.
// CHECK: tile.gemm: a cluster fix-up's 2 slices must divide the cluster (4), start on a multiple of them (offset 31) and take a block each (64 items, grid 128)
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "cluster"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 31 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// More units than blocks: a second round would reuse the slots unordered.
// CHECK: tile.gemm: a cluster fix-up's 4 slices must divide the cluster (4), start on a multiple of them (offset 0) and take a block each (32 items, grid 16)
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 16 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "cluster"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A split that does not divide the cluster.
// CHECK: tile.gemm: a cluster fix-up's 4 slices must divide the cluster (2), start on a multiple of them (offset 0) and take a block each (32 items, grid 128)
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 2 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "cluster"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Two gemms of a phase with cluster fix-ups (their slots would be shared).
// CHECK: tile.kernel: two gemms of a phase with a cluster fix-up (one a phase)
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "cluster"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A kernel in clusters for fix-ups it does not have.
// CHECK: tile.kernel: fixup_cluster without a gemm whose fix-up is the cluster's
tile.kernel @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %d: memref<1024x64xbf16>) inputs 3 results [3, 4, 5] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64} {
  tile.gemm ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
    tk.yield %m : tensor<256x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) config {items = 31 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%t: tensor<3000x41xf32>):
    %r = tk.relu %t : tensor<3000x41xf32>
    tk.yield %r : tensor<3000x41xf32>
  }
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 32 : i64, engine = "wgmma"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
