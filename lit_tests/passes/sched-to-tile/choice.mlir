// sched-to-tile: one tile op per sched.compute by what its body holds (a
// matmul -> tile.gemm, a reduction -> tile.reduce, otherwise tile.map), the
// mma kind by the matmul's element type, work items per op, `offset`
// staggering the ops of one phase, barriers -> tile.sync, commits -> copying
// tile.map; smem is the largest GEMM pipeline. The grid is forced here
// (`grid=N`); cost-model.mlir tests the default choice.
// RUN: trainkernel-opt %s -p 'sched-to-tile{grid=359}' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile{grid=8}' | filecheck %s --check-prefix=FORCED

// Phase 0: bf16 gemm 100x300 (2 x 5 = 10 tiles of 64x64), f16 gemm 64x64
// (1 tile), f32 gemm 65x1 (2 tiles); offsets 0, 10, 11; 13 items in all.
// Phase 1: a column reduction (over the leading axis: 300 columns, 32 per
// item, 10 items), a row reduction (over the last axis: one output per warp,
// 4 an item of 128 threads, 25 items: on 132 SMs one round of 16 loads a lane
// against one of a block plus its combine) and a map over 100x300 = 30000
// elements in chunks of 512 (59 items).
// Phase 2: a commit, as a copying map of 300 elements (1 item).
// CHECK-LABEL: tile.kernel @step(
// CHECK-SAME:    inputs 6 results [0, 7, 8] arena 124416 config {grid = 359 : i64, threads = 128 : i64, smem = 30720 : i64} {
// CHECK:         tile.gemm ins(%a, %b : memref<100x64xbf16>, memref<64x300xbf16>) outs(%c : memref<100x300xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 10 : i64, offset = 0 : i64} {
// CHECK:         tile.gemm ins(%d, %d : memref<64x64xf16>, memref<64x64xf16>) outs(%e : memref<64x64xf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.f16", items = 1 : i64, offset = 10 : i64} {
// CHECK:         tile.gemm ins(%f, %g : memref<65x3xf32>, memref<3x1xf32>) outs(%h : memref<65x1xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 2 : i64, offset = 11 : i64} {
// CHECK:         tile.sync grid
// CHECK-NEXT:    tile.reduce ins(%c : memref<100x300xbf16>) outs(%r : memref<300xf32>) config {items = 10 : i64, offset = 0 : i64, rows = 32 : i64} {
// CHECK:         tile.reduce ins(%c : memref<100x300xbf16>) outs(%rr : memref<100xbf16>) config {items = 25 : i64, offset = 10 : i64, rows = 4 : i64} {
// CHECK:         tile.map ins(%c : memref<100x300xbf16>) outs(%out : memref<100x300xf32>) config {items = 59 : i64, offset = 35 : i64, chunk = 512 : i64} {
// A block-scope barrier in a kernel of several blocks becomes a grid barrier.
// CHECK:         tile.sync grid
// CHECK-NOT:     tile.sync block
// CHECK-NEXT:    tile.map ins(%r : memref<300xf32>) outs(%w : memref<300xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
// CHECK-NEXT:    ^bb0(%[[V:.*]]: tensor<300xf32>):
// CHECK-NEXT:      tk.yield %[[V]] : tensor<300xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NOT:   sched.

