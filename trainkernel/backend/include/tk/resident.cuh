// tk/resident.cuh -- building blocks of a resident megakernel (one cluster,
// the working set in shared memory).
//
//   stage_rows(dst, src, rows, row_elems, src_stride, dst_stride)
//       start copying `rows` rows of `row_elems` elements from global memory
//       into shared memory (cp.async.cg: 16-byte copies when every address
//       and stride allows, else 4-byte or element loads through L2 only: see
//       load_l2 on why nothing staged goes through L1); stage_wait() waits for
//       all of them and publishes them to the block. Every copy of the
//       kernel's prologue is in flight together. stage_rows<LOADS>: the
//       loads that are not cp.async issued LOADS a thread before any store.
//   stage_input_rows(dst, src, rows, row_elems, src_stride, dst_stride)
//       the same for a step input (nothing in the kernel writes it): cp.async
//       in 16-, 8- or 4-byte units (.ca under 16), so that rows of 20 or 200
//       bytes stay in flight until stage_wait() too.
//   stage_rows_bulk(dst, src, rows, row_elems, src_stride, dst_stride, bar)
//       the same rows a bulk copy each, counted on the mbarrier `bar`
//       (stage_bulk_arrive, stage_wait_bulk; measured slower, off).
//   stage_rows_multicast<CLUSTER>(dst, src, rows, row_elems, src_stride, dst_stride, bar, rank)
//       a home every block of the cluster stages whole, its rows shared out
//       over the blocks as bulk copies multicast into all of them, counted on
//       each block's `bar` (stage_fence_async once before; measured slower, off).
//   smem_gemm<NT, NV, T>(M, N, K, A, sam, sak, B, sbk, sbn, compute, store)
//       C = A @ B with both operands in shared memory at any strides
//       (A(i,k) = A[i*sam + k*sak], B(k,j) = B[k*sbk + j*sbn]): mma.sync
//       m16n8k16 for bf16/f16, fp32 FMA for float, fp32 accumulation in
//       increasing k order; for every output element, compute(i, j, acc,
//       vals) fills its NV epilogue values and store(i, j, vals) writes them
//       (compute may also be called for clamped in-range indices whose
//       store is skipped: it must only read); an optional store_pair(i, j,
//       vals, vals_next) stores columns j and j + 1 of row i at once. A store
//       passed as split_on(flag, f) (f(flag, i, j, vals)) runs in a loop
//       compiled for each value of the block-uniform flag, tested once a unit.
//   store_pair(p, a, b), store_pair_aligned(p, a, b)
//       two adjacent elements in one store (the first tests p's alignment).
//   with_slice_extent<CLUSTER, C, FULL_RANKS, TAIL>(rank, f)
//       f(std::integral_constant<int, E>) with this block's slice of a split
//       dimension a cluster does not divide (C for the first FULL_RANKS ranks,
//       TAIL for the next, 0 after), so that the products see constant extents.
//   CastRows<S, N>: rows staged cast to another element type (L2 loads,
//       every cast home's in flight together, then from_float); stage_wait()
//       publishes them with the copies.
//   launch_dependents(), wait_prior_grid() (grid.cuh)
//       programmatic dependent launch: let the next step's kernel be
//       scheduled now; wait until the previous one has finished.
//   push_partial<CLUSTER>(recv, n, e, v, rank), exchange<CLUSTER, Op>(recv, n, rank, epi[, copy])
//       a split contraction's partials pushed to their owners (DSMEM stores),
//       summed by the owner in rank order (deterministic), epi(e, total)
//       called once per element of the cluster, by its owner.
//   push_async<CLUSTER>(..., bar), exchange_async<CLUSTER, Op>(..., bar, parity, epi[, copy])
//       the same with the pushes as st.async to the owner's mbarrier, waited
//       on by the owner instead of a first cluster barrier.
//   push_partial_pair<CLUSTER>(..., e, a, b, rank), push_async_pair<CLUSTER>(..., bar)
//       partials e and e + 1 in one 8-byte store (e and the chunk even).
//   store_async_bytes<BYTES>(local, rank, bar)
//       4, 8 or 16 bytes of this block's shared memory into the same place in
//       block `rank`, one st.async counted on rank's copy of the mbarrier `bar`.
//
// All functions are called by every thread of the block (they may contain
// barriers); 1-D blocks of NT threads.
#pragma once

#include <stdint.h>

#include <type_traits>  // with_slice_extent's constants

#include "gemm.cuh"
#include "grid.cuh"  // launch_dependents, wait_prior_grid
#include "reduce.cuh"
#include "types.cuh"

namespace tk {

// ---------------------------------------------------------------------------
// Prologue copies
// ---------------------------------------------------------------------------
// Every staging load bypasses L1 (cp.async.cg, ld.global.cg). L1 is not coherent
// across SMs: a 4-byte cp.async.ca or a default ld of state that another block
// stored (rank 0's store of a replicated scalar, read again by the next step of
// the step loop, or by the next launch's blocks co-resident with the previous
// one's under programmatic launch) can return the line this SM cached before
// that store. Staged data is read once per block, so L1 would hold nothing
// worth keeping anyway.
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}

// One element of T (2, 4, 8 or 16 bytes) from global memory through L2 only.
template <typename T>
__device__ __forceinline__ T load_l2(const T* p) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "load_l2: element size");
  using Bits = std::conditional_t<sizeof(T) == 2, unsigned short,
               std::conditional_t<sizeof(T) == 4, unsigned, std::conditional_t<sizeof(T) == 8, uint2, uint4>>>;
  const Bits b = __ldcg(reinterpret_cast<const Bits*>(p));
  T x;
  __builtin_memcpy(&x, &b, sizeof(T));
  return x;
}

// Rows that cp.async cannot copy, through registers: each thread issues up to
// LOADS loads of U (8, 4 or sizeof(T) bytes) before it stores any, so that one
// global round trip covers them, where a loop of load-then-store waits one
// round trip per iteration (its next load is not hoisted above its store).
template <int LOADS, typename U, typename T>
__device__ __forceinline__ void copy_rows_in_registers(T* dst, const T* src, int rows, int row_elems,
                                                       long long src_stride, int dst_stride) {
  const int per_row = (int)((long long)row_elems * sizeof(T) / sizeof(U));
  const int total = rows * per_row;
  for (int c0 = threadIdx.x; c0 < total; c0 += LOADS * blockDim.x) {
    U v[LOADS];
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int c = c0 + i * (int)blockDim.x;
      if (c < total) {
        const int r = c / per_row, u = c - r * per_row;
        v[i] = load_l2(reinterpret_cast<const U*>(src + r * src_stride) + u);
      }
    }
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int c = c0 + i * (int)blockDim.x;
      if (c < total) {
        const int r = c / per_row, u = c - r * per_row;
        reinterpret_cast<U*>(dst + (long long)r * dst_stride)[u] = v[i];
      }
    }
  }
}

// The block's thread count as a compile-time constant where the kernel defines it
// (TK_BLOCK_THREADS, printed before this header where target.stage_constant_threads),
// else 0: blockDim.x at run time.
#if defined(TK_BLOCK_THREADS)
constexpr int kStageThreads = TK_BLOCK_THREADS;
#else
constexpr int kStageThreads = 0;
#endif
// Rounds of rows a thread's copies are unrolled by (TK_STAGE_UNROLL, for probes).
#ifdef TK_STAGE_UNROLL
constexpr int kStageUnroll = TK_STAGE_UNROLL;
#else
constexpr int kStageUnroll = 16;
#endif

