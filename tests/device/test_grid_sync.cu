// GPU test: tk::grid_sync() in cooperative launches (cudaLaunchCooperativeKernel).
//
//   grid_sync_visibility_*  R rounds; in each round every thread writes its
//       slot, grid_sync(), then every block sums ALL slots (writes of every
//       other block) and one thread also re-reads a slot of another block that
//       it had read (and so may hold in L1) just before the barrier; both must
//       see this round's values. A second grid_sync() separates the reads from
//       the next round's writes. Run with 2 blocks, one block per SM and the
//       largest co-resident grid (up to 2 per SM).
//   coop_mlp_*  a miniature megakernel: phase 1 H = relu(X @ W1^T + b1)
//       (bf16 tensor-core gemm_tile, stored bf16), grid_sync, phase 2
//       Y = H @ W2^T (gemm_tile reading H written by OTHER blocks in this
//       launch, through cp.async), grid_sync, phase 3 deterministic two-level
//       sum of squares of Y. Checked against host references and for
//       bit-identical reruns.
#include <cmath>
#include <cstring>
#include <vector>

#include "tk/tk.cuh"
#include "tk_test.cuh"

__global__ void barrier_kernel(int* data, int rounds, unsigned long long* block_sums,
                               int* stale_reads, int* sink) {
  __shared__ unsigned long long warp_sums[32];
  const int total = gridDim.x * blockDim.x;
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  // A slot owned by another block (when there is one).
  const int other = (g + blockDim.x) % total;
  int dummy = 0;
  for (int r = 0; r < rounds; ++r) {
    const int pre = data[other];  // may pull the line into L1 with last round's value
    dummy += pre;
    data[g] = r * 1000003 + g;
    tk::grid_sync();
    // Every block reads every slot.
    unsigned long long s = 0;
    for (int i = threadIdx.x; i < total; i += blockDim.x) s += (unsigned long long)data[i];
    if (data[other] != r * 1000003 + other) atomicAdd(stale_reads, 1);
    // Block sum of s (integers: order does not matter).
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long b = 0;
      for (int w = 0; w < (int)(blockDim.x >> 5); ++w) b += warp_sums[w];
      block_sums[(size_t)r * gridDim.x + blockIdx.x] = b;
    }
    tk::grid_sync();  // all reads of this round done before the next writes
  }
  if (dummy == 0x7fffffff) sink[0] = dummy;  // keep the pre-barrier loads
}

