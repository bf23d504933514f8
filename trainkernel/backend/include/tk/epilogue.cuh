// tk/epilogue.cuh -- gemm epilogues whose operand loads run ahead of their stores.
//
// Part of the TrainKernel device library (header-only, namespace tk).
//
// A fused epilogue reads operands (a bias, a target, the fp32 weight it
// updates) and stores results. Generated code cannot promise the compiler
// that the buffers do not alias (an in-place update reads and writes the same
// one), so with a per-element functor every element's loads wait behind the
// previous element's stores: one load in flight per thread, a full memory
// latency per element (medium's dW1 epilogue: 64 of them per tile).
//
// A staged epilogue comes in two halves:
//   Loads load(int i, int j)                        the element's operands
//   void store(int i, int j, float acc, const Loads&)   compute and store
// and the tiles call load for a chunk of the thread's elements before any of
// their stores (stage_epilogue_chunk). Exact wherever an output may alias an
// operand only at the elements it writes (the kernel verifier's in-place
// rule): those elements are the thread's own, loaded before it stores them.
//
// Host-callable too: tests/device/epilogue_order.cu drives the tiles' chunking
// on the CPU.
//
// TK_EPILOGUE_LOADS_INLINE (a probe knob, benchmarks/resident_probe.py
// --epilogue) makes the tiles call load and store element by element again.
#pragma once

#include <type_traits>
#include <utility>

#include "types.cuh"  // add_rn

namespace tk {

// The loads of one element: N floats.
template <int N>
struct EpilogueLoads {
  float v[N];
};

// Elements a thread stages at a time: 16 floats of loads in flight, whatever
// the number of operands (registers: the tiles' accumulators stay live).
constexpr int epilogue_chunk(int loads_per_element) {
  return loads_per_element <= 1 ? 16 : loads_per_element <= 2 ? 8 : 4;
}

// An optional third half, prefetch(r0, c0, rows, cols, lane, lanes): thread
// `lane` of `lanes` asks L2 for its share of the operand lines the slab
// [r0, r0 + rows) x [c0, c0 + cols) will load, so that the epilogue's loads
// hit L2 instead of waiting on DRAM chunk after chunk (large's fp32 weight
// updates, perf-log step 27). A hint: it moves no data the kernel sees and
// needs no ordering.
struct NoPrefetch {
  __host__ __device__ __forceinline__ void operator()(int, int, int, int, int, int) const {}
};

template <class Load, class Store, class Prefetch = NoPrefetch>
struct StagedEpilogue {
  static constexpr bool kStaged = true;
  static constexpr bool kPrefetch = !std::is_same<Prefetch, NoPrefetch>::value;
  using Loads = decltype(std::declval<const Load&>()(0, 0));
  static constexpr int kChunk = epilogue_chunk(sizeof(Loads) / sizeof(float));
  Load load;
  Store store;
  Prefetch prefetch;
  // Per-element form (the tiles that do not stage, the TMA fallback); returns
  // what store returns (a column-partials epilogue's summed value).
  __host__ __device__ __forceinline__ decltype(auto) operator()(int i, int j, float acc) const {
    return store(i, j, acc, load(i, j));
  }
};

template <class Load, class Store>
__host__ __device__ __forceinline__ StagedEpilogue<Load, Store> staged_epilogue(Load load, Store store) {
  return StagedEpilogue<Load, Store>{load, store, NoPrefetch{}};
}
template <class Load, class Store, class Prefetch>
__host__ __device__ __forceinline__ StagedEpilogue<Load, Store, Prefetch> staged_epilogue(Load load, Store store,
                                                                                         Prefetch prefetch) {
  return StagedEpilogue<Load, Store, Prefetch>{load, store, prefetch};
}

// The 128-byte lines of `rows` rows of `cols` elements from p (row stride
// ld elements) into L2, thread `lane` of `lanes` taking every lanes-th line
// (prefetch.global.L2; each line holds bytes of the range, so it never leaves
// the allocation's pages). No-op on the host.
template <typename T>
__host__ __device__ __forceinline__ void prefetch_rows_l2(const T* p, long long ld, int rows, int cols, int lane,
                                                          int lanes) {
#if defined(__CUDA_ARCH__)
  if (rows <= 0 || cols <= 0) return;
  const long long bytes = (long long)cols * (long long)sizeof(T);
  const int per_row = (int)((bytes + 127) / 128) + 1;  // lines a row can touch, unaligned
  for (int q = lane; q < rows * per_row; q += lanes) {
    const unsigned long long row = reinterpret_cast<unsigned long long>(p + (long long)(q / per_row) * ld);
    const unsigned long long line = (row & ~127ull) + 128ull * (unsigned long long)(q % per_row);
    if (line < row + (unsigned long long)bytes) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(line));
  }
#else
  (void)p;
  (void)ld;
  (void)rows;
  (void)cols;
  (void)lane;
  (void)lanes;
#endif
}

// An epilogue with load and store halves (generated code's) ...
namespace detail {
template <class E, class = void>
struct has_halves {
  static constexpr bool value = false;
};
template <class E>
struct has_halves<E, decltype((void)E::kStaged)> {
  static constexpr bool value = E::kStaged;
};
}  // namespace detail
template <class E>
constexpr bool has_staged_halves = detail::has_halves<E>::value;

// An epilogue's prefetch half, where it has one (only StagedEpilogue can;
// TK_NO_EPILOGUE_PREFETCH, a probe knob: never).
template <class E>
__host__ __device__ __forceinline__ void epilogue_prefetch([[maybe_unused]] const E& epi, [[maybe_unused]] int r0,
                                                           [[maybe_unused]] int c0, [[maybe_unused]] int rows,
                                                           [[maybe_unused]] int cols, [[maybe_unused]] int lane,
                                                           [[maybe_unused]] int lanes) {
#if !defined(TK_NO_EPILOGUE_PREFETCH)
  if constexpr (has_staged_halves<E>) {
    if constexpr (E::kPrefetch) epi.prefetch(r0, c0, rows, cols, lane, lanes);
  }
#endif
}


// ... and whether the tiles stage them (TK_EPILOGUE_LOADS_INLINE: element by element).
template <class E>
#ifdef TK_EPILOGUE_LOADS_INLINE
constexpr bool is_staged_epilogue = false;
#else
constexpr bool is_staged_epilogue = has_staged_halves<E>;
#endif

// The chunk's elements e = 0 .. n-1: where(e, i, j) says where element e is
// (false: out of bounds), value(e) its accumulator. Every load, then every
// store. A store half that returns a float (a column-partials epilogue, tk/
// hopper_gemm.cuh) has its in-bounds elements' values added to `sum` in
// element order; the result is that sum (`sum` itself for a void store).
template <int kN, class Epi, class Where, class Value>
__host__ __device__ __forceinline__ float stage_epilogue_chunk(const Epi& epi, Where where, Value value,
                                                               float sum = 0.0f) {
  typename Epi::Loads loads[kN];
#pragma unroll
  for (int e = 0; e < kN; ++e) {
    int i, j;
    if (where(e, i, j)) loads[e] = epi.load(i, j);
  }
#pragma unroll
  for (int e = 0; e < kN; ++e) {
    int i, j;
    if (where(e, i, j)) {
      if constexpr (std::is_void<decltype(epi.store(i, j, value(e), loads[e]))>::value)
        epi.store(i, j, value(e), loads[e]);
      else
        sum = add_rn(sum, epi.store(i, j, value(e), loads[e]));  // no FMA with the epilogue's product
    }
  }
  return sum;
}

}  // namespace tk