// copy(d, s) for every UNIT-byte unit of `rows` rows, thread by thread. UNIT is a
// constant in each instance, so a unit's row is a division by a constant (the row's
// units, a constant where the caller's extents are): with the unit picked at run
// time it was a division by a variable, ~25 dependent instructions a copy, 10% of
// classification's step in the next step's batch alone (ncu, perf-log step 107).
// With the thread count a constant too (kStageThreads) and a row's units dividing
// it, a thread copies the same unit of rows r0, r0 + NT / per_row, ...: one address
// computed, the others at constant offsets, the loop unrolled (with the count from
// blockDim.x it was ~17 instructions a copy, a loop branch and a load of blockDim:
// 7% of classification's step, ncu run eb87678-h100-a). Measured (perf-log step
// 112): -0.06..-0.7 us a step where a thread has 4 copies or fewer, or rows that
// take the strided loop; +0.2 on classification, whose threads issue 8 back to back.
template <int UNIT, typename T, class Copy>
__device__ __forceinline__ void for_each_row_unit(T* dst, const T* src, int rows, int row_elems,
                                                  long long src_stride, int dst_stride, Copy copy) {
  const int per_row = (int)((long long)row_elems * sizeof(T) / UNIT);
  constexpr int NT = kStageThreads;
  if constexpr (NT > 0) {
    if (per_row > 0 && per_row <= NT && NT % per_row == 0) {
      constexpr unsigned kNT = NT > 0 ? NT : 1;  // (parsed with NT = 0 too)
      __builtin_assume(threadIdx.x < kNT);  // then r0 < dr: whole rounds of rows need no test
      const int r0 = threadIdx.x / per_row, u = threadIdx.x - r0 * per_row, dr = NT / per_row;
      char* d = (char*)(dst + (long long)r0 * dst_stride) + u * UNIT;
      const char* s = (const char*)(src + r0 * src_stride) + u * UNIT;
      const long long d_step = (long long)dr * dst_stride * sizeof(T), s_step = (long long)dr * src_stride * sizeof(T);
#pragma unroll kStageUnroll
      for (int i = 0; i < (rows + dr - 1) / dr; ++i)
        if (r0 + i * dr < rows) copy(d + i * d_step, s + i * s_step);
      return;
    }
  }
  const int total = rows * per_row, stride = NT > 0 ? NT : (int)blockDim.x;
  for (int c = threadIdx.x; c < total; c += stride) {
    const int r = c / per_row, u = c - r * per_row;
    copy((char*)(dst + (long long)r * dst_stride) + u * UNIT, (const char*)(src + r * src_stride) + u * UNIT);
  }
}

// Whether rows of `row_bytes` at these strides copy in units of b bytes: both
// addresses, the row and both strides (in elements of T) multiples of b.
template <typename T>
__device__ __forceinline__ bool rows_in_units(const T* dst, const T* src, long long row_bytes, long long src_stride,
                                              int dst_stride, int b) {
  return is_aligned(dst, b) && is_aligned(src, b) && row_bytes % b == 0 && (src_stride * sizeof(T)) % b == 0 &&
         ((long long)dst_stride * sizeof(T)) % b == 0;
}

// LOADS (target.stage_loads_in_flight, printed only for homes that are not
// 16-byte units): a thread's loads of rows cp.async cannot copy issued LOADS
// at a time (copy_rows_in_registers); 1 keeps the one-at-a-time loop.
template <int LOADS = 1, typename T>
__device__ __forceinline__ void stage_rows(T* dst, const T* src, int rows, int row_elems, long long src_stride,
                                           int dst_stride) {
  if (rows <= 0 || row_elems <= 0) return;
  const long long row_bytes = (long long)row_elems * sizeof(T);
  const bool v16 = is_aligned(dst, 16) && is_aligned(src, 16) && row_bytes % 16 == 0 &&
                   (src_stride * sizeof(T)) % 16 == 0 && ((long long)dst_stride * sizeof(T)) % 16 == 0;
  if constexpr (LOADS > 1) {
    if (!v16) {
      // (v16's test and v4's below, for any unit; they stay as written: folded into
      // one helper, nvcc schedules the default path's SASS differently.)
      auto units_of = [&](int b) { return rows_in_units(dst, src, row_bytes, src_stride, dst_stride, b); };
      if (units_of(8)) copy_rows_in_registers<LOADS, uint2>(dst, src, rows, row_elems, src_stride, dst_stride);
      else if (units_of(4)) copy_rows_in_registers<LOADS, unsigned>(dst, src, rows, row_elems, src_stride, dst_stride);
      else copy_rows_in_registers<LOADS, T>(dst, src, rows, row_elems, src_stride, dst_stride);
      return;
    }
  }
  const bool v4 = is_aligned(dst, 4) && is_aligned(src, 4) && row_bytes % 4 == 0 &&
                  (src_stride * sizeof(T)) % 4 == 0 && ((long long)dst_stride * sizeof(T)) % 4 == 0;
  if (v16) {
    for_each_row_unit<16>(dst, src, rows, row_elems, src_stride, dst_stride,
                          [](char* d, const char* s) { cp_async16(d, s); });
  } else if (v4) {
    for_each_row_unit<4>(dst, src, rows, row_elems, src_stride, dst_stride, [](char* d, const char* s) {
      *reinterpret_cast<unsigned*>(d) = load_l2(reinterpret_cast<const unsigned*>(s));
    });
  } else {
    const int total = rows * row_elems;
    for (int c = threadIdx.x; c < total; c += blockDim.x) {
      const int r = c / row_elems, e = c - r * row_elems;
      dst[(long long)r * dst_stride + e] = load_l2(src + r * src_stride + e);
    }
  }
}

// cp.async of 4 or 8 bytes exists only as .ca (through L1).
template <int B>
__device__ __forceinline__ void cp_async_ca(void* dst, const void* src) {
  static_assert(B == 4 || B == 8, "cp_async_ca: 4 or 8 bytes (16: cp_async16)");
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(src), "n"(B) : "memory");
}

// The rows of a step input (a batch: nothing in the kernel writes it) as
// stage_rows copies them, but by cp.async in the widest unit of 16, 8 or 4
// bytes that every row, stride and address allows, so that the copies stay in
// flight until stage_wait() (perf-log step 92: the next step's batch, staged
// during the step, where rows of 20 or 200 bytes went through registers and
// made the copying threads wait mid-step). Units under 16 bytes are .ca: L1
// cannot hold a stale line of a step input, which no block writes and every
// launch starts without. Rows of 2-byte units take stage_rows' element loop.
template <typename T>
__device__ __forceinline__ void stage_input_rows(T* dst, const T* src, int rows, int row_elems,
                                                 long long src_stride, int dst_stride) {
  if (rows <= 0 || row_elems <= 0) return;
  const long long row_bytes = (long long)row_elems * sizeof(T);
  // (As written, not rows_in_units: through the helper nvcc schedules the odd
  // shapes' prefetch differently, 8040 -> 7920 instructions at 50 x 100-300-10,
  // unmeasured.)
  auto units_of = [&](int b) {
    return is_aligned(dst, b) && is_aligned(src, b) && row_bytes % b == 0 && (src_stride * sizeof(T)) % b == 0 &&
           ((long long)dst_stride * sizeof(T)) % b == 0;
  };
  const int unit = units_of(16) ? 16 : units_of(8) ? 8 : units_of(4) ? 4 : 0;
  if (unit == 0) {
    stage_rows(dst, src, rows, row_elems, src_stride, dst_stride);
    return;
  }
  if (unit == 16) {
    for_each_row_unit<16>(dst, src, rows, row_elems, src_stride, dst_stride,
                          [](char* d, const char* s) { cp_async16(d, s); });
  } else if (unit == 8) {
    for_each_row_unit<8>(dst, src, rows, row_elems, src_stride, dst_stride,
                         [](char* d, const char* s) { cp_async_ca<8>(d, s); });
  } else {
    for_each_row_unit<4>(dst, src, rows, row_elems, src_stride, dst_stride,
                         [](char* d, const char* s) { cp_async_ca<4>(d, s); });
  }
}

