// What a gemm unit's epilogue stores cost, by the width of a thread's store
// (perf-log step 94). The unit timer put a 128 x 64 bf16 tile's row epilogue at
// ~1.85k cycles of loads, arithmetic and stores on mlp4's forward units (run
// bba3876-h100: its operand loads were issued before the K loop), where the
// tile's 16 KB would take ~160-330 cycles at one SM's 50-100 B a cycle. The
// row walk (tk/hopper_gemm.cuh rows_epilogue) gives thread t column t % 32 of
// 16 rows a pass: each store is 2 bytes, a warp's 64 contiguous bytes. This
// probe stores the same tile from registers in four ways and times the issue
// (all threads past their stores) and the completion (every thread's
// __threadfence() after them):
//   col2   the row walk: 2 passes x 16 rows, one bf16 a store (64 B a warp)
//   pair4  a thread's two adjacent columns of 16 rows: bf16x2 (128 B a warp)
//   vec16  a thread's eight adjacent columns of 4 rows: 16-byte stores
//   bulk   the tile staged in shared memory (16-byte writes), then one thread
//          issues a bulk copy a row (cp.async.bulk.global.shared::cta, 128 B),
//          waited for with cp.async.bulk.wait_group 0
// Each block (256 threads: the two consumer warpgroups) stores `units` tiles,
// each at its own place of a 128 x 256 row-major output (L2-resident), as a
// grid kernel's block does a unit a phase. Printed: cycles a tile, the mean
// over blocks, issue and completion.
//
// Build and run on the GPU machine (scripts/h200_call.sh part probe-stores):
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -o /tmp/stores benchmarks/probes/store_probe.cu && /tmp/stores
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

constexpr int kRows = 128, kCols = 64, kLd = 256, kThreads = 256;
constexpr int kTileElems = kRows * kCols;

enum Mode { kCol2 = 0, kPair4 = 1, kVec16 = 2, kBulk = 3 };
static const char* kModeNames[] = {"col2", "pair4", "vec16", "bulk"};

// A value of element (i, j) of unit u that the compiler cannot fold.
__device__ __forceinline__ float value(int u, int i, int j, float seed) { return seed * (float)(u * 7 + i * 3 + j); }

template <int MODE>
__device__ __forceinline__ void store_tile(__nv_bfloat16* tile, __nv_bfloat16* stage, int u, float seed) {
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  if constexpr (MODE == kCol2) {
#pragma unroll
    for (int pass = 0; pass < 2; ++pass)
#pragma unroll
      for (int k = 0; k < 16; ++k) {
        const int i = 16 * warp + k, j = 32 * pass + lane;
        tile[i * kLd + j] = __float2bfloat16_rn(value(u, i, j, seed));
      }
  } else if constexpr (MODE == kPair4) {
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      const int i = 16 * warp + k, j = 2 * lane;
      *reinterpret_cast<__nv_bfloat162*>(tile + i * kLd + j) =
          __floats2bfloat162_rn(value(u, i, j, seed), value(u, i, j + 1, seed));
    }
  } else {
    // vec16 and bulk: 16-byte chunks, chunk c = t + 256 q: row c / 8, columns 8 (c % 8)..+7.
#pragma unroll
    for (int q = 0; q < kTileElems / 8 / kThreads; ++q) {
      const int c = t + kThreads * q, i = c / 8, j = 8 * (c % 8);
      __align__(16) __nv_bfloat162 v[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = __floats2bfloat162_rn(value(u, i, j + 2 * e, seed), value(u, i, j + 2 * e + 1, seed));
      __nv_bfloat16* dst = MODE == kVec16 ? tile + i * kLd + j : stage + i * kCols + j;
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(v);
    }
    if constexpr (MODE == kBulk) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes, then the async proxy reads them
      __syncthreads();
      if (t == 0) {
        const uint32_t s = (uint32_t)__cvta_generic_to_shared(stage);
        for (int i = 0; i < kRows; ++i)
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(tile + i * kLd),
                       "r"(s + i * kCols * 2), "n"(kCols * 2)
                       : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      }
    }
  }
}

template <int MODE>
__global__ void __launch_bounds__(kThreads) stores(__nv_bfloat16* out, int units, float seed, long long* cycles) {
  __shared__ __align__(128) __nv_bfloat16 stage[MODE == kBulk ? kTileElems : 1];
  long long issue = 0, done = 0;
  for (int u = 0; u < units; ++u) {
    // Unit u of this block: tile (u * gridDim + block) of a 128 x 256 output, 4 tiles a 128-row band.
    const int tile_id = u * gridDim.x + blockIdx.x;
    __nv_bfloat16* tile = out + (size_t)(tile_id / 4) * kRows * kLd + (tile_id % 4) * kCols;
    __syncthreads();
    const long long t0 = clock64();
    store_tile<MODE>(tile, stage, u, seed);
    __syncthreads();
    const long long t1 = clock64();
    if constexpr (MODE == kBulk) {
      if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    __threadfence();
    __syncthreads();
    const long long t2 = clock64();
    issue += t1 - t0;
    done += t2 - t0;
  }
  if (threadIdx.x == 0) {
    cycles[2 * blockIdx.x] = issue / units;
    cycles[2 * blockIdx.x + 1] = done / units;
  }
}

template <int MODE>
static void run(__nv_bfloat16* out, long long* cycles, int grid, int units) {
  stores<MODE><<<grid, kThreads>>>(out, units, 1.0f, cycles);  // warm-up: L2 and the instruction cache
  long long best_issue = 1LL << 60, best_done = 1LL << 60;
  for (int rep = 0; rep < 5; ++rep) {
    stores<MODE><<<grid, kThreads>>>(out, units, 1.0f + rep, cycles);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      printf("%-6s grid %3d: %s\n", kModeNames[MODE], grid, cudaGetErrorString(e));
      return;
    }
    static long long host[2 * 1024];
    cudaMemcpy(host, cycles, sizeof(long long) * 2 * grid, cudaMemcpyDeviceToHost);
    long long issue = 0, done = 0;
    for (int b = 0; b < grid; ++b) {
      issue += host[2 * b];
      done += host[2 * b + 1];
    }
    if (issue / grid < best_issue) best_issue = issue / grid;
    if (done / grid < best_done) best_done = done / grid;
  }
  printf("%-6s grid %3d: %6lld cycles a tile issued, %6lld completed (16 KB a tile)\n", kModeNames[MODE], grid,
         best_issue, best_done);
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const int units = 8, max_grid = 132;
  __nv_bfloat16* out;
  long long* cycles;
  cudaMalloc(&out, sizeof(__nv_bfloat16) * (size_t)kTileElems * units * max_grid);
  cudaMalloc(&cycles, sizeof(long long) * 2 * 1024);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("%s: a 128 x 64 bf16 tile (16 KB) stored by 256 threads, %d tiles a block\n", prop.name, units);
  for (int grid : {4, 16, 48, 132}) {
    run<kCol2>(out, cycles, grid, units);
    run<kPair4>(out, cycles, grid, units);
    run<kVec16>(out, cycles, grid, units);
    run<kBulk>(out, cycles, grid, units);
  }
  return 0;
}
