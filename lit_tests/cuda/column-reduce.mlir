// Column reductions of grid kernels: 16-byte loads where the input is an arena
// buffer (256-byte aligned) whose rows and 32-column items split into whole
// vectors; one column a lane otherwise (a kernel argument, whose alignment the
// printer cannot know, or a row length that is not a whole number of vectors).
// RUN: trainkernel-opt %s --split-input-file -t cuda | filecheck %s

// bf16, 8 elements a load: an item's 32 columns are 4 lanes of a row, a warp
// reads 8 rows at once; 4 warps take 3 rows each (10 rows), every lane folds
// its rows 16 loads at a time with the tail predicated, the row groups fold
// through the shuffle tree (offsets 16, 8, 4), then the warps in slice order.
// CHECK:       { // tile.reduce tk.sum: 10 rows into 40 columns, 32 per item, rows in 4 slices of 3, 16-byte loads (4 lanes a row)
// CHECK-NEXT:    __shared__ float tk_part[128];
// CHECK-NEXT:    const int tk_warp = threadIdx.x / 32, tk_lane = threadIdx.x % 32;
// CHECK-NEXT:    for (int item = blockIdx.x; item < 2; item += G) {
// CHECK-NEXT:      const int cb = (int)item * 32 + (tk_lane % 4) * 8;
// CHECK-NEXT:      float tk_acc[8];
// CHECK:           for (int v = 0; v < 8; ++v) tk_acc[v] = 0.0f;
// CHECK-NEXT:      if (cb < 40) {
// CHECK-NEXT:        const int r1 = (int)tk_warp * 3 + 3 < 10 ? (int)tk_warp * 3 + 3 : 10;
// CHECK-NEXT:        for (int r = (int)tk_warp * 3 + tk_lane / 4; r < r1; r += 128) {
// CHECK-NEXT:          tk::Vec<__nv_bfloat16, 8> tk_raw[16];
// CHECK:                 if (r + u * 8 < r1) tk_raw[u] = tk::load_vec<8>({{t[0-9]+_t}} + (r + u * 8) * 40 + cb);
// CHECK:                 if (r + u * 8 < r1)
// CHECK:                   for (int v = 0; v < 8; ++v) { const float x = tk::to_float(tk_raw[u].v[v]); tk_acc[v] = tk_acc[v] + x; }
// CHECK:           tk::warp_fold_row_groups<4>(tk_acc, tk::SumOp{});
// CHECK-NEXT:      if (tk_lane < 4)
// CHECK:             for (int v = 0; v < 8; ++v) tk_part[tk_warp * 32 + tk_lane * 8 + v] = tk_acc[v];
// CHECK-NEXT:      __syncthreads();
// CHECK-NEXT:      const int c = (int)item * 32 + threadIdx.x;
// CHECK-NEXT:      if (threadIdx.x < 32 && c < 40) {
// CHECK-NEXT:        const int o0 = (c);
// CHECK-NEXT:        float accum = tk_part[threadIdx.x];
// CHECK-NEXT:        for (int s = 1; s < 4; ++s) accum = accum + tk_part[s * 32 + threadIdx.x];
// CHECK-NEXT:        const float rv = tk::to_float(tk::from_float<__nv_bfloat16>(accum));
// CHECK:             b1_s[(o0)] = tk::from_float<float>(
// CHECK:           __syncthreads();  // tk_part is reused by the next item
tile.kernel @vec_sum(%x: memref<10x40xbf16>, %s: memref<40xf32>) inputs 1 results [1] arena 1024 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  %t = sched.buffer offset 0 : memref<10x40xbf16>
  tile.map ins(%x : memref<10x40xbf16>) outs(%t : memref<10x40xbf16>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%in: tensor<10x40xbf16>):
    %e = tk.exp %in : tensor<10x40xbf16>
    tk.yield %e : tensor<10x40xbf16>
  }
  tile.sync grid
  tile.reduce ins(%t : memref<10x40xbf16>) outs(%s : memref<40xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<10x40xbf16>):
    %r = tk.sum %a axes [0] : tensor<10x40xbf16> -> tensor<40xbf16>
    %c = tk.cast %r : tensor<40xbf16> to tensor<40xf32>
    tk.yield %c : tensor<40xf32>
  }
}