// The same rows cast to another element type (a tile.smem_cast home): cp.async
// cannot convert, so a thread's loads of one home are held in registers
// (CastRows<S, N>: up to N 16-byte loads, or N elements where rows are not
// 16-byte aligned) and converted by from_float, the rounding of tk.cast. The
// printer issues every cast home's load() before any store(), so the homes'
// loads are in flight together; a home with more than N loads a thread takes
// the rest in rounds inside store().
template <typename S, int N>
struct CastRows {
  static constexpr int V = 16 / sizeof(S);  // elements of one 16-byte load
  uint4 v[N];
  const S* src;
  long long src_stride;
  int per_load, per_row, total;

  __device__ __forceinline__ void load_one(int c, uint4& out) const {
    const int r = c / per_row, q = c - r * per_row;
    const S* at = src + r * src_stride + q * per_load;
    if (per_load == V) out = load_l2(reinterpret_cast<const uint4*>(at));
    else *reinterpret_cast<S*>(&out) = load_l2(at);
  }

  template <typename D>
  __device__ __forceinline__ void store_one(D* dst, int dst_stride, int c, const uint4& in) const {
    const int r = c / per_row, q = c - r * per_row;
    const S* e = reinterpret_cast<const S*>(&in);
    D* out = dst + (long long)r * dst_stride + q * per_load;
    if (per_load == V) {
#pragma unroll
      for (int i = 0; i < V; ++i) out[i] = from_float<D>(to_float(e[i]));
    } else {
      out[0] = from_float<D>(to_float(e[0]));
    }
  }

  __device__ __forceinline__ void load(const S* s, int rows, int row_elems, long long stride) {
    src = s;
    src_stride = stride;
    const bool vec = is_aligned(s, 16) && row_elems % V == 0 && (stride * (long long)sizeof(S)) % 16 == 0;
    per_load = vec ? V : 1;
    per_row = row_elems / per_load;
    total = rows > 0 && row_elems > 0 ? rows * per_row : 0;
#pragma unroll
    for (int u = 0; u < N; ++u) {
      const int c = threadIdx.x + u * blockDim.x;
      if (c < total) load_one(c, v[u]);
    }
  }

  template <typename D>
  __device__ __forceinline__ void store(D* dst, int dst_stride) const {
#pragma unroll
    for (int u = 0; u < N; ++u) {
      const int c = threadIdx.x + u * blockDim.x;
      if (c < total) store_one(dst, dst_stride, c, v[u]);
    }
    for (int c = threadIdx.x + N * blockDim.x; c < total; c += blockDim.x) {
      uint4 x;
      load_one(c, x);
      store_one(dst, dst_stride, c, x);
    }
  }
};

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

// Which ldmatrix form reads an operand straight from its home, from its
// strides (element (r, c) at p[r*sr + c*sc], r the fragment's row index: m
// for A, n for B; c = k): 0 = k contiguous (plain ldmatrix, rows of k),
// 1 = r contiguous (ldmatrix.trans, rows of k), -1 = neither (scalar loads).
// Every row ldmatrix addresses must be 16-byte aligned: the base and the
// other stride a multiple of 8 elements.
// TK_RESIDENT_SCALAR_GEMM (a probe knob, benchmarks/resident_probe.py
// --variants): every unit takes the scalar path, to measure the ldmatrix
// path against it in one run.
template <typename T>
__device__ __forceinline__ int ldsm_mode(const T* p, int sr, int sc) {
#ifdef TK_RESIDENT_SCALAR_GEMM
  return -1;
#else
  if (!is_aligned(p, 16)) return -1;
  if (sc == 1 && sr % 8 == 0) return 0;
  if (sr == 1 && sc % 8 == 0) return 1;
  return -1;
#endif
}

namespace resident_detail {

// The A fragment (16 x 16 at (m0, k0)) and the B fragments of `pairs` pairs of
// n8 tiles (16 x 16 each at (n0 + 16 p, k0)) by ldmatrix.x4, modes >= 0.
// Without CLAMP every row and column addressed is in range (whole units, K a
// multiple of 16). With it (a partial unit, or K's last 16-deep step) each
// lane's row is clamped to the operand's last row and its 8-element group to
// the last group that starts inside the extent (M, N or K), so every address
// stays inside the home: a mode >= 0 has a row pitch that is a multiple of 8
// and at least the extent, so a group starting inside it ends inside the row.
// What is read past M and N (copies of the last row, the pitch's padding)
// reaches only outputs that are not stored; what is read past K would reach
// every output, and mask_k zeroes it.
template <typename T, bool CLAMP>
__device__ __forceinline__ void ldsm_frags(const T* A, int sam, int sak, int amode, const T* B, int sbk, int sbn,
                                           int bmode, int M, int N, int K, int m0, int n0, int k0, int pairs,
                                           int lane, uint32_t (&a)[4], uint32_t (&b)[2][4]) {
  // The row index along an operand's strided dimension and the column (a group's
  // first element) along its contiguous one, clamped.
  auto row = [](int r, int extent) { return CLAMP ? min(r, extent - 1) : r; };
  auto col = [](int c, int extent) { return CLAMP ? min(c, (extent - 1) & ~7) : c; };
  int r, c;
  if (amode == 0) {
    gemm_detail::ldsm_coord_a<false>(lane, m0, k0, r, c);  // (m, k)
    gemm_detail::ldmatrix_x4<false>(a, A + row(r, M) * sam + col(c, K));
  } else {
    gemm_detail::ldsm_coord_a<true>(lane, m0, k0, r, c);  // (k, m)
    gemm_detail::ldmatrix_x4<true>(a, A + col(c, M) * sam + row(r, K) * sak);
  }
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    if (p < pairs) {
      if (bmode == 0) {
        gemm_detail::ldsm_coord_b<true>(lane, n0 + 16 * p, k0, r, c);  // (n, k)
        gemm_detail::ldmatrix_x4<false>(b[p], B + row(r, N) * sbn + col(c, K) * sbk);
      } else {
        gemm_detail::ldsm_coord_b<false>(lane, n0 + 16 * p, k0, r, c);  // (k, n)
        gemm_detail::ldmatrix_x4<true>(b[p], B + row(r, K) * sbk + col(c, N) * sbn);
      }
    }
  }
}

// Zero the fragments' elements at k >= K (the 16-deep step at k0 reaches past
// K): both operands, since a product of zero and what lies past K (the pitch's
// padding, another slice, NaN) need not be zero. A lane's registers hold k =
// k0 + 2t, k0 + 2t + 1 (the low half of k: A's registers 0 and 1, B's 0 and 2)
// or those + 8 (the high half: A's 2 and 3, B's 1 and 3); the scalar path's
// zeros past K, so both paths give the same bits.
__device__ __forceinline__ void mask_k(uint32_t (&a)[4], uint32_t (&b)[2][4], int k0, int K, int t) {
  const int left = K - k0;
  if (left >= 16) return;
  auto keep = [&](int k) { return (k < left ? 0x0000ffffu : 0u) | (k + 1 < left ? 0xffff0000u : 0u); };
  const uint32_t lo = keep(2 * t), hi = keep(2 * t + 8);
  a[0] &= lo;
  a[1] &= lo;
  a[2] &= hi;
  a[3] &= hi;
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    b[p][0] &= lo;
    b[p][1] &= hi;
    b[p][2] &= lo;
    b[p][3] &= hi;
  }
}

