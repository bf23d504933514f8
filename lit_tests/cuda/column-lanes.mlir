// -t cuda, column_lanes (target.resident_column_lanes) on the online schedule of
// resident-exchange.mlir: a column reduction (the bias gradients, leading axis
// summed) with fewer outputs than threads puts each output on a group of lanes
// (16 here: 16 outputs x 16 lanes fill the block's 256 threads) that walk its rows
// in turn, then a shuffle tree over the group; the loop is the warp's, so a lane
// past the outputs folds and stores nothing. Off: a thread an output, every row.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{column_lanes=on}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{column_lanes=off}' | filecheck %s --check-prefix=OFF

// ON:      { // tile.reduce tk.sum split -1 (lanes): 64 elements into each of 16 outputs
// ON-NEXT:   for (int tk_ob = (threadIdx.x >> 5) * 2; tk_ob < 16; tk_ob += 16) {
// ON-NEXT:     const int o = tk_ob + (threadIdx.x & 31) / 16, tk_sub = threadIdx.x % 16;
// ON-NEXT:     const int ol0 = (o);
// ON-NEXT:     float accum = 0.0f;
// ON-NEXT:     if (o < 16)
// ON-NEXT:       for (int r = tk_sub; r < 64; r += 16) {
// ON:          accum = tk::group_reduce_sum<16>(accum);
// ON-NEXT:     if (o < 16 && tk_sub == 0) {
// ON:        { // tile.reduce tk.sum split 1 (lanes): 64 elements into each of 16 outputs
// ON:          accum = tk::group_reduce_sum<16>(accum);
// ON-NOT:    (column)

// OFF:     { // tile.reduce tk.sum split -1 (column): 64 elements into each of 16 outputs
// OFF-NEXT:  for (int o = ((threadIdx.x + 96) % kThreads); o < 16; o += kThreads) {
// OFF:     { // tile.reduce tk.sum split 1 (column): 64 elements into each of 16 outputs
// OFF-NOT: group_reduce_sum
