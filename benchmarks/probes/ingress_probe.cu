// How many bytes a second one SM's shared memory can take in, and from where
// (perf-log step 91). The small steps' gemm units are bound by it: mlp4's
// 128 x 64 x 256 unit loads 96 KB in ~1.9k cycles (~50 B a cycle), and the
// grid kernels slow down as their blocks get fewer (step 90: small 21.0 us on
// 99 blocks, 31.5 on 32, 40.9 on 16). Whether a cluster can lift it decides
// the design of issue 9's partitions: if TMA multicast or DSMEM delivers bytes
// beside a block's own L2 loads, operands shared within a cluster arrive
// faster; if every path shares one port, only spreading the bytes over more
// SMs helps.
//
// Each block (one an SM: ~200 KB of shared memory) runs `rounds` rounds; a
// round fills kBufs buffers of kChunk bytes with bulk copies
// (cp.async.bulk, the TMA engine), thread 0 waits for all of them on their
// mbarriers, and the block (or cluster) meets at a barrier. Modes:
//   l2      each block copies its own buffers from global memory (L2-resident)
//   mc      the cluster's blocks take turns issuing each buffer with
//           .multicast::cluster: every block receives every buffer, each
//           issues 1 / cluster of them
//   dsmem   clusters of two: rank 0 pushes its buffers into rank 1's
//           (cp.async.bulk.shared::cluster.shared::cta); rank 1 receives
//   both    clusters of two: rank 0 pushes half of rank 1's buffers while
//           rank 1 loads the other half from global memory (and rank 0 loads
//           its own other half): does DSMEM add to L2's bytes?
//   stream  as l2 without the rounds' barriers: each buffer is reissued as
//           soon as its last copy landed (the steady state of one SM's loads,
//           no drain between rounds)
//   dsmst   clusters of two: rank 0's threads store rank 1's buffers with
//           16-byte st.shared::cluster (a split-K fix-up's partials through
//           DSMEM by element stores, where bulk pushes measured 19 B a cycle)
// Printed per configuration: bytes each receiving block took in per cycle
// (the mean over receiving blocks of bytes / its cycles) and the launch's
// wall time.
//
// Build and run on the GPU machine (scripts/h200_call.sh part probe-ingress):
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -o /tmp/ingress benchmarks/probes/ingress_probe.cu && /tmp/ingress
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

constexpr int kChunk = 32 * 1024;
constexpr int kBufs = 6;
constexpr int kSmem = kChunk * kBufs + 1024;

enum Mode { kL2 = 0, kMc = 1, kDsmem = 2, kBoth = 3, kStream = 4, kDsmemSt = 5 };

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_blocks() {
  uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}
__device__ __forceinline__ void cluster_barrier() {
  __syncwarp();  // .aligned: the warp's threads execute it together (thread 0 comes from its copies)
  asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory");
}
__device__ __forceinline__ uint32_t mapa(uint32_t addr, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
  return out;
}
__device__ __forceinline__ void expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
}
__device__ __forceinline__ void load(uint32_t dst, const void* src, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(kChunk), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void load_multicast(uint32_t dst, const void* src, uint32_t bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;" ::
          "r"(dst),
      "l"(src), "r"(kChunk), "r"(bar), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void push(uint32_t remote_dst, uint32_t src, uint32_t remote_bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   remote_dst),
               "r"(src), "r"(kChunk), "r"(remote_bar)
               : "memory");
}

// Bytes this block receives in a round: all its buffers, but rank 0 of dsmem
// receives nothing and of both only its own half.
__device__ __forceinline__ int received_bufs(int mode, uint32_t rank) {
  if (mode == kDsmem || mode == kDsmemSt) return rank == 0 ? 0 : kBufs;
  if (mode == kBoth) return rank == 0 ? kBufs / 2 : kBufs;
  return kBufs;
}

