// tk/resident.cuh -- building blocks of a resident megakernel (one cluster,
// the working set in shared memory).
//
//   stage_rows(dst, src, rows, row_elems, src_stride, dst_stride)
//       start copying `rows` rows of `row_elems` elements from global memory
//       into shared memory (cp.async: 16-byte copies when every address and
//       stride allows, else 4-byte, else plain loads); stage_wait() waits for
//       all of them and publishes them to the block. Every copy of the
//       kernel's prologue is in flight together.
//   smem_gemm<NT, NV, T>(M, N, K, A, sam, sak, B, sbk, sbn, compute, store)
//       C = A @ B with both operands in shared memory at any strides
//       (A(i,k) = A[i*sam + k*sak], B(k,j) = B[k*sbk + j*sbn]): mma.sync
//       m16n8k16 for bf16/f16, fp32 FMA for float, fp32 accumulation in
//       increasing k order; for every output element, compute(i, j, acc,
//       vals) fills its NV epilogue values and store(i, j, vals) writes them
//       (compute may also be called for clamped in-range indices whose
//       store is skipped: it must only read).
//   cluster_reduce<CLUSTER, Op>(partials, n, epi)
//       every block of the cluster holds n fp32 partials in shared memory;
//       each block sums all blocks' partials in rank order (deterministic,
//       through distributed shared memory) and calls epi(e, total) for every
//       e < n. Begins and ends with a cluster barrier.
//
// All functions are called by every thread of the block (they may contain
// barriers); 1-D blocks of NT threads.
#pragma once

#include <cooperative_groups.h>
#include <stdint.h>

#include "gemm.cuh"
#include "reduce.cuh"
#include "types.cuh"

namespace tk {

// ---------------------------------------------------------------------------
// Prologue copies
// ---------------------------------------------------------------------------
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(src), "n"(BYTES) : "memory");
  }
}

template <typename T>
__device__ __forceinline__ void stage_rows(T* dst, const T* src, int rows, int row_elems, long long src_stride,
                                           int dst_stride) {
  if (rows <= 0 || row_elems <= 0) return;
  const long long row_bytes = (long long)row_elems * sizeof(T);
  const bool v16 = is_aligned(dst, 16) && is_aligned(src, 16) && row_bytes % 16 == 0 &&
                   (src_stride * sizeof(T)) % 16 == 0 && ((long long)dst_stride * sizeof(T)) % 16 == 0;
  const bool v4 = is_aligned(dst, 4) && is_aligned(src, 4) && row_bytes % 4 == 0 &&
                  (src_stride * sizeof(T)) % 4 == 0 && ((long long)dst_stride * sizeof(T)) % 4 == 0;
  if (v16 || v4) {
    const int unit = v16 ? 16 : 4;
    const int per_row = (int)(row_bytes / unit);
    const int total = rows * per_row;
    for (int c = threadIdx.x; c < total; c += blockDim.x) {
      const int r = c / per_row, u = c - r * per_row;
      char* d = (char*)(dst + (long long)r * dst_stride) + u * unit;
      const char* s = (const char*)(src + r * src_stride) + u * unit;
      if (v16) cp_async<16>(d, s); else cp_async<4>(d, s);
    }
  } else {
    const int total = rows * row_elems;
    for (int c = threadIdx.x; c < total; c += blockDim.x) {
      const int r = c / row_elems, e = c - r * row_elems;
      dst[(long long)r * dst_stride + e] = src[r * src_stride + e];
    }
  }
}

__device__ __forceinline__ void stage_wait() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();
}

// ---------------------------------------------------------------------------
// GEMM from shared memory
// ---------------------------------------------------------------------------
namespace resident_detail {

template <typename T>
__device__ __forceinline__ uint32_t bits16(T x) {
  return (uint32_t)(*reinterpret_cast<const unsigned short*>(&x));
}

template <typename T>
__device__ __forceinline__ T at(const T* p, int r, int c, int rows, int cols, int sr, int sc) {
  return (r < rows && c < cols) ? p[r * sr + c * sc] : from_float<T>(0.0f);
}

template <typename T>
__device__ __forceinline__ uint32_t pack(T lo, T hi) {
  return bits16(lo) | (bits16(hi) << 16);
}

}  // namespace resident_detail

