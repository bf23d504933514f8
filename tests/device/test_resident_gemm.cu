// GPU test: tk::smem_gemm of tk/resident.cuh (both operands in shared memory).
//
// For bf16, f16 and f32, every operand layout (A [m][k] or [k][m], B [k][n]
// or [n][k]), shapes with and without full 16x32 units and 16-deep k steps
// (1x1x1 ... 64x48x130), and the home either 16-byte aligned (ldmatrix path
// where the strides allow) or shifted by one element (scalar path only):
//   * C is within the fp32 accumulation bound of a float64 reference on the
//     same (rounded) inputs;
//   * the aligned and the shifted run give bit-identical C (both paths add the
//     same products in the same k order: which path a unit takes must not
//     show in the result);
//   * the epilogue sees every output exactly once (a count per element);
//   * where the shape is whole 16 x 16 units, the compile-time form (ldmatrix
//     modes and FULL as template arguments, the printer's) gives the same bits;
//   * with a pair store (columns j, j + 1 at once), the same bits, each once;
//   * with the stores split on a block-uniform flag (tk::split_on, the
//     printer's tk_more; with and without pair stores, both values of the
//     flag), the same bits, each once, by the store of the flag's value;
//   * with the homes' rows padded to a multiple of 8 elements (the printer's
//     pitches) and the padding NaN, partial units and K's last step take the
//     clamped, masked ldmatrix path (perf-log step 115), at run time and with
//     the modes as template arguments: the same bits as the scalar path, and
//     no NaN.
#include <cmath>
#include <cstring>
#include <vector>

#include "tk/resident.cuh"
#include "tk_test.cuh"

constexpr int kNT = 128;

// A(i,k) = A[i*sam + k*sak], B(k,j) = B[k*sbk + j*sbn]; both copied into
// shared memory at element offset `shift` (0: 16-byte aligned), C stored
// row-major as fp32, hits[i*N+j] counts the store calls.
// SPLIT: the stores through tk::split_on(flag, ...): flag true counts each
// store once, false twice (so the hits show which instance ran).
template <typename T, int AMODE = tk::kLdsmAtRunTime, int BMODE = tk::kLdsmAtRunTime, bool FULL = false,
          bool PAIRS = false, bool SPLIT = false>
__global__ void gemm_kernel(int M, int N, int K, const T* A, int sam, int sak, int a_elems, const T* B, int sbk,
                            int sbn, int b_elems, int shift, float* C, int* hits, bool flag) {
  extern __shared__ __align__(128) char smem[];
  T* sa = (T*)smem + shift;
  T* sb = (T*)smem + ((a_elems + shift + 63) / 64) * 64 + shift;
  for (int e = threadIdx.x; e < a_elems; e += blockDim.x) sa[e] = A[e];
  for (int e = threadIdx.x; e < b_elems; e += blockDim.x) sb[e] = B[e];
  __syncthreads();
  auto compute = [&](int i, int j, float acc, float* vals) { vals[0] = acc; };
  auto store = [&](int i, int j, const float* vals) {
    C[i * N + j] = vals[0];
    atomicAdd(&hits[i * N + j], 1);
  };
  if constexpr (SPLIT) {
    auto split_store = [&](auto more, int i, int j, const float* vals) {
      C[i * N + j] = vals[0];
      atomicAdd(&hits[i * N + j], more ? 1 : 2);
    };
    if constexpr (PAIRS) {
      tk::smem_gemm<kNT, 1, T, AMODE, BMODE, FULL>(
          M, N, K, sa, sam, sak, sb, sbk, sbn, compute, tk::split_on(flag, split_store),
          tk::split_on(flag, [&](auto more, int i, int j, const float* va, const float* vb) {
            tk::store_pair(&C[i * N + j], va[0], vb[0]);
            atomicAdd(&hits[i * N + j], more ? 1 : 2);
            atomicAdd(&hits[i * N + j + 1], more ? 1 : 2);
          }));
    } else {
      tk::smem_gemm<kNT, 1, T, AMODE, BMODE, FULL>(M, N, K, sa, sam, sak, sb, sbk, sbn, compute,
                                                   tk::split_on(flag, split_store));
    }
  } else if constexpr (PAIRS) {  // columns j and j + 1 at once (tk::store_pair: one float2 where C's row allows)
    tk::smem_gemm<kNT, 1, T, AMODE, BMODE, FULL>(M, N, K, sa, sam, sak, sb, sbk, sbn, compute, store,
                                                 [&](int i, int j, const float* va, const float* vb) {
                                                   tk::store_pair(&C[i * N + j], va[0], vb[0]);
                                                   atomicAdd(&hits[i * N + j], 1);
                                                   atomicAdd(&hits[i * N + j + 1], 1);
                                                 });
  } else {
    tk::smem_gemm<kNT, 1, T, AMODE, BMODE, FULL>(M, N, K, sa, sam, sak, sb, sbk, sbn, compute, store);
  }
}

