// GPU test: deterministic reductions of tk/reduce.cuh.
//
//   block_*    one block reduces x[0..n) with block_sum_array / block_reduce_max
//              for n in {1, 31, 256, 1000, 100000} and blockDim.x in
//              {32, 96, 256, 1024}; every thread must receive the same bits,
//              the sum must be within the rigorous fp32 error bound of the
//              float64 sum, the max must be exact, and a second launch must
//              give bit-identical results.
//   grid_*     two-level grid reduction in a cooperative launch: per-block
//              partial -> workspace slot -> tk::grid_sync() ->
//              reduce_partials_sum in EVERY block; all blocks must agree bit
//              for bit, and so must a second launch.
//   max_nan / signed zero: NaN propagates through block_reduce_max; the max
//              of {-0, +0} is +0 on every thread.
//   argmax_*   block_argmax (blockDim.x in {32, 96, 128, 1024}) and warp_argmax
//              over rows with ties, +-0, -inf only, NaN (one, several, first):
//              every thread must get the index of a sequential host fold with
//              the same tk::argmax_step (torch.argmax's rule: the first
//              maximum, the first NaN), and a rerun the same bits.
#include <cmath>
#include <cstring>
#include <vector>

#include "tk/tk.cuh"
#include "tk_test.cuh"

__global__ void block_reduce_kernel(const float* x, long long n, float* out_sum, float* out_max) {
  __shared__ float scratch[tk::kReduceScratchFloats];
  const float s = tk::block_sum_array(x, n, scratch);
  float m = -INFINITY;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) m = tk::max_nan(m, x[i]);
  m = tk::block_reduce_max(m, scratch);  // reuses the scratch right away
  out_sum[threadIdx.x] = s;
  out_max[threadIdx.x] = m;
}

__global__ void grid_reduce_kernel(const float* x, long long n, float* partials_sum,
                                   float* partials_max, float* out_sum, float* out_max) {
  __shared__ float scratch[tk::kReduceScratchFloats];
  float acc = 0.0f, m = -INFINITY;
  tk::for_each_index(n, [&](long long i) {
    acc += x[i];
    m = tk::max_nan(m, x[i]);
  });
  const float bs = tk::block_reduce_sum(acc, scratch);
  const float bm = tk::block_reduce_max(m, scratch);
  if (threadIdx.x == 0) {
    partials_sum[blockIdx.x] = bs;
    partials_max[blockIdx.x] = bm;
  }
  tk::grid_sync();
  const float total = tk::reduce_partials_sum(partials_sum, gridDim.x, scratch);
  const float gmax = tk::reduce_partials_max(partials_max, gridDim.x, scratch);
  // Every thread of every block writes its view: all must be equal.
  out_sum[blockIdx.x * blockDim.x + threadIdx.x] = total;
  out_max[blockIdx.x * blockDim.x + threadIdx.x] = gmax;
}