// fp32 C = A @ B by FMA, U outputs per thread at a time (U independent chains;
// a short last round's missing outputs repeat the thread's first and skip their
// store). Output 0 on warp WARP0. A repeat is the thread's own element, not the
// last output: a compute may read a home that the element's owner stores in
// place (an SGD update), and another thread's store would race that read.
template <int U, int NT, int NV, int WARP0, class Compute, class Store>
__device__ __forceinline__ void simt_gemm(int M, int N, int K, const float* A, int sam, int sak, const float* B,
                                          int sbk, int sbn, Compute& compute, Store& store) {
  for (int e0 = (threadIdx.x + NT - 32 * WARP0) % NT; e0 < M * N; e0 += U * NT) {
    float vals[U][NV > 0 ? NV : 1];
    int ii[U], jj[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int e = e0 + u * NT < M * N ? e0 + u * NT : e0;
      ii[u] = e / N;
      jj[u] = e - ii[u] * N;
    }
    float acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = 0.0f;
    for (int k = 0; k < K; ++k) {
#pragma unroll
      for (int u = 0; u < U; ++u) acc[u] = fmaf(A[ii[u] * sam + k * sak], B[k * sbk + jj[u] * sbn], acc[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) compute(ii[u], jj[u], acc[u], vals[u]);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (e0 + u * NT < M * N) store(ii[u], jj[u], vals[u]);
  }
}

template <typename T>
__device__ __forceinline__ void mma_frags(float (&acc)[4][4], const uint32_t (&a)[4], const uint32_t (&b)[2][4],
                                          int pairs) {
#pragma unroll
  for (int q = 0; q < 4; ++q)
    if ((q >> 1) < pairs) gemm_detail::mma_16816<T>(acc[q], a, b[q >> 1][2 * (q & 1)], b[q >> 1][2 * (q & 1) + 1]);
}

}  // namespace resident_detail

// Warp work unit: a 16 x 32 strip of C (one A fragment, four B fragments per k
// step), or 16 x 16 when the output has fewer 16 x 32 strips than warps.
//
// Mainloop: where both operands' homes allow ldmatrix (ldsm_mode), every
// 16-deep k step loads its fragments with three ldmatrix.x4 while the previous
// step's mma runs (two register sets, software-pipelined); a partial unit's
// reads are clamped into the operands and the last step's fragments masked to
// zero past K (ldsm_frags, mask_k; perf-log step 115). Unaligned homes take
// the scalar path (bounds-checked 16-bit loads, zero outside the operand).
// Both paths add the same products in the same k order into the same fp32
// accumulators, so the result does not depend on which path a unit took.
//
// The epilogue comes in two halves so that its shared-memory reads are not
// serialized behind its stores (the compiler cannot prove that they do not
// alias): compute(i, j, acc, vals) fills the NV values an output element
// yields, for all of a lane's elements first; store(i, j, vals) then writes
// them.
// AMODE / BMODE: the operands' ldsm_mode when the caller knows it at compile
// time (the printer does, from the homes' strides and offsets), else
// kLdsmAtRunTime. FULL: every unit is full and K a multiple of 16, so with both
// modes known and >= 0 the scalar path is not compiled at all (the kernel's
// code is fetched once per launch: code that never runs still costs fetches).
constexpr int kLdsmAtRunTime = -2;

// No pair store: smem_gemm stores element by element.
struct NoPairStore {
  __device__ void operator()(int, int, const float*, const float*) const {}
};

// A flag known at compile time (std::integral_constant's conversion is host-only).
template <bool V>
struct FlagConstant {
  __device__ constexpr operator bool() const { return V; }
};

// A store whose statements depend on a flag uniform over the block (the
// printer's tk_more: another step follows, so the state homes are written;
// none follows, so the outputs are). split_on(flag, f): f takes the flag as its
// first argument, and smem_gemm tests it once and runs a store loop compiled
// for each value with f's first argument a FlagConstant, so that the middle
// steps' loop holds their own stores alone: no per-element predicates,
// branches or generic stores of the last step (classification's dW1: 13% of
// the step, perf-log step 109). A pair store passed with it must be split_on
// the same flag. TK_RESIDENT_GUARDED_STORES: the flag passed at run time
// instead, and every element's row tested (the form before step 109, for probes).
template <class F>
struct SplitStore {
  bool flag;
  F f;
};
template <class F>
__device__ __forceinline__ SplitStore<F> split_on(bool flag, F f) {
  return {flag, f};
}

namespace resident_detail {
template <class S>
struct is_split_store : std::false_type {};
template <class F>
struct is_split_store<SplitStore<F>> : std::true_type {};

// s with its flag bound to v (a FlagConstant, or the flag itself);
// a store that is not split is itself.
template <class S, class V>
__device__ __forceinline__ auto bind_flag(S& s, V v) {
  if constexpr (is_split_store<S>::value) {
    return [&s, v](auto... args) { s.f(v, args...); };
  } else {
    (void)v;
    return s;
  }
}

// body(store, store_pair) once, with split stores bound to their flag: as
// constants after one test of it, or (TK_RESIDENT_GUARDED_STORES, and where
// `split` is false: code that would run once per launch is not worth two
// copies) as the run-time value.
template <bool SPLIT, class Store, class StorePair, class Body>
__device__ __forceinline__ void with_bound_stores(Store& store, StorePair& store_pair, Body body) {
  static_assert(is_split_store<Store>::value || !is_split_store<StorePair>::value, "a pair store split alone");
  if constexpr (is_split_store<Store>::value) {
#ifndef TK_RESIDENT_GUARDED_STORES
    if constexpr (SPLIT) {
      if (store.flag)
        body(bind_flag(store, FlagConstant<true>{}), bind_flag(store_pair, FlagConstant<true>{}));
      else
        body(bind_flag(store, FlagConstant<false>{}), bind_flag(store_pair, FlagConstant<false>{}));
      return;
    }
#endif
    body(bind_flag(store, store.flag), bind_flag(store_pair, store.flag));
  } else {
    body(store, store_pair);
  }
}
}  // namespace resident_detail

// Two adjacent elements in one store (float2, __nv_bfloat162, __half2); p must
// be aligned for it (the printer proves it for a shared-memory home: 16-byte
// aligned base, even row pitch, even column; nvcc cannot, and a run-time test
// costs a compare and two predicated copies of the store a pair).
template <typename T>
__device__ __forceinline__ void store_pair_aligned(T* p, T a, T b) {
  struct alignas(2 * sizeof(T)) Pair { T x, y; };
  *reinterpret_cast<Pair*>(p) = Pair{a, b};
}

// The same where p is aligned for it, else one at a time.
template <typename T>
__device__ __forceinline__ void store_pair(T* p, T a, T b) {
  if (is_aligned(p, 2 * sizeof(T))) {
    store_pair_aligned(p, a, b);
  } else {
    p[0] = a;
    p[1] = b;
  }
}

// A product's extents known at compile time let nvcc unroll its unit and k
// loops and drop its bounds tests (static_slices: online -2.4 us a step,
// perf-log step 58); where a cluster does not divide a split dimension the
// slice takes at most three values, so each rank runs one of three constant
// instances of the product (perf-log step 60). The ranks' branches are uniform.
template <int CLUSTER, int C, int FULL_RANKS, int TAIL, class F>
__device__ __forceinline__ void with_slice_extent(int rank, F f) {
  static_assert(C > 0 && TAIL >= 0 && TAIL < C && FULL_RANKS + (TAIL > 0) <= CLUSTER, "slices of C, a shorter tail");
  // Only the extents some rank has are instantiated.
  constexpr bool kEmpty = FULL_RANKS + (TAIL > 0) < CLUSTER;
  if (rank < FULL_RANKS) {
    f(std::integral_constant<int, C>{});
  } else if constexpr (TAIL > 0) {
    if constexpr (kEmpty) {
      if (rank == FULL_RANKS)
        f(std::integral_constant<int, TAIL>{});
      else
        f(std::integral_constant<int, 0>{});
    } else {
      f(std::integral_constant<int, TAIL>{});
    }
  } else if constexpr (kEmpty) {
    f(std::integral_constant<int, 0>{});
  }
}

// WARP0: the warp that takes the first unit (the first output element of the fp32
// path), so that the small ops of a phase start on different warps; the work
// and every result are the same whichever warp does it.
// NREAD: B's columns (its n index, B stored k-major with unit stride along n) are
// readable up to NREAD (its home's padded rows): a unit whose last columns are
// past N then reads whole 16-column pairs anyway (ldmatrix, mma) and stores only
// the columns before N (10 classes: perf-log step 64); since step 115 that only
// spares such units the clamps, and lets the printer count N as whole (FULL).
template <int NT, int NV, typename T, int AMODE = kLdsmAtRunTime, int BMODE = kLdsmAtRunTime, bool FULL = false,
          int WARP0 = 0, int NREAD = 0, class Compute, class Store, class StorePair = NoPairStore>
__device__ __forceinline__ void smem_gemm(int M, int N, int K, const T* A, int sam, int sak, const T* B, int sbk,
                                          int sbn, Compute compute, Store store, StorePair store_pair = {}) {
  if (M <= 0 || N <= 0) return;
  if constexpr (std::is_same<T, float>::value) {
    // SIMT fp32, k in increasing order. Four outputs per thread at a time
    // (four independent FMA chains) only when there are enough outputs for
    // every thread to own four; else one each (no chain repeated on clamped
    // duplicates).
    // A split store bound to its flag at run time: the store is inside the k
    // loop's unit loop, and two copies of the whole loop are not worth it.
    resident_detail::with_bound_stores<false>(store, store_pair, [&](auto st, auto) {
      if (M * N >= 4 * NT)
        resident_detail::simt_gemm<4, NT, NV, WARP0>(M, N, K, A, sam, sak, B, sbk, sbn, compute, st);
      else
        resident_detail::simt_gemm<1, NT, NV, WARP0>(M, N, K, A, sam, sak, B, sbk, sbn, compute, st);
    });
  } else {
    using namespace resident_detail;
    constexpr int kWarps = NT / 32;
    const int warp = ((threadIdx.x >> 5) + kWarps - WARP0) % kWarps, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    // Units 16 columns wide when 32-wide ones would leave warps idle.
    const int tiles_m = (M + 15) / 16, width = tiles_m * ((N + 31) / 32) < kWarps ? 16 : 32;
    const int tiles_n = (N + width - 1) / width;
    // Partial units and K's last 16 columns take the ldmatrix path, clamped and
    // masked (ldsm_frags, mask_k), wherever the whole product is not known to be
    // whole units (FULL). TK_RESIDENT_SCALAR_TAILS: they take the scalar path, the
    // form before perf-log step 115 (for the probe).
#ifdef TK_RESIDENT_SCALAR_TAILS
    constexpr bool kTailsFast = false;
#else
    constexpr bool kTailsFast = true;
#endif
#ifdef TK_RESIDENT_SCALAR_GEMM
    constexpr bool kOnlyFast = false;
    const int amode = -1, bmode = -1;
#else
    constexpr bool kOnlyFast = AMODE >= 0 && BMODE >= 0 && (FULL || kTailsFast);
    const int amode = AMODE == kLdsmAtRunTime ? ldsm_mode(A, sam, sak) : AMODE;
    const int bmode = BMODE == kLdsmAtRunTime ? ldsm_mode(B, sbn, sbk) : BMODE;
#endif
    for (int unit = warp; unit < tiles_m * tiles_n; unit += kWarps) {
      const int m0 = (unit / tiles_n) * 16, n0 = (unit % tiles_n) * width;
      // Where N is whole units (a constant once the printer's extents are inlined),
      // every unit is `width` wide: the fragment pairs are then a constant too, and
      // the ldmatrix and mma of a pair the unit does not have are not compiled
      // (with `pairs` known only at run time, every warp issued both pairs'
      // instructions, predicated, each behind a WARPSYNC: classification's p1;
      // perf-log step 114). TK_RESIDENT_RUNTIME_PAIRS: that form, for the probe.
#ifdef TK_RESIDENT_RUNTIME_PAIRS
      const int cols = min(width, N - n0);
#else
      const int cols = N % width == 0 ? width : min(width, N - n0);
#endif
      const bool padded = NREAD > 0 && bmode == 1 && n0 + 16 * ((cols + 15) / 16) <= NREAD;
      const bool fast = kOnlyFast || (amode >= 0 && bmode >= 0 &&
                                      (kTailsFast || (m0 + 16 <= M && (cols % 16 == 0 || padded))));
      const int kfast = kOnlyFast || (fast && kTailsFast) ? K : fast ? K / 16 * 16 : 0;
      float acc[4][4];
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[q][c] = 0.0f;
      // TK_RESIDENT_TWO_CHAINS: the odd 16-deep k steps accumulate into a second
      // set, added to the first after the last step, so that a unit's mma chain
      // is half as long (p1 of classification: 16 dependent steps of K = 256).
      // Another summation order (the same on every run, and on both paths);
      // without it `odd` is `acc` itself and the order is increasing k.
#ifdef TK_RESIDENT_TWO_CHAINS
      constexpr bool kTwoChains = true;
#else
      constexpr bool kTwoChains = false;
#endif
      float acc_odd[4][4];
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc_odd[q][c] = 0.0f;
      float(&odd)[4][4] = kTwoChains ? acc_odd : acc;
      if (kfast > 0) {
        // Clamped reads and masked k unless every unit is whole and K whole steps.
        constexpr bool kClamp = !FULL && kTailsFast;
        // A unit has 1 <= cols <= width columns: written so that 16-wide units (cols
        // = min(16, ...)) have one pair as a constant, whatever their columns.
        const int pairs = padded || kTailsFast ? 1 + (cols > 16) : cols / 16, steps = (kfast + 15) / 16;
        uint32_t a0[4], b0[2][4], a1[4], b1[2][4];
        auto load = [&](int k0, uint32_t(&a)[4], uint32_t(&b)[2][4]) {
          ldsm_frags<T, kClamp>(A, sam, sak, amode, B, sbk, sbn, bmode, M, N, K, m0, n0, k0, pairs, lane, a, b);
          if (kClamp) mask_k(a, b, k0, K, t);
        };
        load(0, a0, b0);
        for (int s = 0; s < steps; s += 2) {
          if (s + 1 < steps) load(16 * (s + 1), a1, b1);
          mma_frags<T>(acc, a0, b0, pairs);
          if (s + 1 < steps) {
            if (s + 2 < steps) load(16 * (s + 2), a0, b0);
            mma_frags<T>(odd, a1, b1, pairs);
          }
        }
      }
      if constexpr (!kOnlyFast) {  // unaligned homes (and TK_RESIDENT_SCALAR_TAILS' tails)
        // One 16-deep k step at k0 into `into` (bounds-checked 16-bit loads, zero outside).
        auto scalar_step = [&](int k0, float(&into)[4][4]) {
          uint32_t a[4];
          const int r0 = m0 + g, r1 = m0 + g + 8, c0 = k0 + 2 * t, c1 = k0 + 2 * t + 8;
          a[0] = pack(at(A, r0, c0, M, K, sam, sak), at(A, r0, c0 + 1, M, K, sam, sak));
          a[1] = pack(at(A, r1, c0, M, K, sam, sak), at(A, r1, c0 + 1, M, K, sam, sak));
          a[2] = pack(at(A, r0, c1, M, K, sam, sak), at(A, r0, c1 + 1, M, K, sam, sak));
          a[3] = pack(at(A, r1, c1, M, K, sam, sak), at(A, r1, c1 + 1, M, K, sam, sak));
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int col = n0 + 8 * q + g;
            if (8 * q < cols) {
              // B(k, j) = B[k*sbk + j*sbn], read as rows k, column col
              const uint32_t b0 = pack(at(B, c0, col, K, N, sbk, sbn), at(B, c0 + 1, col, K, N, sbk, sbn));
              const uint32_t b1 = pack(at(B, c1, col, K, N, sbk, sbn), at(B, c1 + 1, col, K, N, sbk, sbn));
              gemm_detail::mma_16816<T>(into[q], a, b0, b1);
            }
          }
        };
        if constexpr (kTwoChains) {
          // Step k0 / 16 into the set of its parity, as on the fast path.
          int k0 = kfast;
          if ((k0 >> 4) & 1) {
            if (k0 < K) scalar_step(k0, odd);
            k0 += 16;
          }
          for (; k0 < K; k0 += 32) {
            scalar_step(k0, acc);
            if (k0 + 16 < K) scalar_step(k0 + 16, odd);
          }
        } else {
#pragma unroll 2
          for (int k0 = kfast; k0 < K; k0 += 16) scalar_step(k0, acc);
        }
      }
      if constexpr (kTwoChains) {
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
          for (int c = 0; c < 4; ++c) acc[q][c] += acc_odd[q][c];
      }
      // Element c of fragment q: row m0 + g (+8 for c >= 2), column n0 + 8q + 2t (+1 for odd c).
      float vals[4][4][NV > 0 ? NV : 1];
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int i = min(m0 + g + 8 * (c >> 1), M - 1), j = min(n0 + min(8 * q + 2 * t + (c & 1), cols - 1), N - 1);
          compute(i, j, acc[q][c], vals[q][c]);
        }
      // A clamped duplicate's compute reads the element another lane of this warp
      // owns and may store in place (classification's dW2 with its SGD update:
      // s15 read by the duplicates of column 9, written by its owner). The value
      // is discarded, but without this barrier the warp's lanes are not ordered
      // (racecheck: 2048 intra-warp hazards a step, run a34bdbb-t); with it every
      // lane's reads come before any lane's stores.
      __syncwarp();
      // FULL: M is whole 16-row units, so every row of a unit is in range and
      // only the columns (N's last pair under NREAD) are tested.
#ifdef TK_RESIDENT_GUARDED_STORES
      constexpr bool kRowsWhole = false;
#else
      constexpr bool kRowsWhole = FULL;
#endif
      resident_detail::with_bound_stores<true>(store, store_pair, [&](auto st, auto st_pair) {
        if constexpr (!std::is_same<StorePair, NoPairStore>::value) {
          // Elements c and c + 1 of a fragment are columns jl and jl + 1 of one row.
#pragma unroll
          for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int c = 0; c < 4; c += 2) {
              const int i = m0 + g + 8 * (c >> 1), jl = 8 * q + 2 * t;
              const bool row = kRowsWhole || i < M;
              if (row && jl + 1 < cols) {
                st_pair(i, n0 + jl, vals[q][c], vals[q][c + 1]);
              } else if (row && jl < cols) {
                st(i, n0 + jl, vals[q][c]);
              }
            }
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const int i = m0 + g + 8 * (c >> 1), jl = 8 * q + 2 * t + (c & 1);
              if ((kRowsWhole || i < M) && jl < cols) st(i, n0 + jl, vals[q][c]);
            }
        }
      });
    }
  }
}

