// -t cuda on the tiny workload (B, I, H, O) = (16, 32, 64, 8), bf16 compute,
// captured by `trainkernel.capture` with the state updates marked as
// `trainkernel.pipeline.lower` marks them, and lowered with the compile
// pipeline's pass list (`pass_pipeline("tile")`), on the mma.sync engine: the cost
// model picks the wgmma engine for this one-block kernel since perf-log step 108
// (measured 14.33 -> 13.80 us a step, run 337674f-h100-c); this test pins the
// mma.sync printer, which fp32 steps and the engine choice still use.
// RUN: trainkernel-opt %s -p 'canonicalize,tk-decompose,canonicalize,cse,dce,tk-fuse,tk-to-sched{inplace=true},sched-inplace-state,sched-allocate,sched-to-tile{engine=mma}' -t cuda | filecheck %s
// RUN: trainkernel-opt %s -p 'canonicalize,tk-decompose,canonicalize,cse,dce,tk-fuse,tk-to-sched{inplace=true},sched-inplace-state,sched-allocate,sched-to-tile{engine=mma}' -t cuda | filecheck %s --check-prefix=ONEBLOCK
// RUN: trainkernel-opt %s -p 'canonicalize,tk-decompose,canonicalize,cse,dce,tk-fuse,tk-to-sched{inplace=true},sched-inplace-state,sched-allocate,sched-to-tile{grid=66 engine=mma}' -t cuda | filecheck %s --check-prefix=GRID
// RUN: trainkernel-opt %s -p 'canonicalize,tk-decompose,canonicalize,cse,dce,tk-fuse,tk-to-sched{inplace=true},sched-inplace-state,sched-allocate' | filecheck %s --check-prefix=SCHED

// Header: only the CUDA runtime and the package's own device library.
// CHECK:       #include <cuda_runtime.h>
// CHECK-NEXT:  #include "tk/tk.cuh"
// CHECK-NOT:   #include
// CHECK:       // kernel tiny_sgd_bf16: 11 buffers, arena 15360 bytes, grid 1, 128 threads
// CHECK-NEXT:  struct TkParams { void* buf[11]; char* arena; int first; int more; int parity; };
// CHECK-NEXT:  static constexpr int kSmem = (tk::gemm_smem_bytes<__nv_bfloat16, 64, 64, 32>() > 0 ? tk::gemm_smem_bytes<__nv_bfloat16, 64, 64, 32>() : 0);
// CHECK-NEXT:  static constexpr int kThreads = 128;
// CHECK:       #if !defined(TK_SEPARATE_IMAGE)
// CHECK-NEXT:  extern "C" __global__ void __launch_bounds__(128) tk_tiny_sgd_bf16_kernel(TkParams p) {
// Parameters are the f32 masters; the arena temporaries are typed pointers.
// CHECK:         float* b0 = (float*)p.buf[0];
// CHECK:         float* b10_out4 = (float*)p.buf[10];
// CHECK:         __nv_bfloat16* t{{[0-9]+}} = (__nv_bfloat16*)(p.arena + {{[0-9]+}});

// Forward: h = relu(x @ W1 + b1), then the output layer with the loss
// gradient as epilogue (NN); backward: dH = dY @ W2^T (NT), dW2 = h^T @ dY
// and dW1 = x^T @ dH (TN).
// CHECK:       // ---- phase 1
// CHECK-NEXT:  { // tile.gemm 16x64x32 mma.bf16 NN
// CHECK:         tk::gemm_tile_nt<kThreads, __nv_bfloat16, 64, 64, 32, false, false>({{.*}}, 32, {{.*}}, 64, 16, 64, 32, item / 1, item % 1, smem,
// CHECK:       // ---- phase 2
// CHECK-NEXT:  { // tile.gemm 16x8x64 mma.bf16 NN
// CHECK:         tk::gemm_tile_nt<kThreads, __nv_bfloat16, 64, 64, 32, false, false>({{.*}}, 64, {{.*}}, 8, 16, 8, 64,
// CHECK:       // ---- phase 3
// CHECK:       { // tile.reduce tk.sum over 128 elements into 1 outputs
// CHECK:       { // tile.gemm 16x64x8 mma.bf16 NT
// CHECK:         tk::gemm_tile_nt<kThreads, __nv_bfloat16, 64, 64, 32, false, true>({{.*}}, 8, {{.*}}, 8, 16, 64, 8,
// CHECK:       { // tile.gemm 64x8x16 mma.bf16 TN
// CHECK:         tk::gemm_tile_nt<kThreads, __nv_bfloat16, 64, 64, 32, true, false>({{.*}}, 64, {{.*}}, 8, 64, 8, 16,
// The dW2 epilogue writes the gradient and, in place, the new W2.
// CHECK:           b9_out3[(i)*8 + (j)] = tk::from_float<float>(
// CHECK-NEXT:      b2[(i)*8 + (j)] = tk::from_float<float>(
// The b2 gradient: a column sum with the SGD update as its epilogue, in place.
// CHECK:       { // tile.reduce tk.sum: 16 rows into 8 columns, 32 per item, rows in 4 slices of 4
// CHECK:           b10_out4[(o0)] = tk::from_float<float>(
// CHECK-NEXT:      b3[(o0)] = tk::from_float<float>(
// CHECK:       // ---- phase 4
// CHECK:       { // tile.gemm 32x64x16 mma.bf16 TN
// CHECK:         tk::gemm_tile_nt<kThreads, __nv_bfloat16, 64, 64, 32, true, false>({{.*}}, 32, {{.*}}, 64, 32, 64, 16,
// CHECK:       { // tile.reduce tk.sum: 16 rows into 64 columns, 32 per item, rows in 4 slices of 4
// CHECK-NOT:   // ---- phase 5

