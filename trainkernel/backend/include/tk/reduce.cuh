// tk/reduce.cuh -- deterministic warp / block / two-level grid reductions.
//
// Determinism contract: for the same inputs and the same launch shape
// (blockDim.x, and for grid reductions gridDim.x), every function here returns
// bit-identical results run after run. Nothing depends on timing: there are no
// atomics, every combine happens in a fixed tree order.
//
// Why every thread (not just thread 0) gets the same bits: the warp stage is
// an XOR butterfly (__shfl_xor_sync). At each level lane i computes
// op(x_i, x_j) and its partner j computes op(x_j, x_i); fp32 add is exactly
// commutative in IEEE arithmetic, and tk::max_nan is written to be
// commutative bit-for-bit (including +0/-0 and NaN), so all 32 lanes hold the
// same value after every level. The block stage then has every warp combine
// the per-warp partials from shared memory with the same butterfly, so every
// warp (hence every thread) ends with the same value without a broadcast step.
//
// Requirements (all functions here):
//   * 1-D blocks (threadIdx.y == threadIdx.z == 0); blockDim.x a multiple of
//     32 and <= 1024 (so at most 32 warp partials);
//   * every thread of the block calls the function (it contains
//     __syncthreads());
//   * smem_scratch points to at least kReduceScratchFloats (32) floats of
//     shared memory. It may be reused immediately after the call returns (the
//     function ends with a __syncthreads()).
//
// Two-level grid reduction (deterministic, no atomics), inside a cooperative
// kernel:
//
//   float v = ...per-thread partial...;
//   float b = tk::block_reduce_sum(v, scratch);          // whole block
//   if (threadIdx.x == 0) partials[blockIdx.x] = b;      // slot per block
//   tk::grid_sync();                                     // caller's barrier
//   float total = tk::reduce_partials_sum(partials, gridDim.x, scratch);
//
// reduce_partials_sum may be called by ONE block (e.g. blockIdx.x == 0, which
// then writes the result) or by EVERY block: each block reads the partials in
// the same order and gets the same bits, which avoids a second grid barrier
// when all blocks need the total.
#pragma once

#include <math.h>
#include <stdint.h>

#include "types.cuh"

namespace tk {

constexpr int kReduceScratchFloats = 32;

// ---------------------------------------------------------------------------
// Combine operators (bitwise commutative, see the header comment)
// ---------------------------------------------------------------------------
struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  static __device__ __forceinline__ float identity() { return 0.0f; }
};

// max that propagates NaN like torch.max / torch.amax, and is commutative
// bit-for-bit: max(+0, -0) == max(-0, +0) == +0.
//
// Bit masks, not branches: in a warp's shuffle tree the lanes compare
// different pairs, and the former `if (a > b) return a; if (b > a) ...`
// split the warp at every level and ran the paths one after another (a
// 10-wide row max of 64 rows took ~6k cycles against ~1.7k for the same sum,
// perf-log step 32). fmaxf/fminf give the result of unequal operands; equal
// ones (only +0/-0 differ in bits) take the AND (max: +0) or OR (min: -0) of
// their bits; a NaN operand gives the canonical NaN.
__device__ __forceinline__ float pick_nan_tie(float a, float b, float m, unsigned tie) {
  const unsigned eq = 0u - (unsigned)(a == b), nan = 0u - (unsigned)(a != a || b != b);
  const unsigned bits = (__float_as_uint(m) & ~eq) | (tie & eq);
  return __uint_as_float((bits & ~nan) | (0x7fffffffu & nan));
}

__device__ __forceinline__ float max_nan(float a, float b) {
  return pick_nan_tie(a, b, fmaxf(a, b), __float_as_uint(a) & __float_as_uint(b));
}

__device__ __forceinline__ float min_nan(float a, float b) {
  return pick_nan_tie(a, b, fminf(a, b), __float_as_uint(a) | __float_as_uint(b));
}

struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return max_nan(a, b); }
  static __device__ __forceinline__ float identity() { return -INFINITY; }
};

struct MinOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return min_nan(a, b); }
  static __device__ __forceinline__ float identity() { return INFINITY; }
};

