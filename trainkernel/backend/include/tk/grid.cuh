// tk/grid.cuh -- block and grid-wide barriers for the cooperative megakernel.
//
// tk::grid_sync() is cooperative_groups::this_grid().sync(). In the CUDA 13
// headers (cooperative_groups/details/sync.h) that is implemented inline: the
// block's thread 0 does an `atom.add.release.gpu` on a barrier word owned by
// the cooperative launch, spins with `ld.acquire.gpu`, and the block brackets
// it with __syncthreads(). So:
//   * it compiles and works WITHOUT -rdc / separate compilation;
//   * it is a full memory barrier for global memory at GPU scope: every write
//     any thread of the grid made before grid_sync() is visible to every
//     thread of the grid after it (release/acquire + CTA barrier);
//   * the kernel MUST be launched with cudaLaunchCooperativeKernel (or
//     cuLaunchCooperativeKernel / the cooperative launch attribute), with all
//     blocks co-resident. In a normal launch the barrier word does not exist
//     and the behaviour is undefined (tk::grid_is_cooperative() checks it).
//   * every thread of every block must reach the same sequence of grid_sync()
//     calls (it contains __syncthreads()).
#pragma once

#include <cooperative_groups.h>

namespace tk {

// Barrier across all threads of the block, with block-scope memory ordering
// for shared and global memory.
__device__ __forceinline__ void block_sync() { __syncthreads(); }

// Barrier across all threads of the (cooperatively launched) grid.
__device__ __forceinline__ void grid_sync() { cooperative_groups::this_grid().sync(); }

// True when the kernel was launched cooperatively (grid_sync() is legal).
__device__ __forceinline__ bool grid_is_cooperative() {
  return cooperative_groups::this_grid().is_valid();
}

// Flat block index / count for 1-D persistent grids.
__device__ __forceinline__ int block_id() { return (int)blockIdx.x; }
__device__ __forceinline__ int num_blocks() { return (int)gridDim.x; }

}  // namespace tk
