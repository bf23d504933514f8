// GPU test: tk/types.cuh conversions and tk/pointwise.cuh loops.
//
//   from_float_bf16 / from_float_f16  device float -> bf16 / half conversion of
//       ~1M bit patterns (random, exact ties, NaN, +-inf, overflow,
//       subnormals) against an independent host round-to-nearest-even
//       implementation (bf16) and the host library (half); to_float must
//       round-trip exactly.
//   for_each_index_*      every index in [0, n) visited exactly once for
//       several n / grid shapes (int and long long index types).
//   for_each_index_vec_*  vector body + scalar tail cover [0, n) exactly once.
//   load_store_vec        load_as_float / store_from_float on aligned and
//       misaligned pointers.
#include <cmath>
#include <cstring>
#include <vector>

#include "tk/tk.cuh"
#include "tk_test.cuh"

__global__ void convert_kernel(const float* in, int n, unsigned short* out_bf16,
                               unsigned short* out_f16, float* back_bf16, float* back_f16) {
  tk::for_each_index(n, [&](int i) {
    const __nv_bfloat16 b = tk::from_float<__nv_bfloat16>(in[i]);
    const __half h = tk::from_float<__half>(in[i]);
    out_bf16[i] = __bfloat16_as_ushort(b);
    out_f16[i] = __half_as_ushort(h);
    back_bf16[i] = tk::to_float(b);
    back_f16[i] = tk::to_float(h);
  });
}

template <typename I>
__global__ void visit_kernel(I n, int* hits) {
  tk::for_each_index(n, [&](I i) { atomicAdd(hits + i, 1); });
}

__global__ void visit_vec_kernel(int n, int* hits) {
  tk::for_each_index_vec<4>(
      n,
      [&](int i) {
        for (int k = 0; k < 4; ++k) atomicAdd(hits + i + k, 1);
      },
      [&](int i) { atomicAdd(hits + i, 1); });
}

__global__ void vec_io_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int n8) {
  tk::for_each_index(n8, [&](int c) {
    float v[8];
    tk::load_as_float<8>(in + 8 * c, v);
    for (int k = 0; k < 8; ++k) v[k] = v[k] * 2.0f + 1.0f;
    tk::store_from_float<8>(out + 8 * c, v);
  });
}

// Independent reference: float -> bf16 bits, round to nearest even.
static unsigned short ref_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // quiet NaN
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return (unsigned short)(u >> 16);
}

static float f_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_convert() {
  std::vector<float> x;
  tktest::Rng rng(7);
  for (int i = 0; i < 1 << 20; ++i) x.push_back(f_from_bits((uint32_t)rng.next()));
  // Exact ties and neighbours for bf16 (low 16 bits 0x8000) and f16.
  for (int e = 0; e < 255; ++e)
    for (uint32_t m : {0x00008000u, 0x00018000u, 0x00007fffu, 0x00008001u, 0x007f8000u})
      for (uint32_t s : {0u, 0x80000000u}) x.push_back(f_from_bits(s | ((uint32_t)e << 23) | m));
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65520.0f, 65519.99f, 3.0e38f,
                  3.4028235e38f, 1e-40f, -1e-45f, 5.96e-8f, 2.98e-8f, 1.0f / 3.0f})
    x.push_back(v);
  const int n = (int)x.size();
  float *din, *bb, *bh;
  unsigned short *ob, *oh;
  TK_CUDA_CHECK(cudaMalloc(&din, n * 4));
  TK_CUDA_CHECK(cudaMalloc(&bb, n * 4));
  TK_CUDA_CHECK(cudaMalloc(&bh, n * 4));
  TK_CUDA_CHECK(cudaMalloc(&ob, n * 2));
  TK_CUDA_CHECK(cudaMalloc(&oh, n * 2));
  TK_CUDA_CHECK(cudaMemcpy(din, x.data(), n * 4, cudaMemcpyHostToDevice));
  convert_kernel<<<37, 256>>>(din, n, ob, oh, bb, bh);
  TK_CUDA_CHECK(cudaGetLastError());
  TK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<unsigned short> hb(n), hh(n);
  std::vector<float> hbb(n), hbh(n);
  TK_CUDA_CHECK(cudaMemcpy(hb.data(), ob, n * 2, cudaMemcpyDeviceToHost));
  TK_CUDA_CHECK(cudaMemcpy(hh.data(), oh, n * 2, cudaMemcpyDeviceToHost));
  TK_CUDA_CHECK(cudaMemcpy(hbb.data(), bb, n * 4, cudaMemcpyDeviceToHost));
  TK_CUDA_CHECK(cudaMemcpy(hbh.data(), bh, n * 4, cudaMemcpyDeviceToHost));
  int bad_b = 0, bad_h = 0, bad_rt = 0;
  for (int i = 0; i < n; ++i) {
    const bool nan = std::isnan(x[i]);
    const unsigned short want_b = ref_bf16(x[i]);
    if (nan ? !((hb[i] & 0x7f80) == 0x7f80 && (hb[i] & 0x7f)) : hb[i] != want_b) {
      if (bad_b < 3) fprintf(stderr, "  bf16(%a): got 0x%04x want 0x%04x\n", x[i], hb[i], want_b);
      ++bad_b;
    }
    const unsigned short want_h = __half_as_ushort(__float2half_rn(x[i]));
    if (nan ? !((hh[i] & 0x7c00) == 0x7c00 && (hh[i] & 0x3ff)) : hh[i] != want_h) {
      if (bad_h < 3) fprintf(stderr, "  f16(%a): got 0x%04x want 0x%04x\n", x[i], hh[i], want_h);
      ++bad_h;
    }
    // to_float is exact: the widened value has the same bits in the top half.
    uint32_t ub;
    memcpy(&ub, &hbb[i], 4);
    if (!nan && ub != ((uint32_t)hb[i] << 16)) ++bad_rt;
    if (!nan && (float)__half2float(__ushort_as_half(hh[i])) != hbh[i]) ++bad_rt;
  }
  tktest::report(bad_b == 0, "from_float_bf16_rne", "%d mismatches", bad_b);
  tktest::report(bad_h == 0, "from_float_f16_rne", "%d mismatches", bad_h);
  tktest::report(bad_rt == 0, "to_float_exact", "%d mismatches", bad_rt);
  cudaFree(din);
  cudaFree(bb);
  cudaFree(bh);
  cudaFree(ob);
  cudaFree(oh);
}

