// GPU test: tk::stage_rows and tk::stage_input_rows of tk/resident.cuh with the
// block size a compile-time constant (TK_BLOCK_THREADS, as the resident printer
// defines it under target.stage_constant_threads; perf-log step 112): every row's
// bytes land at their padded place,
// nothing past a row or past the last row is written, whether a row's units divide
// the block (the unrolled path at constant offsets, also with a last round of rows
// that only some threads have) or not (the strided loop), in 16-, 8- and 4-byte
// units and element by element. tk::stage_rows_bulk (target.prefetch_bulk_rows,
// perf-log step 113) takes the same checks: a row a bulk copy (a dense home in one),
// its bytes counted on an mbarrier waited on in two phases (the second parity
// too), and the rows it cannot take (not 16-byte units) by stage_rows.
// test_stage_rows_runtime.cu runs the same checks with the thread count read at
// run time (TK_BLOCK_THREADS not defined).
#ifndef TK_STAGE_TEST_RUNTIME_THREADS
#define TK_BLOCK_THREADS 256
#endif
#include <cuda_bf16.h>

#include <cstring>
#include <vector>

#include "tk/resident.cuh"
#include "tk_test.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kSmemWords = 48 * 1024 / 4;
constexpr uint32_t kSentinel = 0xDEADBEEFu;
enum { kRows, kInput, kBulk };

// Every word of the block's shared memory to the sentinel. Before a bulk copy
// (the async proxy) writes over it, each writing thread's proxy fence, then the
// barrier.
__device__ void fill_sentinel(uint32_t* smem_words) {
  for (int i = threadIdx.x; i < kSmemWords; i += blockDim.x) smem_words[i] = kSentinel;
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
}

struct Case {
  const char* name;
  int elem;  // bytes an element: 2 or 4
  int rows, row_elems, src_stride, dst_stride;
  int mode;  // kRows: stage_rows, kInput: stage_input_rows, kBulk: stage_rows_bulk
  int src_offset;  // elements: a source not 16-byte aligned takes the narrower units
};

template <typename T>
__global__ void stage_kernel(const T* src, int rows, int row_elems, int src_stride, int dst_stride, int mode,
                             uint32_t* out) {
  extern __shared__ __align__(128) uint32_t smem_words[];
  __shared__ uint64_t bar;
  T* dst = reinterpret_cast<T*>(smem_words);
  if (mode == kBulk) {
    // Two phases, as two steps of the loop use them: the second's wait (parity 1)
    // must find the bytes copied again over a fresh fill.
    if (threadIdx.x == 0) tk::init_stage_barrier(&bar);
    for (int phase = 0; phase < 2; ++phase) {
      fill_sentinel(smem_words);
      tk::stage_rows_bulk(dst, src, rows, row_elems, (long long)src_stride, dst_stride, &bar);
      tk::stage_bulk_arrive(&bar);
      tk::stage_wait_bulk(&bar, true, phase == 1);
    }
  } else {
    fill_sentinel(smem_words);
    if (mode == kInput)
      tk::stage_input_rows(dst, src, rows, row_elems, (long long)src_stride, dst_stride);
    else
      tk::stage_rows(dst, src, rows, row_elems, (long long)src_stride, dst_stride);
    tk::stage_wait();
  }
  for (int i = threadIdx.x; i < kSmemWords; i += blockDim.x) out[i] = smem_words[i];
}

