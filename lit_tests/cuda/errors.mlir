// -t cuda diagnostics.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics -t cuda | filecheck %s

// The printer needs the tile level.
// CHECK: -t cuda needs exactly one tile.kernel (found 0); run the lowering to sched-to-tile first
sched.program @p() inputs 0 results [] arena -1 {
  sched.barrier grid
}

// -----
// CHECK: {{^//}} {{-----$}}

// Exactly one kernel per file.
// CHECK: -t cuda needs exactly one tile.kernel (found 2)
tile.kernel @a() inputs 0 results [] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.sync grid
}
tile.kernel @b() inputs 0 results [] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.sync grid
}

// -----
// CHECK: {{^//}} {{-----$}}

// argmax has no device implementation yet.
// CHECK: cuda: tk.argmax is not supported by the CUDA backend yet
tile.kernel @c(%x: memref<4x8xf32>, %i: memref<4xi64>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<4x8xf32>) outs(%i : memref<4xi64>) config {items = 4 : i64, offset = 0 : i64, rows = 1 : i64} {
  ^bb0(%a: tensor<4x8xf32>):
    %r = tk.argmax %a axes [1] : tensor<4x8xf32> -> tensor<4xi64>
    tk.yield %r : tensor<4xi64>
  }
}
