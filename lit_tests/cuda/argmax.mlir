// -t cuda: tk.argmax, in the grid kernel (one output per work item, the block
// folds it) and in the resident kernel (column, warp and block modes). Each
// thread folds its elements with tk::argmax_step in increasing index order and
// the warp / block combine keeps the pair torch.argmax picks (a NaN first, then
// the larger value, then the smaller index): the first maximum, the first NaN.
// The result is the index itself, stored as long long (never through a float);
// an epilogue reads it through tk-legalize-masks' cast, as a float.
// RUN: trainkernel-opt %s -p 'tk-legalize-masks,canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile' -t cuda | filecheck %s --check-prefix=GRID
// RUN: trainkernel-opt %s -p 'tk-legalize-masks,canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile,tile-resident{mode=force}' -t 'cuda{thread_rows=off spread_ops=off}' | filecheck %s --check-prefix=RES
// Rows of ten a row a thread (target.resident_thread_rows): one
// thread folds a whole row in index order and stores its results itself.
// RUN: trainkernel-opt %s -p 'tk-legalize-masks,canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile,tile-resident{mode=force}' -t 'cuda{thread_rows=on spread_ops=off}' | filecheck %s --check-prefix=THREAD
// RUN: not trainkernel-opt %s -t 'cuda{thread_rows=sometimes}' 2>&1 | filecheck %s --check-prefix=BAD
// THREAD:      { // tile.reduce tk.argmax split -1 (thread): 10 elements into each of 8 outputs
// THREAD-NEXT:   for (int o = threadIdx.x; o < 8; o += kThreads) {
// THREAD:          float accum = -INFINITY; int arg = -1;
// THREAD-NEXT:     for (int r = 0; r < 10; ++r) {
// THREAD-NEXT:       const int ql0 = (r);
// THREAD-NEXT:       tk::argmax_step(accum, arg, tk::to_float({{s[0-9]+}}[(ol0)*24 + (ql0)]), ql0);
// THREAD-NEXT:     }
// THREAD-NOT:      warp_argmax
// THREAD:          b{{[0-9]+}}_out0[(ol0)] = (long long)(rv);
// BAD: -t cuda: thread_rows must be target, on or off, got 'sometimes'

// GRID-LABEL: __global__ void __launch_bounds__(128) tk_am_kernel(TkParams p)
// GRID:       __shared__ float scratch[64];
// argmax over axis 0, keepdim: the reduced index r walks the rows.
// GRID:       { // tile.reduce tk.argmax over 8 elements into 10 outputs
// GRID:         const int o0 = (item);
// GRID-NEXT:    float accum = -INFINITY; int arg = -1;
// GRID-NEXT:    for (int r = threadIdx.x; r < 8; r += blockDim.x) {
// GRID-NEXT:      const int q0 = (r);
// GRID-NEXT:      tk::argmax_step(accum, arg, tk::to_float(b0_x[(q0)*10 + (o0)]), r);
// GRID-NEXT:    }
// GRID-NEXT:    tk::block_argmax(accum, arg, scratch);
// GRID-NEXT:    if (threadIdx.x == 0) {
// GRID-NEXT:      const long long rv = arg;
// GRID-NEXT:      b{{[0-9]+}}_out1[(o0)] = (long long)(rv);
// the scalar argmax of a vector: 300 elements into one output
// GRID:       { // tile.reduce tk.argmax over 300 elements into 1 outputs
// GRID:         tk::argmax_step(accum, arg, tk::to_float(b2_v[(q0)]), r);
// GRID:         b{{[0-9]+}}_out3[0] = (long long)(rv);
// argmax over axis 1 with its epilogue, one warp an output row (sched-to-tile's
// row_warps): lane l folds elements l, l + 32, ..., the warp's shuffles keep
// torch's pair; the hit mask compares the index (as a float) with the label.
// GRID:       { // tile.reduce tk.argmax over 10 elements into 8 outputs, 4 an item (a warp each)
// GRID:         const int o = (int)item * 4 + tk_warp;
// GRID-NEXT:    if (tk_warp >= 4 || o >= 8) continue;  // warp-uniform
// GRID:         int r = tk_lane;
// GRID-NEXT:    for (; r < 10; r += 32) {
// GRID:         tk::argmax_step(accum, arg, tk::to_float(b0_x[(o0)*10 + (q0)]), r);
// GRID:         tk::warp_argmax(accum, arg);
// GRID-NEXT:    if (tk_lane == 0) {
// GRID-NEXT:      const long long rv = arg;
// GRID-NEXT:    const float [[I:v[0-9]+]] = rv;
// GRID-NEXT:    const float [[H:v[0-9]+]] = (([[I]]) == (tk::to_float({{t[0-9]+}}[(o0)])) ? 1.0f : 0.0f);
// GRID-NEXT:    b{{[0-9]+}}_out0[(o0)] = (long long)(rv);
// GRID-NEXT:    b{{[0-9]+}}_out2[(o0)] = tk::from_float<float>([[H]]);

