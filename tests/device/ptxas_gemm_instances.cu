// Not a test program: instantiates tk::gemm_tile_nt for every element type and
// transposition at the default tile shapes and both worker counts, with a
// typical generated epilogue (bias + relu + cast + store). The CPU test
// compiles it with `-Xptxas -v` and records registers / spills per instance,
// so register growth in gemm.cuh shows up in review. Compiled with -c only.
#include "tk/tk.cuh"

template <int NT, typename T, bool TA, bool TB>
__global__ void gemm_instance(const T* A, int lda, const T* B, int ldb,
                                                    const float* bias, T* C, int M, int N, int K) {
  constexpr int BM = tk::GemmConfig<T>::BM, BN = tk::GemmConfig<T>::BN,
                BK = tk::GemmConfig<T>::BK;
  extern __shared__ __align__(16) char smem[];
  const int tiles_n = tk::gemm_tiles_n(N, BN);
  const int tiles = tk::gemm_num_tiles(M, N, BM, BN);
  for (int t = blockIdx.x; t < tiles; t += gridDim.x)
    tk::gemm_tile_nt<NT, T, BM, BN, BK, TA, TB>(
        A, lda, B, ldb, M, N, K, t / tiles_n, t % tiles_n, smem, [=](int i, int j, float acc) {
          const float v = acc + bias[j];
          C[(size_t)i * N + j] = tk::from_float<T>(v > 0.0f ? v : 0.0f);
        });
}

#define TK_INSTANCE(NT, T, TA, TB)                                                             \
  template __global__ void gemm_instance<NT, T, TA, TB>(const T*, int, const T*, int,         \
                                                        const float*, T*, int, int, int);
#define TK_INSTANCES(NT, T)            \
  TK_INSTANCE(NT, T, false, false)     \
  TK_INSTANCE(NT, T, false, true)      \
  TK_INSTANCE(NT, T, true, false)      \
  TK_INSTANCE(NT, T, true, true)

TK_INSTANCES(128, __nv_bfloat16)
TK_INSTANCES(256, __nv_bfloat16)
TK_INSTANCES(128, __half)
TK_INSTANCES(256, __half)
TK_INSTANCES(128, float)
TK_INSTANCES(256, float)