// ---------------------------------------------------------------------------
// Warp level: all 32 lanes must call; all receive the same bits.
// ---------------------------------------------------------------------------
// Lanes in groups of W (a power of two, 2-32; group g is lanes W g ... W g + W - 1):
// every lane gets its group's combine, pairs at offsets W / 2, ..., 1 (a + b and
// b + a are the same bits, so the whole group agrees).
template <int W, class Op>
__device__ __forceinline__ float group_allreduce(float v, Op op) {
  static_assert(W >= 2 && W <= 32 && (W & (W - 1)) == 0, "groups of a power of two lanes");
#pragma unroll
  for (int offset = W / 2; offset > 0; offset >>= 1) {
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

template <class Op>
__device__ __forceinline__ float warp_allreduce(float v, Op op) {
  return group_allreduce<32>(v, op);
}

template <int W>
__device__ __forceinline__ float group_reduce_sum(float v) {
  return group_allreduce<W>(v, SumOp{});
}

__device__ __forceinline__ float warp_reduce_sum(float v) { return warp_allreduce(v, SumOp{}); }
__device__ __forceinline__ float warp_reduce_max(float v) { return warp_allreduce(v, MaxOp{}); }

// ---------------------------------------------------------------------------
// Block level: all threads receive the same bits.
// ---------------------------------------------------------------------------
template <class Op>
__device__ __forceinline__ float block_allreduce(float v, float* smem_scratch, Op op) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = (int)(blockDim.x >> 5);

  v = warp_allreduce(v, op);
  if (lane == 0) smem_scratch[warp] = v;
  __syncthreads();
  // Every warp combines the nwarps partials in the same fixed tree, padding
  // the missing lanes with the identity, so no second broadcast is needed.
  float r = (lane < nwarps) ? smem_scratch[lane] : Op::identity();
  r = warp_allreduce(r, op);
  // Keep the scratch alive until every warp has read it, so the caller can
  // reuse it (or call again) right away.
  __syncthreads();
  return r;
}

__device__ __forceinline__ float block_reduce_sum(float v, float* smem_scratch) {
  return block_allreduce(v, smem_scratch, SumOp{});
}
__device__ __forceinline__ float block_reduce_max(float v, float* smem_scratch) {
  return block_allreduce(v, smem_scratch, MaxOp{});
}
__device__ __forceinline__ float block_reduce_min(float v, float* smem_scratch) {
  return block_allreduce(v, smem_scratch, MinOp{});
}

// ---------------------------------------------------------------------------
// argmax: (value, index) pairs, folded the way torch.argmax picks (CPU and CUDA
// alike): a NaN beats every number and among NaNs the smallest index wins;
// otherwise the larger value wins and, on equal values (+0 == -0 included), the
// smaller index. Index -1 is the empty pair and loses to everything. This is a
// strict total order on the pairs of distinct indices, so any fold order --
// a thread's strided loop, the XOR butterfly, the per-warp partials -- gives
// the same index on every thread (the determinism contract above).
//
//   float best = -INFINITY; int arg = -1;
//   for (int r = threadIdx.x; r < n; r += blockDim.x) tk::argmax_step(best, arg, x[r], r);
//   tk::block_argmax(best, arg, scratch);   // scratch: kArgmaxScratchFloats
// ---------------------------------------------------------------------------
constexpr int kArgmaxScratchFloats = 64;  // 32 warp values, then 32 warp indices

__host__ __device__ __forceinline__ bool argmax_better(float a, int ia, float b, int ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan || b_nan) return a_nan && (!b_nan || ia < ib);
  return a > b || (a == b && ia < ib);
}

__host__ __device__ __forceinline__ void argmax_step(float& best, int& arg, float v, int i) {
  if (argmax_better(v, i, best, arg)) {
    best = v;
    arg = i;
  }
}

// All 32 lanes must call; all end with the same (best, arg).
__device__ __forceinline__ void warp_argmax(float& best, int& arg) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, best, offset);
    const int i = __shfl_xor_sync(0xffffffffu, arg, offset);
    argmax_step(best, arg, v, i);
  }
}

// Every thread of the block must call; all end with the same (best, arg).
// smem_scratch: at least kArgmaxScratchFloats floats; reusable on return.
__device__ __forceinline__ void block_argmax(float& best, int& arg, float* smem_scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = (int)(blockDim.x >> 5);
  int* scratch_index = reinterpret_cast<int*>(smem_scratch + 32);
  warp_argmax(best, arg);
  if (lane == 0) {
    smem_scratch[warp] = best;
    scratch_index[warp] = arg;
  }
  __syncthreads();
  best = (lane < nwarps) ? smem_scratch[lane] : -INFINITY;
  arg = (lane < nwarps) ? scratch_index[lane] : -1;
  warp_argmax(best, arg);
  __syncthreads();
}

// ---------------------------------------------------------------------------
// Second level of a grid reduction: combine n per-block partials (global
// memory, written by other blocks before a grid barrier). Thread t folds
// partials t, t + blockDim.x, t + 2*blockDim.x, ... in increasing index order,
// then the block combines the per-thread values with block_allreduce. The
// order depends only on n and blockDim.x. Loads use ld.global.cg (L2) so no
// stale L1 line from an earlier phase can be observed, independent of how
// the barrier orders memory.
// ---------------------------------------------------------------------------
template <class Op>
__device__ __forceinline__ float reduce_partials(const float* partials, int n, float* smem, Op op) {
  float acc = Op::identity();
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc = op(acc, __ldcg(partials + i));
  return block_allreduce(acc, smem, op);
}

__device__ __forceinline__ float reduce_partials_sum(const float* partials, int n, float* smem) {
  return reduce_partials(partials, n, smem, SumOp{});
}
__device__ __forceinline__ float reduce_partials_max(const float* partials, int n, float* smem) {
  return reduce_partials(partials, n, smem, MaxOp{});
}

// ---------------------------------------------------------------------------
// Convenience: deterministic sum of x[0..n) (float, bf16 or f16, accumulated
// in fp32) by ONE block: thread t folds t, t+blockDim.x, ... in increasing
// order, then block_allreduce. Same bits for the same n and blockDim.x.
// ---------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ float block_sum_array(const T* x, long long n, float* smem) {
  float acc = 0.0f;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) acc += to_float(x[i]);
  return block_reduce_sum(acc, smem);
}

}  // namespace tk
