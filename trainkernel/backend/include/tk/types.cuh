// tk/types.cuh -- scalar conversions and small vector load/store helpers.
//
// Part of the TrainKernel device library (header-only, namespace tk). Depends
// only on the CUDA toolkit headers.
//
// Conversions follow PyTorch's semantics:
//   * to_float(x): exact widening for __nv_bfloat16 and __half (every bf16 /
//     f16 value is representable in fp32), identity for float.
//   * from_float<T>(f): round-to-nearest-even, NaN stays NaN, overflow goes to
//     +-inf -- the same as PyTorch's float->bfloat16 / float->half casts.
//     (__float2bfloat16_rn / __float2half_rn implement exactly that.)
//
// Vector helpers: Vec<T, N> is an N-element aligned pack so that a single
// 4/8/16-byte load/store is issued. They require the pointer to be aligned to
// sizeof(Vec<T,N>); use is_aligned() to check and fall back to scalars.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace tk {

// ---------------------------------------------------------------------------
// Scalar conversions
// ---------------------------------------------------------------------------
__host__ __device__ __forceinline__ float to_float(float x) { return x; }

// a + b rounded on its own: on the device never contracted with a product
// feeding it into an FMA (the printer prints tk ops with __fadd_rn for the
// same reason: each op rounds its result, as eager does); on the host (the
// library's CPU unit tests) a plain sum.
__host__ __device__ __forceinline__ float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
__host__ __device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__host__ __device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <typename T>
__host__ __device__ __forceinline__ T from_float(float x);

template <>
__host__ __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__host__ __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  // F2F.BF16.F32 in SASS. The packed form (cvt.rn.bf16x2.f32, F2FP) measured
  // the same in the row epilogue (perf-log step 22), so the plain one stays.
  return __float2bfloat16_rn(x);
}
template <>
__host__ __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }

// +0 in T as its bits, no conversion: a narrow select's zero (the printer's
// store_rounded_bits forms of relu, its gradient and select).
template <typename T>
__host__ __device__ __forceinline__ T zero();
template <>
__host__ __device__ __forceinline__ __nv_bfloat16 zero<__nv_bfloat16>() { return __ushort_as_bfloat16(0); }
template <>
__host__ __device__ __forceinline__ __half zero<__half>() { return __ushort_as_half(0); }

// x rounded to T and widened back: the float value of a T-typed intermediate, for
// the few ATen CUDA kernels that compute in the element type rather than in float.
template <typename T>
__host__ __device__ __forceinline__ float rounded(float x) { return to_float(from_float<T>(x)); }

// Generic cast through fp32 (the only cast path generated code needs:
// every low-precision op computes in fp32).
template <typename To, typename From>
__host__ __device__ __forceinline__ To cast(From x) { return from_float<To>(to_float(x)); }

// ---------------------------------------------------------------------------
// Alignment and vector packs
// ---------------------------------------------------------------------------
__host__ __device__ __forceinline__ bool is_aligned(const void* p, unsigned bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (uintptr_t)(bytes - 1)) == 0;
}

// N elements of T packed so that the whole pack is one naturally aligned
// memory transaction (N * sizeof(T) must be 2, 4, 8 or 16 bytes).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  static_assert(sizeof(T) * N == 2 || sizeof(T) * N == 4 || sizeof(T) * N == 8 ||
                    sizeof(T) * N == 16,
                "Vec<T,N> must be 2, 4, 8 or 16 bytes");
  T v[N];
};

// Number of T elements in one 16-byte transaction (8 for bf16/f16, 4 for float).
template <typename T>
__host__ __device__ constexpr int vec16_elems() { return 16 / (int)sizeof(T); }

// Aligned vector load / store. Precondition: is_aligned(p, sizeof(Vec<T,N>)).
template <int N, typename T>
__device__ __forceinline__ Vec<T, N> load_vec(const T* p) {
  return *reinterpret_cast<const Vec<T, N>*>(p);
}
template <int N, typename T>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, N>& v) {
  *reinterpret_cast<Vec<T, N>*>(p) = v;
}

// Load N consecutive elements converted to fp32. Uses one vector load when p
// is aligned to the pack size, scalar loads otherwise (the branch is uniform
// when all threads see the same base alignment).
template <int N, typename T>
__device__ __forceinline__ void load_as_float(const T* p, float (&out)[N]) {
  if (is_aligned(p, sizeof(Vec<T, N>))) {
    Vec<T, N> v = load_vec<N>(p);
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = to_float(v.v[i]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = to_float(p[i]);
  }
}

// Store N fp32 values converted (RNE) to T; vector store when aligned.
template <int N, typename T>
__device__ __forceinline__ void store_from_float(T* p, const float (&in)[N]) {
  if (is_aligned(p, sizeof(Vec<T, N>))) {
    Vec<T, N> v;
#pragma unroll
    for (int i = 0; i < N; ++i) v.v[i] = from_float<T>(in[i]);
    store_vec<N>(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) p[i] = from_float<T>(in[i]);
  }
}

// IEEE division and square root as calls (target.ieee_calls, perf-log step 53):
// the same div.rn / sqrt.rn, compiled once instead of at every element of every
// unrolled map (each is a fast path and a branch to a slow path: ptxas spent
// ~0.6 s of mlp4-adamw-ce's ~2.6 on their inline copies).
__device__ __noinline__ inline float div_rn(float a, float b) { return a / b; }
__device__ __noinline__ inline float sqrt_rn(float a) { return sqrtf(a); }

// The fast paths of IEEE division and square root, without their branch. For
// sm_90, ptxas expands `a / b` (div.rn.f32) into MUFU.RCP, two FFMAs refining
// the reciprocal, the quotient and one FFMA correction, guarded by FCHK and a
// branch to a slow path; and sqrtf (sqrt.rn.f32) into MUFU.RSQ, two FMULs and
// two FFMAs, guarded by a range test on the operand's bits. Each branch ends a
// basic block, so the unrolled elements of a map ran their chains one after
// the other (perf-log step 61). These compute the same instructions with no
// branch and clear `ok` where an operand is outside the range in which that
// sequence is the correctly rounded result; the caller then computes again
// with `/` and sqrtf. The square root's range is ptxas's own test; the
// division's is narrower than FCHK's (both operands of magnitude in
// [2^-60, 2^60): the quotient, the reciprocal and the residual stay normal,
// far from overflow), so wherever `ok` stays set the sequence is the one
// ptxas's fast path runs (tests/test_fast_paths.py checks them against `/`
// and sqrtf on the GPU).
__device__ __forceinline__ bool fast_div_range(float a) {
  const float m = fabsf(a);
  return m >= 0x1p-60f && m < 0x1p60f;  // false for 0, subnormals, inf and NaN
}
__device__ __forceinline__ float div_fast(float a, float b, bool& ok) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  r = __fmaf_rn(r, __fmaf_rn(-b, r, 1.0f), r);
  const float q = __fmul_rn(r, a);
  ok = ok && fast_div_range(a) && fast_div_range(b);
  return __fmaf_rn(r, __fmaf_rn(-b, q, a), q);
}
__device__ __forceinline__ float sqrt_fast(float a, bool& ok) {
  float r;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  const float s = __fmul_rn(a, r), h = __fmul_rn(r, 0.5f);
  ok = ok && __float_as_uint(a) - 0x0d000000u <= 0x727fffffu;  // [2^-101, FLT_MAX]
  return __fmaf_rn(__fmaf_rn(-s, s, a), h, s);
}

}  // namespace tk
