// -t cuda on a hand-written tile.kernel: one persistent loop per tile op
// (starting at block `offset % G`), GEMM tiles instantiated per element type
// and transpose flags, per-element epilogues with broadcast reads, reductions,
// and one barrier per tile.sync.
// RUN: trainkernel-opt %s --split-input-file -t cuda | filecheck %s

// CHECK:       // kernel k: 6 buffers, arena 2048 bytes, grid 4, 128 threads
// CHECK-NEXT:  struct TkParams { void* buf[6]; char* arena; };
// Two GEMM configurations: smem is the larger of the two pipelines.
// CHECK-NEXT:  static constexpr int kSmem = (tk::gemm_smem_bytes<float, 64, 64, 16>() > (tk::gemm_smem_bytes<__half, 64, 64, 32>() > 0 ? tk::gemm_smem_bytes<__half, 64, 64, 32>() : 0) ? tk::gemm_smem_bytes<float, 64, 64, 16>() : (tk::gemm_smem_bytes<__half, 64, 64, 32>() > 0 ? tk::gemm_smem_bytes<__half, 64, 64, 32>() : 0));
// CHECK:       extern "C" __global__ void __launch_bounds__(128) tk_k_kernel(TkParams p) {
// CHECK:         float* b0_x = (float*)p.buf[0];
// CHECK:         __half* b2_h = (__half*)p.buf[2];
// CHECK:         float* t6_t = (float*)(p.arena + 0);
// CHECK-NEXT:    float* t6_t_v7 = t6_t;
// CHECK-NEXT:    __half* t8_u = (__half*)(p.arena + 1024);

// f32 GEMM (SIMT tiles), x^T @ w, with a bias (broadcast along rows) and relu.
// The epilogue reads an operand, so it is staged (tk/epilogue.cuh): the tile
// issues the loads of a chunk of elements before any of their stores.
// CHECK:       { // tile.gemm 4x8x4 simt.f32 TN
// CHECK-NEXT:    for (int item = blockIdx.x; item < 1; item += G) {
// CHECK-NEXT:      tk::gemm_tile_nt<kThreads, float, 64, 64, 16, true, false>(b0_x, 4, b1_w, 8, 4, 8, 4, item / 1, item % 1, smem,
// CHECK-NEXT:        tk::staged_epilogue(
// CHECK-NEXT:          [&](int i, int j) {
// CHECK-NEXT:            tk::EpilogueLoads<1> tk_l;
// CHECK-NEXT:            tk_l.v[0] = tk::to_float(b3_b[(j)]);
// CHECK-NEXT:            return tk_l;
// CHECK-NEXT:          },
// CHECK-NEXT:          [&](int i, int j, float acc, const tk::EpilogueLoads<1>& tk_l) {
// CHECK-NEXT:            const float mmv = acc;
// CHECK-NEXT:            const float v1 = __fadd_rn(mmv, tk_l.v[0]);
// CHECK-NEXT:            const float v2 = ((v1) > 0.0f || (v1) != (v1) ? (v1) : 0.0f);
// CHECK-NEXT:            t6_t[(i)*8 + (j)] = tk::from_float<float>(v2);
// CHECK-NEXT:          })
// CHECK-NEXT:        );

// f16 GEMM (tensor cores) in the same phase, NT, starting one block later;
// the f16 result is rounded once, right after the matmul. Its epilogue reads
// nothing: a plain per-element lambda.
// CHECK:       { // tile.gemm 8x8x8 mma.f16 NT
// CHECK-NEXT:    for (int item = (blockIdx.x + G - 1 % G) % G; item < 1; item += G) {
// CHECK-NEXT:      tk::gemm_tile_nt<kThreads, __half, 64, 64, 32, false, true>(b2_h, 8, b2_h, 8, 8, 8, 8, item / 1, item % 1, smem,
// CHECK-NEXT:        [&](int i, int j, float acc) {
// CHECK-NEXT:          const __half mmv_bits = tk::from_float<__half>(acc);
// CHECK-NEXT:          const float mmv = tk::to_float(mmv_bits);
// CHECK:               t8_u[(i)*8 + (j)] = mmv_bits;
// CHECK-NEXT:        }
// CHECK-NEXT:        );