template <typename T>
bool run_case(const Case& c) {
  const size_t src_elems = (size_t)c.src_offset + (size_t)c.rows * c.src_stride + 64;
  std::vector<T> host(src_elems);
  for (size_t i = 0; i < src_elems; ++i) {
    if (sizeof(T) == 2) {
      const uint16_t b = (uint16_t)(0x3000 + (i * 2654435761u >> 20) % 0x4000);
      memcpy(&host[i], &b, 2);
    } else {
      const uint32_t b = 0x3f000000u + (uint32_t)(i * 2654435761u % 0x7fffff);
      memcpy(&host[i], &b, 4);
    }
  }
  T* d_src;
  uint32_t* d_out;
  TK_CUDA_CHECK(cudaMalloc(&d_src, src_elems * sizeof(T)));
  TK_CUDA_CHECK(cudaMalloc(&d_out, kSmemWords * 4));
  TK_CUDA_CHECK(cudaMemcpy(d_src, host.data(), src_elems * sizeof(T), cudaMemcpyHostToDevice));
  TK_CUDA_CHECK(cudaFuncSetAttribute(stage_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemWords * 4));
  stage_kernel<T><<<1, kThreads, kSmemWords * 4>>>(d_src + c.src_offset, c.rows, c.row_elems, c.src_stride,
                                                   c.dst_stride, c.mode, d_out);
  TK_CUDA_CHECK(cudaGetLastError());
  TK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint32_t> out(kSmemWords);
  TK_CUDA_CHECK(cudaMemcpy(out.data(), d_out, kSmemWords * 4, cudaMemcpyDeviceToHost));
  const char* bytes = reinterpret_cast<const char*>(out.data());
  const char* sentinel = reinterpret_cast<const char*>(&kSentinel);
  int bad = 0, first_bad = -1;
  for (int b = 0; b < kSmemWords * 4; ++b) {
    const int e = b / (int)sizeof(T), r = e / c.dst_stride, col = e - r * c.dst_stride;
    char want = sentinel[b % 4];
    if (r < c.rows && col < c.row_elems) {
      const size_t at = (size_t)c.src_offset + (size_t)r * c.src_stride + col;
      want = reinterpret_cast<const char*>(&host[at])[b % sizeof(T)];
    }
    if (bytes[b] != want && bad++ == 0) first_bad = b;
  }
  tktest::report(bad == 0, c.name, "%d bytes wrong, the first at byte %d", bad, first_bad);
  TK_CUDA_CHECK(cudaFree(d_src));
  TK_CUDA_CHECK(cudaFree(d_out));
  return bad == 0;
}

}  // namespace

int main() {
  const Case cases[] = {
      // 32 units a row divide 256 threads: 8 rows a round, 8 rounds (classification's x)
      {"bf16_64x256_units_divide", 2, 64, 256, 256, 264, kRows, 0},
      // 61 rows: the last round has 5 of 8 rows
      {"bf16_61x256_last_round_partial", 2, 61, 256, 256, 264, kRows, 0},
      // fp32 rows of 8 units (32 a round)
      {"f32_100x32_units_divide", 4, 100, 32, 512, 36, kRows, 0},
      // one unit a row, more rows than threads
      {"bf16_300x8_one_unit_a_row", 2, 300, 8, 8, 8, kRows, 0},
      // 48 units a row do not divide 256: the strided loop
      {"bf16_20x384_units_do_not_divide", 2, 20, 384, 384, 392, kRows, 0},
      // 4-byte units (a 4-byte aligned source): stage_rows' register copies
      {"bf16_33x100_four_byte_units", 2, 33, 100, 100, 104, kRows, 2},
      // element by element
      {"bf16_9x7_elements", 2, 9, 7, 7, 8, kRows, 0},
      // stage_input_rows: 20-byte rows in 4-byte cp.async (5 units: strided loop)
      {"input_bf16_64x10_four_byte_units", 2, 64, 10, 10, 24, kInput, 0},
      // 8-byte rows: one 8-byte unit a row (the unrolled path)
      {"input_bf16_40x4_eight_byte_units", 2, 40, 4, 4, 8, kInput, 0},
      // 16-byte units through stage_input_rows
      {"input_bf16_64x128_sixteen_byte_units", 2, 64, 128, 128, 136, kInput, 0},
      // 2-byte units: stage_rows' element loop
      {"input_bf16_16x7_elements", 2, 16, 7, 7, 8, kInput, 0},
      // stage_rows_bulk: a bulk copy a padded row (classification's x)
      {"bulk_bf16_64x256_rows", 2, 64, 256, 256, 264, kBulk, 0},
      // more rows than warp 0's lanes, fp32 rows of 128 bytes from a wider source
      {"bulk_f32_100x32_rows", 4, 100, 32, 512, 36, kBulk, 0},
      // dense rows: the home in one copy
      {"bulk_bf16_48x64_dense", 2, 48, 64, 64, 64, kBulk, 0},
      // 20-byte rows: not 16-byte units, stage_rows' copies instead
      {"bulk_bf16_64x10_falls_back", 2, 64, 10, 10, 24, kBulk, 0},
      // a source 8-byte but not 16-byte aligned: stage_rows' copies instead
      {"bulk_bf16_16x128_misaligned_falls_back", 2, 16, 128, 128, 136, kBulk, 4},
  };
  for (const Case& c : cases) {
    if (c.elem == 2)
      run_case<__nv_bfloat16>(c);
    else
      run_case<float>(c);
  }
  return tktest::failures() ? 1 : 0;
}
