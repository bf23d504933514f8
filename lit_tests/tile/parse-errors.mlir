// The custom syntax of tile ops rejects what it cannot express.
// RUN: trainkernel-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// CHECK: tile.sync expects `grid` or `block` or `items`
tile.kernel @k() inputs 0 results [] arena -1 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.sync cluster
}

// -----
// CHECK: {{^//}} {{-----$}}

// Operand and type lists must agree.
// CHECK: outs: 1 operands but 2 types
tile.kernel @k(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%a : memref<4xf32>) outs(%o : memref<4xf32>, memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}
