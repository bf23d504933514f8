// tk/grid.cuh -- block, cluster and grid-wide barriers for the megakernels.
//
// tk::grid_sync() is the barrier cooperative_groups::this_grid().sync()
// implements (CUDA 13, cooperative_groups/details/sync.h), written here
// because <cooperative_groups.h> costs ~2.5 s of every kernel's nvcc run
// (cudafe++, cicc and the host compiler parse ~57k more lines; measured on
// the CI machine: an empty kernel 1.0 s, with the header 3.6 s) and the
// issue's budget is 5 s a kernel. The algorithm: after a block barrier, each
// block's thread 0 adds 1 (block 0 adds 0x80000000 - (blocks - 1)) to a
// barrier word with release semantics at GPU scope, so the word's top bit
// flips exactly when the last block arrives; each thread 0 spins with
// acquire loads until it sees the flip, then a block barrier. So:
//   * it is a full memory barrier for global memory at GPU scope: every write
//     any thread of the grid made before grid_sync() is visible to every
//     thread of the grid after it (release/acquire + CTA barrier);
//   * the word is this module's own (zero at load, any value works: only the
//     flip is observed), so concurrent launches of one kernel must not
//     overlap (the arena has the same rule);
//   * the kernel MUST be launched cooperatively (all blocks co-resident), or
//     the spin never ends;
//   * every thread of every block must reach the same sequence of
//     grid_sync() calls (it contains __syncthreads()).
#pragma once

#include <stdint.h>

namespace tk {

// Barrier across all threads of the block, with block-scope memory ordering
// for shared and global memory.
__device__ __forceinline__ void block_sync() { __syncthreads(); }

namespace detail {
static __device__ unsigned int grid_barrier_word;
}  // namespace detail

// Barrier across all threads of the (cooperatively launched) grid.
__device__ __forceinline__ void grid_sync() {
  __syncthreads();
  if (threadIdx.x + threadIdx.y + threadIdx.z == 0) {
    unsigned int* word = &detail::grid_barrier_word;
    const unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
    const bool first = blockIdx.x + blockIdx.y + blockIdx.z == 0;
    const unsigned int add = first ? 0x80000000u - (blocks - 1) : 1u;
    unsigned int old, now;
    asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;" : "=r"(old) : "l"(word), "r"(add) : "memory");
    do {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(now) : "l"(word) : "memory");
    } while (((old ^ now) & 0x80000000u) == 0);
  }
  __syncthreads();
}

// ---------------------------------------------------------------------------
// Programmatic dependent launch (sm_90)
// ---------------------------------------------------------------------------
// A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization
// may start while the previous kernel of its stream still runs. Once every
// block of this kernel has called launch_dependents(), the next kernel's
// blocks may be scheduled onto the SMs left free; wait_prior_grid() returns
// when the previous kernel has completed and its memory is visible. A kernel
// that touches global memory only after its wait overlaps its launch latency
// and set-up with its predecessor, never data. Both are no-ops in a kernel
// launched without the attribute. Resident kernels use them
// (target.programmatic_launch); grid kernels where target.grid_programmatic_launch
// says (a cooperative launch with the attribute).
__device__ __forceinline__ void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
__device__ __forceinline__ void wait_prior_grid() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

// ---------------------------------------------------------------------------
// Thread block clusters (sm_90)
// ---------------------------------------------------------------------------
// The whole cluster's barrier with release/acquire at cluster scope (what
// cooperative_groups' cluster.sync() does, without its header's compile cost).
// Every thread of every block of the cluster, warps converged (.aligned).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}

// This block's rank in its cluster.
__device__ __forceinline__ int cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return (int)r;
}

// The shared::cluster address of the same shared-memory offset `addr` (a
// shared::cta address) in block `rank` of the cluster.
__device__ __forceinline__ uint32_t map_rank(uint32_t addr, int rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(addr), "r"(rank));
  return out;
}

// Flat block index / count for 1-D persistent grids.
__device__ __forceinline__ int block_id() { return (int)blockIdx.x; }
__device__ __forceinline__ int num_blocks() { return (int)gridDim.x; }

}  // namespace tk
