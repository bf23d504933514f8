// -t cuda, reduce_tails (target.batched_reduce_tails) on online's schedule as a
// grid kernel (resident-exchange.mlir without tile-resident: 384 threads). Its
// column sums split the 64 rows into 12 slices of 6, fewer than COLUMN_LOADS
// (16), so every row of a slice was the loop after the batches: one load, one
// global round trip at a time. With the switch that rest is one more batch,
// its loads guarded by the slice's end and issued together, then folded in the
// same row order (the same bits). The full sum of 1024 elements (batches of 2:
// at most one element left a thread) keeps its loop: a tail of one gains
// nothing. Resident kernels (shared memory) print their reductions as before.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128}' -t 'cuda{reduce_tails=on}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128}' -t 'cuda{reduce_tails=off}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128},tile-resident' -t 'cuda{reduce_tails=on}' | filecheck %s --check-prefix=RES

// ON:       { // tile.reduce tk.sum over 1024 elements into 1 outputs
// ON:       for (; r < 1024; r += blockDim.x) {
// ON:       { // tile.reduce tk.sum: 64 rows into 16 columns, 32 per item, rows in 12 slices of 6
// ON:       for (; r + 16 <= r1; r += 16) {
// ON:       {  // the tail: its loads issued together too (target.batched_reduce_tails)
// ON-NEXT:    float tk_v[6];
// ON:           if (r + u < r1) {
// ON-NEXT:        const int rr = r + u;
// ON:           tk_v[u] = tk::to_float(t18[(q0)*16 + (o0)]);
// ON:         for (int u = 0; u < 6; ++u) if (r + u < r1) accum = __fadd_rn(accum, tk_v[u]);
// ON:       { // tile.reduce tk.sum: 64 rows into 256 columns, 32 per item, rows in 12 slices of 6
// ON:       {  // the tail: its loads issued together too (target.batched_reduce_tails)
// ON-NOT:   for (; r < r1; ++r) {

// OFF-NOT:  the tail
// OFF:      { // tile.reduce tk.sum: 64 rows into 16 columns, 32 per item, rows in 12 slices of 6
// OFF:      for (; r < r1; ++r) {
// OFF-NOT:  the tail

// RES:      resident, cluster of 16
// RES-NOT:  the tail
