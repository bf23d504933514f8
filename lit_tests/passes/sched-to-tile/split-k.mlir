// sched-to-tile: split-K (of the mma.sync engine; engine.mlir has the wgmma one)
// for the gemms of a phase that leaves most of the grid
// idle. Phase 0 has 4 output tiles (128x128 in 64x64) with K = 4096 on a grid
// of 64: 8 K slices of 512 each (grid / work items = 16, at most the target's
// max_ksplit = 16, but each slice at least ksplit_min_k = 512 of K), 32 work items; a workspace (8 x 128 x 128 fp32 partials, then 4 u32 tile
// counters) is appended to the arena after its last buffer (offset 65536 ->
// arena 65536 + 524288 + 16). Phase 1's gemm has the same shape but shares its
// phase with a map of 64 items: the phase fills the grid, so no split.
// RUN: trainkernel-opt %s -p 'sched-to-tile{grid=64 engine=mma}' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile{grid=8 engine=mma}' | filecheck %s --check-prefix=EIGHT
// RUN: trainkernel-opt %s -p 'sched-to-tile{grid=1 engine=mma}' | filecheck %s --check-prefix=ONE
// RUN: trainkernel-opt %s -p 'sched-to-tile{grid=64 engine=mma}' -t cuda | filecheck %s --check-prefix=CUDA

// CHECK:       tile.kernel @step({{.*}}) inputs 3 results [3, 4] arena 589840 config {grid = 64 : i64
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, ksplit = 8 : i64, workspace = 65536 : i64} {
// CHECK:         tile.sync grid
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64} {
// CHECK:         tile.map {{.*}} config {items = 64 : i64, offset = 4 : i64, chunk = 512 : i64} {

// 8 blocks for 4 tiles: 2 slices of 2048.
// EIGHT:       arena 196624
// EIGHT:       items = 8 : i64, offset = 0 : i64, ksplit = 2 : i64, workspace = 65536 : i64

// One block: nothing to spread over, no split, the arena as allocated.
// ONE:         arena 65536
// ONE-NOT:     ksplit
// The CUDA of the split gemm: item = (tile, slice); the slice's operands start
// k0 = slice * 512 into A's rows (k contiguous) and B's columns (k rows); its
// fp32 partial goes to the workspace; the slice that arrives last sums the 8
// partials in slice order (__ldcg: written by other SMs) and runs the epilogue.
// CUDA:       { // tile.gemm 128x128x4096 mma.bf16 NN, split-K: 8 slices of 512
// CUDA-NEXT:    float* tk_ws = (float*)(p.arena + 65536);
// CUDA-NEXT:    unsigned* tk_arrived = (unsigned*)(p.arena + 65536 + 524288);
// CUDA-NEXT:    for (int item = blockIdx.x; item < 32; item += G) {
// CUDA-NEXT:      const int tk_tile = (int)(item / 8), tk_slice = (int)(item % 8);
// CUDA-NEXT:      const int tk_k0 = tk_slice * 512;
// CUDA-NEXT:      const int tk_tm = tk_tile / 2, tk_tn = tk_tile % 2;
// CUDA-NEXT:      float* tk_part = tk_ws + (long long)tk_slice * 16384;
// CUDA-NEXT:      tk::gemm_tile_nt<kThreads, __nv_bfloat16, 64, 64, 32, false, false>(b0_a + tk_k0, 4096, b1_b + (long long)tk_k0 * 128, 128, 128, 128, min(512, 4096 - tk_k0), tk_tm, tk_tn, smem,
// CUDA-NEXT:        [&](int i, int j, float acc) { tk_part[(long long)i * 128 + j] = acc; });
// CUDA-NEXT:      if (tk::split_k_last(&tk_arrived[tk_tile], 8u)) {
// CUDA:                for (int s = 0; s < 8; ++s) acc += __ldcg(tk_ws + (long long)s * 16384 + (long long)i * 128 + j);
// CUDA-NEXT:          const __nv_bfloat16 mmv_bits = tk::from_float<__nv_bfloat16>(acc);
// CUDA-NEXT:          const float mmv = tk::to_float(mmv_bits);
// CUDA-NEXT:          t5_h[(i)*128 + (j)] = mmv_bits;
// The unsplit gemm of phase 1 is the plain tile loop.
// CUDA:       { // tile.gemm 128x128x4096 mma.bf16 NN{{$}}
// CUDA-NOT:   split_k_last
sched.program @step(%a: memref<128x4096xbf16>, %b: memref<4096x128xbf16>, %x: memref<128x256xf32>, %c: memref<128x128xbf16>, %y: memref<128x256xf32>) inputs 3 results [3, 4] arena 65536 {
  %h = sched.buffer offset 0 : memref<128x128xbf16>
  sched.phase {
    sched.compute ins(%a, %b : memref<128x4096xbf16>, memref<4096x128xbf16>) outs(%h : memref<128x128xbf16>) {
    ^bb0(%p: tensor<128x4096xbf16>, %q: tensor<4096x128xbf16>):
      %m = tk.matmul %p, %q : (tensor<128x4096xbf16>, tensor<4096x128xbf16>) -> tensor<128x128xbf16>
      tk.yield %m : tensor<128x128xbf16>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%a, %b, %h : memref<128x4096xbf16>, memref<4096x128xbf16>, memref<128x128xbf16>) outs(%c : memref<128x128xbf16>) {
    ^bb0(%p: tensor<128x4096xbf16>, %q: tensor<4096x128xbf16>, %r: tensor<128x128xbf16>):
      %m = tk.matmul %p, %q : (tensor<128x4096xbf16>, tensor<4096x128xbf16>) -> tensor<128x128xbf16>
      %s = tk.add %m, %r : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
      tk.yield %s : tensor<128x128xbf16>
    }
    sched.compute ins(%x : memref<128x256xf32>) outs(%y : memref<128x256xf32>) {
    ^bb0(%p: tensor<128x256xf32>):
      %e = tk.exp %p : tensor<128x256xf32>
      tk.yield %e : tensor<128x256xf32>
    }
  }
}