// A pointwise op over 32 elements in one chunk: a scalar fill operand becomes
// a literal; the multiply of f32 values is not rounded. Each thread first
// loads its elements of the item (all loads in flight), then computes and
// stores them: the item holds 512 elements (4 a thread), but the op has 32,
// so one a thread is unrolled, not 4.
// CHECK:       { // tile.map: 32 elements, 1 per thread an item, every read issued before any store
// CHECK-NEXT:    for (int item = (blockIdx.x + G - 2 % G) % G; item < 1; item += G) {
// CHECK-NEXT:      const int end = min((int)(item + 1) * 512, (int)32);
// CHECK-NEXT:      const int first = (int)item * 512 + threadIdx.x;
// CHECK-NEXT:      float tk_l0[1];
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT:      for (int u = 0; u < 1; ++u) {
// CHECK-NEXT:        const int e = first + (int)u * kThreads;
// CHECK-NEXT:        if (e < end) {
// CHECK-NEXT:          const int i0 = (e) / 8;
// CHECK-NEXT:          const int i1 = ((e)) % 8;
// CHECK-NEXT:          tk_l0[u] = tk::to_float(b1_w[(i0)*8 + (i1)]);
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT:      for (int u = 0; u < 1; ++u) {
// CHECK-NEXT:        const int e = first + (int)u * kThreads;
// CHECK-NEXT:        if (e < end) {
// CHECK-NEXT:          const int i0 = (e) / 8;
// CHECK-NEXT:          const int i1 = ((e)) % 8;
// CHECK-NEXT:          const float v1 = 0.5f;
// CHECK-NEXT:          const float v2 = __fmul_rn(tk_l0[u], v1);
// CHECK-NEXT:          b5_w2[(i0)*8 + (i1)] = tk::from_float<float>(v2);

// A grid barrier, then a whole-tensor sum (one work item, block reduction)
// reading the GEMM output through a view.
// CHECK:       tk::grid_sync();
// CHECK-NEXT:  // ---- phase 1
// CHECK-NEXT:  { // tile.reduce tk.sum over 32 elements into 1 outputs
// CHECK:           accum = __fadd_rn(accum, tk::to_float(t6_t_v7[(q0)]));
// CHECK:         accum = tk::block_reduce_sum(accum, scratch);
// CHECK:           b4_loss[0] = tk::from_float<float>(rv);
// CHECK:       tk::grid_sync();
// CHECK-NEXT:  // ---- phase 2
// CHECK:       extern "C" int tk_grid() { return 4; }
tile.kernel @k(%x: memref<4x4xf32>, %w: memref<4x8xf32>, %h: memref<8x8xf16>, %b: memref<8xf32>, %loss: memref<f32>, %w2: memref<4x8xf32>) inputs 4 results [4, 5] arena 2048 config {grid = 4 : i64, threads = 128 : i64, smem = 30720 : i64} {
  %t = sched.buffer offset 0 : memref<4x8xf32>
  %tv = sched.view %t : memref<4x8xf32> to memref<32xf32>
  %u = sched.buffer offset 1024 : memref<8x8xf16>
  tile.gemm ins(%x, %w, %b : memref<4x4xf32>, memref<4x8xf32>, memref<8xf32>) outs(%t : memref<4x8xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%a0: tensor<4x4xf32>, %a1: tensor<4x8xf32>, %a2: tensor<8xf32>):
    %m = tk.matmul %a0, %a1 transpose_a : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %s = tk.add %m, %a2 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r = tk.relu %s : tensor<4x8xf32>
    tk.yield %r : tensor<4x8xf32>
  }
  tile.gemm ins(%h : memref<8x8xf16>) outs(%u : memref<8x8xf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.f16", items = 1 : i64, offset = 1 : i64} {
  ^bb0(%c0: tensor<8x8xf16>):
    %m = tk.matmul %c0, %c0 transpose_b : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
    tk.yield %m : tensor<8x8xf16>
  }
  tile.map ins(%w : memref<4x8xf32>) outs(%w2 : memref<4x8xf32>) config {items = 1 : i64, offset = 2 : i64, chunk = 512 : i64} {
  ^bb0(%d0: tensor<4x8xf32>):
    %half = tk.fill 0.5 : tensor<f32>
    %p = tk.mul %d0, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    tk.yield %p : tensor<4x8xf32>
  }
  tile.sync grid
  tile.reduce ins(%tv : memref<32xf32>) outs(%loss : memref<f32>) config {items = 1 : i64, offset = 0 : i64, rows = 1 : i64} {
  ^bb0(%e0: tensor<32xf32>):
    %s = tk.sum %e0 axes [0] : tensor<32xf32> -> tensor<f32>
    tk.yield %s : tensor<f32>
  }
  tile.sync grid
  tile.map ins(%u : memref<8x8xf16>) outs(%u : memref<8x8xf16>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%f0: tensor<8x8xf16>):
    %n = tk.neg %f0 : tensor<8x8xf16>
    tk.yield %n : tensor<8x8xf16>
  }
}

// -----

