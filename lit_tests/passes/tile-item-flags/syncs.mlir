// tile-item-flags: a grid kernel's grid barriers become `tile.sync items`
// (each item waits for the flags of the earlier items it depends on,
// trainkernel.item_deps), but where every item after the barrier needs every
// item before it (there flags only add loads); temporaries sharing arena
// bytes inside one run of flag-joined phases move to bytes of their own.
// Resident kernels, kernels launched in clusters (pairs, split-K fix-ups) and mode=off keep every barrier.
// RUN: trainkernel-opt %s --split-input-file -p 'tile-item-flags{mode=on}' | filecheck %s
// RUN: trainkernel-opt %s --split-input-file -p 'tile-item-flags{mode=off}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %s --split-input-file -p tile-item-flags | filecheck %s --check-prefix=OFF

// Row-local: item i of the second map reads what item i of the first wrote,
// so the barrier becomes flags. %u shared %t's bytes (sched-allocate reused
// them after %t's last reader): inside one window it moves past the arena
// (8192 -> 16384 bytes), or its writes would wait for every reader of %t.
// CHECK-LABEL: tile.kernel @row_local
// CHECK-SAME:  arena 16384
// CHECK:       %t = sched.buffer offset 0 : memref<64x64xbf16>
// CHECK:       %u = sched.buffer offset 8192 : memref<64x64xbf16>
// CHECK:       tile.sync items
// CHECK-NOT:   tile.sync grid
// OFF-LABEL:   tile.kernel @row_local
// OFF-SAME:    arena 8192
// OFF:         tile.sync grid
// OFF-NOT:     tile.sync items
tile.kernel @row_local(%x: memref<64x64xbf16>, %o: memref<64x64xbf16>) inputs 1 results [1] arena 8192 config {grid = 4 : i64, threads = 128 : i64, smem = 0 : i64} {
  %t = sched.buffer offset 0 : memref<64x64xbf16>
  %u = sched.buffer offset 0 : memref<64x64xbf16>
  tile.map ins(%x : memref<64x64xbf16>) outs(%t : memref<64x64xbf16>) config {items = 2 : i64, offset = 0 : i64, chunk = 2048 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
  tile.sync grid
  tile.map ins(%t : memref<64x64xbf16>) outs(%o : memref<64x64xbf16>) config {items = 2 : i64, offset = 0 : i64, chunk = 2048 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
  tile.sync grid
  tile.map ins(%x : memref<64x64xbf16>) outs(%u : memref<64x64xbf16>) config {items = 1 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
}

// -----

// The gemm's one tile reads all of %t (both map items): the barrier stays.
// CHECK-LABEL: tile.kernel @full
// CHECK-SAME:  arena 8192
// CHECK:       tile.sync grid
// CHECK-NOT:   tile.sync items
tile.kernel @full(%x: memref<64x64xbf16>, %w: memref<64x64xbf16>, %o: memref<64x64xbf16>) inputs 2 results [2] arena 8192 config {grid = 4 : i64, threads = 128 : i64, smem = 30720 : i64} {
  %t = sched.buffer offset 0 : memref<64x64xbf16>
  tile.map ins(%x : memref<64x64xbf16>) outs(%t : memref<64x64xbf16>) config {items = 2 : i64, offset = 0 : i64, chunk = 2048 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
  tile.sync grid
  tile.gemm ins(%t, %w : memref<64x64xbf16>, memref<64x64xbf16>) outs(%o : memref<64x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%a0: tensor<64x64xbf16>, %a1: tensor<64x64xbf16>):
    %p = tk.matmul %a0, %a1 : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
    tk.yield %p : tensor<64x64xbf16>
  }
}

// -----

// Two row tiles of a gemm, each reading the map item of its rows: flags.
// Then an in-place update of %w (a write after the gemm's reads of %w: every
// tile read all of it) keeps its barrier.
// CHECK-LABEL: tile.kernel @tiles
// CHECK:       tile.sync items
// CHECK:       tile.gemm
// CHECK:       tile.sync grid
// CHECK:       tile.map
tile.kernel @tiles(%x: memref<128x64xbf16>, %w: memref<64x64xbf16>, %o: memref<128x64xbf16>) inputs 2 results [1, 2] arena 16384 config {grid = 4 : i64, threads = 128 : i64, smem = 30720 : i64} {
  %t = sched.buffer offset 0 : memref<128x64xbf16>
  tile.map ins(%x : memref<128x64xbf16>) outs(%t : memref<128x64xbf16>) config {items = 2 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%a: tensor<128x64xbf16>):
    %e = tk.exp %a : tensor<128x64xbf16>
    tk.yield %e : tensor<128x64xbf16>
  }
  tile.sync grid
  tile.gemm ins(%t, %w : memref<128x64xbf16>, memref<64x64xbf16>) outs(%o : memref<128x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 2 : i64, offset = 0 : i64} {
  ^bb0(%a0: tensor<128x64xbf16>, %a1: tensor<64x64xbf16>):
    %p = tk.matmul %a0, %a1 : (tensor<128x64xbf16>, tensor<64x64xbf16>) -> tensor<128x64xbf16>
    tk.yield %p : tensor<128x64xbf16>
  }
  tile.sync grid
  tile.map ins(%w : memref<64x64xbf16>) outs(%w : memref<64x64xbf16>) config {items = 1 : i64, offset = 0 : i64, chunk = 4096 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
}

// -----

// One block: its phases are one ordered program; nothing changes.
// CHECK-LABEL: tile.kernel @one_block
// CHECK:       tile.sync grid
tile.kernel @one_block(%x: memref<64x64xbf16>, %o: memref<64x64xbf16>) inputs 1 results [1] arena 8192 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  %t = sched.buffer offset 0 : memref<64x64xbf16>
  tile.map ins(%x : memref<64x64xbf16>) outs(%t : memref<64x64xbf16>) config {items = 2 : i64, offset = 0 : i64, chunk = 2048 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
  tile.sync grid
  tile.map ins(%t : memref<64x64xbf16>) outs(%o : memref<64x64xbf16>) config {items = 2 : i64, offset = 0 : i64, chunk = 2048 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %e = tk.exp %a : tensor<64x64xbf16>
    tk.yield %e : tensor<64x64xbf16>
  }
}

// -----

// A kernel launched in clusters for its split-K fix-ups (fixup_cluster): a
// tile's slices meet in one cluster in one round, so its phases keep their
// barriers (as cluster pairs do).
// CHECK-LABEL: tile.kernel @cluster_fixup
// CHECK:       tile.sync grid
// CHECK-NOT:   tile.sync items
tile.kernel @cluster_fixup(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>) inputs 3 results [3, 4] arena 0 config {grid = 128 : i64, threads = 256 : i64, smem = 117920 : i64, fixup_cluster = 4 : i64} {
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
}
