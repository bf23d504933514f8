// -t cuda picks the index type per kernel: `int` where every buffer's and
// tensor's element count and every loop end (items + grid, items * chunk plus
// a block of threads, ...) fits in 2**31 - 1 (every kernel of the workloads:
// the code is unchanged), `long long` loop variables, multi-indices and
// 64-bit `_linear` products otherwise (issue 12, item 2).
// RUN: trainkernel-opt %s --split-input-file -t cuda | filecheck %s

// 2**31 elements: a map over a 65536x32768 weight with a broadcast bias.
// CHECK:       // kernel wide_map: 3 buffers, arena 0 bytes, grid 528, 128 threads, 64-bit indices
// CHECK:       { // tile.map: 2147483648 elements, 4 per thread an item, every read issued before any store
// CHECK-NEXT:    for (long long item = blockIdx.x; item < 4194304; item += G) {
// CHECK-NEXT:      const long long end = min((long long)(item + 1) * 512, (long long)2147483648);
// CHECK-NEXT:      const long long first = (long long)item * 512 + threadIdx.x;
// CHECK:             const long long e = first + (long long)u * kThreads;
// CHECK-NEXT:        if (e < end) {
// CHECK-NEXT:          const long long i0 = (e) / 32768;
// CHECK-NEXT:          const long long i1 = ((e)) % 32768;
// CHECK-NEXT:          tk_l0[u] = tk::to_float(b0_w[(long long)(i0)*32768 + (i1)]);
// CHECK-NEXT:          tk_l1[u] = tk::to_float(b1_b[(i1)]);
// CHECK:               const float v1 = __fadd_rn(tk_l0[u], tk_l1[u]);
// CHECK-NEXT:          b2_y[(long long)(i0)*32768 + (i1)] = tk::from_float<float>(v1);
tile.kernel @wide_map(%w: memref<65536x32768xf32>, %b: memref<32768xf32>, %y: memref<65536x32768xf32>) inputs 2 results [2] arena 0 config {grid = 528 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%w, %b : memref<65536x32768xf32>, memref<32768xf32>) outs(%y : memref<65536x32768xf32>) config {items = 4194304 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<65536x32768xf32>, %c: tensor<32768xf32>):
    %s = tk.add %a, %c : (tensor<65536x32768xf32>, tensor<32768xf32>) -> tensor<65536x32768xf32>
    tk.yield %s : tensor<65536x32768xf32>
  }
}

// -----

// 2**30 elements: 32-bit, the same code as every kernel of the suite.
// CHECK:       // kernel narrow_map: 3 buffers, arena 0 bytes, grid 528, 128 threads{{$}}
// CHECK:       { // tile.map: 1073741824 elements
// CHECK-NEXT:    for (int item = blockIdx.x; item < 2097152; item += G) {
// CHECK-NEXT:      const int end = min((int)(item + 1) * 512, (int)1073741824);
// CHECK-NEXT:      const int first = (int)item * 512 + threadIdx.x;
// CHECK:             const int e = first + (int)u * kThreads;
// CHECK-NEXT:        if (e < end) {
// CHECK-NEXT:          const int i0 = (e) / 32768;
// CHECK-NEXT:          const int i1 = ((e)) % 32768;
// CHECK-NEXT:          tk_l0[u] = tk::to_float(b0_w[(i0)*32768 + (i1)]);
tile.kernel @narrow_map(%w: memref<32768x32768xf32>, %b: memref<32768xf32>, %y: memref<32768x32768xf32>) inputs 2 results [2] arena 0 config {grid = 528 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%w, %b : memref<32768x32768xf32>, memref<32768xf32>) outs(%y : memref<32768x32768xf32>) config {items = 2097152 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<32768x32768xf32>, %c: tensor<32768xf32>):
    %s = tk.add %a, %c : (tensor<32768x32768xf32>, tensor<32768xf32>) -> tensor<32768x32768xf32>
    tk.yield %s : tensor<32768x32768xf32>
  }
}

// -----

// The boundary: 2**31 - 1024 elements stay 32-bit (the last chunk ends at the
// last element, its threads stop below 2**31 - 1) ...
// CHECK:       // kernel edge_narrow: 2 buffers, arena 0 bytes, grid 132, 128 threads{{$}}
// CHECK:         for (int item = blockIdx.x; item < 4194302; item += G) {
tile.kernel @edge_narrow(%x: memref<2147482624xbf16>, %y: memref<2147482624xbf16>) inputs 1 results [1] arena 0 config {grid = 132 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<2147482624xbf16>) outs(%y : memref<2147482624xbf16>) config {items = 4194302 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<2147482624xbf16>):
    tk.yield %a : tensor<2147482624xbf16>
  }
}

// -----

// ... 2**31 - 128 do not: the last chunk's end, 4194304 * 512, is 2**31.
// CHECK:       // kernel edge_wide: 2 buffers, arena 0 bytes, grid 132, 128 threads, 64-bit indices
// CHECK:         for (long long item = blockIdx.x; item < 4194304; item += G) {
// CHECK-NEXT:      const long long end = min((long long)(item + 1) * 512, (long long)2147483520);
tile.kernel @edge_wide(%x: memref<2147483520xbf16>, %y: memref<2147483520xbf16>) inputs 1 results [1] arena 0 config {grid = 132 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<2147483520xbf16>) outs(%y : memref<2147483520xbf16>) config {items = 4194304 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<2147483520xbf16>):
    tk.yield %a : tensor<2147483520xbf16>
  }
}

// -----