// The kernel the launchers use: its own address, or built apart
// (TK_SEPARATE_IMAGE, backend/build.py) the handle of the linked-in cubin.
// CHECK:       #if defined(TK_SEPARATE_IMAGE)
// CHECK:       static const void* tk_kernel = nullptr;
// CHECK:         cudaError_t e = cudaLibraryLoadData(&lib, _binary_image_cubin_start, nullptr, nullptr, 0, nullptr, nullptr, 0);
// CHECK-NEXT:    if (e == cudaSuccess) e = cudaLibraryGetKernel(&kernel, lib, "tk_tiny_sgd_bf16_kernel");
// CHECK:       #else
// CHECK-NEXT:  static const void* const tk_kernel = (const void*)tk_tiny_sgd_bf16_kernel;
// CHECK:       #endif
// CHECK:       static int tk_configure() {
// CHECK:         cudaError_t err = tk_load();
// CHECK:         err = cudaFuncSetAttribute(tk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);

// Launcher: cooperative launch with the kernel's shape, and the metadata the
// runtime reads.
// CHECK:       extern "C" int tk_num_buffers() { return 11; }
// CHECK-NEXT:  extern "C" long long tk_arena_bytes() { return 15360LL; }
// CHECK-NEXT:  extern "C" int tk_grid() { return 1; }
// CHECK-NEXT:  extern "C" int tk_threads() { return kThreads; }
// CHECK-NEXT:  extern "C" int tk_smem_bytes() { return kSmem; }
// CHECK:       extern "C" int tk_max_active_blocks_per_sm() {
// CHECK:         cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tk_kernel, kThreads, kSmem);
// A chain of launches (capture) tells each launch its place: the casts of the
// weights are carried from launch to launch (target.grid_carried_casts).
// CHECK:       extern "C" int tk_launch_chain(void** buffers, void* arena, int grid, void* stream, int index, int count) {
// CHECK:         for (int i = 0; i < 11; ++i) p.buf[i] = buffers[i];
// CHECK:         cudaLaunchCooperativeKernel(tk_kernel, dim3(grid), dim3(kThreads), args, kSmem,
// CHECK:       extern "C" int tk_launch(void** buffers, void* arena, int grid, void* stream) {
// CHECK-NEXT:    return tk_launch_chain(buffers, arena, grid, stream, 0, 1);

// Five phases, so four barriers. The cost model runs this step on one block,
// where a barrier is __syncthreads(): no grid barrier at all. With a forced
// grid every sched.barrier is one tk::grid_sync().
// SCHED-COUNT-4:  sched.barrier grid
// SCHED-NOT:      sched.barrier
// ONEBLOCK-NOT:   tk::grid_sync();
// ONEBLOCK:       // ---- phase 0
// ONEBLOCK:       {{^  }}__syncthreads();
// ONEBLOCK-NEXT:  // ---- phase 1
// ONEBLOCK:       {{^  }}__syncthreads();
// ONEBLOCK-NEXT:  // ---- phase 2
// ONEBLOCK:       {{^  }}__syncthreads();
// ONEBLOCK-NEXT:  // ---- phase 3
// ONEBLOCK:       {{^  }}__syncthreads();
// ONEBLOCK-NEXT:  // ---- phase 4
// ONEBLOCK-NOT:   // ---- phase
// ONEBLOCK-NOT:   tk::grid_sync();
// GRID:           // kernel tiny_sgd_bf16: 11 buffers, arena 15360 bytes, grid 66, 128 threads
// GRID:           tk::grid_sync();
// GRID-NEXT:      // ---- phase 1
// GRID:           tk::grid_sync();
// GRID-NEXT:      // ---- phase 2
// GRID:           tk::grid_sync();
// GRID-NEXT:      // ---- phase 3
// GRID:           tk::grid_sync();
// GRID-NEXT:      // ---- phase 4
// GRID-NOT:       tk::grid_sync();
// GRID:           extern "C" int tk_grid() { return 66; }