// RES-LABEL: static __device__ __noinline__ void tk_step(
// RES:       __shared__ float scratch[64];
// RES:       { // tile.reduce tk.argmax split -1 (column): 8 elements into each of 10 outputs
// RES-NEXT:    for (int o = threadIdx.x; o < 10; o += kThreads) {
// RES-NEXT:      const int ol0 = (o);
// RES-NEXT:      float accum = -INFINITY; int arg = -1;
// RES-NEXT:      for (int r = 0; r < 8; ++r) {
// RES-NEXT:        const int ql0 = (r);
// RES-NEXT:        tk::argmax_step(accum, arg, tk::to_float({{s[0-9]+}}[(ql0)*24 + (ol0)]), ql0);
// RES-NEXT:      }
// RES-NEXT:        const long long rv = arg;
// RES-NEXT:        b{{[0-9]+}}_out1[(ol0)] = (long long)(rv);
// RES:       { // tile.reduce tk.argmax split -1 (block): 300 elements into each of 1 outputs
// RES:           tk::argmax_step(accum, arg, tk::to_float({{s[0-9]+}}[(ql0)]), ql0);
// RES:         tk::block_argmax(accum, arg, scratch);
// RES-NEXT:    if (threadIdx.x == 0) {
// RES-NEXT:      const long long rv = arg;
// RES-NEXT:      b{{[0-9]+}}_out3[0] = (long long)(rv);
// RES:       { // tile.reduce tk.argmax split -1 (warp): 10 elements into each of 8 outputs
// RES:         for (int r = lane; r < 10; r += 32) {
// RES-NEXT:      const int ql0 = (r);
// RES-NEXT:      tk::argmax_step(accum, arg, tk::to_float({{s[0-9]+}}[(ol0)*24 + (ql0)]), ql0);
// RES-NEXT:    }
// RES-NEXT:    tk::warp_argmax(accum, arg);
// RES-NEXT:    if (lane == 0) {
// RES-NEXT:      const long long rv = arg;
// RES-NEXT:      const float [[I:v[0-9]+]] = rv;
// RES-NEXT:      const float [[H:v[0-9]+]] = (([[I]]) == (tk::to_float({{s[0-9]+}}[(ol0)])) ? 1.0f : 0.0f);
// RES-NEXT:      b{{[0-9]+}}_out0[(ol0)] = (long long)(rv);
// RES-NEXT:      b{{[0-9]+}}_out2[(ol0)] = tk::from_float<float>([[H]]);
func.func @am(%x: tensor<8x10xbf16>, %t: tensor<8xi64>, %v: tensor<300xf32>) -> (tensor<8xi64>, tensor<1x10xi64>, tensor<8xf32>, tensor<i64>) {
  %i = tk.argmax %x axes [1] : tensor<8x10xbf16> -> tensor<8xi64>
  %j = tk.argmax %x axes [0] keepdim : tensor<8x10xbf16> -> tensor<1x10xi64>
  %k = tk.argmax %v axes [0] : tensor<300xf32> -> tensor<i64>
  %hit = tk.cmp eq %i, %t : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
  %f = tk.cast %hit : tensor<8xi1> to tensor<8xf32>
  func.return %i, %j, %f, %k : tensor<8xi64>, tensor<1x10xi64>, tensor<8xf32>, tensor<i64>
}
