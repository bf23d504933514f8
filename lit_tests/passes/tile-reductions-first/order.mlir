// tile-reductions-first: in each phase of a grid kernel the reductions that
// follow a gemm move ahead of the first gemm, every other op keeps its order,
// and the offsets are renumbered (each op's first item on the block after the
// previous op's last). The ops of a phase are independent, so the order only
// decides when each block does its items: the column sum reads phase 0's
// result before the gemm's epilogues stream through L2.
// RUN: trainkernel-opt %s --split-input-file -p tile-reductions-first | filecheck %s

// Phase 1: gemm (1 item), map (2), reduce (2 items from offset 3: blocks 3
// and 0 of 4, the second after the gemm's item) -> reduce at 0, gemm at 2,
// map at 3.
// CHECK:       tile.sync grid
// CHECK-NEXT:  tile.reduce {{.*}} config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64} {
// CHECK:       tile.gemm {{.*}} config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 2 : i64} {
// CHECK:       tile.map {{.*}} config {items = 2 : i64, offset = 3 : i64, chunk = 2048 : i64} {
// Phase 2 has no gemm: nothing moves.
// CHECK:       tile.sync grid
// CHECK-NEXT:  tile.map {{.*}} config {items = 1 : i64, offset = 0 : i64, chunk = 4096 : i64} {
// CHECK:       tile.reduce {{.*}} config {items = 2 : i64, offset = 1 : i64, rows = 32 : i64} {
tile.kernel @grid(%x: memref<64x64xbf16>, %w: memref<64x64xbf16>, %o: memref<64x64xbf16>, %m: memref<64x64xbf16>, %s: memref<64xf32>, %s2: memref<64xf32>) inputs 2 results [2, 3, 4, 5] arena 8192 config {grid = 4 : i64, threads = 128 : i64, smem = 30720 : i64} {
  %t = sched.buffer offset 0 : memref<64x64xbf16>
  tile.map ins(%x : memref<64x64xbf16>) outs(%t : memref<64x64xbf16>) config {items = 2 : i64, offset = 0 : i64, chunk = 2048 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
  tile.sync grid
  tile.gemm ins(%x, %w : memref<64x64xbf16>, memref<64x64xbf16>) outs(%o : memref<64x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%a0: tensor<64x64xbf16>, %a1: tensor<64x64xbf16>):
    %p = tk.matmul %a0, %a1 : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
    tk.yield %p : tensor<64x64xbf16>
  }
  tile.map ins(%x : memref<64x64xbf16>) outs(%m : memref<64x64xbf16>) config {items = 2 : i64, offset = 1 : i64, chunk = 2048 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
  tile.reduce ins(%t : memref<64x64xbf16>) outs(%s : memref<64xf32>) config {items = 2 : i64, offset = 3 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %r = tk.sum %a axes [0] : tensor<64x64xbf16> -> tensor<64xbf16>
    %c = tk.cast %r : tensor<64xbf16> to tensor<64xf32>
    tk.yield %c : tensor<64xf32>
  }
  tile.sync grid
  tile.map ins(%x : memref<64x64xbf16>) outs(%t : memref<64x64xbf16>) config {items = 1 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
  tile.reduce ins(%o : memref<64x64xbf16>) outs(%s2 : memref<64xf32>) config {items = 2 : i64, offset = 1 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %r = tk.sum %a axes [0] : tensor<64x64xbf16> -> tensor<64xbf16>
    %c = tk.cast %r : tensor<64xbf16> to tensor<64xf32>
    tk.yield %c : tensor<64xf32>
  }
}

// -----

// One block: a grid of 1 is one ordered program; nothing moves.
// CHECK:       tile.kernel @one_block(
// CHECK:       tile.gemm
// CHECK:       tile.reduce {{.*}} offset = 1 : i64
tile.kernel @one_block(%x: memref<64x64xbf16>, %w: memref<64x64xbf16>, %o: memref<64x64xbf16>, %s: memref<64xf32>) inputs 2 results [2, 3] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%x, %w : memref<64x64xbf16>, memref<64x64xbf16>) outs(%o : memref<64x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%a0: tensor<64x64xbf16>, %a1: tensor<64x64xbf16>):
    %p = tk.matmul %a0, %a1 : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
    tk.yield %p : tensor<64x64xbf16>
  }
  tile.reduce ins(%x : memref<64x64xbf16>) outs(%s : memref<64xf32>) config {items = 2 : i64, offset = 1 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %r = tk.sum %a axes [0] : tensor<64x64xbf16> -> tensor<64xbf16>
    %c = tk.cast %r : tensor<64xbf16> to tensor<64xf32>
    tk.yield %c : tensor<64xf32>
  }
}

// -----

// The same phase on 8 blocks: the reduction's items (offset 3, 2 items) land
// on blocks that run nothing else of the phase; it waits for no gemm, so
// nothing moves (moving it would only shift the gemm onto other blocks).
// CHECK:       tile.kernel @no_wrap(
// CHECK:       tile.gemm {{.*}} offset = 0 : i64} {
// CHECK:       tile.map {{.*}} offset = 1 : i64, chunk = 2048 : i64} {
// CHECK:       tile.reduce {{.*}} offset = 3 : i64, rows = 32 : i64} {
tile.kernel @no_wrap(%x: memref<64x64xbf16>, %w: memref<64x64xbf16>, %o: memref<64x64xbf16>, %m: memref<64x64xbf16>, %s: memref<64xf32>) inputs 2 results [2, 3, 4] arena 0 config {grid = 8 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%x, %w : memref<64x64xbf16>, memref<64x64xbf16>) outs(%o : memref<64x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%a0: tensor<64x64xbf16>, %a1: tensor<64x64xbf16>):
    %p = tk.matmul %a0, %a1 : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
    tk.yield %p : tensor<64x64xbf16>
  }
  tile.map ins(%x : memref<64x64xbf16>) outs(%m : memref<64x64xbf16>) config {items = 2 : i64, offset = 1 : i64, chunk = 2048 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
  tile.reduce ins(%x : memref<64x64xbf16>) outs(%s : memref<64xf32>) config {items = 2 : i64, offset = 3 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %r = tk.sum %a axes [0] : tensor<64x64xbf16> -> tensor<64xbf16>
    %c = tk.cast %r : tensor<64xbf16> to tensor<64xf32>
    tk.yield %c : tensor<64xf32>
  }
}
