// sched-to-tile{mixed=on} (target.mixed_gemm_engines): a product whose operand rows
// are whole 16 bytes takes the wgmma engine, and one whose rows are not (a head of
// 10 bf16 outputs: 20-byte rows) takes mma.sync tiles in the same kernel, their
// shared memory after the wgmma pipeline's. Off (the default), one such product
// keeps every product of the kernel on mma.sync, and forcing wgmma is an error.
// RUN: trainkernel-opt %s -p 'sched-to-tile{mixed=on engine=wgmma cols=64 rows=64}' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile{mixed=off}' | filecheck %s --check-prefix=OFF
// RUN: not trainkernel-opt %s -p 'sched-to-tile{mixed=off engine=wgmma}' 2>&1 | filecheck %s --check-prefix=FORCED
// RUN: not trainkernel-opt %s -p 'sched-to-tile{mixed=maybe}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: trainkernel-opt %s -p 'sched-to-tile{mixed=on engine=wgmma cols=64 rows=64}' -t cuda | filecheck %s --check-prefix=CUDA

// The pipeline of 64 x 64 tiles (142,464 bytes) and one 64 x 64 x 32 bf16
// mma.sync tile (30,720) after it; 256 threads (a producer and one consumer).
// CHECK:       tile.kernel @head({{.*}}) inputs 3 results [4] arena 0 config {grid = {{[0-9]+}} : i64, threads = 256 : i64, smem = 173184 : i64}
// CHECK:       tile.gemm {{.*}} config {tile = array<i64: 64, 64, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma"}
// CHECK:       tk.matmul {{.*}} -> tensor<256x512xbf16>
// CHECK:       tile.sync grid
// CHECK:       tile.gemm {{.*}} config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64}
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:  tk.matmul {{.*}} -> tensor<256x10xbf16>

// The printer: both tiles' shared memory, the mma.sync tile after the pipeline's
// (which keeps its stages and mbarriers from gemm to gemm), on 128 of the 256
// threads (the rest only join its barriers); the tensor maps of the wgmma gemm only.
// CUDA:        struct TkParams { CUtensorMap maps[2];
// CUDA:        static constexpr int kSmem = TkShape::SMEM_BYTES + (tk::gemm_smem_bytes<__nv_bfloat16, 64, 64, 32>()
// CUDA:        static constexpr int kThreads = 256;
// CUDA:        char* const tk_mma_smem = smem + TkShape::SMEM_BYTES;
// CUDA:        tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true>(&p.maps[0], &p.maps[1],
// CUDA:        tk::gemm_tile_nt<128, __nv_bfloat16, 64, 64, 32, false, false>({{.*}}, tk_mma_smem,

// OFF:         tile.kernel @head({{.*}}) inputs 3 results [4] arena 0 config {grid = {{[0-9]+}} : i64, threads = 128 : i64
// OFF-NOT:     engine
// FORCED:      engine=wgmma needs bf16/f16 gemms whose operand rows are whole 16 bytes
// BAD:         sched-to-tile: mixed must be target, on or off, got 'maybe'

sched.program @head(%x: memref<256x256xbf16>, %w1: memref<256x512xbf16>, %w2: memref<512x10xbf16>, %h: memref<256x512xbf16>, %y: memref<256x10xbf16>) inputs 3 results [4] arena 0 {
  sched.phase {
    sched.compute ins(%x, %w1 : memref<256x256xbf16>, memref<256x512xbf16>) outs(%h : memref<256x512xbf16>) {
    ^bb0(%p: tensor<256x256xbf16>, %q: tensor<256x512xbf16>):
      %m = tk.matmul %p, %q : (tensor<256x256xbf16>, tensor<256x512xbf16>) -> tensor<256x512xbf16>
      tk.yield %m : tensor<256x512xbf16>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%h, %w2 : memref<256x512xbf16>, memref<512x10xbf16>) outs(%y : memref<256x10xbf16>) {
    ^bb0(%p: tensor<256x512xbf16>, %q: tensor<512x10xbf16>):
      %m = tk.matmul %p, %q : (tensor<256x512xbf16>, tensor<512x10xbf16>) -> tensor<256x10xbf16>
      tk.yield %m : tensor<256x10xbf16>
    }
  }
}
