// Host launcher of tk/hopper_gemm.cuh for tests and benchmarks: a shared
// library with a C ABI, loaded by ctypes (benchmarks/hgemm_lib.py) and driven
// on torch CUDA tensors' data pointers and torch's current stream.
//
// Build (benchmarks/hgemm_lib.py does it):
//   nvcc -std=c++17 -O3 --shared -Xcompiler -fPIC
//        -gencode=arch=compute_90a,code=sm_90a
//        -I trainkernel/backend/include tests/device/hopper_gemm_lib.cu -o libtk_hgemm.so
//
// It instantiates the whole table: both input types x the four transpositions
// x the three tile shapes (24 TMA/wgmma kernels) + 8 fallback kernels, all
// with the run-time-typed store epilogue (fp32, bf16 or f16 out, beta).
//
// Compiled as one file, or (faster, in parallel) as 9 objects linked into one
// library: -DTK_HGEMM_PART=0 is the C API, parts 1..8 each instantiate one
// (input type, transposition) combination (hgemm_lib.build does that).
//
// Scratch for split-K is owned here: partials grow on demand (cudaMalloc, so
// the first call of a shape must happen before any graph capture), the
// counters live in their own zeroed buffer. One stream at a time.
#include <cstdio>
#include <cstring>

#include "tk/hopper_gemm.cuh"

namespace hg = tk::hopper;

// Shared by all parts (external linkage; defined in part 0).
namespace tkhg {

struct State {
  float* partials = nullptr;
  size_t partial_bytes = 0;
  int* counters = nullptr;
  int sms = 0;
  int last[11] = {};
  float last_model_us = 0.0f;
  char error[512] = "";
};
extern State g;

int fail(cudaError_t e, const char* what);
int sm_count();
cudaError_t ensure_scratch(const hg::Plan& plan);
void record(const hg::Plan& p);

#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 0
constexpr int kMaxCounters = 1 << 16;
State g;

int fail(cudaError_t e, const char* what) {
  snprintf(g.error, sizeof(g.error), "%s: %s (%d)", what, cudaGetErrorString(e), (int)e);
  return e == cudaSuccess ? -1 : (int)e;
}

int sm_count() {
  if (g.sms == 0) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&g.sms, cudaDevAttrMultiProcessorCount, dev);
    if (g.sms <= 0) g.sms = 132;
  }
  return g.sms;
}

cudaError_t ensure_scratch(const hg::Plan& plan) {
  if (plan.splits <= 1) return cudaSuccess;
  if (g.counters == nullptr) {
    cudaError_t e = cudaMalloc(&g.counters, kMaxCounters * sizeof(int));
    if (e != cudaSuccess) return e;
    e = cudaMemset(g.counters, 0, kMaxCounters * sizeof(int));
    if (e != cudaSuccess) return e;
  }
  if (plan.counters > kMaxCounters) return cudaErrorInvalidValue;
  if (plan.partial_bytes > g.partial_bytes) {
    if (g.partials != nullptr) {
      cudaDeviceSynchronize();
      cudaFree(g.partials);
      g.partials = nullptr;
      g.partial_bytes = 0;
    }
    const cudaError_t e = cudaMalloc(&g.partials, plan.partial_bytes);
    if (e != cudaSuccess) return e;
    g.partial_bytes = plan.partial_bytes;
  }
  return cudaSuccess;
}

void record(const hg::Plan& p) {
  const int v[11] = {p.path, p.tile, p.bm, p.bn, p.splits, p.kb_per_split,
                     p.tiles_m, p.tiles_n, p.units, p.grid, p.pair};
  memcpy(g.last, v, sizeof(v));
  g.last_model_us = p.model_us;
}
#endif

}  // namespace tkhg
using namespace tkhg;

// Defined (and instantiated) in the part that owns the combination.
template <typename T, bool TA, bool TB>
int tk_hgemm_run(const void* A, long long lda, const void* B, long long ldb, void* C,
                 long long ldc, int M, int N, int K, int out_dtype, float beta, int tile,
                 int splits, int force_fallback, int pair, cudaStream_t stream);

#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART > 0
template <typename T, bool TA, bool TB>
int tk_hgemm_run(const void* A, long long lda, const void* B, long long ldb, void* C,
                 long long ldc, int M, int N, int K, int out_dtype, float beta, int tile,
                 int splits, int force_fallback, int pair, cudaStream_t stream) {
  const T* a = static_cast<const T*>(A);
  const T* b = static_cast<const T*>(B);
  const hg::AnyStoreEpilogue epi(C, ldc, out_dtype, beta);
  const int sms = sm_count();
  const bool tma = !force_fallback && K > 0 && hg::tma_compatible(A, lda) &&
                   hg::tma_compatible(B, ldb);
  const int out_bytes = out_dtype == hg::kF32 ? 4 : 2;
  const hg::Plan plan = tma ? hg::choose_plan(M, N, K, sms, tile, splits, out_bytes, pair)
                            : hg::fallback_plan(M, N, sms);
  record(plan);
  cudaError_t e = ensure_scratch(plan);
  if (e != cudaSuccess) return fail(e, "split-K scratch");
  e = hg::gemm<T, TA, TB>(plan, a, lda, b, ldb, M, N, K, epi, g.partials, g.counters, stream);
  if (e != cudaSuccess) return fail(e, "launch");
  return 0;
}
#endif