// A 50000x50000 GEMM epilogue (the issue's reproducer): the device GEMM hands
// out int (i, j) below M and N; the element offset is a 64-bit product, and an
// arena offset past 2**31 is a 64-bit literal.
// CHECK:       // kernel wide_gemm: 3 buffers, arena 10000000000 bytes, grid 528, 128 threads, 64-bit indices
// CHECK:         __nv_bfloat16* t3_h = (__nv_bfloat16*)(p.arena + 5000000000);
// CHECK:       { // tile.gemm 50000x50000x64 mma.bf16 NN
// CHECK-NEXT:    for (long long item = blockIdx.x; item < 611524; item += G) {
// CHECK-NEXT:      tk::gemm_tile_nt<kThreads, __nv_bfloat16, 64, 64, 32, false, false>(b0_x, 64, b1_w, 50000, 50000, 50000, 64, (int)(item / 782), (int)(item % 782), smem,
// CHECK-NEXT:        [&](int i, int j, float acc) {
// CHECK-NEXT:          const __nv_bfloat16 mmv_bits = tk::from_float<__nv_bfloat16>(acc);
// CHECK-NEXT:          const float mmv = tk::to_float(mmv_bits);
// CHECK-NEXT:          t3_h[(long long)(i)*50000 + (j)] = mmv_bits;
// The sum over the 2.5e9 products: long long r, rr and q's, in the batches of
// 16 loads and in the tail.
// CHECK:       { // tile.reduce tk.sum over 2500000000 elements into 1 outputs
// CHECK-NEXT:    for (long long item = blockIdx.x; item < 1; item += G) {
// CHECK:           long long r = threadIdx.x;
// CHECK-NEXT:      for (; r + 15 * (long long)blockDim.x < 2500000000; r += 16 * (long long)blockDim.x) {
// CHECK:               const long long rr = r + u * (long long)blockDim.x;
// CHECK-NEXT:          const long long q0 = (rr) / 50000;
// CHECK-NEXT:          const long long q1 = ((rr)) % 50000;
// CHECK-NEXT:          tk_v[u] = tk::to_float(t3_h[(long long)(q0)*50000 + (q1)]);
// CHECK:           {  // the tail: its loads issued together too (target.batched_reduce_tails)
// CHECK:               if (r + u * (long long)blockDim.x < 2500000000) {
// CHECK-NEXT:            const long long rr = r + u * (long long)blockDim.x;
// CHECK-NEXT:            const long long q0 = (rr) / 50000;
// CHECK-NEXT:            const long long q1 = ((rr)) % 50000;
// CHECK-NEXT:            tk_v[u] = tk::to_float(t3_h[(long long)(q0)*50000 + (q1)]);
tile.kernel @wide_gemm(%x: memref<50000x64xbf16>, %w: memref<64x50000xbf16>, %s: memref<f32>) inputs 2 results [2] arena 10000000000 config {grid = 528 : i64, threads = 128 : i64, smem = 30720 : i64} {
  %h = sched.buffer offset 5000000000 : memref<50000x50000xbf16>
  tile.gemm ins(%x, %w : memref<50000x64xbf16>, memref<64x50000xbf16>) outs(%h : memref<50000x50000xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 611524 : i64, offset = 0 : i64} {
  ^bb0(%a: tensor<50000x64xbf16>, %b: tensor<64x50000xbf16>):
    %m = tk.matmul %a, %b : (tensor<50000x64xbf16>, tensor<64x50000xbf16>) -> tensor<50000x50000xbf16>
    tk.yield %m : tensor<50000x50000xbf16>
  }
  tile.sync grid
  tile.reduce ins(%h : memref<50000x50000xbf16>) outs(%s : memref<f32>) config {items = 1 : i64, offset = 0 : i64, rows = 1 : i64} {
  ^bb0(%c: tensor<50000x50000xbf16>):
    %t = tk.sum %c axes [0, 1] : tensor<50000x50000xbf16> -> tensor<bf16>
    %f = tk.cast %t : tensor<bf16> to tensor<f32>
    tk.yield %f : tensor<f32>
  }
}

// -----

// A column reduction (bias gradient) over 10**9 rows of 4: long long c and r.
// CHECK:       // kernel wide_columns: 2 buffers, arena 0 bytes, grid 1, 128 threads, 64-bit indices
// CHECK:       { // tile.reduce tk.sum: 1000000000 rows into 4 columns, 128 per item, rows in 1 slice of 1000000000
// CHECK-NEXT:    for (long long item = blockIdx.x; item < 1; item += G) {
// CHECK-NEXT:      const long long c = item * 128 + threadIdx.x % 128;
// CHECK-NEXT:      const long long o0 = (c);
// CHECK-NEXT:      float accum = 0.0f;
// CHECK-NEXT:      if (c < 4) {
// CHECK-NEXT:        const long long r0 = 0, r1 = 1000000000;
// CHECK-NEXT:        long long r = r0;
// CHECK-NEXT:        for (; r + 16 <= r1; r += 16) {
// CHECK-NEXT:          float tk_v[16];
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT:          for (int u = 0; u < 16; ++u) {
// CHECK-NEXT:            const long long rr = r + u;
// CHECK-NEXT:            const long long q0 = (rr);
// CHECK-NEXT:            tk_v[u] = tk::to_float(b0_g[(long long)(q0)*4 + (o0)]);
tile.kernel @wide_columns(%g: memref<1000000000x4xf32>, %db: memref<4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%g : memref<1000000000x4xf32>) outs(%db : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, rows = 128 : i64} {
  ^bb0(%a: tensor<1000000000x4xf32>):
    %t = tk.sum %a axes [0] : tensor<1000000000x4xf32> -> tensor<4xf32>
    tk.yield %t : tensor<4xf32>
  }
}