// The forced grid whatever the engine (on 8 blocks the cost model puts the f16
// product on the wgmma pipeline and the rest beside it: mixed-engines.mlir).
// FORCED: config {grid = 8 : i64,
// FORCED: tile.sync grid
// FORCED: tile.sync grid
// FORCED-NOT: tile.sync block
sched.program @step(%w: memref<300xf32>, %a: memref<100x64xbf16>, %b: memref<64x300xbf16>, %d: memref<64x64xf16>, %f: memref<65x3xf32>, %g: memref<3x1xf32>, %out: memref<100x300xf32>, %e: memref<64x64xf16>, %h: memref<65x1xf32>) inputs 6 results [0, 7, 8] arena 124416 {
  %c = sched.buffer offset 0 : memref<100x300xbf16>
  %r = sched.buffer offset 60160 : memref<300xf32>
  %rr = sched.buffer offset 61440 : memref<100xbf16>
  sched.phase {
    sched.compute ins(%a, %b : memref<100x64xbf16>, memref<64x300xbf16>) outs(%c : memref<100x300xbf16>) {
    ^bb0(%x: tensor<100x64xbf16>, %y: tensor<64x300xbf16>):
      %m = tk.matmul %x, %y : (tensor<100x64xbf16>, tensor<64x300xbf16>) -> tensor<100x300xbf16>
      %n = tk.relu %m : tensor<100x300xbf16>
      tk.yield %n : tensor<100x300xbf16>
    }
    sched.compute ins(%d, %d : memref<64x64xf16>, memref<64x64xf16>) outs(%e : memref<64x64xf16>) {
    ^bb0(%x: tensor<64x64xf16>, %y: tensor<64x64xf16>):
      %m = tk.matmul %x, %y transpose_b : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
      tk.yield %m : tensor<64x64xf16>
    }
    sched.compute ins(%f, %g : memref<65x3xf32>, memref<3x1xf32>) outs(%h : memref<65x1xf32>) {
    ^bb0(%x: tensor<65x3xf32>, %y: tensor<3x1xf32>):
      %m = tk.matmul %x, %y : (tensor<65x3xf32>, tensor<3x1xf32>) -> tensor<65x1xf32>
      tk.yield %m : tensor<65x1xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%c : memref<100x300xbf16>) outs(%r : memref<300xf32>) {
    ^bb0(%x: tensor<100x300xbf16>):
      %s = tk.sum %x axes [0] : tensor<100x300xbf16> -> tensor<300xbf16>
      %t = tk.cast %s : tensor<300xbf16> to tensor<300xf32>
      tk.yield %t : tensor<300xf32>
    }
    sched.compute ins(%c : memref<100x300xbf16>) outs(%rr : memref<100xbf16>) {
    ^bb0(%x: tensor<100x300xbf16>):
      %s = tk.sum %x axes [1] : tensor<100x300xbf16> -> tensor<100xbf16>
      tk.yield %s : tensor<100xbf16>
    }
    sched.compute ins(%c : memref<100x300xbf16>) outs(%out : memref<100x300xf32>) {
    ^bb0(%x: tensor<100x300xbf16>):
      %t = tk.cast %x : tensor<100x300xbf16> to tensor<100x300xf32>
      tk.yield %t : tensor<100x300xf32>
    }
  }
  sched.barrier block
  sched.phase {
    sched.commit %r to %w : memref<300xf32>
  }
}

// No GEMM: no shared memory. A scalar result is one work item.
// CHECK-LABEL: tile.kernel @nogemm(
// CHECK-SAME:    config {grid = 359 : i64, threads = 128 : i64, smem = 0 : i64} {
// CHECK:         tile.reduce ins(%x2 : memref<4x8xf32>) outs(%s2 : memref<f32>) config {items = 1 : i64, offset = 0 : i64, rows = 1 : i64}
// CHECK:         tile.map ins(%x2 : memref<4x8xf32>) outs(%e2 : memref<4x8xf32>) config {items = 1 : i64, offset = 1 : i64, chunk = 512 : i64}
sched.program @nogemm(%x2: memref<4x8xf32>, %s2: memref<f32>, %e2: memref<4x8xf32>) inputs 1 results [1, 2] arena 0 {
  sched.phase {
    sched.compute ins(%x2 : memref<4x8xf32>) outs(%s2 : memref<f32>) {
    ^bb0(%x: tensor<4x8xf32>):
      %s = tk.max %x axes [0, 1] : tensor<4x8xf32> -> tensor<f32>
      tk.yield %s : tensor<f32>
    }
    sched.compute ins(%x2 : memref<4x8xf32>) outs(%e2 : memref<4x8xf32>) {
    ^bb0(%x: tensor<4x8xf32>):
      %e = tk.exp %x : tensor<4x8xf32>
      tk.yield %e : tensor<4x8xf32>
    }
  }
}
