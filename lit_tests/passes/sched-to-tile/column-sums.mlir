// sched-to-tile{column_sums=...} (target.column_sum_widths; perf-log step 131):
// each column sum takes the columns an item, of those offered, with the
// smallest estimate of its phase on the chosen grid (the widest on a tie), and
// the phase's later ops move their offsets after its items. choice.mlir's
// phase 1 sums 100 rows into 300 columns: at 32 columns 10 items, each of 4
// slices of rows on 128 threads; on a grid of 359 every item has a block, so
// the cheapest item wins (16 columns: 19 items of 1600 elements, 8 slices); on
// a grid of 8 blocks (384 threads) more items would take more rounds, and 32
// stays. Offered nothing, the target's reduce_columns (32).
// RUN: trainkernel-opt %S/choice.mlir -p 'sched-to-tile{grid=359}' | filecheck %s --check-prefix=TARGET
// RUN: trainkernel-opt %S/choice.mlir -p 'sched-to-tile{grid=359 column_sums=32,16,8}' | filecheck %s --check-prefix=SPREAD
// RUN: trainkernel-opt %S/choice.mlir -p 'sched-to-tile{grid=8 column_sums=32,16,8}' | filecheck %s --check-prefix=ROUNDS
// RUN: trainkernel-opt %S/choice.mlir -p 'sched-to-tile{grid=359 column_sums=8}' | filecheck %s --check-prefix=FORCED
// RUN: not trainkernel-opt %S/choice.mlir -p 'sched-to-tile{column_sums=32,48}' 2>&1 | filecheck %s --check-prefix=BAD

// TARGET:      tile.reduce ins(%c : memref<100x300xbf16>) outs(%r : memref<300xf32>) config {items = 10 : i64, offset = 0 : i64, rows = 32 : i64}
// TARGET:      tile.reduce ins({{.*}}) outs(%rr : memref<100xbf16>) config {items = 25 : i64, offset = 10 : i64, rows = 4 : i64}

// SPREAD:      tile.reduce ins(%c : memref<100x300xbf16>) outs(%r : memref<300xf32>) config {items = 19 : i64, offset = 0 : i64, rows = 16 : i64}
// SPREAD:      tile.reduce ins({{.*}}) outs(%rr : memref<100xbf16>) config {items = 25 : i64, offset = 19 : i64, rows = 4 : i64}
// SPREAD:      tile.reduce ins({{.*}}) outs(%s2 : memref<f32>) config {items = 1 : i64, offset = 0 : i64, rows = 1 : i64}

// ROUNDS:      config {grid = 8 : i64
// ROUNDS:      tile.reduce ins(%c : memref<100x300xbf16>) outs(%r : memref<300xf32>) config {items = 10 : i64, offset = 0 : i64, rows = 32 : i64}

// FORCED:      tile.reduce ins(%c : memref<100x300xbf16>) outs(%r : memref<300xf32>) config {items = 38 : i64, offset = 0 : i64, rows = 8 : i64}
// FORCED:      outs(%rr : memref<100xbf16>) config {items = 25 : i64, offset = 38 : i64, rows = 4 : i64}

// BAD: sched-to-tile: column_sums must divide the 128 threads, got 32,48