builtin.module {
  func.func @tiny_sgd_bf16(%0: tensor<32x64xf32> {tk.name = "params[0]"}, %1: tensor<64xf32> {tk.name = "params[1]"}, %2: tensor<64x8xf32> {tk.name = "params[2]"}, %3: tensor<8xf32> {tk.name = "params[3]"}, %4: tensor<16x32xf32> {tk.name = "x"}, %5: tensor<16x8xf32> {tk.name = "y"}) -> (tensor<f32> {tk.name = "[0]"}, tensor<32x64xf32> {tk.name = "[1][0]"}, tensor<64xf32> {tk.name = "[1][1]"}, tensor<64x8xf32> {tk.name = "[1][2]"}, tensor<8xf32> {tk.name = "[1][3]"}, tensor<32x64xf32> {tk.name = "[2][0]", tk.updates = 0 : i64}, tensor<64xf32> {tk.name = "[2][1]", tk.updates = 1 : i64}, tensor<64x8xf32> {tk.name = "[2][2]", tk.updates = 2 : i64}, tensor<8xf32> {tk.name = "[2][3]", tk.updates = 3 : i64}) {
    %6 = tk.cast %4 : tensor<16x32xf32> to tensor<16x32xbf16>
    %7 = tk.cast %0 : tensor<32x64xf32> to tensor<32x64xbf16>
    %8 = tk.matmul %6, %7 : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
    %9 = tk.cast %1 : tensor<64xf32> to tensor<64xbf16>
    %10 = tk.add %8, %9 : (tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
    %11 = tk.relu %10 : tensor<16x64xbf16>
    %12 = tk.cast %2 : tensor<64x8xf32> to tensor<64x8xbf16>
    %13 = tk.matmul %11, %12 : (tensor<16x64xbf16>, tensor<64x8xbf16>) -> tensor<16x8xbf16>
    %14 = tk.cast %3 : tensor<8xf32> to tensor<8xbf16>
    %15 = tk.add %13, %14 : (tensor<16x8xbf16>, tensor<8xbf16>) -> tensor<16x8xbf16>
    %16 = tk.cast %15 : tensor<16x8xbf16> to tensor<16x8xf32>
    %17 = tk.sub %16, %5 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
    %18 = tk.pow %17, 2.0 : tensor<16x8xf32>
    %19 = tk.mean %18 axes [0, 1] : tensor<16x8xf32> -> tensor<f32>
    %20 = tk.fill 1.0 : tensor<f32>
    %21 = tk.expand %20 : tensor<f32> -> tensor<16x8xf32>
    %22 = tk.fill 128.0 : tensor<f32>
    %23 = tk.div %21, %22 : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
    %24 = tk.pow %17, 1.0 : tensor<16x8xf32>
    %25 = tk.fill 2.0 : tensor<f32>
    %26 = tk.mul %24, %25 : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
    %27 = tk.mul %23, %26 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
    %28 = tk.cast %27 : tensor<16x8xf32> to tensor<16x8xbf16>
    %29 = tk.sum %28 axes [0] keepdim : tensor<16x8xbf16> -> tensor<1x8xbf16>
    %30 = tk.reshape %29 : tensor<1x8xbf16> -> tensor<8xbf16>
    %31 = tk.cast %30 : tensor<8xbf16> to tensor<8xf32>
    %32 = tk.transpose %11 perm [1, 0] : tensor<16x64xbf16> -> tensor<64x16xbf16>
    %33 = tk.matmul %32, %28 : (tensor<64x16xbf16>, tensor<16x8xbf16>) -> tensor<64x8xbf16>
    %34 = tk.transpose %12 perm [1, 0] : tensor<64x8xbf16> -> tensor<8x64xbf16>
    %35 = tk.matmul %28, %34 : (tensor<16x8xbf16>, tensor<8x64xbf16>) -> tensor<16x64xbf16>
    %36 = tk.cast %33 : tensor<64x8xbf16> to tensor<64x8xf32>
    %37 = tk.relu_grad %35, %11 : tensor<16x64xbf16>
    %38 = tk.sum %37 axes [0] keepdim : tensor<16x64xbf16> -> tensor<1x64xbf16>
    %39 = tk.reshape %38 : tensor<1x64xbf16> -> tensor<64xbf16>
    %40 = tk.cast %39 : tensor<64xbf16> to tensor<64xf32>
    %41 = tk.transpose %6 perm [1, 0] : tensor<16x32xbf16> -> tensor<32x16xbf16>
    %42 = tk.matmul %41, %37 : (tensor<32x16xbf16>, tensor<16x64xbf16>) -> tensor<32x64xbf16>
    %43 = tk.cast %42 : tensor<32x64xbf16> to tensor<32x64xf32>
    %44 = tk.fill 0.001 : tensor<f32>
    %45 = tk.mul %43, %44 : (tensor<32x64xf32>, tensor<f32>) -> tensor<32x64xf32>
    %46 = tk.sub %0, %45 : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
    %47 = tk.mul %40, %44 : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
    %48 = tk.sub %1, %47 : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %49 = tk.mul %36, %44 : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
    %50 = tk.sub %2, %49 : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
    %51 = tk.mul %31, %44 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    %52 = tk.sub %3, %51 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    func.return %19, %43, %40, %36, %31, %46, %48, %50, %52 : tensor<f32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<8xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<8xf32>
  }
}