// -----

// f32, 4 elements a load: 8 lanes a row, 4 row groups a warp (offsets 16, 8);
// a max folds with tk::max_nan from -inf.
// CHECK:       { // tile.reduce tk.max: 10 rows into 40 columns, 32 per item, rows in 4 slices of 3, 16-byte loads (8 lanes a row)
// CHECK:           const int cb = (int)item * 32 + (tk_lane % 8) * 4;
// CHECK:           for (int v = 0; v < 4; ++v) tk_acc[v] = -INFINITY;
// CHECK:           for (int r = (int)tk_warp * 3 + tk_lane / 8; r < r1; r += 64) {
// CHECK:             tk::Vec<float, 4> tk_raw[16];
// CHECK:                   for (int v = 0; v < 4; ++v) { const float x = tk::to_float(tk_raw[u].v[v]); tk_acc[v] = tk::max_nan(tk_acc[v], x); }
// CHECK:           tk::warp_fold_row_groups<8>(tk_acc, tk::MaxOp{});
// CHECK:             for (int s = 1; s < 4; ++s) accum = tk::max_nan(accum, tk_part[s * 32 + threadIdx.x]);
tile.kernel @vec_max(%x: memref<10x40xf32>, %m: memref<40xf32>) inputs 1 results [1] arena 2048 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  %t = sched.buffer offset 0 : memref<10x40xf32>
  tile.map ins(%x : memref<10x40xf32>) outs(%t : memref<10x40xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%in: tensor<10x40xf32>):
    %e = tk.exp %in : tensor<10x40xf32>
    tk.yield %e : tensor<10x40xf32>
  }
  tile.sync grid
  tile.reduce ins(%t : memref<10x40xf32>) outs(%m : memref<40xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<10x40xf32>):
    %r = tk.max %a axes [0] : tensor<10x40xf32> -> tensor<40xf32>
    tk.yield %r : tensor<40xf32>
  }
}

// -----

// A kernel argument: the scalar path (one column a lane).
// CHECK:       { // tile.reduce tk.sum: 10 rows into 40 columns, 32 per item, rows in 4 slices of 3
// CHECK-NOT:   16-byte loads
// CHECK-NEXT:    __shared__ float tk_part[128];
// CHECK-NEXT:    for (int item = blockIdx.x; item < 2; item += G) {
// CHECK-NEXT:      const int c = item * 32 + threadIdx.x % 32;
tile.kernel @argument(%x: memref<10x40xbf16>, %s: memref<40xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<10x40xbf16>) outs(%s : memref<40xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<10x40xbf16>):
    %r = tk.sum %a axes [0] : tensor<10x40xbf16> -> tensor<40xbf16>
    %c = tk.cast %r : tensor<40xbf16> to tensor<40xf32>
    tk.yield %c : tensor<40xf32>
  }
}

// -----

// Rows of 36 bf16 columns are not whole 8-element vectors: the scalar path.
// CHECK:       { // tile.reduce tk.sum: 10 rows into 36 columns, 32 per item, rows in 4 slices of 3
// CHECK-NOT:   16-byte loads
// CHECK-NEXT:    __shared__ float tk_part[128];
tile.kernel @ragged(%x: memref<10x36xbf16>, %s: memref<36xf32>) inputs 1 results [1] arena 1024 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  %t = sched.buffer offset 0 : memref<10x36xbf16>
  tile.map ins(%x : memref<10x36xbf16>) outs(%t : memref<10x36xbf16>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%in: tensor<10x36xbf16>):
    %e = tk.exp %in : tensor<10x36xbf16>
    tk.yield %e : tensor<10x36xbf16>
  }
  tile.sync grid
  tile.reduce ins(%t : memref<10x36xbf16>) outs(%s : memref<36xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<10x36xbf16>):
    %r = tk.sum %a axes [0] : tensor<10x36xbf16> -> tensor<36xbf16>
    %c = tk.cast %r : tensor<36xbf16> to tensor<36xf32>
    tk.yield %c : tensor<36xf32>
  }
}
