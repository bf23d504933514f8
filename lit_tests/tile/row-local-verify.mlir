// A grid kernel (several blocks) orders phases with `tile.sync block` only
// inside a row-local region (tile.row_local_violation, tile-row-local): every
// op of the phases joined by block barriers takes the same rows to an item and
// the same offset, every buffer written there is accessed row by row, and no
// bytes written there are touched through another buffer.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Valid: a map and the row sum of what it wrote, 4 rows an item, offset 0.
// CHECK: tile.kernel @ok
tile.kernel @ok(%x: memref<8x64xf32>, %s: memref<8x1xf32>) inputs 1 results [1] arena 2048 config {grid = 4 : i64, threads = 128 : i64, smem = 0 : i64} {
  %e = sched.buffer offset 0 : memref<8x64xf32>
  tile.map ins(%x : memref<8x64xf32>) outs(%e : memref<8x64xf32>) config {items = 2 : i64, offset = 0 : i64, chunk = 256 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %b = tk.exp %a : tensor<8x64xf32>
    tk.yield %b : tensor<8x64xf32>
  }
  tile.sync block
  tile.reduce ins(%e : memref<8x64xf32>) outs(%s : memref<8x1xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 4 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %r = tk.sum %a axes [1] keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
    tk.yield %r : tensor<8x1xf32>
  }
}

// -----

// The row sum's items start one block later: block 1 sums rows block 0 wrote.
// CHECK: tile.kernel: `tile.sync block` orders phases of a kernel of several blocks only within a row-local region: tile.reduce (rows 8, 4 an item, offset 1) does not share tile.map's partition (rows 8, 4 an item, offset 0)
tile.kernel @offset(%x: memref<8x64xf32>, %s: memref<8x1xf32>) inputs 1 results [1] arena 2048 config {grid = 4 : i64, threads = 128 : i64, smem = 0 : i64} {
  %e = sched.buffer offset 0 : memref<8x64xf32>
  tile.map ins(%x : memref<8x64xf32>) outs(%e : memref<8x64xf32>) config {items = 2 : i64, offset = 0 : i64, chunk = 256 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %b = tk.exp %a : tensor<8x64xf32>
    tk.yield %b : tensor<8x64xf32>
  }
  tile.sync block
  tile.reduce ins(%e : memref<8x64xf32>) outs(%s : memref<8x1xf32>) config {items = 2 : i64, offset = 1 : i64, rows = 4 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %r = tk.sum %a axes [1] keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
    tk.yield %r : tensor<8x1xf32>
  }
}

// -----

// A column sum is not row by row.
// CHECK: only within a row-local region: tile.reduce is not row-partitioned
tile.kernel @column(%x: memref<8x64xf32>, %s: memref<64xf32>) inputs 1 results [1] arena 2048 config {grid = 4 : i64, threads = 128 : i64, smem = 0 : i64} {
  %e = sched.buffer offset 0 : memref<8x64xf32>
  tile.map ins(%x : memref<8x64xf32>) outs(%e : memref<8x64xf32>) config {items = 2 : i64, offset = 0 : i64, chunk = 256 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %b = tk.exp %a : tensor<8x64xf32>
    tk.yield %b : tensor<8x64xf32>
  }
  tile.sync block
  tile.reduce ins(%e : memref<8x64xf32>) outs(%s : memref<64xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %r = tk.sum %a axes [0] : tensor<8x64xf32> -> tensor<64xf32>
    tk.yield %r : tensor<64xf32>
  }
}

// -----

// The second map writes bytes the first map's output held (dead by then,
// which a grid barrier would make safe): a block writes rows of %f over rows
// of %e that another block may still read.
// CHECK: only within a row-local region: arena buffer %e (bytes 0..2048) (written) shares bytes with arena buffer %f (bytes 0..2048)
tile.kernel @bytes(%x: memref<8x64xf32>, %o: memref<8x64xf32>) inputs 1 results [1] arena 2048 config {grid = 4 : i64, threads = 128 : i64, smem = 0 : i64} {
  %e = sched.buffer offset 0 : memref<8x64xf32>
  %f = sched.buffer offset 0 : memref<8x64xf32>
  tile.map ins(%x : memref<8x64xf32>) outs(%e : memref<8x64xf32>) config {items = 2 : i64, offset = 0 : i64, chunk = 256 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %b = tk.exp %a : tensor<8x64xf32>
    tk.yield %b : tensor<8x64xf32>
  }
  tile.sync block
  tile.map ins(%e : memref<8x64xf32>) outs(%o : memref<8x64xf32>) config {items = 2 : i64, offset = 0 : i64, chunk = 256 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %b = tk.exp %a : tensor<8x64xf32>
    tk.yield %b : tensor<8x64xf32>
  }
  tile.sync block
  tile.map ins(%x : memref<8x64xf32>) outs(%f : memref<8x64xf32>) config {items = 2 : i64, offset = 0 : i64, chunk = 256 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    tk.yield %a : tensor<8x64xf32>
  }
}