template <typename T>
static float round_to(float x) {
  return tk::to_float(tk::from_float<T>(x));
}

template <typename T>
static void run_case(const char* tname, int M, int N, int K, bool a_km, bool b_nk, bool pad, tktest::Rng& rng) {
  // Strides of the two layouts; `pad`: each row's length (the contiguous extent)
  // rounded up to 8 elements, the padding NaN.
  auto pitch = [&](int extent) { return pad ? (extent + 7) / 8 * 8 : extent; };
  const int sam = a_km ? 1 : pitch(K), sak = a_km ? pitch(M) : 1;
  const int sbk = b_nk ? 1 : pitch(N), sbn = b_nk ? pitch(K) : 1;
  const int a_elems = a_km ? K * sak : M * sam, b_elems = b_nk ? N * sbn : K * sbk;
  std::vector<T> ha(a_elems, tk::from_float<T>(NAN)), hb(b_elems, tk::from_float<T>(NAN));
  std::vector<float> fa(a_elems, NAN), fb(b_elems, NAN);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      const int e = i * sam + k * sak;
      fa[e] = round_to<T>(rng.uniform());
      ha[e] = tk::from_float<T>(fa[e]);
    }
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) {
      const int e = k * sbk + j * sbn;
      fb[e] = round_to<T>(rng.uniform());
      hb[e] = tk::from_float<T>(fb[e]);
    }
  T *da, *db;
  float* dc;
  int* dh;
  TK_CUDA_CHECK(cudaMalloc(&da, a_elems * sizeof(T)));
  TK_CUDA_CHECK(cudaMalloc(&db, b_elems * sizeof(T)));
  TK_CUDA_CHECK(cudaMalloc(&dc, M * N * sizeof(float)));
  TK_CUDA_CHECK(cudaMalloc(&dh, M * N * sizeof(int)));
  TK_CUDA_CHECK(cudaMemcpy(da, ha.data(), a_elems * sizeof(T), cudaMemcpyHostToDevice));
  TK_CUDA_CHECK(cudaMemcpy(db, hb.data(), b_elems * sizeof(T), cudaMemcpyHostToDevice));
  const int smem = (int)((((a_elems + 1 + 63) / 64) * 64 + b_elems + 64) * sizeof(T));
  // One launch of `kernel` with the homes shifted by `shift` elements: C into `out`;
  // true when the epilogue stored every element exactly once.
  // `flag`: a split store's (each element then counted 1 for true, 2 for false).
  auto run = [&](auto kernel, int shift, std::vector<float>& out, bool flag = true) {
    TK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    TK_CUDA_CHECK(cudaMemset(dc, 0xff, M * N * sizeof(float)));
    TK_CUDA_CHECK(cudaMemset(dh, 0, M * N * sizeof(int)));
    kernel<<<1, kNT, smem>>>(M, N, K, da, sam, sak, a_elems, db, sbk, sbn, b_elems, shift, dc, dh, flag);
    TK_CUDA_CHECK(cudaGetLastError());
    TK_CUDA_CHECK(cudaDeviceSynchronize());
    out.resize(M * N);
    std::vector<int> h(M * N);
    TK_CUDA_CHECK(cudaMemcpy(out.data(), dc, M * N * sizeof(float), cudaMemcpyDeviceToHost));
    TK_CUDA_CHECK(cudaMemcpy(h.data(), dh, M * N * sizeof(int), cudaMemcpyDeviceToHost));
    bool once = true;
    for (int e = 0; e < M * N; ++e) once = once && h[e] == (flag ? 1 : 2);
    return once;
  };
  std::vector<float> c[2];
  bool hits_ok = true;
  for (int shift = 0; shift < 2; ++shift) hits_ok = run(gemm_kernel<T>, shift, c[shift]) && hits_ok;
  // Pair stores (target.resident_pair_stores): the same bits, every element once
  // (odd N: rows of C alternate in alignment, so both store forms run).
  std::vector<float> cp;
  bool pairs_ok = run(gemm_kernel<T, tk::kLdsmAtRunTime, tk::kLdsmAtRunTime, false, true>, 0, cp);
  pairs_ok = pairs_ok && memcmp(cp.data(), c[0].data(), M * N * sizeof(float)) == 0;
  // Split stores (tk::split_on): both flag values, element and pair stores.
  bool split_ok = true;
  for (int flag = 0; flag < 2; ++flag) {
    std::vector<float> cs;
    split_ok = run(gemm_kernel<T, tk::kLdsmAtRunTime, tk::kLdsmAtRunTime, false, false, true>, 0, cs, flag) &&
               memcmp(cs.data(), c[0].data(), M * N * sizeof(float)) == 0 && split_ok;
    split_ok = run(gemm_kernel<T, tk::kLdsmAtRunTime, tk::kLdsmAtRunTime, false, true, true>, 0, cs, flag) &&
               memcmp(cs.data(), c[0].data(), M * N * sizeof(float)) == 0 && split_ok;
  }
  // Full shapes with aligned homes: the printer passes the ldmatrix modes and
  // FULL at compile time (no scalar path compiled); same bits as at run time.
  bool static_ok = true;
  if constexpr (!std::is_same<T, float>::value) {
    if (M % 16 == 0 && N % 16 == 0 && K % 16 == 0) {
      std::vector<float> cs;
      // tk::ldsm_mode of each layout: A [m][k] -> 0, [k][m] -> 1; B [n][k] -> 0, [k][n] -> 1.
      if (!a_km && b_nk) static_ok = run(gemm_kernel<T, 0, 0, true>, 0, cs);
      if (!a_km && !b_nk) static_ok = run(gemm_kernel<T, 0, 1, true>, 0, cs);
      if (a_km && b_nk) static_ok = run(gemm_kernel<T, 1, 0, true>, 0, cs);
      if (a_km && !b_nk) static_ok = run(gemm_kernel<T, 1, 1, true>, 0, cs);
      static_ok = static_ok && memcmp(cs.data(), c[0].data(), M * N * sizeof(float)) == 0;
      // FULL with split stores: no row test (every unit whole), both flag values.
      for (int flag = 0; flag < 2; ++flag) {
        if (!a_km && b_nk) static_ok = run(gemm_kernel<T, 0, 0, true, true, true>, 0, cs, flag) && static_ok;
        if (!a_km && !b_nk) static_ok = run(gemm_kernel<T, 0, 1, true, false, true>, 0, cs, flag) && static_ok;
        if (a_km && b_nk) static_ok = run(gemm_kernel<T, 1, 0, true, true, true>, 0, cs, flag) && static_ok;
        if (a_km && !b_nk) static_ok = run(gemm_kernel<T, 1, 1, true, false, true>, 0, cs, flag) && static_ok;
        static_ok = static_ok && memcmp(cs.data(), c[0].data(), M * N * sizeof(float)) == 0;
      }
    }
  }
  // Padded homes with the modes as template arguments and FULL false (the
  // printer's form for a product with partial units or a K tail): no scalar
  // path compiled, every unit clamped and masked.
  if constexpr (!std::is_same<T, float>::value) {
    if (pad) {
      std::vector<float> cs;
      if (!a_km && b_nk) static_ok = run(gemm_kernel<T, 0, 0, false>, 0, cs) && static_ok;
      if (!a_km && !b_nk) static_ok = run(gemm_kernel<T, 0, 1, false>, 0, cs) && static_ok;
      if (a_km && b_nk) static_ok = run(gemm_kernel<T, 1, 0, false>, 0, cs) && static_ok;
      if (a_km && !b_nk) static_ok = run(gemm_kernel<T, 1, 1, false>, 0, cs) && static_ok;
      static_ok = static_ok && memcmp(cs.data(), c[0].data(), M * N * sizeof(float)) == 0;
    }
  }
  double worst = 0.0;
  bool bits_ok = static_ok && pairs_ok && split_ok && memcmp(c[0].data(), c[1].data(), M * N * sizeof(float)) == 0;
  bool bound_ok = true;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = 0.0, mag = 0.0;
      for (int k = 0; k < K; ++k) {
        const double p = (double)fa[i * sam + k * sak] * (double)fb[k * sbk + j * sbn];
        ref += p;
        mag += fabs(p);
      }
      // fp32 accumulation of K exact products (bf16/f16 products are exact in fp32).
      const double bound = (K + 2) * 1.2e-7 * mag + 1e-30;
      const double err = fabs((double)c[0][i * N + j] - ref);  // NaN fails the bound
      worst = fmax(worst, err / (mag + 1e-30));
      bound_ok = bound_ok && err <= bound;
    }
  char name[160];
  snprintf(name, sizeof(name), "smem_gemm_%s_%dx%dx%d_%s%s%s", tname, M, N, K, a_km ? "Akm" : "Amk",
           b_nk ? "_Bnk" : "_Bkn", pad ? "_padded" : "");
  tktest::report(bound_ok && bits_ok && hits_ok, name, "bound %d (worst rel %.3g) paths_bit_identical %d hits %d",
                 (int)bound_ok, worst, (int)bits_ok, (int)hits_ok);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(dh);
}

