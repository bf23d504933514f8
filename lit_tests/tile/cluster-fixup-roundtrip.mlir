// tile.gemm's fixup = "cluster" and tile.kernel's fixup_cluster round-trip through
// the printer and parser (what cluster-fixup-verify.mlir refuses, changed one at a time).
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s

// CHECK: config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64}
// CHECK: items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "cluster"}
// CHECK: items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"}
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
  tile.gemm ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
  ^bb0(%p_1: tensor<256x1024xbf16>, %q_1: tensor<256x64xbf16>):
    %m_1 = tk.matmul %p_1, %q_1 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
    tk.yield %m_1 : tensor<1024x64xbf16>
  }
}