// ---------------------------------------------------------------------------
// Cluster exchange of partial results (push: remote stores, no remote loads)
// ---------------------------------------------------------------------------
// A split contraction leaves every block with n fp32 partials. Element e is
// owned by rank e / chunk (chunk = ceil(n / CLUSTER)); each block stores its
// partial of e straight into the owner's receive buffer, slot [rank][e %
// chunk] (push_partial: a DSMEM store, which does not wait for a reply). After
// one cluster barrier every owner sums its chunk over the ranks in rank order
// (deterministic, local loads only) and the epilogue stores each result where
// it lives: the owning rank's slice of a split home, global memory, or its own
// copy of a replicated home, which `publish` then copies into every other
// rank's (at_rank gives the pointers). A second barrier publishes those stores
// and keeps every block resident until nobody stores into it any more.
//
// The receive buffer (CLUSTER * chunk floats) must hold no other live data in
// any block from the previous cluster barrier on (tile-resident reserves it),
// and every block must have started (cluster_arrive at kernel start,
// cluster_wait before the first push).
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory"); }
// With release semantics: this thread's earlier memory accesses are performed before
// any thread that waits on this barrier phase goes on (a step of the loop that no
// cluster barrier ended: the previous step's reads before the next pushes).
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }

// cluster_sync(): tk/grid.cuh.

