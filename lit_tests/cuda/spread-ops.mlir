// -t cuda, spread_ops (target.resident_spread_ops): the ops of a resident phase
// start their work on different warps. argmax.mlir's phase 0 holds a map of 8
// elements (threads 0-7: warp 0), a column argmax of 10 outputs (threads 0-9:
// warp 0 as well) and a block argmax of 300 elements (every thread, a barrier).
// The map keeps warp 0, the column argmax moves to warp 1 (output o on thread
// (o + 32) % 256), the block argmax is not moved (every thread takes part), nor
// is phase 1's lone warp-row argmax. Off: every op from warp 0.
// RUN: trainkernel-opt %S/argmax.mlir -p 'tk-legalize-masks,canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile,tile-resident{mode=force}' -t 'cuda{thread_rows=off spread_ops=on}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/argmax.mlir -p 'tk-legalize-masks,canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile,tile-resident{mode=force}' -t 'cuda{thread_rows=off spread_ops=off}' | filecheck %s --check-prefix=OFF
// RUN: not trainkernel-opt %S/argmax.mlir -t 'cuda{spread_ops=sometimes}' 2>&1 | filecheck %s --check-prefix=BAD

// ON:       // ---- phase 0
// ON:       { // tile.map split -1: 8 elements per block
// ON-NEXT:    for (int base = threadIdx.x; base < 8; base += 1 * kThreads) {
// ON:       { // tile.reduce tk.argmax split -1 (column): 8 elements into each of 10 outputs
// ON-NEXT:    for (int o = ((threadIdx.x + 224) % kThreads); o < 10; o += kThreads) {
// ON:       { // tile.reduce tk.argmax split -1 (block): 300 elements into each of 1 outputs
// ON:           for (int r = threadIdx.x; r < 300; r += kThreads) {
// ON:       // ---- phase 1
// ON:       { // tile.reduce tk.argmax split -1 (warp): 10 elements into each of 8 outputs
// ON-NEXT:    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

// OFF-NOT:  % kThreads)
// OFF:      { // tile.reduce tk.argmax split -1 (column): 8 elements into each of 10 outputs
// OFF-NEXT:   for (int o = threadIdx.x; o < 10; o += kThreads) {
// OFF-NOT:  % kThreads)

// BAD: -t cuda: spread_ops must be target, on or off, got 'sometimes'