template <typename I>
static void test_visit(I n, int blocks, int threads) {
  int* hits;
  TK_CUDA_CHECK(cudaMalloc(&hits, ((size_t)n + 1) * 4));
  TK_CUDA_CHECK(cudaMemset(hits, 0, ((size_t)n + 1) * 4));
  visit_kernel<I><<<blocks, threads>>>(n, hits);
  TK_CUDA_CHECK(cudaGetLastError());
  std::vector<int> h((size_t)n + 1);
  TK_CUDA_CHECK(cudaMemcpy(h.data(), hits, h.size() * 4, cudaMemcpyDeviceToHost));
  int bad = h[(size_t)n] != 0;
  for (size_t i = 0; i < (size_t)n; ++i) bad += h[i] != 1;
  char name[128];
  snprintf(name, sizeof name, "for_each_index_%s_n%lld_grid%dx%d",
           sizeof(I) == 8 ? "i64" : "i32", (long long)n, blocks, threads);
  tktest::report(bad == 0, name, "%d wrong", bad);
  cudaFree(hits);
}

static void test_visit_vec(int n, int blocks, int threads) {
  int* hits;
  TK_CUDA_CHECK(cudaMalloc(&hits, (n + 1) * 4));
  TK_CUDA_CHECK(cudaMemset(hits, 0, (n + 1) * 4));
  visit_vec_kernel<<<blocks, threads>>>(n, hits);
  TK_CUDA_CHECK(cudaGetLastError());
  std::vector<int> h(n + 1);
  TK_CUDA_CHECK(cudaMemcpy(h.data(), hits, h.size() * 4, cudaMemcpyDeviceToHost));
  int bad = h[n] != 0;
  for (int i = 0; i < n; ++i) bad += h[i] != 1;
  char name[128];
  snprintf(name, sizeof name, "for_each_index_vec4_n%d_grid%dx%d", n, blocks, threads);
  tktest::report(bad == 0, name, "%d wrong", bad);
  cudaFree(hits);
}

static void test_vec_io() {
  const int n8 = 1000, n = 8 * n8;
  std::vector<__nv_bfloat16> in(n + 8);
  tktest::Rng rng(3);
  for (auto& v : in) v = tk::from_float<__nv_bfloat16>(rng.uniform());
  __nv_bfloat16 *din, *dout;
  TK_CUDA_CHECK(cudaMalloc(&din, (n + 8) * 2));
  TK_CUDA_CHECK(cudaMalloc(&dout, (n + 8) * 2));
  TK_CUDA_CHECK(cudaMemcpy(din, in.data(), (n + 8) * 2, cudaMemcpyHostToDevice));
  int bad = 0;
  for (int off : {0, 1, 3}) {  // aligned, misaligned (scalar fallback)
    vec_io_kernel<<<5, 128>>>(din + off, dout + off, n8);
    TK_CUDA_CHECK(cudaGetLastError());
    std::vector<__nv_bfloat16> out(n + 8);
    TK_CUDA_CHECK(cudaMemcpy(out.data(), dout, (n + 8) * 2, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      const float want = tk::to_float(tk::from_float<__nv_bfloat16>(
          tk::to_float(in[off + i]) * 2.0f + 1.0f));
      if (tk::to_float(out[off + i]) != want) ++bad;
    }
  }
  tktest::report(bad == 0, "load_store_vec", "%d wrong", bad);
  cudaFree(din);
  cudaFree(dout);
}

int main() {
  if (!tktest::have_gpu()) {
    printf("FAIL types_pointwise no CUDA device visible\n");
    return 1;
  }
  test_convert();
  test_visit<int>(1, 1, 32);
  test_visit<int>(1000, 3, 128);
  test_visit<int>(100000, 7, 256);
  test_visit<long long>(100003LL, 5, 96);
  test_visit_vec(1, 2, 64);
  test_visit_vec(1001, 3, 128);
  test_visit_vec(100002, 7, 256);
  test_vec_io();
  return tktest::finish();
}