template <typename T>
__device__ __forceinline__ T* at_rank(T* p, int rank) {
  return static_cast<T*>(__cluster_map_shared_rank(p, (unsigned)rank));
}

template <int CLUSTER>
__device__ __forceinline__ constexpr int exchange_chunk(int n) {
  return (n + CLUSTER - 1) / CLUSTER;
}

template <int CLUSTER>
__device__ __forceinline__ void push_partial(float* recv, int n, int e, float v, int rank) {
  const int chunk = exchange_chunk<CLUSTER>(n), owner = e / chunk;
  at_rank(recv, owner)[rank * chunk + (e - owner * chunk)] = v;
}

// An exchange whose epilogue stores replicated homes in the owner's own copy
// only passes `publish`: after a block barrier, copy(r, e) stores element e of
// those homes into rank r's copy, for every other rank r and every element e
// of this owner's chunk, the (rank, element) pairs shared by all threads (a
// warp stores consecutive elements to one rank). The epilogue itself runs on
// `count` threads (the chunk: 64 of online's 256); storing into every rank
// there made each of them issue CLUSTER remote stores a home, one after another.
// STEP: elements copy(r, e) stores at once (e, e + 1, ...: exchange_async_published's
// 32-bit words, or runs of up to 16 bytes with target.exchange_wide_stores), `count`
// a multiple of it.
template <int CLUSTER, int STEP = 1, class Copy>
__device__ __forceinline__ void publish(int lo, int count, int rank, Copy copy) {
  const int units = count / STEP;
  for (int t = threadIdx.x; t < (CLUSTER - 1) * units; t += blockDim.x) {
    const int k = t / units, r = k + (k >= rank);
    copy(r, lo + t * STEP - k * count);
  }
}

struct NoPublish {
  __device__ void operator()(int, int) const {}
};

// exchange_async_published's `during`: nothing.
struct NoWork {
  __device__ void operator()() const {}
};

// The owner's chunk of an exchange once every push has landed: each element summed
// over the ranks in rank order, then its epilogue.
template <int CLUSTER, class Op, class Epi>
__device__ __forceinline__ void exchange_sum(const float* recv, int n, int rank, Epi& epi) {
  const int chunk = exchange_chunk<CLUSTER>(n), lo = rank * chunk, count = min(chunk, n - lo);
  Op op;
  for (int el = threadIdx.x; el < count; el += blockDim.x) {
    float acc = recv[el];
#pragma unroll
    for (int r = 1; r < CLUSTER; ++r) acc = op(acc, recv[r * chunk + el]);
    epi(lo + el, acc);
  }
}

// exchange_sum, the publish into the other ranks' copies, and the cluster barrier
// after which the publish has landed and no block leaves while others store into it.
template <int CLUSTER, class Op, class Epi, class Copy>
__device__ __forceinline__ void exchange_owner(const float* recv, int n, int rank, Epi& epi, Copy& copy) {
  const int chunk = exchange_chunk<CLUSTER>(n), lo = rank * chunk, count = min(chunk, n - lo);
  exchange_sum<CLUSTER, Op>(recv, n, rank, epi);
  if constexpr (!std::is_same<Copy, NoPublish>::value) {
    __syncthreads();  // the owner's results in its own copies
    publish<CLUSTER>(lo, count, rank, copy);
  }
  cluster_sync();
}

