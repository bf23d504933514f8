// sched-to-tile: the gemm engine. Phase 0's 1024x1024x1024 bf16 product has
// rows of whole 16 bytes, so the wgmma engine can run it; the cost model
// prices both engines (mma.sync 64x64 tiles on up to 528 blocks against the
// wgmma tile on one 384-thread block per SM, at each of its widths) and keeps
// wgmma, 64 wide (the product has 64 tiles of 128 x 128: 128 units of
// 128 x 64 fill more of the 132 SMs). Every gemm of the kernel then takes it:
// one tile shape, 384 threads, the pipeline's shared memory (8 stages of
// 24 KB, barriers, alignment slack). Every tile of these products is whole
// (1024 is a multiple of 128 and 64), so the printer drops the epilogues'
// bounds tests (grid_gemm_units' fifth argument, kWholeTiles).
// RUN: trainkernel-opt %s -p 'sched-to-tile' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile{engine=mma}' | filecheck %s --check-prefix=MMA
// RUN: trainkernel-opt %s -p 'sched-to-tile' -t cuda | filecheck %s --check-prefix=CUDA

// CHECK:       tile.kernel @step({{.*}}) inputs 2 results [2] arena 2097152 config {grid = 128 : i64, threads = 384 : i64, smem = 218240 : i64}
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 128 : i64, offset = 0 : i64, engine = "wgmma"} {
// CHECK:         tile.sync grid
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 128 : i64, offset = 0 : i64, engine = "wgmma"} {

// engine=mma: the mma.sync tiles, 128 threads, their cp.async pipeline.
// MMA:         tile.kernel @step({{.*}}) inputs 2 results [2] arena 2097152 config {grid = {{[0-9]+}} : i64, threads = 128 : i64, smem = 30720 : i64}
// MMA-NOT:     engine

// What -t cuda prints: sm_90a code, the operands' tensor maps in the parameters (two per
// gemm), one pipeline set up at kernel start and kept from gemm to gemm,
// proxy fences on both sides of each grid barrier (TMA reads what the phase
// before stored), and the launcher encoding the maps for the call's buffers.
// CUDA:       #include "tk/hopper_gemm.cuh"
// CUDA-NEXT:  // requires: sm_90a
// CUDA:       struct TkParams { CUtensorMap maps[4]; void* buf[3]; char* arena; };
// CUDA-NEXT:  using TkShape = tk::hopper::TileById<2>::type;
// CUDA-NEXT:  static constexpr int kSmem = TkShape::SMEM_BYTES;
// CUDA:       __launch_bounds__(384, 1) tk_step_kernel(const __grid_constant__ TkParams p)
// CUDA:         if (threadIdx.x == 0) tk::hopper::pipeline_init<TkShape>(tk_hbase);
// CUDA:         tk::hopper::PipeState tk_pipe;
// CUDA:         tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true>(&p.maps[0], &p.maps[1], tk_gp,
// CUDA:         tk::hopper::fence_proxy_async_global();
// CUDA-NEXT:    tk::grid_sync();
// CUDA-NEXT:    tk::hopper::fence_proxy_async_global();
// CUDA:         tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, true, true>(&p.maps[2], &p.maps[3], tk_gp,
// CUDA:       tk::hopper::operand_maps<__nv_bfloat16, TkShape, false, false>(&p.maps[0], &p.maps[1], buffers[0], 1024, buffers[1], 1024, 1024, 1024, 1024)
// CUDA:       tk::hopper::operand_maps<__nv_bfloat16, TkShape, false, true>(&p.maps[2], &p.maps[3], (char*)arena + 0, 1024, buffers[1], 1024, 1024, 1024, 1024)

sched.program @step(%a: memref<1024x1024xbf16>, %b: memref<1024x1024xbf16>, %c: memref<1024x1024xbf16>) inputs 2 results [2] arena 2097152 {
  %h = sched.buffer offset 0 : memref<1024x1024xbf16>
  sched.phase {
    sched.compute ins(%a, %b : memref<1024x1024xbf16>, memref<1024x1024xbf16>) outs(%h : memref<1024x1024xbf16>) {
    ^bb0(%p: tensor<1024x1024xbf16>, %q: tensor<1024x1024xbf16>):
      %m = tk.matmul %p, %q : (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
      tk.yield %m : tensor<1024x1024xbf16>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%h, %b : memref<1024x1024xbf16>, memref<1024x1024xbf16>) outs(%c : memref<1024x1024xbf16>) {
    ^bb0(%p: tensor<1024x1024xbf16>, %q: tensor<1024x1024xbf16>):
      %m = tk.matmul %p, %q transpose_b : (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
      tk.yield %m : tensor<1024x1024xbf16>
    }
  }
}
