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