template <int CLUSTER, class Op, class Epi, class Copy = NoPublish>
__device__ __forceinline__ void exchange(float* recv, int n, int rank, Epi epi, Copy copy = {}) {
  cluster_sync();  // every push landed (release/acquire at cluster scope)
  exchange_owner<CLUSTER, Op>(recv, n, rank, epi, copy);
}

// ---------------------------------------------------------------------------
// The exchange's pushes as asynchronous stores (target.exchange_async_pushes)
// ---------------------------------------------------------------------------
// exchange's first cluster barrier makes every push visible to its owner, and
// its release half makes each thread wait until its remote stores are
// acknowledged (ncu: half the exchange's stall samples are membar, perf-log
// step 67). st.async instead carries each remote push with its byte count to
// an mbarrier of the owner (complete_tx); the owner expects the bytes of its
// chunk from the other ranks and waits on the mbarrier's phase, the step's
// parity. A block's pushes to itself are plain stores, which a block barrier
// publishes. The exchange's second cluster barrier stays: the publish lands,
// no block leaves while others store into it, and no rank pushes the next
// step's partials before every owner has read this step's.
__device__ __forceinline__ uint32_t cta_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// map_rank(addr, rank): tk/grid.cuh.

// Thread 0 of each block, at the first step, before its first cluster arrive: the
// fence makes the initialised mbarriers visible to the cluster (CUTLASS's order).
__device__ __forceinline__ void init_exchange_barriers(uint64_t* bars, int n) {
  for (int i = 0; i < n; ++i)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(cta_u32(bars + i)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One 32-bit word into `local`'s counterpart in block `rank`, counted (4 bytes) on
// the counterpart of `bar` there.
__device__ __forceinline__ void store_async_b32(const void* local, int rank, uint32_t v, uint64_t* bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n"
               ::"r"(map_rank(cta_u32(local), rank)), "r"(v), "r"(map_rank(cta_u32(bar), rank))
               : "memory");
}

template <typename T>
__device__ __forceinline__ uint32_t bits32(const T* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// This block's arrival on `bar`, with `bytes` more bytes the phase waits for.
__device__ __forceinline__ void arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(cta_u32(bar)), "r"(bytes) : "memory");
}

// The elements of an exchange's n that block `rank` owns (0 past the last owner).
template <int CLUSTER>
__device__ __forceinline__ int owned_count(int n, int rank) {
  const int chunk = exchange_chunk<CLUSTER>(n);
  return max(min(chunk, n - rank * chunk), 0);
}

template <int CLUSTER>
__device__ __forceinline__ void push_async(float* recv, int n, int e, float v, int rank, uint64_t* bar) {
  const int chunk = exchange_chunk<CLUSTER>(n), owner = e / chunk;
  float* slot = recv + rank * chunk + (e - owner * chunk);
  if (owner == rank)
    *slot = v;
  else
    store_async_b32(slot, owner, __float_as_uint(v), bar);
}

// ---------------------------------------------------------------------------
// Wide exchange stores (target.exchange_wide_stores, perf-log step 118)
// ---------------------------------------------------------------------------
// A 32-bit st.async a lane: online 64 x 128-256-256-16's two exchanges of
// 16,384 partials took 12 us each (25,000 cycles, ~1 remote store a cycle a
// block, ncu: short scoreboard on STAS). The same bytes in 8- and 16-byte
// stores are half or a quarter of the instructions.

// Two 32-bit words into `local`'s counterpart in block `rank` (8-byte aligned),
// counted (8 bytes) on the counterpart of `bar` there: store_async_b32's pair.
__device__ __forceinline__ void store_async_v2(const void* local, int rank, uint32_t x, uint32_t y, uint64_t* bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];\n"
               ::"r"(map_rank(cta_u32(local), rank)), "r"(x), "r"(y), "r"(map_rank(cta_u32(bar), rank)) : "memory");
}

// BYTES (4, 8 or 16; `local` aligned to them) at `local` into their counterpart in
// block `rank`, counted on the counterpart of `bar` there.
template <int BYTES>
__device__ __forceinline__ void store_async_bytes(const void* local, int rank, uint64_t* bar) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "st.async moves 4, 8 or 16 bytes");
  if constexpr (BYTES == 4) {
    store_async_b32(local, rank, *static_cast<const uint32_t*>(local), bar);
  } else if constexpr (BYTES == 8) {
    const uint2 v = *static_cast<const uint2*>(local);
    store_async_v2(local, rank, v.x, v.y, bar);
  } else {
    const uint4 v = *static_cast<const uint4*>(local);
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];\n"
                 ::"r"(map_rank(cta_u32(local), rank)), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w),
                 "r"(map_rank(cta_u32(bar), rank)) : "memory");
  }
}

// Partials e and e + 1 (e even, the chunk even: one owner, an 8-byte aligned slot)
// in one store: push_partial's and push_async's pair.
template <int CLUSTER>
__device__ __forceinline__ void push_partial_pair(float* recv, int n, int e, float a, float b, int rank) {
  const int chunk = exchange_chunk<CLUSTER>(n), owner = e / chunk;
  *reinterpret_cast<float2*>(at_rank(recv, owner) + rank * chunk + (e - owner * chunk)) = make_float2(a, b);
}

template <int CLUSTER>
__device__ __forceinline__ void push_async_pair(float* recv, int n, int e, float a, float b, int rank,
                                                uint64_t* bar) {
  const int chunk = exchange_chunk<CLUSTER>(n), owner = e / chunk;
  float* slot = recv + rank * chunk + (e - owner * chunk);
  if (owner == rank)
    *reinterpret_cast<float2*>(slot) = make_float2(a, b);
  else
    store_async_v2(slot, owner, __float_as_uint(a), __float_as_uint(b), bar);
}

// Every thread waits for the phase of `parity` to complete. A phase that never
// completes (a push missing: a bug) traps instead of hanging the device.
__device__ __forceinline__ void wait_exchange_barrier(uint64_t* bar, bool parity) {
  const uint32_t addr = cta_u32(bar), phase = parity ? 1u : 0u;
  for (uint32_t tries = 0;; ++tries) {
    uint32_t done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done) : "r"(addr), "r"(phase) : "memory");
    if (done) return;
    if (tries > (1u << 26)) __trap();
  }
}

// Every push of the other ranks into this block landed: a block barrier for its
// pushes to itself, then the wait for the bytes of its chunk from the others.
template <int CLUSTER>
__device__ __forceinline__ void await_pushes(int n, int rank, uint64_t* bar, bool parity) {
  __syncthreads();
  if (threadIdx.x == 0) arrive_expect_tx(bar, (uint32_t)((CLUSTER - 1) * owned_count<CLUSTER>(n, rank) * 4));
  wait_exchange_barrier(bar, parity);
}

template <int CLUSTER, class Op, class Epi, class Copy = NoPublish>
__device__ __forceinline__ void exchange_async(float* recv, int n, int rank, uint64_t* bar, bool parity, Epi epi,
                                               Copy copy = {}) {
  await_pushes<CLUSTER>(n, rank, bar, parity);
  exchange_owner<CLUSTER, Op>(recv, n, rank, epi, copy);
}