// A single-block kernel: `tile.sync block` is __syncthreads(); a column
// reduction with rows = 128 outputs per item (as many as the threads) gives
// each thread one column and adds all rows in order: one slice, no partials.
// The rows go 16 loads at a time (all issued, then added in row order), the
// remainder as one more batch, its loads guarded (target.batched_reduce_tails).
// The sum is an output nothing reads: in a chain of launches only the last one
// runs it (target.grid_last_launch_outputs).
// CHECK:       // kernel one: 2 buffers, arena 0 bytes, grid 1, 128 threads
// CHECK:       static constexpr int kSmem = 0;
// CHECK:       { // tile.map: 12 elements
// CHECK:       {{^  }}__syncthreads();
// CHECK-NEXT:  // ---- phase 1
// CHECK-NEXT:  if (!tk_more)  // only outputs read it: a chain's last launch alone
// CHECK-NEXT:  { // tile.reduce tk.sum: 3 rows into 4 columns, 128 per item, rows in 1 slice of 3
// CHECK-NOT:     tk_part
// CHECK-NEXT:    for (int item = blockIdx.x; item < 1; item += G) {
// CHECK-NEXT:      const int c = item * 128 + threadIdx.x % 128;
// CHECK:             if (c < 4) {
// CHECK-NEXT:          const int r0 = 0, r1 = 3;
// CHECK-NEXT:          int r = r0;
// CHECK-NEXT:          for (; r + 16 <= r1; r += 16) {
// CHECK:                 for (int u = 0; u < 16; ++u) accum = __fadd_rn(accum, tk_v[u]);
// CHECK:               {  // the tail: its loads issued together too (target.batched_reduce_tails)
// CHECK-NEXT:            float tk_v[3];
// CHECK-NOT:     tk_part
// CHECK:           b1_s[(o0)] = tk::from_float<float>(
// CHECK-NOT:   tk::grid_sync
// CHECK:       extern "C" int tk_grid() { return 1; }
tile.kernel @one(%x: memref<3x4xf32>, %s: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<3x4xf32>) outs(%x : memref<3x4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<3x4xf32>):
    %e = tk.exp %a : tensor<3x4xf32>
    tk.yield %e : tensor<3x4xf32>
  }
  tile.sync block
  tile.reduce ins(%x : memref<3x4xf32>) outs(%s : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, rows = 128 : i64} {
  ^bb0(%a: tensor<3x4xf32>):
    %r = tk.sum %a axes [0] : tensor<3x4xf32> -> tensor<4xf32>
    tk.yield %r : tensor<4xf32>
  }
}

// -----

// A column reduction with rows = 32 columns per item in a 128-thread block:
// 4 groups of 32 threads each add a contiguous slice of the rows (here 10
// rows: slices of 3, the last one 1 row), coalesced across the lanes; then
// group 0 adds the partials in slice order and runs the epilogue.
// CHECK:       { // tile.reduce tk.max: 10 rows into 40 columns, 32 per item, rows in 4 slices of 3
// CHECK-NEXT:    __shared__ float tk_part[128];
// CHECK-NEXT:    for (int item = blockIdx.x; item < 2; item += G) {
// CHECK-NEXT:      const int c = item * 32 + threadIdx.x % 32;
// CHECK-NEXT:      const int o0 = (c);
// CHECK-NEXT:      float accum = -INFINITY;
// CHECK-NEXT:      if (c < 40) {
// CHECK-NEXT:        const int r0 = (int)(threadIdx.x / 32) * 3;
// CHECK-NEXT:        const int r1 = r0 + 3 < 10 ? r0 + 3 : 10;
// CHECK-NEXT:        int r = r0;
// CHECK-NEXT:        for (; r + 16 <= r1; r += 16) {
// CHECK:             {  // the tail: its loads issued together too (target.batched_reduce_tails)
// CHECK:               for (int u = 0; u < 3; ++u) if (r + u < r1) accum = tk::max_nan(accum, tk_v[u]);
// CHECK:           tk_part[threadIdx.x] = accum;
// CHECK-NEXT:      __syncthreads();
// CHECK-NEXT:      if (threadIdx.x < 32 && c < 40) {
// CHECK-NEXT:        for (int s = 1; s < 4; ++s) accum =
// CHECK-SAME:          tk_part[s * 32 + threadIdx.x]
// CHECK:             b1_m[(o0)] = tk::from_float<float>(
// CHECK:           __syncthreads();  // tk_part is reused by the next item
tile.kernel @sliced(%x: memref<10x40xf32>, %m: memref<40xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<10x40xf32>) outs(%m : memref<40xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<10x40xf32>):
    %r = tk.max %a axes [0] : tensor<10x40xf32> -> tensor<40xf32>
    tk.yield %r : tensor<40xf32>
  }
}