// One block: every thread folds x[t], x[t + blockDim.x], ... then block_argmax;
// warp 0 also folds x[lane], x[lane + 32], ... and warp_argmax.
__global__ void argmax_kernel(const float* x, int n, int* out_block, int* out_warp) {
  __shared__ float scratch[tk::kArgmaxScratchFloats];
  float best = -INFINITY;
  int arg = -1;
  for (int r = threadIdx.x; r < n; r += blockDim.x) tk::argmax_step(best, arg, x[r], r);
  tk::block_argmax(best, arg, scratch);
  out_block[threadIdx.x] = arg;
  if (threadIdx.x < 32) {
    float wb = -INFINITY;
    int wa = -1;
    for (int r = threadIdx.x; r < n; r += 32) tk::argmax_step(wb, wa, x[r], r);
    tk::warp_argmax(wb, wa);
    out_warp[threadIdx.x] = wa;
  }
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static bool all_same_bits(const std::vector<float>& v) {
  for (float f : v)
    if (bits(f) != bits(v[0])) return false;
  return true;
}

static void test_block(const std::vector<float>& hx, long long n, int threads) {
  float *dx, *dsum, *dmax;
  TK_CUDA_CHECK(cudaMalloc(&dx, (n + 1) * sizeof(float)));
  TK_CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  TK_CUDA_CHECK(cudaMalloc(&dsum, threads * sizeof(float)));
  TK_CUDA_CHECK(cudaMalloc(&dmax, threads * sizeof(float)));
  std::vector<float> s[2], m[2];
  for (int run = 0; run < 2; ++run) {
    TK_CUDA_CHECK(cudaMemset(dsum, 0xFF, threads * sizeof(float)));
    TK_CUDA_CHECK(cudaMemset(dmax, 0xFF, threads * sizeof(float)));
    block_reduce_kernel<<<1, threads>>>(dx, n, dsum, dmax);
    TK_CUDA_CHECK(cudaGetLastError());
    TK_CUDA_CHECK(cudaDeviceSynchronize());
    s[run].resize(threads);
    m[run].resize(threads);
    TK_CUDA_CHECK(cudaMemcpy(s[run].data(), dsum, threads * sizeof(float), cudaMemcpyDeviceToHost));
    TK_CUDA_CHECK(cudaMemcpy(m[run].data(), dmax, threads * sizeof(float), cudaMemcpyDeviceToHost));
  }
  double ref = 0, absum = 0;
  float ref_max = -INFINITY;
  for (long long i = 0; i < n; ++i) {
    ref += hx[i];
    absum += std::fabs((double)hx[i]);
    ref_max = std::fmax(ref_max, hx[i]);
  }
  // Longest chain of fp32 additions any term goes through: the per-thread
  // fold, 5 warp levels, 5 levels over the warp partials.
  const double chain = (double)((n + threads - 1) / threads) + 10.0;
  const double bound = 1.01 * chain * std::ldexp(1.0, -24) * absum + 1e-30;
  const double err = std::fabs((double)s[0][0] - ref);
  char name[128];
  snprintf(name, sizeof name, "block_reduce_sum_n%lld_block%d", n, threads);
  tktest::report(all_same_bits(s[0]) && err <= bound, name,
                 "all_threads_equal=%d err=%.3g bound=%.3g got=%.9g ref=%.9g",
                 (int)all_same_bits(s[0]), err, bound, s[0][0], ref);
  snprintf(name, sizeof name, "block_reduce_sum_n%lld_block%d_bit_identical_rerun", n, threads);
  tktest::report(memcmp(s[0].data(), s[1].data(), threads * sizeof(float)) == 0, name);
  snprintf(name, sizeof name, "block_reduce_max_n%lld_block%d", n, threads);
  tktest::report(all_same_bits(m[0]) && bits(m[0][0]) == bits(ref_max) &&
                     memcmp(m[0].data(), m[1].data(), threads * sizeof(float)) == 0,
                 name, "got=%.9g ref=%.9g", m[0][0], ref_max);
  cudaFree(dx);
  cudaFree(dsum);
  cudaFree(dmax);
}

static void test_grid(const std::vector<float>& hx, long long n, int blocks, int threads) {
  float *dx, *ps, *pm, *os, *om;
  const size_t nt = (size_t)blocks * threads;
  TK_CUDA_CHECK(cudaMalloc(&dx, (n + 1) * sizeof(float)));
  TK_CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  TK_CUDA_CHECK(cudaMalloc(&ps, blocks * sizeof(float)));
  TK_CUDA_CHECK(cudaMalloc(&pm, blocks * sizeof(float)));
  TK_CUDA_CHECK(cudaMalloc(&os, nt * sizeof(float)));
  TK_CUDA_CHECK(cudaMalloc(&om, nt * sizeof(float)));
  std::vector<float> s[2], m[2];
  for (int run = 0; run < 2; ++run) {
    TK_CUDA_CHECK(cudaMemset(os, 0xFF, nt * sizeof(float)));
    TK_CUDA_CHECK(cudaMemset(om, 0xFF, nt * sizeof(float)));
    void* args[] = {&dx, &n, &ps, &pm, &os, &om};
    TK_CUDA_CHECK(cudaLaunchCooperativeKernel((void*)grid_reduce_kernel, dim3(blocks),
                                              dim3(threads), args, 0, 0));
    TK_CUDA_CHECK(cudaDeviceSynchronize());
    s[run].resize(nt);
    m[run].resize(nt);
    TK_CUDA_CHECK(cudaMemcpy(s[run].data(), os, nt * sizeof(float), cudaMemcpyDeviceToHost));
    TK_CUDA_CHECK(cudaMemcpy(m[run].data(), om, nt * sizeof(float), cudaMemcpyDeviceToHost));
  }
  double ref = 0, absum = 0;
  float ref_max = -INFINITY;
  for (long long i = 0; i < n; ++i) {
    ref += hx[i];
    absum += std::fabs((double)hx[i]);
    ref_max = std::fmax(ref_max, hx[i]);
  }
  const double chain =
      (double)((n + (long long)nt - 1) / (long long)nt) + 10.0 + (blocks + threads - 1) / threads + 10.0;
  const double bound = 1.01 * chain * std::ldexp(1.0, -24) * absum + 1e-30;
  const double err = std::fabs((double)s[0][0] - ref);
  char name[128];
  snprintf(name, sizeof name, "grid_reduce_sum_n%lld_blocks%d_x%d", n, blocks, threads);
  tktest::report(all_same_bits(s[0]) && err <= bound, name,
                 "all_blocks_equal=%d err=%.3g bound=%.3g", (int)all_same_bits(s[0]), err, bound);
  snprintf(name, sizeof name, "grid_reduce_sum_n%lld_blocks%d_x%d_bit_identical_rerun", n, blocks,
           threads);
  tktest::report(memcmp(s[0].data(), s[1].data(), nt * sizeof(float)) == 0, name);
  snprintf(name, sizeof name, "grid_reduce_max_n%lld_blocks%d_x%d", n, blocks, threads);
  tktest::report(all_same_bits(m[0]) && bits(m[0][0]) == bits(ref_max) &&
                     memcmp(m[0].data(), m[1].data(), nt * sizeof(float)) == 0,
                 name, "got=%.9g ref=%.9g", m[0][0], ref_max);
  cudaFree(dx);
  cudaFree(ps);
  cudaFree(pm);
  cudaFree(os);
  cudaFree(om);
}

static void test_special() {
  // NaN propagation and signed zero.
  const int threads = 256;
  std::vector<float> hx(1000);
  tktest::Rng rng(99);
  for (auto& v : hx) v = rng.uniform();
  hx[517] = NAN;
  float *dx, *ds, *dm;
  TK_CUDA_CHECK(cudaMalloc(&dx, hx.size() * sizeof(float)));
  TK_CUDA_CHECK(cudaMalloc(&ds, threads * sizeof(float)));
  TK_CUDA_CHECK(cudaMalloc(&dm, threads * sizeof(float)));
  TK_CUDA_CHECK(cudaMemcpy(dx, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
  block_reduce_kernel<<<1, threads>>>(dx, (long long)hx.size(), ds, dm);
  TK_CUDA_CHECK(cudaGetLastError());
  std::vector<float> m(threads), s(threads);
  TK_CUDA_CHECK(cudaMemcpy(m.data(), dm, threads * sizeof(float), cudaMemcpyDeviceToHost));
  TK_CUDA_CHECK(cudaMemcpy(s.data(), ds, threads * sizeof(float), cudaMemcpyDeviceToHost));
  bool ok = true;
  for (int t = 0; t < threads; ++t) ok &= std::isnan(m[t]) && std::isnan(s[t]);
  tktest::report(ok, "block_reduce_max_nan_propagates");

  std::vector<float> z = {-0.0f, 0.0f, -0.0f, -0.0f, 0.0f};
  TK_CUDA_CHECK(cudaMemcpy(dx, z.data(), z.size() * sizeof(float), cudaMemcpyHostToDevice));
  block_reduce_kernel<<<1, threads>>>(dx, (long long)z.size(), ds, dm);
  TK_CUDA_CHECK(cudaGetLastError());
  TK_CUDA_CHECK(cudaMemcpy(m.data(), dm, threads * sizeof(float), cudaMemcpyDeviceToHost));
  ok = true;
  for (int t = 0; t < threads; ++t) ok &= bits(m[t]) == 0u;
  tktest::report(ok, "block_reduce_max_signed_zero", "got bits 0x%08x", bits(m[0]));
  cudaFree(dx);
  cudaFree(ds);
  cudaFree(dm);
}

static void test_argmax_row(const char* label, const std::vector<float>& hx) {
  const int n = (int)hx.size();
  float best = -INFINITY;
  int want = -1;
  for (int k = 0; k < n; ++k) tk::argmax_step(best, want, hx[k], k);  // host: in order
  float* dx;
  int *db, *dw;
  TK_CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
  TK_CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  TK_CUDA_CHECK(cudaMalloc(&db, 1024 * sizeof(int)));
  TK_CUDA_CHECK(cudaMalloc(&dw, 32 * sizeof(int)));
  for (int threads : {32, 96, 128, 1024}) {
    std::vector<int> b[2], w[2];
    for (int run = 0; run < 2; ++run) {
      TK_CUDA_CHECK(cudaMemset(db, 0xFF, 1024 * sizeof(int)));
      TK_CUDA_CHECK(cudaMemset(dw, 0xFF, 32 * sizeof(int)));
      argmax_kernel<<<1, threads>>>(dx, n, db, dw);
      TK_CUDA_CHECK(cudaGetLastError());
      TK_CUDA_CHECK(cudaDeviceSynchronize());
      b[run].resize(threads);
      w[run].resize(32);
      TK_CUDA_CHECK(cudaMemcpy(b[run].data(), db, threads * sizeof(int), cudaMemcpyDeviceToHost));
      TK_CUDA_CHECK(cudaMemcpy(w[run].data(), dw, 32 * sizeof(int), cudaMemcpyDeviceToHost));
    }
    bool ok = b[0] == b[1] && w[0] == w[1];
    for (int v : b[0]) ok &= v == want;
    for (int v : w[0]) ok &= v == want;
    char name[128];
    snprintf(name, sizeof name, "argmax_%s_n%d_block%d", label, n, threads);
    tktest::report(ok, name, "want=%d block[0]=%d warp[0]=%d", want, b[0][0], w[0][0]);
  }
  cudaFree(dx);
  cudaFree(db);
  cudaFree(dw);
}

static void test_argmax() {
  tktest::Rng rng(4242);
  for (int n : {1, 10, 33, 300, 1000, 5000}) {
    std::vector<float> x(n);
    // Few distinct values: ties everywhere; the first maximum must win.
    for (auto& v : x) v = (float)(rng.next() % 7);
    test_argmax_row("ties", x);
    for (auto& v : x) v = rng.uniform();
    test_argmax_row("random", x);
    std::vector<float> nan = x;
    nan[(n * 2) / 3] = NAN;
    if (n > 3) nan[n - 1] = NAN;
    test_argmax_row("nan", nan);
    std::vector<float> inf(n, -INFINITY);
    test_argmax_row("all_minus_inf", inf);
    std::vector<float> zeros(n);
    for (int k = 0; k < n; ++k) zeros[k] = (k % 3 == 0) ? -0.0f : 0.0f;
    test_argmax_row("signed_zeros", zeros);
    std::vector<float> first(n, 1.0f);
    first[0] = NAN;
    test_argmax_row("nan_first", first);
  }
}

int main() {
  if (!tktest::have_gpu()) {
    printf("FAIL reduce no CUDA device visible\n");
    return 1;
  }
  const long long sizes[] = {1, 31, 256, 1000, 100000};
  for (long long n : sizes) {
    std::vector<float> hx(n);
    tktest::Rng rng(1000 + n);
    // Mixed signs and magnitudes so the summation order matters.
    for (auto& v : hx) v = rng.uniform() * std::ldexp(1.0f, (int)(rng.next() % 16) - 8);
    for (int threads : {32, 96, 256, 1024}) test_block(hx, n, threads);
  }

  int dev = 0, sms = 0, coop = 0, per_sm = 0;
  TK_CUDA_CHECK(cudaGetDevice(&dev));
  TK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  TK_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  if (!coop) {
    tktest::report(false, "grid_reduce", "device does not support cooperative launch");
    return tktest::finish();
  }
  TK_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_reduce_kernel, 256, 0));
  const int max_blocks = sms * (per_sm < 2 ? per_sm : 2);
  for (long long n : sizes) {
    std::vector<float> hx(n);
    tktest::Rng rng(5000 + n);
    for (auto& v : hx) v = rng.uniform() * std::ldexp(1.0f, (int)(rng.next() % 16) - 8);
    test_grid(hx, n, 3, 256);
    test_grid(hx, n, max_blocks, 256);
  }
  test_special();
  test_argmax();
  return tktest::finish();
}