// Warp work unit: a 16 x 32 strip of C (one A fragment, four B fragments per k step).
//
// The epilogue comes in two halves so that its shared-memory reads are not
// serialized behind its stores (the compiler cannot prove that they do not
// alias): compute(i, j, acc, vals) fills the NV values an output element
// yields, for all of a lane's elements first; store(i, j, vals) then writes
// them.
template <int NT, int NV, typename T, class Compute, class Store>
__device__ __forceinline__ void smem_gemm(int M, int N, int K, const T* A, int sam, int sak, const T* B, int sbk,
                                          int sbn, Compute compute, Store store) {
  if (M <= 0 || N <= 0) return;
  if constexpr (std::is_same<T, float>::value) {
    // SIMT fp32: four outputs per thread at a time, k in increasing order.
    for (int e0 = threadIdx.x; e0 < M * N; e0 += 4 * NT) {
      float vals[4][NV > 0 ? NV : 1];
      int ii[4], jj[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int e = min(e0 + u * NT, M * N - 1);
        ii[u] = e / N;
        jj[u] = e - ii[u] * N;
      }
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int u = 0; u < 4; ++u) acc[u] = fmaf(A[ii[u] * sam + k * sak], B[k * sbk + jj[u] * sbn], acc[u]);
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) compute(ii[u], jj[u], acc[u], vals[u]);
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (e0 + u * NT < M * N) store(ii[u], jj[u], vals[u]);
    }
  } else {
    using namespace resident_detail;
    constexpr int kWarps = NT / 32;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int tiles_m = (M + 15) / 16, tiles_n = (N + 31) / 32;
    for (int unit = warp; unit < tiles_m * tiles_n; unit += kWarps) {
      const int m0 = (unit / tiles_n) * 16, n0 = (unit % tiles_n) * 32;
      float acc[4][4];
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[q][c] = 0.0f;
#pragma unroll 2
      for (int k0 = 0; k0 < K; k0 += 16) {
        uint32_t a[4];
        const int r0 = m0 + g, r1 = m0 + g + 8, c0 = k0 + 2 * t, c1 = k0 + 2 * t + 8;
        a[0] = pack(at(A, r0, c0, M, K, sam, sak), at(A, r0, c0 + 1, M, K, sam, sak));
        a[1] = pack(at(A, r1, c0, M, K, sam, sak), at(A, r1, c0 + 1, M, K, sam, sak));
        a[2] = pack(at(A, r0, c1, M, K, sam, sak), at(A, r0, c1 + 1, M, K, sam, sak));
        a[3] = pack(at(A, r1, c1, M, K, sam, sak), at(A, r1, c1 + 1, M, K, sam, sak));
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int col = n0 + 8 * q + g;
          if (n0 + 8 * q < N) {
            // B(k, j) = B[k*sbk + j*sbn], read as rows k, column col
            const uint32_t b0 = pack(at(B, c0, col, K, N, sbk, sbn), at(B, c0 + 1, col, K, N, sbk, sbn));
            const uint32_t b1 = pack(at(B, c1, col, K, N, sbk, sbn), at(B, c1 + 1, col, K, N, sbk, sbn));
            gemm_detail::mma_16816<T>(acc[q], a, b0, b1);
          }
        }
      }
      // Element c of fragment q: row m0 + g (+8 for c >= 2), column n0 + 8q + 2t (+1 for odd c).
      float vals[4][4][NV > 0 ? NV : 1];
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int i = min(m0 + g + 8 * (c >> 1), M - 1), j = min(n0 + 8 * q + 2 * t + (c & 1), N - 1);
          compute(i, j, acc[q][c], vals[q][c]);
        }
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int i = m0 + g + 8 * (c >> 1), j = n0 + 8 * q + 2 * t + (c & 1);
          if (i < M && j < N) store(i, j, vals[q][c]);
        }
    }
  }
}

// ---------------------------------------------------------------------------
// Cluster exchange of partial results
// ---------------------------------------------------------------------------
template <int CLUSTER, class Op, class Epi>
__device__ __forceinline__ void cluster_reduce(float* partials, int n, Epi epi) {
  namespace cg = cooperative_groups;
  if constexpr (CLUSTER == 1) {
    __syncthreads();
    for (int e = threadIdx.x; e < n; e += blockDim.x) epi(e, partials[e]);
    __syncthreads();
  } else {
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    const float* remote[CLUSTER];
#pragma unroll
    for (int r = 0; r < CLUSTER; ++r) remote[r] = cluster.map_shared_rank(partials, r);
    Op op;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
      float acc = remote[0][e];
#pragma unroll
      for (int r = 1; r < CLUSTER; ++r) acc = op(acc, remote[r][e]);
      epi(e, acc);
    }
    // No block may reuse or leave its partials while another still reads them.
    cluster.sync();
  }
}

}  // namespace tk
