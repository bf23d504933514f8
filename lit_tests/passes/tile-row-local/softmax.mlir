// tile-row-local: a run of phases whose ops all work row by row over one row
// count (maps of whole rows, row reductions of a rank-2 input) takes the same
// rows to an item and to a block (offset 0), and block barriers replace the
// grid barriers inside it; a phase with any other op ends the run. On by
// default (target.row_local); `mode=off` leaves every kernel alone.
// RUN: trainkernel-opt %s --split-input-file -p tile-row-local | filecheck %s
// RUN: trainkernel-opt %s --split-input-file -p 'tile-row-local{mode=on}' | filecheck %s
// RUN: trainkernel-opt %s --split-input-file -p 'tile-row-local{mode=off}' | filecheck %s --check-prefix=OFF

// A softmax over 8 rows of 64: exp, row sum, divide, after a column sum
// (not row by row: the run starts after it). 4 warps a block: 4 rows an
// item, 2 items; the map items were 512 elements (8 rows), now 256.
// OFF-NOT:     tile.sync block
// CHECK-LABEL: tile.kernel @softmax
// CHECK:       tile.reduce {{.*}} config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64}
// CHECK:       tile.sync grid
// CHECK-NEXT:  tile.map {{.*}} config {items = 2 : i64, offset = 0 : i64, chunk = 256 : i64}
// CHECK:       tile.sync block
// CHECK-NEXT:  tile.reduce {{.*}} config {items = 2 : i64, offset = 0 : i64, rows = 4 : i64}
// CHECK:       tile.sync block
// CHECK-NEXT:  tile.map {{.*}} config {items = 2 : i64, offset = 0 : i64, chunk = 256 : i64}
tile.kernel @softmax(%x: memref<8x64xf32>, %o: memref<8x64xf32>, %c: memref<64xf32>) inputs 1 results [1, 2] arena 4096 config {grid = 4 : i64, threads = 128 : i64, smem = 0 : i64} {
  %e = sched.buffer offset 0 : memref<8x64xf32>
  %s = sched.buffer offset 2048 : memref<8x1xf32>
  tile.reduce ins(%x : memref<8x64xf32>) outs(%c : memref<64xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %r = tk.sum %a axes [0] : tensor<8x64xf32> -> tensor<64xf32>
    tk.yield %r : tensor<64xf32>
  }
  tile.sync grid
  tile.map ins(%x : memref<8x64xf32>) outs(%e : memref<8x64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %b = tk.exp %a : tensor<8x64xf32>
    tk.yield %b : tensor<8x64xf32>
  }
  tile.sync grid
  tile.reduce ins(%e : memref<8x64xf32>) outs(%s : memref<8x1xf32>) config {items = 2 : i64, offset = 1 : i64, rows = 4 : i64} {
  ^bb0(%a: tensor<8x64xf32>):
    %r = tk.sum %a axes [1] keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
    tk.yield %r : tensor<8x1xf32>
  }
  tile.sync grid
  tile.map ins(%e, %s : memref<8x64xf32>, memref<8x1xf32>) outs(%o : memref<8x64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<8x64xf32>, %b: tensor<8x1xf32>):
    %d = tk.div %a, %b : (tensor<8x64xf32>, tensor<8x1xf32>) -> tensor<8x64xf32>
    tk.yield %d : tensor<8x64xf32>
  }
}

// -----

// The row sum reads the transpose of what the map wrote (a column of the
// exp is a row of the sum): not row by row, nothing changes.
// CHECK-LABEL: tile.kernel @transposed
// CHECK-NOT:   tile.sync block
tile.kernel @transposed(%x: memref<64x64xf32>, %s: memref<64x1xf32>) inputs 1 results [1] arena 16384 config {grid = 4 : i64, threads = 128 : i64, smem = 0 : i64} {
  %e = sched.buffer offset 0 : memref<64x64xf32>
  tile.map ins(%x : memref<64x64xf32>) outs(%e : memref<64x64xf32>) config {items = 8 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<64x64xf32>):
    %b = tk.exp %a : tensor<64x64xf32>
    tk.yield %b : tensor<64x64xf32>
  }
  tile.sync grid
  tile.reduce ins(%e : memref<64x64xf32>) outs(%s : memref<64x1xf32>) config {items = 16 : i64, offset = 0 : i64, rows = 4 : i64} {
  ^bb0(%a: tensor<64x64xf32>):
    %t = tk.transpose %a perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %r = tk.sum %t axes [1] keepdim : tensor<64x64xf32> -> tensor<64x1xf32>
    tk.yield %r : tensor<64x1xf32>
  }
}
