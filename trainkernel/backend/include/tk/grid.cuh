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
// Per-item flags (tile.sync items; trainkernel/item_deps.py)
// ---------------------------------------------------------------------------
// A phase boundary without a barrier: each work item that later items depend
// on counts arrivals on its own flag (one per warp of the item, with release
// semantics after the warp's stores), and a later item waits until the flags
// it depends on reach this launch's count. Flags only grow: launch e of the
// kernel waits for (e + 1) * warps, so nothing is reset between launches;
// comparisons are modulo 2^32 (a difference, read as signed). The launch
// number is the kernel's epoch word, read by every thread at the start and
// advanced by the last block to leave (ItemFlags::leave), so every block of a
// launch reads the same value. As grid_sync: the words are the module's own,
// concurrent launches of one kernel must not overlap, and the launch must be
// cooperative (a waiting block spins on items other blocks run).
//
// A dependency list is a run of entries, each two words: the first flag of a
// range | (arrivals a flag of it counts a launch) << 24, and the number of
// flags in the list up to the range's end.
// Probe knobs (perf-log step 88's measurement: flags lost everywhere, the
// waits' polls suspected of crowding the flags' few L2 lines, which the
// producers' arrivals need): words between two flags (32: a 128-byte line
// each) and a poll's back-off in ns once a flag is not yet there.
#if !defined(TK_FLAG_STRIDE)
#define TK_FLAG_STRIDE 1
#endif
#if !defined(TK_FLAG_BACKOFF_NS)
#define TK_FLAG_BACKOFF_NS 0
#endif
// 1: an arrival's lanes do not each wait for their stores (fence.acq_rel.gpu);
// lane 0's red.release, after __syncwarp, releases them (release is cumulative
// over what the warp barrier ordered before it). Unverified: a probe knob.
#if !defined(TK_FLAG_LEAN_ARRIVAL)
#define TK_FLAG_LEAN_ARRIVAL 0
#endif
struct ItemFlags {
  static constexpr int kBatch = 8;  // polls a lane has in flight
  static constexpr unsigned kStride = TK_FLAG_STRIDE;
  unsigned* flags;
  unsigned epoch1;  // this launch's number + 1

  // Waits until every flag of entries [begin, end) of `table` has this launch's
  // arrivals; afterwards the caller sees every write those items made before
  // arriving, TMA (async proxy) reads included. `lanes` threads call it
  // together, lane 0 .. lanes - 1 (a warp: 32, converged; one thread: 1),
  // each polling the list's flags `lanes` apart, kBatch in
  // flight: relaxed loads pipeline (an acquire would order the next load
  // behind it), and the fence after them makes them acquire together.
  __device__ __forceinline__ void wait(const unsigned* table, int begin, int end, unsigned lane = threadIdx.x % 32,
                                       unsigned lanes = 32) const {
    if (end <= begin) return;
    const unsigned total = __ldg(table + 2 * (end - 1) + 1);
    int e = begin;
    unsigned e_start = 0;
    for (unsigned v0 = lane; v0 < total; v0 += lanes * kBatch) {
      // Flag numbers, not pointers: the wide wgmma tiles' producer waits at 40
      // registers (setmaxnreg), where kBatch pointers more would spill.
      unsigned now[kBatch], target[kBatch], at[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const unsigned v = v0 + lanes * j;
        target[j] = 0;
        now[j] = 0;
        at[j] = 0;
        if (v < total) {
          for (unsigned e_end = __ldg(table + 2 * e + 1); v >= e_end; e_end = __ldg(table + 2 * e + 1)) {
            e_start = e_end;
            ++e;
          }
          const unsigned head = __ldg(table + 2 * e);
          at[j] = (head & 0xFFFFFFu) + (v - e_start);
          target[j] = epoch1 * (head >> 24);
          asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(now[j]) : "l"(flags + at[j] * kStride) : "memory");
        }
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j)
        while ((int)(now[j] - target[j]) < 0) {
          if (TK_FLAG_BACKOFF_NS > 0) __nanosleep(TK_FLAG_BACKOFF_NS);
          asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(now[j]) : "l"(flags + at[j] * kStride) : "memory");
        }
    }
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    if (lanes > 1) __syncwarp();
    asm volatile("fence.proxy.async.global;" ::: "memory");
  }

  // Every lane of the warp calls it, after its last store of the item: the
  // warp's one arrival on `flag`.
  __device__ __forceinline__ void arrive(int flag) const {
    if (!TK_FLAG_LEAN_ARRIVAL) asm volatile("fence.acq_rel.gpu;" ::: "memory");
    asm volatile("fence.proxy.async.global;" ::: "memory");  // for TMA readers of the stores
    __syncwarp();
    if (threadIdx.x % 32 == 0)
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(flags + flag * kStride) : "memory");
  }
};

// A warp's arrival on `at` when it leaves the scope of one item (a `continue`
// too): Flags is ItemFlags (at: the item's flag) or tk::hopper's UnitFlags /
// NoUnitFlags (at: the unit).
template <class Flags>
struct Arrival {
  const Flags& flags;
  int at;
  __device__ __forceinline__ ~Arrival() { flags.arrive(at); }
};
using ItemArrival = Arrival<ItemFlags>;

// The launch's flags: `flags` the kernel's array, `epoch` its launch counter.
// Every thread calls it at the start (after wait_prior_grid, if any).
__device__ __forceinline__ ItemFlags item_flags(unsigned* flags, const unsigned* epoch) {
  unsigned e;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(e) : "l"(epoch) : "memory");
  return ItemFlags{flags, e + 1};
}

// Every thread of the block calls it last: the last block to leave advances
// the epoch for the next launch (no block of this launch reads it again).
__device__ __forceinline__ void leave_item_flags(const ItemFlags& f, unsigned* epoch, unsigned* left) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned old;
    asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(old) : "l"(left) : "memory");
    if (old == gridDim.x * gridDim.y * gridDim.z - 1) {
      *left = 0;
      asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(epoch), "r"(f.epoch1) : "memory");
    }
  }
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