#define TK_HGEMM_INSTANTIATE(T, TA, TB)                                                           \
  template int tk_hgemm_run<T, TA, TB>(const void*, long long, const void*, long long, void*, \
                                       long long, int, int, int, int, float, int, int, int,   \
                                       int, cudaStream_t);
#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 1
TK_HGEMM_INSTANTIATE(__nv_bfloat16, false, false)
#endif
#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 2
TK_HGEMM_INSTANTIATE(__nv_bfloat16, false, true)
#endif
#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 3
TK_HGEMM_INSTANTIATE(__nv_bfloat16, true, false)
#endif
#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 4
TK_HGEMM_INSTANTIATE(__nv_bfloat16, true, true)
#endif
#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 5
TK_HGEMM_INSTANTIATE(__half, false, false)
#endif
#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 6
TK_HGEMM_INSTANTIATE(__half, false, true)
#endif
#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 7
TK_HGEMM_INSTANTIATE(__half, true, false)
#endif
#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 8
TK_HGEMM_INSTANTIATE(__half, true, true)
#endif

#if !defined(TK_HGEMM_PART) || TK_HGEMM_PART == 0
namespace {

template <typename T>
int dispatch_t(int ta, int tb, const void* A, long long lda, const void* B, long long ldb, void* C,
               long long ldc, int M, int N, int K, int out_dtype, float beta, int tile, int splits,
               int force_fallback, int pair, cudaStream_t s) {
  if (!ta && !tb)
    return tk_hgemm_run<T, false, false>(A, lda, B, ldb, C, ldc, M, N, K, out_dtype, beta, tile, splits,
                                force_fallback, pair, s);
  if (!ta && tb)
    return tk_hgemm_run<T, false, true>(A, lda, B, ldb, C, ldc, M, N, K, out_dtype, beta, tile, splits,
                               force_fallback, pair, s);
  if (ta && !tb)
    return tk_hgemm_run<T, true, false>(A, lda, B, ldb, C, ldc, M, N, K, out_dtype, beta, tile, splits,
                               force_fallback, pair, s);
  return tk_hgemm_run<T, true, true>(A, lda, B, ldb, C, ldc, M, N, K, out_dtype, beta, tile, splits,
                            force_fallback, pair, s);
}

}  // namespace

extern "C" {

// C[M,N] = op(A) @ op(B) (+ beta * C). in_dtype: 1 bf16, 2 f16; out_dtype:
// 0 fp32, 1 bf16, 2 f16. trans_a: A is K x M (else M x K); trans_b: B is
// N x K (else K x N). tile: -1 = choose, else a kHopperTiles index; splits:
// 0 = choose, else the K slice count; force_fallback: use the mma.sync path;
// pair: 1 = clusters of two sharing B where the plan allows, 2 = any plan
// walked as a pair (choose_plan's pair_req).
// Returns 0, or a CUDA error code (message: tk_hgemm_error()).
int tk_hgemm(const void* A, long long lda, const void* B, long long ldb, void* C, long long ldc,
             int M, int N, int K, int in_dtype, int trans_a, int trans_b, int out_dtype, float beta,
             int tile, int splits, int force_fallback, int pair, void* stream) {
  g.error[0] = '\0';
  if (M < 0 || N < 0 || K < 0 || tile >= hg::kNumTiles || out_dtype < 0 || out_dtype > 2)
    return fail(cudaErrorInvalidValue, "arguments");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (in_dtype == hg::kBF16)
    return dispatch_t<__nv_bfloat16>(trans_a, trans_b, A, lda, B, ldb, C, ldc, M, N, K, out_dtype,
                                     beta, tile, splits, force_fallback, pair, s);
  if (in_dtype == hg::kF16)
    return dispatch_t<__half>(trans_a, trans_b, A, lda, B, ldb, C, ldc, M, N, K, out_dtype, beta,
                              tile, splits, force_fallback, pair, s);
  return fail(cudaErrorInvalidValue, "in_dtype");
}

// The plan of the last tk_hgemm call: path (0 TMA, 1 fallback, 2 empty),
// tile, bm, bn, splits, kb_per_split, tiles_m, tiles_n, units, grid, pair.
void tk_hgemm_last_plan(int* out11, float* model_us) {
  memcpy(out11, g.last, sizeof(g.last));
  if (model_us) *model_us = g.last_model_us;
}

// The plan choose_plan would make (same fields), without launching.
void tk_hgemm_plan(int M, int N, int K, int tile, int splits, int out_bytes, int sms, int pair,
                   int* out11, float* model_us) {
  const hg::Plan p = hg::choose_plan(M, N, K, sms > 0 ? sms : sm_count(), tile, splits, out_bytes, pair);
  const int v[11] = {p.path, p.tile, p.bm, p.bn, p.splits, p.kb_per_split,
                     p.tiles_m, p.tiles_n, p.units, p.grid, p.pair};
  memcpy(out11, v, sizeof(v));
  if (model_us) *model_us = p.model_us;
}

const char* tk_hgemm_error(void) { return g.error; }

int tk_hgemm_num_tiles(void) { return hg::kNumTiles; }

}  // extern "C"
#endif  // TK_HGEMM_PART == 0