// The publish as asynchronous stores too (target.exchange_async_publish, perf-log
// step 68): copy(r, e) sends elements e .. e + STEP - 1 of the owner's results
// into rank r's copies with store_async_b32 (a bf16 pair, or an fp32 element, a
// store), counted on r's publish mbarrier `pub`; each block expects the bytes of
// every other owner's chunk (elem_bytes an element, over the homes this step
// publishes) and waits on its own. No cluster barrier: a block pushes the next
// step's partials only after its publish wait, which needs every owner's
// publish, which each owner makes after reading its receive buffer; and an
// owner publishes into a block only after that block's pushes of the same step,
// which come after its reads of the step before. The kernel ends with a cluster
// barrier (no block leaves while another's stores may be in flight).
// `during()`: work issued while the block waits for the other owners' results,
// past every block's pushes of this step (so every block has left the step
// before): the next step's multicast copies (target.prefetch_multicast_in_publish).
template <int CLUSTER, int STEP, class Op, class Epi, class Copy, class During = NoWork>
__device__ __forceinline__ void exchange_async_published(float* recv, int n, int rank, uint64_t* bar, uint64_t* pub,
                                                         bool parity, uint32_t elem_bytes, Epi epi, Copy copy,
                                                         During during = {}) {
  const int count = owned_count<CLUSTER>(n, rank);
  if (threadIdx.x == 0) arrive_expect_tx(pub, (uint32_t)(n - count) * elem_bytes);
  await_pushes<CLUSTER>(n, rank, bar, parity);
  exchange_sum<CLUSTER, Op>(recv, n, rank, epi);
  __syncthreads();  // the owner's results in its own copies
  publish<CLUSTER, STEP>(rank * exchange_chunk<CLUSTER>(n), count, rank, copy);
  during();
  wait_exchange_barrier(pub, parity);  // every other owner's results in this block's copies
}

// ---------------------------------------------------------------------------
// The next step's batch by bulk copies (target.prefetch_bulk_rows, off)
// ---------------------------------------------------------------------------
// cp.async moves 16 bytes an instruction, and every thread of the block issues
// its share, each copy with its own address arithmetic (~17 instructions a copy:
// 9% of classification's warp samples went to the next step's batch, ncu run
// eb87678-h100-a). A bulk copy moves a whole row an instruction (a whole home
// where its rows are dense): the lanes of warp 0 issue a row each, the copy
// engine counts the bytes on the mbarrier `bar` (complete_tx), and the next
// step's stage_wait_bulk waits on its phase. A home that a bulk copy cannot take
// (an address, a stride or a row not in 16-byte units) goes by stage_rows, whose
// copies the same wait's cp.async.wait_all covers. Measured slower (perf-log step
// 113: online +3.5 us a step): the copy engine takes the row copies one after
// another, ~20-27 ns each, and warp 0 waits until it has taken them all.

// Thread 0, at the first step, before the staging wait's block barrier.
// (An mbarrier of one arrival, as each exchange's.)
__device__ __forceinline__ void init_stage_barrier(uint64_t* bar) { init_exchange_barriers(bar, 1); }

// Thread 0: the bytes of a home's bulk copies that `bar`'s phase waits for.
__device__ __forceinline__ void expect_stage_bytes(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(cta_u32(bar)), "r"(bytes) : "memory");
}

template <typename T>
__device__ __forceinline__ void stage_rows_bulk(T* dst, const T* src, int rows, int row_elems, long long src_stride,
                                                int dst_stride, uint64_t* bar) {
  if (rows <= 0 || row_elems <= 0) return;
  const long long row_bytes = (long long)row_elems * sizeof(T);
  if (!rows_in_units(dst, src, row_bytes, src_stride, dst_stride, 16)) {
    stage_rows(dst, src, rows, row_elems, src_stride, dst_stride);
    return;
  }
  if (threadIdx.x >= 32) return;
  const bool dense = src_stride == row_elems && dst_stride == row_elems;
  const int copies = dense ? 1 : rows;
  const uint32_t total = (uint32_t)(rows * row_bytes), bytes = dense ? total : (uint32_t)row_bytes;
  // The home's copy was last read (and, at a launch's first step, written by
  // cp.async) through the generic proxy, before the barrier that ended the step
  // before: the proxy fence orders those accesses before the copy engine's writes.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  if (threadIdx.x == 0)
    expect_stage_bytes(bar, total);
  __syncwarp();
  for (int r = threadIdx.x; r < copies; r += 32)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(cta_u32(dst + (long long)r * dst_stride)), "l"(src + r * src_stride), "r"(bytes),
                 "r"(cta_u32(bar)) : "memory");
}

// Thread 0, after the step's last stage_rows_bulk: the phase's one arrival (its
// bytes were expected home by home, so it completes when the last one lands).
__device__ __forceinline__ void stage_bulk_arrive(uint64_t* bar) {
  if (threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(cta_u32(bar)) : "memory");
}

// ---------------------------------------------------------------------------
// The next step's batch multicast across the cluster (target.prefetch_multicast_rows, off)
// ---------------------------------------------------------------------------
// In a cluster every block stages the same batch home whole (classification's
// x: 32 KB, 2048 cp.async a block, 16 times over): block `rank` copies pieces
// rank, rank + CLUSTER, ... (the rows, or a dense home's bytes in CLUSTER
// pieces of 16-byte units) as bulk copies multicast into the same offset of
// every block, lane 0 of each warp a piece, each block's `bar` counting the
// home's whole bytes (thread 0 expects them; another block's copy may land
// first, which the transaction count allows: the phase completes only once
// this block's stage_bulk_arrive has arrived). The caller issues it where
// every block of the cluster has left the step that last read `dst` (after
// the step's first exchange). The source is the same in every block, so
// where its address or strides are not 16-byte units every block takes
// stage_rows' cp.async instead, together.
template <int CLUSTER, typename T>
__device__ __forceinline__ void stage_rows_multicast(T* dst, const T* src, int rows, int row_elems,
                                                     long long src_stride, int dst_stride, uint64_t* bar, int rank) {
  if (rows <= 0 || row_elems <= 0) return;
  const long long row_bytes = (long long)row_elems * sizeof(T);
  if (!rows_in_units(dst, src, row_bytes, src_stride, dst_stride, 16)) {
    stage_rows(dst, src, rows, row_elems, src_stride, dst_stride);
    return;
  }
  const bool dense = src_stride == row_elems && dst_stride == row_elems;
  const long long total = rows * row_bytes;
  const int pieces = dense ? CLUSTER : rows;
  const long long piece = dense ? (total / 16 + CLUSTER - 1) / CLUSTER * 16 : row_bytes;
  if (threadIdx.x == 0)
    expect_stage_bytes(bar, (uint32_t)total);
  if ((threadIdx.x & 31) != 0) return;
  const unsigned short mask = (unsigned short)((1u << CLUSTER) - 1);
  const int warps = (int)(blockDim.x >> 5);
  for (int p = rank + CLUSTER * (int)(threadIdx.x >> 5); p < pieces; p += CLUSTER * warps) {
    const long long at = dense ? p * piece : 0;
    const long long bytes = dense ? (total - at < piece ? total - at : piece) : row_bytes;
    if (bytes <= 0) continue;
    const char* from = dense ? (const char*)src + at : (const char*)(src + p * src_stride);
    char* to = dense ? (char*)dst + at : (char*)(dst + (long long)p * dst_stride);
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n"
        ::"r"(cta_u32(to)), "l"(from), "r"((uint32_t)bytes), "r"(cta_u32(bar)), "h"(mask) : "memory");
  }
}

// Every thread, once a launch, after the first step's staging wait: its cp.async
// writes of the homes (the generic proxy) ordered before the multicast copies
// that later fill them (the async proxy).
__device__ __forceinline__ void stage_fence_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// stage_wait, and where `wait` (every step but a launch's first) the bulk copies
// of the step before too: the phase of `parity` (the step before's parity).
__device__ __forceinline__ void stage_wait_bulk(uint64_t* bar, bool wait, bool parity) {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  if (wait) wait_exchange_barrier(bar, parity);
  __syncthreads();
}

}  // namespace tk