static void test_barrier(int blocks, int threads, const char* label) {
  const int rounds = 6;
  const int total = blocks * threads;
  int *data, *stale, *sink;
  unsigned long long* sums;
  TK_CUDA_CHECK(cudaMalloc(&data, total * sizeof(int)));
  TK_CUDA_CHECK(cudaMemset(data, 0, total * sizeof(int)));
  TK_CUDA_CHECK(cudaMalloc(&sums, (size_t)rounds * blocks * sizeof(unsigned long long)));
  TK_CUDA_CHECK(cudaMalloc(&stale, sizeof(int)));
  TK_CUDA_CHECK(cudaMalloc(&sink, sizeof(int)));
  TK_CUDA_CHECK(cudaMemset(stale, 0, sizeof(int)));
  int rounds_arg = rounds;
  void* args[] = {&data, &rounds_arg, &sums, &stale, &sink};
  TK_CUDA_CHECK(cudaLaunchCooperativeKernel((void*)barrier_kernel, dim3(blocks), dim3(threads),
                                            args, 0, 0));
  TK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<unsigned long long> h((size_t)rounds * blocks);
  int hstale = 0;
  TK_CUDA_CHECK(cudaMemcpy(h.data(), sums, h.size() * sizeof(unsigned long long),
                           cudaMemcpyDeviceToHost));
  TK_CUDA_CHECK(cudaMemcpy(&hstale, stale, sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int r = 0; r < rounds; ++r) {
    unsigned long long expect = 0;
    for (int g = 0; g < total; ++g) expect += (unsigned long long)(r * 1000003 + g);
    for (int b = 0; b < blocks; ++b) wrong += h[(size_t)r * blocks + b] != expect;
  }
  char name[128];
  snprintf(name, sizeof name, "grid_sync_visibility_%s_%dx%d", label, blocks, threads);
  tktest::report(wrong == 0 && hstale == 0, name, "wrong_block_sums=%d stale_reads=%d", wrong,
                 hstale);
  cudaFree(data);
  cudaFree(sums);
  cudaFree(stale);
  cudaFree(sink);
}

// ---------------------------------------------------------------------------
// Miniature megakernel
// ---------------------------------------------------------------------------
using bf16 = __nv_bfloat16;
constexpr int kBM = 64, kBN = 64, kBK = 32;

__global__ void coop_mlp_kernel(const bf16* X, const bf16* W1, const float* b1, const bf16* W2,
                                bf16* H, float* Y, float* partials, float* loss, int B, int I,
                                int Hd, int O) {
  extern __shared__ __align__(16) char smem[];
  __shared__ float scratch[tk::kReduceScratchFloats];
  // Phase 1: H[B, Hd] = relu(X[B, I] @ W1[Hd, I]^T + b1)  (nn.Linear layout)
  {
    const int tn = tk::gemm_tiles_n(Hd, kBN), tiles = tk::gemm_num_tiles(B, Hd, kBM, kBN);
    for (int t = blockIdx.x; t < tiles; t += gridDim.x)
      tk::gemm_tile<bf16, kBM, kBN, kBK, false, true>(
          X, I, W1, I, B, Hd, I, t / tn, t % tn, smem, [=](int i, int j, float acc) {
            const float v = acc + b1[j];
            H[(size_t)i * Hd + j] = tk::from_float<bf16>(v > 0.0f ? v : 0.0f);
          });
  }
  tk::grid_sync();
  // Phase 2: Y[B, O] = H @ W2[O, Hd]^T, H written by other blocks above.
  {
    const int tn = tk::gemm_tiles_n(O, kBN), tiles = tk::gemm_num_tiles(B, O, kBM, kBN);
    for (int t = blockIdx.x; t < tiles; t += gridDim.x)
      tk::gemm_tile<bf16, kBM, kBN, kBK, false, true>(
          H, Hd, W2, Hd, B, O, Hd, t / tn, t % tn, smem,
          [=](int i, int j, float acc) { Y[(size_t)i * O + j] = acc; });
  }
  tk::grid_sync();
  // Phase 3: loss = sum(Y^2), deterministic two-level reduction.
  float acc = 0.0f;
  tk::for_each_index(B * O, [&](int i) { acc += Y[i] * Y[i]; });
  const float bs = tk::block_reduce_sum(acc, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = bs;
  tk::grid_sync();
  if (blockIdx.x == 0) {
    const float total = tk::reduce_partials_sum(partials, gridDim.x, scratch);
    if (threadIdx.x == 0) loss[0] = total;
  }
}

static void test_coop_mlp(int blocks, int B, int I, int Hd, int O) {
  tktest::Rng rng(4242 + B + I + Hd + O);
  std::vector<bf16> X((size_t)B * I), W1((size_t)Hd * I), W2((size_t)O * Hd);
  std::vector<float> b1(Hd);
  for (auto& v : X) v = tk::from_float<bf16>(rng.uniform());
  for (auto& v : W1) v = tk::from_float<bf16>(rng.uniform() * 0.2f);
  for (auto& v : W2) v = tk::from_float<bf16>(rng.uniform() * 0.2f);
  for (auto& v : b1) v = rng.uniform() * 0.1f;
  bf16 *dX, *dW1, *dW2, *dH;
  float *db1, *dY, *dP, *dL;
  TK_CUDA_CHECK(cudaMalloc(&dX, X.size() * 2));
  TK_CUDA_CHECK(cudaMalloc(&dW1, W1.size() * 2));
  TK_CUDA_CHECK(cudaMalloc(&dW2, W2.size() * 2));
  TK_CUDA_CHECK(cudaMalloc(&dH, (size_t)B * Hd * 2));
  TK_CUDA_CHECK(cudaMalloc(&db1, Hd * 4));
  TK_CUDA_CHECK(cudaMalloc(&dY, (size_t)B * O * 4));
  TK_CUDA_CHECK(cudaMalloc(&dP, blocks * 4));
  TK_CUDA_CHECK(cudaMalloc(&dL, 4));
  TK_CUDA_CHECK(cudaMemcpy(dX, X.data(), X.size() * 2, cudaMemcpyHostToDevice));
  TK_CUDA_CHECK(cudaMemcpy(dW1, W1.data(), W1.size() * 2, cudaMemcpyHostToDevice));
  TK_CUDA_CHECK(cudaMemcpy(dW2, W2.data(), W2.size() * 2, cudaMemcpyHostToDevice));
  TK_CUDA_CHECK(cudaMemcpy(db1, b1.data(), Hd * 4, cudaMemcpyHostToDevice));
  const int smem = tk::gemm_smem_bytes<bf16, kBM, kBN, kBK>();
  float loss[2];
  std::vector<float> Y[2];
  std::vector<bf16> Hh((size_t)B * Hd);
  for (int run = 0; run < 2; ++run) {
    TK_CUDA_CHECK(cudaMemset(dH, 0xFF, (size_t)B * Hd * 2));  // NaN: stale reads would show
    TK_CUDA_CHECK(cudaMemset(dY, 0xFF, (size_t)B * O * 4));
    void* args[] = {&dX, &dW1, &db1, &dW2, &dH, &dY, &dP, &dL, &B, &I, &Hd, &O};
    TK_CUDA_CHECK(cudaLaunchCooperativeKernel((void*)coop_mlp_kernel, dim3(blocks), dim3(256),
                                              args, smem, 0));
    TK_CUDA_CHECK(cudaDeviceSynchronize());
    Y[run].resize((size_t)B * O);
    TK_CUDA_CHECK(cudaMemcpy(Y[run].data(), dY, Y[run].size() * 4, cudaMemcpyDeviceToHost));
    TK_CUDA_CHECK(cudaMemcpy(&loss[run], dL, 4, cudaMemcpyDeviceToHost));
    if (run == 0) TK_CUDA_CHECK(cudaMemcpy(Hh.data(), dH, Hh.size() * 2, cudaMemcpyDeviceToHost));
  }
  // Phase 1 reference: H within one bf16 rounding step (fp32 vs fp64 sums
  // can round to neighbouring bf16 values).
  int bad_h = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hd; ++h) {
      double s = b1[h], sa = std::fabs(b1[h]);
      for (int i = 0; i < I; ++i) {
        const double p = (double)tk::to_float(X[(size_t)b * I + i]) *
                         (double)tk::to_float(W1[(size_t)h * I + i]);
        s += p;
        sa += std::fabs(p);
      }
      const double want = s > 0 ? s : 0;
      const double got = tk::to_float(Hh[(size_t)b * Hd + h]);
      if (!(std::fabs(got - want) <= std::fabs(want) * (1.0 / 128) + 1e-4 * sa)) ++bad_h;
    }
  // Phase 2 reference from the H the kernel produced (isolates phase 2).
  int bad_y = 0;
  double ref_loss = 0, loss_scale = 0;
  for (int b = 0; b < B; ++b)
    for (int o = 0; o < O; ++o) {
      double s = 0, sa = 0;
      for (int h = 0; h < Hd; ++h) {
        const double p = (double)tk::to_float(Hh[(size_t)b * Hd + h]) *
                         (double)tk::to_float(W2[(size_t)o * Hd + h]);
        s += p;
        sa += std::fabs(p);
      }
      const double got = Y[0][(size_t)b * O + o];
      if (!(std::fabs(got - s) <= 1e-4 * sa + 1e-30)) ++bad_y;
      ref_loss += got * got;  // phase 3 reference from the kernel's Y
      loss_scale += got * got;
    }
  const double loss_err = std::fabs(loss[0] - ref_loss) / (loss_scale > 0 ? loss_scale : 1.0);
  char name[128];
  snprintf(name, sizeof name, "coop_mlp_%dblocks_B%d_I%d_H%d_O%d", blocks, B, I, Hd, O);
  tktest::report(bad_h == 0 && bad_y == 0 && loss_err < 1e-4, name,
                 "bad_H=%d bad_Y=%d loss=%.9g ref=%.9g", bad_h, bad_y, loss[0], ref_loss);
  snprintf(name, sizeof name, "coop_mlp_%dblocks_B%d_I%d_H%d_O%d_bit_identical_rerun", blocks, B,
           I, Hd, O);
  tktest::report(memcmp(Y[0].data(), Y[1].data(), Y[0].size() * 4) == 0 &&
                     memcmp(&loss[0], &loss[1], 4) == 0,
                 name);
  cudaFree(dX);
  cudaFree(dW1);
  cudaFree(dW2);
  cudaFree(dH);
  cudaFree(db1);
  cudaFree(dY);
  cudaFree(dP);
  cudaFree(dL);
}

int main() {
  if (!tktest::have_gpu()) {
    printf("FAIL grid_sync no CUDA device visible\n");
    return 1;
  }
  int dev = 0, sms = 0, coop = 0, per_sm = 0;
  TK_CUDA_CHECK(cudaGetDevice(&dev));
  TK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  TK_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  if (!coop) {
    tktest::report(false, "grid_sync", "device does not support cooperative launch");
    return tktest::finish();
  }
  TK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, barrier_kernel, 256, 0));
  const int co_resident = sms * (per_sm < 2 ? (per_sm > 0 ? per_sm : 1) : 2);
  test_barrier(2, 256, "two_blocks");
  test_barrier(sms, 256, "one_per_sm");
  test_barrier(co_resident, 256, "co_resident");
  test_barrier(sms, 1024, "one_per_sm");

  const int smem = tk::gemm_smem_bytes<bf16, kBM, kBN, kBK>();
  TK_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, coop_mlp_kernel, 256, smem));
  const int mlp_blocks = sms;  // one persistent block per SM
  if (per_sm < 1) {
    tktest::report(false, "coop_mlp", "kernel does not fit on an SM (regs/smem)");
  } else {
    test_coop_mlp(mlp_blocks, 256, 512, 1024, 64);  // the "small" benchmark shape
    test_coop_mlp(5, 16, 32, 64, 8);                // "tiny", fewer blocks than tiles
    test_coop_mlp(7, 33, 40, 100, 10);              // ragged: scalar (unaligned ld) path
  }
  return tktest::finish();
}