__global__ void ingress(const char* src, size_t span, int rounds, int mode, unsigned long long* out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ __align__(8) uint64_t bars[kBufs];
  const uint32_t rank = cluster_rank(), nranks = cluster_blocks();
  const uint32_t base = (smem_u32(smem) + 1023u) & ~1023u;
  if (threadIdx.x == 0) {
    for (int b = 0; b < kBufs; ++b) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bars[b])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  cluster_barrier();
  // Each cluster reads its own window of the (L2-resident) source.
  const size_t window = (size_t)kBufs * kChunk;
  const char* mine = src + (((size_t)(blockIdx.x / nranks) * window) % (span - window + 1) & ~(size_t)1023);
  const uint16_t all = (uint16_t)((1u << nranks) - 1);
  long long t0 = 0;
  if (mode == kStream) {
    if (threadIdx.x == 0) {
      for (int r = 0; r < rounds; ++r) {
        if (r == 1) t0 = clock64();
        for (int b = 0; b < kBufs; ++b) {
          const uint32_t bar = smem_u32(&bars[b]);
          if (r > 0) wait(bar, (uint32_t)(r - 1) & 1u);
          expect(bar, kChunk);
          load(base + b * kChunk, mine + (size_t)b * kChunk, bar);
        }
      }
      for (int b = 0; b < kBufs; ++b) wait(smem_u32(&bars[b]), (uint32_t)(rounds - 1) & 1u);
      // Bytes over cycles from round 1's first issue: rounds - 1 rounds' bytes
      // landed (round 0's waits sit inside the timed span, the last round's too).
      out[2 * blockIdx.x] = (unsigned long long)(clock64() - t0);
      out[2 * blockIdx.x + 1] = (unsigned long long)kBufs * kChunk * (rounds - 1);
    }
    cluster_barrier();
    return;
  }
  for (int r = 0; r < rounds; ++r) {
    if (r == 1) t0 = clock64();  // round 0 warms L2 and the TLB
    if (mode == kDsmemSt) {
      if (rank == 0) {
        const uint32_t remote = mapa(base, 1);
        for (uint32_t off = threadIdx.x * 16u; off < (uint32_t)(kBufs * kChunk); off += blockDim.x * 16u)
          asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(remote + off), "r"(r), "r"(off),
                       "r"(0u), "r"(1u)
                       : "memory");
      }
      cluster_barrier();  // release (the stores) and acquire: rank 1 may read its buffers
      continue;
    }
    if (threadIdx.x == 0) {
      const int recv = received_bufs(mode, rank);
      for (int b = 0; b < kBufs; ++b) {
        const uint32_t dst = base + b * kChunk, bar = smem_u32(&bars[b]);
        const bool received = mode == kDsmem ? rank == 1 : mode == kBoth ? (rank == 1 || b >= kBufs / 2) : true;
        if (received) expect(bar, kChunk);
        if (mode == kL2) {
          load(dst, mine + (size_t)b * kChunk, bar);
        } else if (mode == kMc) {
          if ((uint32_t)b % nranks == rank) load_multicast(dst, mine + (size_t)b * kChunk, bar, all);
        } else if (mode == kDsmem) {
          if (rank == 0) push(mapa(dst, 1), dst, mapa(bar, 1));
        } else {  // kBoth: buffers below half rank 0 pushes into rank 1, the rest each loads itself
          if (b < kBufs / 2) {
            if (rank == 0) push(mapa(dst, 1), dst, mapa(bar, 1));
          } else {
            load(dst, mine + (size_t)b * kChunk, bar);
          }
        }
      }
      for (int b = 0; b < kBufs; ++b) {
        const bool received = mode == kDsmem ? rank == 1 : mode == kBoth ? (rank == 1 || b >= kBufs / 2) : true;
        if (received) wait(smem_u32(&bars[b]), (uint32_t)r & 1u);
      }
      (void)recv;
    }
    cluster_barrier();  // every block's buffers are free again (and pushes have landed)
  }
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = (unsigned long long)(clock64() - t0);
    out[2 * blockIdx.x + 1] = (unsigned long long)received_bufs(mode, rank) * kChunk * (rounds - 1);
  }
}

static const char* kModeNames[] = {"l2", "mc", "dsmem", "both", "stream", "dsmst"};

static void run(const char* src, size_t span, unsigned long long* out, int mode, int cluster, int want_grid) {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(128);
  cfg.dynamicSmemBytes = kSmem;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cfg.gridDim = dim3(cluster);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, ingress, &cfg) != cudaSuccess) clusters = 0;
  int grid = want_grid < clusters * cluster ? want_grid : clusters * cluster;
  grid -= grid % cluster;
  if (grid < cluster) {
    printf("%-6s cluster %2d grid %3d: not co-resident (%d clusters fit)\n", kModeNames[mode], cluster, want_grid,
           clusters);
    return;
  }
  cfg.gridDim = dim3(grid);
  const int rounds = 41;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = 1e30f;
  double best_rate = 0.0;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(a);
    cudaError_t e = cudaLaunchKernelEx(&cfg, ingress, src, span, rounds, mode, out);
    cudaEventRecord(b);
    if (e == cudaSuccess) e = cudaEventSynchronize(b);
    if (e != cudaSuccess) {
      printf("%-6s cluster %2d grid %3d: %s\n", kModeNames[mode], cluster, grid, cudaGetErrorString(e));
      cudaGetLastError();
      return;
    }
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    static unsigned long long host[2 * 1024];
    cudaMemcpy(host, out, sizeof(unsigned long long) * 2 * grid, cudaMemcpyDeviceToHost);
    double rate = 0.0;
    int receivers = 0;
    for (int i = 0; i < grid; ++i)
      if (host[2 * i + 1]) {
        rate += (double)host[2 * i + 1] / (double)host[2 * i];
        ++receivers;
      }
    rate /= receivers ? receivers : 1;
    if (ms < best) best = ms;
    if (rate > best_rate) best_rate = rate;
  }
  printf("%-6s cluster %2d grid %3d: %6.1f B/cycle a receiving block, launch %8.1f us\n", kModeNames[mode], cluster,
         grid, best_rate, best * 1000.0f);
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const size_t span = 24u << 20;  // within the 50 MB L2
  char* src;
  unsigned long long* out;
  cudaMalloc(&src, span);
  cudaMemset(src, 1, span);
  cudaMalloc(&out, sizeof(unsigned long long) * 2 * 1024);
  cudaFuncSetAttribute(ingress, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  cudaFuncSetAttribute(ingress, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("%s, %d SMs; %d KB a round a block in %d bulk copies of %d KB\n", prop.name, prop.multiProcessorCount,
         kBufs * kChunk / 1024, kBufs, kChunk / 1024);
  const int grids[] = {4, 16, 32, 64, 132};
  for (int g : grids) {
    run(src, span, out, kStream, 1, g);
    run(src, span, out, kL2, 1, g);
    run(src, span, out, kL2, 2, g);
    run(src, span, out, kMc, 2, g);
    run(src, span, out, kMc, 4, g);
    run(src, span, out, kDsmem, 2, g);
    run(src, span, out, kBoth, 2, g);
    run(src, span, out, kDsmemSt, 2, g);
  }
  return 0;
}
