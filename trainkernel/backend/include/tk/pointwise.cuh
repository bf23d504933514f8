// tk/pointwise.cuh -- grid-stride loops for pointwise work in a persistent
// (cooperative) grid.
//
// Every thread of the grid visits indices
//     i = blockIdx.x * blockDim.x + threadIdx.x,  i += gridDim.x * blockDim.x
// so consecutive threads touch consecutive elements (coalesced), and any n
// works for any grid size. The index type is the type of n: pass an int when
// n < 2^31 (cheaper 32-bit arithmetic), a long long otherwise. The stride is
// computed in the index type, so it cannot overflow for int64 sizes.
//
// These loops contain no barrier: threads can leave at different times, and
// the caller puts tk::grid_sync() / __syncthreads() after the loop if a later
// phase reads what it wrote.
#pragma once

#include "types.cuh"

namespace tk {

template <typename I>
__device__ __forceinline__ I global_thread_index() {
  return (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;
}
template <typename I>
__device__ __forceinline__ I global_thread_count() {
  return (I)gridDim.x * (I)blockDim.x;
}

// f(i) for every i in [0, n).
template <typename I, class F>
__device__ __forceinline__ void for_each_index(I n, F f) {
  const I stride = global_thread_count<I>();
  for (I i = global_thread_index<I>(); i < n; i += stride) f(i);
}

// Vectorised variant: fvec(i) handles the VEC elements i .. i+VEC-1 (i a
// multiple of VEC) for the first n / VEC * VEC elements, fscalar(i) handles the
// remaining tail (< VEC elements). Whether fvec may use vector loads (e.g.
// tk::load_vec) is the caller's business: it must check the base pointers'
// alignment (tk::is_aligned) and otherwise call for_each_index instead.
template <int VEC, typename I, class FV, class FS>
__device__ __forceinline__ void for_each_index_vec(I n, FV fvec, FS fscalar) {
  static_assert(VEC >= 1, "VEC must be positive");
  const I stride = global_thread_count<I>();
  const I nvec = n / (I)VEC;
  for (I v = global_thread_index<I>(); v < nvec; v += stride) fvec(v * (I)VEC);
  for (I i = nvec * (I)VEC + global_thread_index<I>(); i < n; i += stride) fscalar(i);
}

// Block-local variant: threads of ONE block visit [0, n) with stride
// blockDim.x (for work that a single block owns, e.g. one row of a
// row-wise op inside a persistent loop over rows).
template <typename I, class F>
__device__ __forceinline__ void for_each_index_block(I n, F f) {
  for (I i = (I)threadIdx.x; i < n; i += (I)blockDim.x) f(i);
}

}  // namespace tk