template <typename T>
static void run_all(const char* tname, tktest::Rng& rng) {
  const int shapes[][3] = {{1, 1, 1},    {16, 32, 16}, {16, 16, 32},  {64, 16, 128}, {17, 33, 15},
                           {64, 48, 130}, {32, 8, 64},  {48, 64, 16},  {7, 100, 33},  {33, 19, 100},
                           {50, 10, 19},  {33, 7, 15},  {100, 15, 33}, {64, 40, 24}};
  for (const auto& s : shapes)
    for (int a_km = 0; a_km < 2; ++a_km)
      for (int b_nk = 0; b_nk < 2; ++b_nk)
        for (int pad = 0; pad < 2; ++pad) {
          // Padding changes nothing where both operands' rows are whole 8-element groups.
          const bool rows_whole = (a_km ? s[0] : s[2]) % 8 == 0 && (b_nk ? s[2] : s[1]) % 8 == 0;
          if (!pad || !rows_whole) run_case<T>(tname, s[0], s[1], s[2], a_km, b_nk, pad, rng);
        }
}

int main() {
  if (!tktest::have_gpu()) {
    printf("FAIL no_gpu\n");
    return 1;
  }
  tktest::Rng rng(7);
  run_all<__nv_bfloat16>("bf16", rng);
  run_all<__half>("f16", rng);
  run_all<float>("f32", rng);
  return tktest::finish();
}
