// tk/hopper_gemm.cuh -- Hopper (sm_90a) GEMM tile: TMA, an mbarrier pipeline, wgmma.
//
// Status (2026-12-01): runs on the H200 (results/h200/run-c21359c,
// run-31a6912): every tile shape, split and layout passes the smoke run and
// the 137 GPU tests of tests/test_hopper_gemm.py, memcheck is clean, and it
// reaches 410-690 TFLOP/s on the GEMMs of medium and large (0.58-0.87x of
// torch.matmul; results/h200/gemm.json). Its data path also passes the CPU
// emulation in tests/device/hopper_gemm_emu.cu. The generated grid kernels
// run it as their wgmma engine (tile.gemm engine = "wgmma", docs/ir/tile.md)
// through gemm_units (layer 4): correct against eager on small, mlp4, medium
// and large, and racecheck/memcheck clean on small (results/h200/run-7b1d145,
// run-89b5e05, run-66c6a69); the standalone kernel, now a wrapper of
// gemm_units, passes its 137 GPU tests again (run-66c6a69).
//
// =============================================================================
// What it computes
// =============================================================================
//
//   C[M,N] = epilogue( op(A)[M,K] @ op(B)[K,N] )      fp32 accumulation
//
// with T = __nv_bfloat16 or __half inputs and the storage conventions of
// gemm.cuh (row-major, leading dimensions in elements):
//   !TA: A is M x K, op(A)[i][k] = A[i*lda + k]     TA: A is K x M, A[k*lda + i]
//   !TB: B is K x N, op(B)[k][j] = B[k*ldb + j]     TB: B is N x K, B[j*ldb + k]
// The training step's three products are  x @ W  (!TA, !TB),  dY @ W^T
// (!TA, TB) and  X^T @ dY  (TA, !TB).  Any M, N, K >= 0.
//
// The epilogue is a functor that receives every in-bounds element of the fp32
// accumulator with its GLOBAL (row, col), exactly once (see "Epilogues").
// StoreEpilogue<Out> is the plain one: C = acc (+ beta * C), Out = float,
// __nv_bfloat16 or __half.
//
// =============================================================================
// Layers (each builds only on the ones above it)
// =============================================================================
//
//  0. PTX wrappers: mbarriers, TMA (cp.async.bulk.tensor), wgmma fences,
//     setmaxnreg, named barriers.  Thin, one instruction each.
//  1. wgmma m64nNk16 (N = 64/128/256), bf16 and f16.
//  2. Tile shapes (the table below), the work-unit schedule (persistent
//     tiles x split-K slices), the stage layout: where each TMA box lands
//     and the shared-memory matrix descriptors wgmma reads it through
//     (host+device, so tests/device/hopper_gemm_emu.cu replays them on the
//     CPU against the PTX ISA's canonical layouts).
//  3. The accumulator fragment's (row, col) map and the epilogue hook.
//  4. The kernel: one producer warpgroup (one thread issues TMA), two
//     consumer warpgroups (64 rows of the tile each) issuing wgmma; split-K
//     fix-up; the epilogue.
//  5. The fallback kernel (gemm.cuh's mma.sync tile) for operands TMA cannot
//     address, and for K == 0.
//  6. Host side: tensor maps (cuTensorMapEncodeTiled through
//     cudaGetDriverEntryPointByVersion: no -lcuda), the plan (tile shape,
//     split count, grid) and the launch.
//
// Build: -std=c++17 -gencode=arch=compute_90a,code=sm_90a. wgmma and
// setmaxnreg exist only in the "a" target; under any other target the
// kernel body is compiled out and traps (the header still compiles with
// plain -arch=sm_90, so tk/*.cuh stay includable everywhere).
//
// =============================================================================
// The pipeline (why it is shaped like this)
// =============================================================================
//
// A block is 384 threads = 3 warpgroups, one block per SM (about 197 KB of
// shared memory). Warpgroup 0 is the producer: it gives registers back
// (setmaxnreg.dec to 40) and one of its threads walks the block's work units
// issuing, per 64-wide K step, the TMA copies of an A tile (BM x 64) and a B
// tile (64 x BN) into one of STAGES shared-memory stages. Warpgroups 1 and 2
// are consumers (setmaxnreg.inc to 232, so a 64 x 256 fp32 accumulator, 128
// registers a thread, fits with room): each multiplies its 64 rows of the
// stage's A by the whole B with four wgmma m64nBNk16 (K = 16 each).
//
// Two mbarriers per stage:
//   full[s]   count 1: the producer's arrive.expect_tx(stage bytes); the TMA
//             engine completes the transaction bytes as the data lands.
//   empty[s]  count 8: lane 0 of each of the 8 consumer warps arrives once its
//             wgmma reading the stage has retired (wgmma.wait_group).
// Stage s is used for the n-th time in phase n, parity n & 1. The producer
// waits on empty with the opposite parity, which a fresh barrier satisfies at
// once, so the first STAGES loads go out without any handshake.
// A consumer keeps one wgmma group in flight: after committing K step i it
// waits for group i-1 (wait_group 1) and frees that stage, so the tensor cores
// never drain between K steps.
//
// Shared memory is written only by TMA and read only by wgmma (both the
// async proxy), so no fence.proxy.async is needed per stage; the mbarrier
// inits are published with fence.mbarrier_init before the block barrier.
//
// Layouts, 128-byte swizzle (the TMA box and the wgmma descriptor agree on
// it; the stage bases are 1024-byte aligned as the swizzle atom requires):
//   K-major operand (A with !TA, B with TB): one box of 64 (K) x ROWS, every
//     row 128 bytes; 8-row atoms of 1024 bytes: descriptor SBO = 1024, LBO
//     unused; the k-th 16-wide K slice starts 32*k bytes in (the swizzle is a
//     function of the address bits, so offsetting the start is exact).
//   MN-major operand (A with TA, B with !TB): ROWS/64 boxes of 64 (M or N,
//     contiguous) x 64 (K), each 8 KB, placed one after another: descriptor
//     LBO = 8192 (the next 64 columns), SBO = 1024 (the next 8 K rows), the
//     k-th K slice starts 2048*k bytes in; wgmma's transpose bit is set.
//     B of a 32-wide tile is one box of 32 (N) x 64 (K) whose rows are 64
//     bytes, so it takes the 64-byte swizzle (TMA's and the descriptor's mode
//     2; a 128-byte one needs 64 contiguous elements): SBO = 512 (8 rows of
//     64 bytes), LBO unused (one 32-wide atom), the k-th K slice 1024*k in.
// A consumer's 64 rows of A are at +8192 bytes per consumer in both layouts.
//
// =============================================================================
// Tile table (kHopperTiles; choose_plan picks one per shape)
// =============================================================================
//
//   id  BM x BN   stages  shared memory  wgmma         use
//   0   128x256   4       4 x 48 KB      m64n256k16    large outputs: the most
//                                                      flops per byte loaded
//                                                      (85 per byte of A+B)
//   1   128x128   6       6 x 32 KB      m64n128k16    when 128x256 leaves
//                                                      SMs idle (64 flop/B)
//   2   128x64    8       8 x 24 KB      m64n64k16     narrow outputs, and
//                                                      more tiles for short M*N
//                                                      (43 flop/B)
//
// Every shape keeps BM = 128 (two consumer warpgroups, 64 rows each; a
// kernel built with TK_WGMMA_CONSUMERS 1 has 64-row tiles of the 64- and
// 128-wide shapes, one consumer warpgroup) and about 192 KB of stages, so
// the deeper pipelines go to the smaller tiles whose K steps are shorter. choose_plan scores each (tile, split count)
// with a small cost model: waves of work units over the SMs times the
// unit's MMA time at the tile's relative efficiency, plus the epilogue and
// split-K traffic (constants in kHopperTiles / choose_plan, to be refit
// from benchmarks/gemm.py's measurements).
//
// =============================================================================
// Scheduling: persistent blocks, split-K
// =============================================================================
//
// A work unit is (output tile, K slice). grid = min(units, SMs); block b
// takes units b, b + grid, ... (the producer and the consumers walk the same
// sequence, the pipeline's stage/phase carry over from unit to unit, so the
// producer prefetches the next unit while the consumers finish this one).
// Tiles are numbered in groups of 16 tile-rows (column-major inside a
// group), so the blocks running together share A rows and B columns in L2.
//
// Split-K (splits > 1, for outputs with too few tiles to fill the SMs): the
// K steps are cut into `splits` slices of kb_per_split steps. Each unit
// writes its fp32 partial tile to the partials buffer in fragment order (each
// thread's four consecutive registers are one float4: coalesced, no index
// math), fences, and bumps the tile's counter; the unit that brings the
// counter to `splits` sums the partials of slices 0, 1, ..., splits-1 in that
// order (reading its own back too), so the result does not depend on which
// slice finished last: deterministic. It resets the counter to 0 (counters
// must be zero before the first launch and are zero after every launch) and
// runs the epilogue on the sum. Concurrent launches must not share
// partials or counters.
//
// =============================================================================
// The cluster pair (plan.pair; choose_plan's pair_req = 1)
// =============================================================================
//
// The large products are L2-bound (perf-log "Next: the large products' L2
// traffic"): with 128 x 256 tiles, medium's h = x @ W1 reads each 256-column
// slab of B eight times, 67 of its 100 MB. Launched in clusters of two
// (blocks 2c and 2c + 1), the two blocks walk their units in lockstep
// (pair_step): at step k each holds its own unit and its peer's, both run the
// longer unit's K steps (the shorter one idle steps, a stage's barriers
// without data), so the two pipeline positions stay equal from unit to unit
// and from gemm to gemm (the megakernel walks every gemm of a paired kernel
// so). Where the two units are tiles (m, n) and (m', n) over the same K steps
// (pairs_share_b plans with an even first unit: every step), each block's
// producer loads its own A and rank 0's loads B once with .multicast::cluster
// into the same stage offset of both blocks; the TMA unit signals both
// blocks' full barrier at that offset. Each full barrier expects the whole
// stage (A + B) on a loading step, whoever issued it; a multicast may land
// before the peer's expect_tx, which the transaction count allows (the phase
// completes only once the peer's producer has arrived). Rank 0 may refill a
// stage only when both blocks' consumers have left it (its multicast lands in
// both), and so may rank 1: each block's empty barriers count both blocks'
// consumer warps, which arrive on their own and, through mapa, on the peer's
// at every step (release at cluster scope; the producers wait with acquire at
// cluster scope). Counted on rank 0's alone, rank 1 could run more than a
// pipeline ahead on steps without multicast and complete a phase of rank 0's
// barrier with arrivals for a later use while rank 0 still read the stage
// (found by tests/test_pair_protocol.py's model of the protocol). The barrier
// inits are published by a cluster barrier before the first copy, and a
// cluster barrier at the end keeps each block resident until its peer's last
// remote arrive.
//
// =============================================================================
// Epilogues
// =============================================================================
//
// Accumulator fragment of a consumer thread (PTX ISA, wgmma D fragment for
// m64nNk16 with .f32): thread t of the warpgroup (warp w = t/32, lane l)
// holds acc[0 .. BN/2) with
//   acc[4j + 2h + e]  ->  row 16w + l/4 + 8h,  col 8j + 2(l%4) + e
//   (j < BN/8, h, e in {0, 1}), relative to the consumer's 64 x BN slab;
// frag_row / frag_col give these, and the kernel adds the slab's origin.
//
// An epilogue functor Epi is called with global indices, only for in-bounds
// elements, once per element:
//   epi(int i, int j, float v)                    required
//   epi.pair(int i, int j, float v0, float v1)    optional: elements (i, j)
//       and (i, j+1), both in bounds, j even (vector stores); detected at
//       compile time, else the scalar call is used twice.
//   kRunTimeTyped = true + epi.visit(f)         optional: an epilogue whose
//       type is chosen at run time (AnyStoreEpilogue's output type) calls
//       f(typed epilogue) once; the kernel does so once a unit, so the K loop
//       is instantiated once and only the epilogue once per type.
// The fallback path calls the same epi(i, j, v), so one functor serves both.
// Fused epilogues of generated code (bias, relu, casts, SGD updates) are
// written as such functors; with split-K they see the final sum only.
//
// =============================================================================
// When TMA cannot be used (fallback)
// =============================================================================
//
// TMA needs a 16-byte aligned base address and row strides that are
// multiples of 16 bytes (lda, ldb multiples of 8 elements): K odd with
// !TA, say, cannot be described by a tensor map. tma_compatible() checks
// this; then (and for K == 0) the host launches fallback_kernel, a
// persistent loop over gemm.cuh's mma.sync tile (128 x 128 x 32, 256
// threads), with the same epilogue. It is correct for any layout and
// alignment (expected several times slower; not measured yet).
//
// =============================================================================
// Host API (see layer 6)
// =============================================================================
//
//   tk::hopper::Plan plan = tk::hopper::choose_plan(M, N, K, num_sms);
//   // (choose_plan(..., pair_req = 1): clusters of two sharing B where allowed)
//   // (or fallback_plan(M, N, sms) when !tma_compatible(A, lda) or (B, ldb))
//   // split-K: plan.partial_bytes of fp32 scratch, plan.counters zeroed ints
//   tk::hopper::gemm<T, TA, TB>(plan, A, lda, B, ldb, M, N, K, epi,
//                               partials, counters, stream);
// The first call of each instantiation raises the kernels' dynamic shared
// memory limit (cudaFuncSetAttribute): make it once before capturing a graph.
#pragma once

#include <cuda.h>  // CUtensorMap and the cuTensorMapEncodeTiled types only (no -lcuda)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <type_traits>  // the row walk's guard as a type (consume_units)
#if defined(TK_UNIT_TIMER)
#include <cstdio>  // the unit timer's printf (a development probe)
#endif

#include "epilogue.cuh"
#include "gemm.cuh"
#include "grid.cuh"  // cluster_sync, cluster_rank, map_rank (the cluster pair)
#include "types.cuh"

// wgmma / setmaxnreg are compiled only for the sm_90a feature set.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TK_HOPPER_DEVICE 1
#else
#define TK_HOPPER_DEVICE 0
#endif

// Define TK_HOPPER_WATCHDOG=<nanoseconds> to make every mbarrier wait trap
// (after a printf naming the barrier) once it has spun that long: a broken
// pipeline then fails fast instead of hanging the GPU. Off by default.

namespace tk {
namespace hopper {

constexpr int kBK = 64;  // K elements per stage: one 128-byte swizzle row of bf16 / f16
// Consumer warpgroups (BM = 64 * kConsumers). A kernel whose products have
// few 128-row tiles (the small steps: 4-32 units on 132 SMs) is printed with
// 64-row tiles, one consumer warpgroup (tile.gemm's tile_shape BM = 64; the
// printer defines TK_WGMMA_CONSUMERS 1 before this header): twice the units,
// each loading half the A rows. One kernel, one tile height.
#if !defined(TK_WGMMA_CONSUMERS)
#define TK_WGMMA_CONSUMERS 2
#endif
constexpr int kConsumers = TK_WGMMA_CONSUMERS;
static_assert(kConsumers == 1 || kConsumers == 2, "TK_WGMMA_CONSUMERS: one or two consumer warpgroups");
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kProducerRegs = 40;   // 128 * (40 + 2 * 232) = 64512 <= 65536
constexpr int kConsumerRegs = 232;
constexpr int kBaseRegs = 168;      // 65536 / 384 rounded down to 8: every thread of a 384-thread block
constexpr int kRegsBarrier = 2;     // named barrier of grid_gemm_units' register hand-back
// The consumers' row epilogue and split-K vote go by warp: each warp walks the
// 16 rows of the slab its fragment holds (frag_row: warp w of a warpgroup, rows
// 16w .. 16w + 15) and votes on its own split-K counter, so __syncwarp() is
// the only sync they need and no warp waits for another (perf-log step 20:
// small 29.3 -> 28.8 us, medium 141.7 -> 137.9; by warpgroup, on named
// barriers, racecheck reported hazards on small that it does not by warp).
constexpr int kTileWarps = 4 * kConsumers;  // consumer warps of a tile
// A split tile's arrival counters in GemmParams::counters: one per consumer
// warp (tile.gemm_workspace_bytes reserves BM / 16 of them a tile).
// The row epilogue's scratch (layer 3): a consumer warpgroup's 64 x BN slab goes
// through shared memory kRowCols columns at a time; kRowPitch floats between
// rows keep the fragment's float2 writes free of bank conflicts.
constexpr int kRowCols = 32;
constexpr int kRowPitch = kRowCols + 8;
constexpr int kRowScratchBytes = 64 * kRowPitch * 4;  // one consumer warpgroup's
constexpr int kGroupM = 16;  // tile-rows per raster group (L2 reuse)

enum DType : int { kF32 = 0, kBF16 = 1, kF16 = 2 };

template <typename T>
struct dtype_of;
template <>
struct dtype_of<__nv_bfloat16> {
  static constexpr int value = kBF16;
};
template <>
struct dtype_of<__half> {
  static constexpr int value = kF16;
};

#if defined(__CUDACC__)
// =============================================================================
// Layer 0: PTX wrappers
// =============================================================================
namespace ptx {

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Make the inits visible to the other threads and to the async proxy (TMA).
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

// kCluster: acquire at cluster scope (a barrier other blocks of the cluster
// arrive on, with release at cluster scope: the cluster pair's empty barriers).
template <bool kCluster = false>
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  if constexpr (kCluster)
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  else
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  return done != 0;
}

// Whether the phase of parity `parity` of the barrier has completed, without
// waiting (test_wait; try_wait may suspend the thread for a while first).
__device__ __forceinline__ bool mbar_test_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

// Arrive on another block's mbarrier (`bar`: a shared::cluster address, from
// map_rank) with release at cluster scope: this thread's earlier accesses,
// and the wgmma reads it waited for, happen before the barrier's phase ends.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// Wait until the phase of parity `parity` of the barrier has completed.
template <bool kCluster = false>
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#if defined(TK_HOPPER_WATCHDOG)
  uint32_t spins = 0;
  uint64_t t0 = 0;
  while (!mbar_try_wait<kCluster>(bar, parity)) {
    if ((++spins & 1023u) == 0) {
      const uint64_t t = globaltimer();
      if (t0 == 0) {
        t0 = t;
      } else if (t - t0 > (uint64_t)(TK_HOPPER_WATCHDOG)) {
        printf("tk::hopper watchdog: block %d thread %d stuck on mbarrier smem+%u parity %u\n",
               (int)blockIdx.x, (int)threadIdx.x, bar, parity);
        __trap();
      }
    }
  }
#else
  while (!mbar_try_wait<kCluster>(bar, parity)) {
  }
#endif
}

// 2-D tiled TMA load global -> shared, completing on an mbarrier. c0 is the
// coordinate (in elements) along the contiguous dimension. Out-of-bounds
// parts of the box are zero-filled, and still count as transaction bytes.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}

// The same box multicast to the blocks of the cluster in `mask` (bit r: rank
// r): it lands at the same shared-memory offset `dst` in each, and each one's
// mbarrier at the offset of `bar` receives the transaction bytes.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                                      int c0, int c1, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}

__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Named barrier over `threads` threads (id 0 is __syncthreads').
__device__ __forceinline__ void named_barrier(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

#if TK_HOPPER_DEVICE
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
#endif

// Tell the compiler a register may change here (keeps accumulator reads and
// writes from being moved across wgmma fences / waits).
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

}  // namespace ptx

// =============================================================================
// Layer 1: wgmma m64nNk16
// =============================================================================

#define TK_HG_D8(o)                                                                          \
  "+f"(d[(o) + 0]), "+f"(d[(o) + 1]), "+f"(d[(o) + 2]), "+f"(d[(o) + 3]), "+f"(d[(o) + 4]), \
      "+f"(d[(o) + 5]), "+f"(d[(o) + 6]), "+f"(d[(o) + 7])

#if TK_HOPPER_DEVICE
// D (64 x N fp32, in registers) += A (64 x 16, smem) * B (16 x N, smem).
// TA / TB are wgmma's transpose bits (1: the operand is MN-major in smem).
// One asm per shape, the input type spliced in (TY: "bf16" or "f16"); the
// register lists are long, so they are written out once per shape.
#define TK_HG_WGMMA_N32(TY) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, " \
      "%16, %17, p, 1, 1, %19, %20;\n}\n" \
      : TK_HG_D8(0), TK_HG_D8(8) \
      : "l"(desc_a), "l"(desc_b), "r"(1), "n"(TA ? 1 : 0), "n"(TB ? 1 : 0))
template <bool TA, bool TB>
__device__ __forceinline__ void wgmma_m64n32k16_bf16(float (&d)[16], uint64_t desc_a, uint64_t desc_b) {
  TK_HG_WGMMA_N32("bf16");
}
template <bool TA, bool TB>
__device__ __forceinline__ void wgmma_m64n32k16_f16(float (&d)[16], uint64_t desc_a, uint64_t desc_b) {
  TK_HG_WGMMA_N32("f16");
}
#undef TK_HG_WGMMA_N32

#define TK_HG_WGMMA_N64(TY) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, " \
      "%32, %33, p, 1, 1, %35, %36;\n}\n" \
      : TK_HG_D8(0), TK_HG_D8(8), TK_HG_D8(16), TK_HG_D8(24) \
      : "l"(desc_a), "l"(desc_b), "r"(1), "n"(TA ? 1 : 0), "n"(TB ? 1 : 0))
template <bool TA, bool TB>
__device__ __forceinline__ void wgmma_m64n64k16_bf16(float (&d)[32], uint64_t desc_a, uint64_t desc_b) {
  TK_HG_WGMMA_N64("bf16");
}
template <bool TA, bool TB>
__device__ __forceinline__ void wgmma_m64n64k16_f16(float (&d)[32], uint64_t desc_a, uint64_t desc_b) {
  TK_HG_WGMMA_N64("f16");
}
#undef TK_HG_WGMMA_N64

#define TK_HG_WGMMA_N128(TY) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, " \
      "%64, %65, p, 1, 1, %67, %68;\n}\n" \
      : TK_HG_D8(0), TK_HG_D8(8), TK_HG_D8(16), TK_HG_D8(24), TK_HG_D8(32), TK_HG_D8(40), TK_HG_D8(48), TK_HG_D8(56) \
      : "l"(desc_a), "l"(desc_b), "r"(1), "n"(TA ? 1 : 0), "n"(TB ? 1 : 0))
template <bool TA, bool TB>
__device__ __forceinline__ void wgmma_m64n128k16_bf16(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
  TK_HG_WGMMA_N128("bf16");
}
template <bool TA, bool TB>
__device__ __forceinline__ void wgmma_m64n128k16_f16(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
  TK_HG_WGMMA_N128("f16");
}
#undef TK_HG_WGMMA_N128

#define TK_HG_WGMMA_N256(TY) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {" \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, " \
      "%128, %129, p, 1, 1, %131, %132;\n}\n" \
      : TK_HG_D8(0), TK_HG_D8(8), TK_HG_D8(16), TK_HG_D8(24), TK_HG_D8(32), TK_HG_D8(40), TK_HG_D8(48), TK_HG_D8(56), TK_HG_D8(64), TK_HG_D8(72), TK_HG_D8(80), TK_HG_D8(88), TK_HG_D8(96), TK_HG_D8(104), TK_HG_D8(112), TK_HG_D8(120) \
      : "l"(desc_a), "l"(desc_b), "r"(1), "n"(TA ? 1 : 0), "n"(TB ? 1 : 0))
template <bool TA, bool TB>
__device__ __forceinline__ void wgmma_m64n256k16_bf16(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  TK_HG_WGMMA_N256("bf16");
}
template <bool TA, bool TB>
__device__ __forceinline__ void wgmma_m64n256k16_f16(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  TK_HG_WGMMA_N256("f16");
}
#undef TK_HG_WGMMA_N256

#endif  // TK_HOPPER_DEVICE

// One K=16 step for a 64 x BN slab: picks the instruction by BN and type.
template <typename T, int BN, bool TA, bool TB>
__device__ __forceinline__ void wgmma_k16(float (&d)[BN / 2], uint64_t desc_a, uint64_t desc_b) {
#if TK_HOPPER_DEVICE
  constexpr bool kF16Type = dtype_of<T>::value == kF16;
  if constexpr (BN == 256) {
    if constexpr (kF16Type) wgmma_m64n256k16_f16<TA, TB>(d, desc_a, desc_b);
    else wgmma_m64n256k16_bf16<TA, TB>(d, desc_a, desc_b);
  } else if constexpr (BN == 128) {
    if constexpr (kF16Type) wgmma_m64n128k16_f16<TA, TB>(d, desc_a, desc_b);
    else wgmma_m64n128k16_bf16<TA, TB>(d, desc_a, desc_b);
  } else if constexpr (BN == 64) {
    if constexpr (kF16Type) wgmma_m64n64k16_f16<TA, TB>(d, desc_a, desc_b);
    else wgmma_m64n64k16_bf16<TA, TB>(d, desc_a, desc_b);
  } else {
    static_assert(BN == 32, "wgmma_k16: BN must be 32, 64, 128 or 256");
    if constexpr (kF16Type) wgmma_m64n32k16_f16<TA, TB>(d, desc_a, desc_b);
    else wgmma_m64n32k16_bf16<TA, TB>(d, desc_a, desc_b);
  }
#else
  (void)d;
  (void)desc_a;
  (void)desc_b;
  __trap();
#endif
}
#undef TK_HG_D8
#endif  // __CUDACC__

// =============================================================================
// Layer 2: tile shapes, shared-memory plan, schedule
// =============================================================================

// A kernel's gemms share one pipeline (its stages, barriers and position):
// a gemm narrower than the kernel's widest keeps the widest's stages and
// stage stride (STRIDE_, 0: its own bytes) and loads LOAD_BYTES of each.
template <int BN_, int STAGES_, int STRIDE_ = 0>
struct TileShape {
  static constexpr int BM = 64 * kConsumers, BN = BN_, STAGES = STAGES_;
  static constexpr int A_BYTES = BM * kBK * 2;  // 2 = sizeof(bf16) = sizeof(f16)
  static constexpr int B_BYTES = BN * kBK * 2;
  static constexpr int LOAD_BYTES = A_BYTES + B_BYTES;  // what a stage's full barrier expects
  static constexpr int STAGE_BYTES = STRIDE_ ? STRIDE_ : LOAD_BYTES;  // from one stage to the next
  static_assert(STAGE_BYTES >= LOAD_BYTES && STAGE_BYTES % 1024 == 0, "a stage holds its loads, swizzle-aligned");
  // 1024 bytes of slack to align the stages to the swizzle atom, the stages,
  // full[STAGES] and empty[STAGES] (8 bytes each), then the consumers' row
  // epilogue scratch.
  static constexpr int SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + 16 * STAGES + kConsumers * kRowScratchBytes;
  static_assert(BN == 32 || BN == 64 || BN == 128 || BN == 256, "BN must be 32, 64, 128 or 256");
  // The register hand-back of 256-wide tiles (grid_gemm_units) is sized for two consumers.
  static_assert(kConsumers == 2 || BN <= 128, "64-row tiles: BN must be 32, 64 or 128");
  static_assert(SMEM_BYTES <= 227 * 1024, "tile does not fit in shared memory");
};

// The tile table (see the header comment). `eff` is the cost model's relative
// MMA throughput of the shape (128x256 = 1).
struct TileInfo {
  int bm, bn, stages;
  float eff;
};
constexpr int kNumTiles = 3;
constexpr TileInfo kHopperTiles[kNumTiles] = {
    {128, 256, 4, 1.00f},
    {128, 128, 6, 0.88f},
    {128, 64, 8, 0.70f},
};
template <int ID>
struct TileById;
template <>
struct TileById<0> {
  using type = TileShape<256, 4>;
};
template <>
struct TileById<1> {
  using type = TileShape<128, 6>;
};
template <>
struct TileById<2> {
  using type = TileShape<64, 8>;
};
// The megakernel's 32-wide tile (not in the standalone library's table: its
// products are large enough for 64-wide tiles at least): twice the units of
// a product with fewer 64-wide tiles than SMs, each epilogue half as long.
template <>
struct TileById<3> {
  using type = TileShape<32, 8>;
};

// Everything the kernel needs besides the tensor maps and the epilogue.
struct GemmParams {
  int M, N, K;
  int tiles_m, tiles_n;
  int splits;        // K slices per tile (1: no split-K)
  int kb_total;      // ceil(K / 64)
  int kb_per_split;  // K steps per slice; every slice has at least one
  float* workspace;  // splits > 1: tiles * splits * BM * BN floats (kSplitKTagged: 8-byte words)
  int* counters;     // splits > 1: tiles ints, zero between launches
  uint32_t fix;      // the cluster fix-up's shared memory (splitk_cluster_fixup); 0: none
};

struct WorkUnit {
  int tile, split;  // tile index in raster order, K slice
  int m0, n0;       // first row / column of the tile
  int kb0, kb1;     // K steps [kb0, kb1)
};

// Unit u = tile * splits + split; tiles rastered in groups of kGroupM
// tile-rows, column-major within a group.
__host__ __device__ __forceinline__ WorkUnit work_unit(const GemmParams& p, int u, int bm, int bn) {
  WorkUnit w;
  w.tile = u / p.splits;
  w.split = u - w.tile * p.splits;
  const int per_group = kGroupM * p.tiles_n;
  const int g = w.tile / per_group;
  const int first_m = g * kGroupM;
  const int rows = (p.tiles_m - first_m) < kGroupM ? (p.tiles_m - first_m) : kGroupM;
  const int in_group = w.tile - g * per_group;
  const int tm = first_m + in_group % rows;
  const int tn = in_group / rows;
  w.m0 = tm * bm;
  w.n0 = tn * bn;
  w.kb0 = w.split * p.kb_per_split;
  const int end = w.kb0 + p.kb_per_split;
  w.kb1 = end < p.kb_total ? end : p.kb_total;
  return w;
}

// The cluster pair's walk (kPair; see "The cluster pair"): step k of a block's
// walk holds its own unit first + k * stride and its peer's (the other block
// of the cluster, whose first unit is one off: pair_peer_first), either past
// the last unit where the walk runs out. Both blocks run `steps` K steps, the
// longer unit's; a block with a shorter unit, or none, runs the rest as idle
// steps (a stage's barriers without data), so the two blocks' pipeline
// positions stay equal from gemm to gemm. `multicast`: both units load the
// same B boxes at every step (tiles (m, n) and (m', n) over the same K
// steps), so rank 0 loads B once into both blocks. Both blocks compute the
// same steps and multicast from the same pair of units.
struct PairStep {
  WorkUnit self, peer;
  bool has_self, has_peer;
  int steps;
  bool multicast;
};

// The first unit of the peer of a block whose first unit is `first` (its rank
// in the cluster `rank`; stride: the grid, blocks 2c and 2c + 1 a cluster).
__host__ __device__ __forceinline__ int pair_peer_first(int first, int stride, int rank) {
  return (first + (rank == 0 ? 1 : stride - 1)) % stride;
}

__host__ __device__ __forceinline__ PairStep pair_step(const GemmParams& p, int k, int first, int peer_first,
                                                       int stride, int bm, int bn) {
  const int units = p.tiles_m * p.tiles_n * p.splits;
  PairStep s;
  const int u = first + k * stride, v = peer_first + k * stride;
  s.has_self = u < units;
  s.has_peer = v < units;
  s.self = work_unit(p, s.has_self ? u : 0, bm, bn);
  s.peer = work_unit(p, s.has_peer ? v : 0, bm, bn);
  const int mine = s.has_self ? s.self.kb1 - s.self.kb0 : 0, theirs = s.has_peer ? s.peer.kb1 - s.peer.kb0 : 0;
  s.steps = mine > theirs ? mine : theirs;
  s.multicast = s.has_self && s.has_peer && s.self.n0 == s.peer.n0 && s.self.kb0 == s.peer.kb0 &&
                s.self.kb1 == s.peer.kb1;
  return s;
}

// The stage layout, shared by the kernel, the host launch and the host
// emulation test (tests/device/hopper_gemm_emu.cu), so that they cannot drift.
//
// The swizzle span (bytes) of an operand stored `cols` elements contiguous:
// 128 bytes for rows of 64 or more, else the row itself (32 wide: 64 bytes).
__host__ __device__ constexpr uint32_t swizzle_bytes(int cols) { return cols >= 64 ? 128u : 2u * (uint32_t)cols; }

// PTX ISA "Matrix Descriptor": start address, leading and stride byte offsets
// (all >> 4, 14 bits each), base offset 0 (atoms 1024-aligned), bits 62-63 the
// swizzle mode (1: 128-byte, 2: 64-byte, 3: 32-byte).
__host__ __device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo,
                                                       uint32_t swizzle = 128u) {
  const uint64_t mode = swizzle == 128u ? 1u : swizzle == 64u ? 2u : 3u;
  return (uint64_t)((addr & 0x3FFFFu) >> 4) | ((uint64_t)((lbo & 0x3FFFFu) >> 4) << 16) |
         ((uint64_t)((sbo & 0x3FFFFu) >> 4) << 32) | (mode << 62);
}

// Descriptor of the k-th 16-wide K slice (k = 0..3) of an operand stage at
// `base` (see "Layouts" above); an MN-major one `cols` wide (its box's width).
template <bool MN_MAJOR, int COLS = 64>
__host__ __device__ __forceinline__ uint64_t operand_desc(uint32_t base, int k) {
  if constexpr (MN_MAJOR) {
    // A K row is sw bytes; 8 of them an atom; 64-wide boxes 8 KB apart.
    constexpr uint32_t sw = swizzle_bytes(COLS);
    return smem_desc(base + 16u * sw * (uint32_t)k, 8192u, 8u * sw, sw);
  } else {
    return smem_desc(base + 32u * (uint32_t)k, 16u, 1024u);
  }
}

// The TMA boxes of K step kb of unit w: f(operand, offset, c0, c1) for each
// box, operand 0 = A / 1 = B, offset = where in the stage it lands, (c0, c1) =
// tensor coordinates of its first element (c0 along the contiguous dimension).
// (nv_exec_check_disable: f is a device lambda in the kernel and a host one
// in the emulation test; each instantiation is only called from its side.)
#pragma nv_exec_check_disable
template <class Shape, bool TA, bool TB, class F>
__host__ __device__ __forceinline__ void for_each_box(const WorkUnit& w, int kb, F&& f) {
  const int k0 = kb * kBK;
  if constexpr (!TA) {
    f(0, 0u, k0, w.m0);  // box 64 (K) x BM
  } else {
#pragma unroll
    for (int j = 0; j < Shape::BM / 64; ++j) f(0, 8192u * j, w.m0 + 64 * j, k0);  // 64 (M) x 64 (K)
  }
  if constexpr (TB) {
    f(1, (uint32_t)Shape::A_BYTES, k0, w.n0);  // box 64 (K) x BN
  } else if constexpr (Shape::BN < 64) {
    f(1, (uint32_t)Shape::A_BYTES, w.n0, k0);  // box BN (N) x 64 (K)
  } else {
#pragma unroll
    for (int j = 0; j < Shape::BN / 64; ++j)  // boxes 64 (N) x 64 (K)
      f(1, (uint32_t)Shape::A_BYTES + 8192u * j, w.n0 + 64 * j, k0);
  }
}

// Tensor-map geometry of each operand: the tensor is `outer` rows of `inner`
// contiguous elements, read in boxes of box_inner x box_outer.
template <class Shape, bool TA, bool TB>
struct OperandMaps {
  static constexpr uint32_t a_box_inner = 64, a_box_outer = TA ? 64 : Shape::BM;
  static constexpr uint32_t b_box_inner = TB || Shape::BN >= 64 ? 64 : Shape::BN, b_box_outer = TB ? Shape::BN : 64;
  // The TMA swizzle of each operand's boxes (the descriptors' mode: slab_descs).
  static constexpr uint32_t a_swizzle = 128, b_swizzle = swizzle_bytes((int)b_box_inner);
  // A: TA -> K rows of M, else M rows of K.  B: TB -> N rows of K, else K rows of N.
  static __host__ __device__ uint64_t a_inner(int M, int K) { return TA ? (uint64_t)M : (uint64_t)K; }
  static __host__ __device__ uint64_t a_outer(int M, int K) { return TA ? (uint64_t)K : (uint64_t)M; }
  static __host__ __device__ uint64_t b_inner(int N, int K) { return TB ? (uint64_t)K : (uint64_t)N; }
  static __host__ __device__ uint64_t b_outer(int N, int K) { return TB ? (uint64_t)N : (uint64_t)K; }
};

// wgmma descriptors of consumer c's k-th 16-wide K slice of the stage at
// `stage` (an absolute shared-memory address, 1024-aligned).
template <class Shape, bool TA, bool TB>
__host__ __device__ __forceinline__ void slab_descs(uint32_t stage, int c, int k, uint64_t& desc_a,
                                                    uint64_t& desc_b) {
  desc_a = operand_desc<TA>(stage + 8192u * (uint32_t)c, k);    // 64 rows of A per consumer
  desc_b = operand_desc<!TB, Shape::BN>(stage + (uint32_t)Shape::A_BYTES, k);  // all of B
}

// =============================================================================
// Layer 3: accumulator fragment map, epilogues
// =============================================================================

// (row, col) of accumulator register r of warpgroup thread t (0..127), within
// the 64 x BN slab of its consumer warpgroup.
__host__ __device__ __forceinline__ int frag_row(int t, int r) {
  return 16 * (t >> 5) + ((t & 31) >> 2) + 8 * ((r >> 1) & 1);
}
__host__ __device__ __forceinline__ int frag_col(int t, int r) {
  return 8 * (r >> 2) + 2 * (t & 3) + (r & 1);
}

namespace detail {
template <class E, class = void>
struct has_pair {
  static constexpr bool value = false;
};
template <class E>
struct has_pair<E, decltype((void)(static_cast<const E*>(nullptr)->pair(0, 0, 0.0f, 0.0f)))> {
  static constexpr bool value = true;
};
template <class E, class = void>
struct is_run_time_typed {
  static constexpr bool value = false;
};
template <class E>
struct is_run_time_typed<E, decltype((void)E::kRunTimeTyped)> {
  static constexpr bool value = E::kRunTimeTyped;
};
}  // namespace detail

// Hand the fragment (global slab origin row0, col0) to the epilogue, element
// by element (or pair by pair), in-bounds elements only.
template <int BN, class Epi>
__host__ __device__ __forceinline__ void apply_epilogue(const Epi& epi, const float (&acc)[BN / 2], int t,
                                               int row0, int col0, int M, int N) {
  if constexpr (is_staged_epilogue<Epi>) {  // a chunk's loads before its stores (tk/epilogue.cuh)
    // A 256-wide tile's accumulator (128 registers) leaves room for half the chunk.
    constexpr int kRoom = BN > 128 ? Epi::kChunk / 2 : Epi::kChunk;
    constexpr int kChunk = kRoom < BN / 2 ? kRoom : BN / 2;
#pragma unroll
    for (int r0 = 0; r0 < BN / 2; r0 += kChunk)
      stage_epilogue_chunk<kChunk>(
          epi,
          [&](int e, int& i, int& j) {
            i = row0 + frag_row(t, r0 + e);
            j = col0 + frag_col(t, r0 + e);
            return i < M && j < N;
          },
          [&](int e) { return acc[r0 + e]; });
  } else {
#pragma unroll
    for (int r = 0; r < BN / 2; r += 2) {
      const int i = row0 + frag_row(t, r);
      const int j = col0 + frag_col(t, r);
      if (i < M) {
        if (j + 1 < N) {
          if constexpr (detail::has_pair<Epi>::value) {
            epi.pair(i, j, acc[r], acc[r + 1]);
          } else {
            epi(i, j, acc[r]);
            epi(i, j + 1, acc[r + 1]);
          }
        } else if (j < N) {
          epi(i, j, acc[r]);
        }
      }
    }
  }
}

// The row epilogue. In the fragment layout one register of a warp covers 2
// adjacent columns of 8 rows: every load or store instruction touches eight
// 32-byte sectors, each partly (the unit timer measured generated epilogues at
// 2-5x their K loop on small and mlp4: perf-log step 18). So a consumer
// warpgroup hands its 64 x BN slab over through a shared scratch, kRowCols
// columns (a pass) at a time: frag_to_rows writes a thread's registers of the
// pass, then rows_epilogue gives thread t the column t % 32 of 16 rows
// (rows_element: the 16 rows of its own warp's fragment), so
// a warp's access is 32 consecutive columns of one row, every sector used
// whole. The elements, their values and each element's loads before its own
// store are those of apply_epilogue (tests/device/epilogue_order.cu).
template <int BN>
__host__ __device__ __forceinline__ void frag_to_rows(const float (&acc)[BN / 2], float* scratch, int t, int c0) {
#pragma unroll
  for (int r = 0; r < BN / 2; r += 2) {
    if (8 * (r >> 2) < c0 || 8 * (r >> 2) >= c0 + kRowCols) continue;  // another pass's columns
    float* d = scratch + frag_row(t, r) * kRowPitch + (frag_col(t, r) - c0);
    d[0] = acc[r];
    d[1] = acc[r + 1];
  }
}

constexpr int kRowsPerThread = 64 * kRowCols / 128;  // a thread's elements of one pass

// Column partials (tk.column_partials in a gemm's body, the tile pass
// tile-column-partials): besides its stores, the epilogue sums one of its
// outputs over each run of kRowsPerThread rows, P[i / 16, j] = the fp32 sum in
// row order of the values it stored at rows 16(i/16) .. +15 of column j, so
// that a bias gradient later reads P (1/16 of the bytes) instead of the
// output. The row walk already gives each thread one column of 16 rows a
// pass: the sum is thread-local, one float store per thread and pass. The
// wrapped epilogue's store half (or plain functor) returns the value to sum.
constexpr int kColumnPartialRows = kRowsPerThread;
static_assert(kColumnPartialRows == 16, "trainkernel.target.TargetOptions.column_partial_rows mirrors this");

template <class Epi>
struct ColumnPartials : Epi {
  static constexpr bool kColumnPartials = true;
  float* partials;  // [ceil(M / 16)][ld] floats
  long long ld;
};
template <class Epi>
__host__ __device__ __forceinline__ ColumnPartials<Epi> column_partials(Epi epi, float* partials, long long ld) {
  return ColumnPartials<Epi>{epi, partials, ld};
}

namespace detail {
template <class E, class = void>
struct has_column_partials {
  static constexpr bool value = false;
};
template <class E>
struct has_column_partials<E, decltype((void)E::kColumnPartials)> {
  static constexpr bool value = E::kColumnPartials;
};
}  // namespace detail
template <class E>
constexpr bool has_column_partials = detail::has_column_partials<E>::value;

// Element (i, j) through a plain functor; a column-partials epilogue's value
// added to sum.
template <class Epi>
__host__ __device__ __forceinline__ void rows_plain_element(const Epi& epi, int i, int j, float v, float& sum) {
  if constexpr (has_column_partials<Epi>)
    sum = add_rn(sum, epi(i, j, v));  // no FMA with the epilogue's product
  else
    epi(i, j, v);
}

// The partial of the thread's 16 rows from i0 in column j (nothing for
// another epilogue; a run wholly below the product or a column past it has none).
template <bool kGuard, class Epi>
__host__ __device__ __forceinline__ void store_column_partial([[maybe_unused]] const Epi& epi,
                                                              [[maybe_unused]] float sum, [[maybe_unused]] int i0,
                                                              [[maybe_unused]] int j, [[maybe_unused]] int M,
                                                              [[maybe_unused]] int N) {
  if constexpr (has_column_partials<Epi>) {
    if (!kGuard || (i0 < M && j < N)) epi.partials[(long long)(i0 / kColumnPartialRows) * epi.ld + j] = sum;
  }
}

// Element e of thread t in the row walk of the slab at (row0, col0): pass
// e / kRowsPerThread, column 32 pass + t % 32, and with w = t / 32 (the warp)
// and k = e % kRowsPerThread the row 16w + k. Its value sits in the pass's
// scratch at rows_scratch_index. rows_slab_row is that row for warp w;
// rows_element spells it out (through the helper ptxas allocates registers
// differently from the cubins measured in perf-log step 20).
__host__ __device__ __forceinline__ int rows_slab_row(int w, int k) { return 16 * w + k; }
// kGuard = false: the caller knows the slab is inside the product (a whole
// tile), so every bounds test is compile-time true.
template <bool kGuard = true>
__host__ __device__ __forceinline__ bool rows_element(int t, int e, int row0, int col0, int M, int N, int& i, int& j) {
  i = row0 + 16 * (t / kRowCols) + e % kRowsPerThread;
  j = col0 + kRowCols * (e / kRowsPerThread) + t % kRowCols;
  return !kGuard || (i < M && j < N);
}
__host__ __device__ __forceinline__ int rows_scratch_index(int t, int k) {
  return rows_slab_row(t / kRowCols, k) * kRowPitch + t % kRowCols;
}

// Thread t's elements of one pass (rows_element's e < kRowsPerThread, with
// (row0, col0) the pass's global origin; the column is hoisted out of the walk).
template <int BN, bool kGuard = true, class Epi>
__host__ __device__ __forceinline__ void rows_epilogue(const Epi& epi, const float* scratch, int t, int row0,
                                                      int col0, int M, int N) {
  const int col = t % kRowCols, row = t / kRowCols;
  const int j = col0 + col;
  float sum = 0.0f;  // a column-partials epilogue's 16 rows (dead code otherwise)
  if constexpr (is_staged_epilogue<Epi>) {
    // A 256-wide tile's accumulator (128 registers) leaves room for half the chunk.
    constexpr int kRoom = BN > 128 ? Epi::kChunk / 2 : Epi::kChunk;
    constexpr int kChunk = kRoom < kRowsPerThread ? kRoom : kRowsPerThread;
#pragma unroll
    for (int k0 = 0; k0 < kRowsPerThread; k0 += kChunk)
      sum = stage_epilogue_chunk<kChunk>(
          epi,
          [&](int e, int& i, int& jj) {
            i = row0 + rows_slab_row(row, k0 + e);
            jj = j;
            return !kGuard || (i < M && j < N);
          },
          [&](int e) { return scratch[rows_scratch_index(t, k0 + e)]; }, sum);
  } else {
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
      const int i = row0 + rows_slab_row(row, k);
      if (!kGuard || (i < M && j < N)) rows_plain_element(epi, i, j, scratch[rows_scratch_index(t, k)], sum);
    }
  }
  store_column_partial<kGuard>(epi, sum, row0 + rows_slab_row(row, 0), j, M, N);
}

// Row epilogue operands loaded before the unit's K loop, so that their latency
// hides behind it, where they fit beside the accumulator: at most
// kRowPreloadFloats registers of accumulator and loads together (a 64-wide
// tile with one operand an element; two spilled on small at 96: wider tiles
// and more operands load pass by pass).
constexpr int kRowPreloadFloats = 64;
// On by default (perf-log step 19: mlp4 59.9 -> 57.7 us, small unchanged);
// -DTK_NO_ROWS_PRELOAD builds without it (resident_probe --target
// ' +-DTK_NO_ROWS_PRELOAD' measures it against the default).
#if defined(TK_NO_ROWS_PRELOAD)
constexpr bool kRowsPreload = false;
#else
constexpr bool kRowsPreload = true;
#endif
// An epilogue that reads no operand is a plain (i, j, acc) functor (the printer
// stages only epilogues with loads); it takes the row walk too, not fragment
// order: mlp4-adamw-ce's AdamW gradient epilogues (0.1 g and 0.001 g^2 into two
// fp32 buffers) took 12k cycles a 128 x 64 unit in fragment order against 6.6k
// for the staged SGD epilogue of the same gemm, and the step 59.5 -> 48.6 us
// through the row walk (perf-log step 34). -DTK_NO_ROWS_PLAIN builds the old
// fragment-order path (resident_probe --target ' +-DTK_NO_ROWS_PLAIN').
#if defined(TK_NO_ROWS_PLAIN)
constexpr bool kRowsPlain = false;
#else
constexpr bool kRowsPlain = true;
#endif

template <int BN, class Epi>
__host__ __device__ constexpr bool rows_preload_fits() {
  if constexpr (is_staged_epilogue<Epi>)
    return BN / 2 + (BN / 2) * (int)(sizeof(typename Epi::Loads) / sizeof(float)) <= kRowPreloadFloats;
  else
    return false;
}

namespace detail {
template <class E, bool = has_staged_halves<E>>
struct loads_of {
  struct type {};
};
template <class E>
struct loads_of<E, true> {
  using type = typename E::Loads;
};
}  // namespace detail

// Every operand load of thread t's elements of the slab, in element order.
template <int BN, bool kGuard = true, class Epi>
__host__ __device__ __forceinline__ void rows_preload(const Epi& epi, typename Epi::Loads (&pre)[BN / 2], int t,
                                                     int row0, int col0, int M, int N) {
#pragma unroll
  for (int e = 0; e < BN / 2; ++e) {
    int i, j;
    if (rows_element<kGuard>(t, e, row0, col0, M, N, i, j)) pre[e] = epi.load(i, j);
  }
}

// The stores of one pass from the scratch, with the preloaded operands.
template <int BN, bool kGuard = true, class Epi>
__host__ __device__ __forceinline__ void rows_store_preloaded(const Epi& epi, const typename Epi::Loads (&pre)[BN / 2],
                                                             const float* scratch, int t, int pass, int row0,
                                                             int col0, int M, int N) {
  float sum = 0.0f;  // a column-partials epilogue's 16 rows (dead code otherwise)
#pragma unroll
  for (int k = 0; k < kRowsPerThread; ++k) {
    int i, j;
    if (rows_element<kGuard>(t, pass * kRowsPerThread + k, row0, col0, M, N, i, j)) {
      if constexpr (has_column_partials<Epi>)
        sum = add_rn(sum, epi.store(i, j, scratch[rows_scratch_index(t, k)], pre[pass * kRowsPerThread + k]));
      else
        epi.store(i, j, scratch[rows_scratch_index(t, k)], pre[pass * kRowsPerThread + k]);
    }
  }
  int i0, j0;
  rows_element<false>(t, pass * kRowsPerThread, row0, col0, M, N, i0, j0);
  store_column_partial<kGuard>(epi, sum, i0, j0, M, N);
}

// C[i, j] = acc (+ beta * C[i, j]); C is read only when beta != 0 (so NaN or
// garbage in an output buffer never leaks in, as in BLAS). Out = float,
// __nv_bfloat16 or __half; RNE casts as PyTorch.
template <typename Out>
struct StoreEpilogue {
  Out* C;
  long long ldc;
  float beta;
  bool vec2;  // C and ldc allow 2-element vector stores at even columns

  __host__ __device__ StoreEpilogue(Out* c, long long ld, float b = 0.0f)
      : C(c), ldc(ld), beta(b), vec2(is_aligned(c, 2 * sizeof(Out)) && (ld % 2) == 0) {}

  __device__ __forceinline__ void operator()(int i, int j, float v) const {
    Out* p = C + (long long)i * ldc + j;
    if (beta != 0.0f) v += beta * to_float(*p);
    *p = from_float<Out>(v);
  }
  __device__ __forceinline__ void pair(int i, int j, float v0, float v1) const {
    Out* p = C + (long long)i * ldc + j;
    if (vec2) {
      if (beta != 0.0f) {
        const Vec<Out, 2> old = load_vec<2>(p);
        v0 += beta * to_float(old.v[0]);
        v1 += beta * to_float(old.v[1]);
      }
      Vec<Out, 2> o;
      o.v[0] = from_float<Out>(v0);
      o.v[1] = from_float<Out>(v1);
      store_vec<2>(p, o);
    } else {
      (*this)(i, j, v0);
      (*this)(i, j + 1, v1);
    }
  }
};

// The same with the output type chosen at run time: one kernel serves all
// three output types (the launcher of tests and benchmarks). It is run-time
// typed (kRunTimeTyped): the kernel calls visit once a unit and runs the
// typed StoreEpilogue through the same row walk as generated code's
// epilogues, so the standalone tile stores as the megakernel's does; only the
// epilogue is instantiated per type (per-element branching on the type made
// cicc take minutes per kernel).
struct AnyStoreEpilogue {
  static constexpr bool kRunTimeTyped = true;
  void* C;
  long long ldc;
  float beta;
  int out_dtype;  // kF32, kBF16, kF16
  bool vec2;

  __host__ __device__ AnyStoreEpilogue(void* c, long long ld, int out, float b = 0.0f)
      : C(c), ldc(ld), beta(b), out_dtype(out),
        vec2(is_aligned(c, out == kF32 ? 8u : 4u) && (ld % 2) == 0) {}

  template <typename Out>
  __device__ __forceinline__ StoreEpilogue<Out> as() const {
    StoreEpilogue<Out> e(static_cast<Out*>(C), ldc, beta);
    e.vec2 = vec2;
    return e;
  }
  // f(StoreEpilogue<Out>) for the run-time output type.
  template <class F>
  __device__ __forceinline__ void visit(F&& f) const {
    if (out_dtype == kF32) f(as<float>());
    else if (out_dtype == kBF16) f(as<__nv_bfloat16>());
    else f(as<__half>());
  }
};

#if defined(__CUDACC__)
// =============================================================================
// Layer 4: the kernel
// =============================================================================

// The fences of split-K's message passing (a slice's partial, then its
// counter; the counter, then the other slices' partials). __threadfence() is
// fence.sc.gpu (SASS: MEMBAR.SC.GPU); release and acquire need only
// fence.acq_rel.gpu (MEMBAR.ALL.GPU), the grid barrier's and the item flags'
// kind. -DTK_SPLITK_ACQ_REL=1 (a probe knob until measured) uses it.
#if !defined(TK_SPLITK_ACQ_REL)
#define TK_SPLITK_ACQ_REL 0
#endif
__device__ __forceinline__ void splitk_fence() {
  if (TK_SPLITK_ACQ_REL)
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  else
    __threadfence();
}

// acc's float4s [q0, q0 + NQ) as the sum, in slice order, of a split tile's
// `splits` partials of them: open(s) once a slice, then at(s, q) its float4
// q; slice `own`'s (own >= 0) is acc itself (not stored, not read back). Every
// fix-up sums through here, so every one adds the same operands in the same
// order: the same bits. q0 must be known where it is inlined (an unrolled
// loop's index), so that acc stays in registers.
template <int BN, int NQ, class Open, class At>
__device__ __forceinline__ void sum_partials_in_slice_order(float (&acc)[BN / 2], int q0, int splits, int own,
                                                            Open&& open, At&& at) {
  float4 kept[NQ];
#pragma unroll
  for (int q = q0; q < q0 + NQ; ++q) {
    kept[q - q0] = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
    acc[4 * q] = acc[4 * q + 1] = acc[4 * q + 2] = acc[4 * q + 3] = 0.0f;
  }
  for (int s = 0; s < splits; ++s) {
    if (s != own) open(s);
#pragma unroll
    for (int q = q0; q < q0 + NQ; ++q) {
      const float4 v = s == own ? kept[q - q0] : at(s, q);
      acc[4 * q] += v.x;
      acc[4 * q + 1] += v.y;
      acc[4 * q + 2] += v.z;
      acc[4 * q + 3] += v.w;
    }
  }
}

// The partials of store_split_partial's layout (__ldcg: other SMs wrote them);
// own >= 0: that slice's was not stored (store_split_partial's skip).
template <int BM, int BN, int NQ>
__device__ __forceinline__ void sum_split_partials(const float4* tile_ws, int splits, float (&acc)[BN / 2],
                                                   int ctid, int q0, int own = -1) {
  constexpr int kConsumerThreads = 128 * kConsumers;
  constexpr int kTile = BM * BN;
  sum_partials_in_slice_order<BN, NQ>(
      acc, q0, splits, own, [](int) {},
      [&](int s, int q) { return __ldcg(tile_ws + (size_t)s * (kTile / 4) + q * kConsumerThreads + ctid); });
}

// The shared fix-up's ownership rule: pass `pass` (kRowCols columns of the
// row walk) of a split tile is summed, and then walked, by slice pass % splits.
__device__ __forceinline__ bool slice_owns_pass(const GemmParams& p, const WorkUnit& w, int pass) {
  return pass % p.splits == w.split;
}

// A split tile's slice stores its fp32 partial in fragment order (thread ctid's
// float4 q at q * consumer threads + ctid: coalesced, and read back by the same
// thread) and fences it: the tile's partials (splits x BM x BN) in slice order.
// kSkipOwned (the shared fix-up under kSplitKKeepOwn): the passes this slice
// sums itself are not stored (no other slice reads them), and a slice that
// stores nothing skips the fence too.
template <int BM, int BN, bool kSkipOwned = false>
__device__ __forceinline__ const float4* store_split_partial(const GemmParams& p, const WorkUnit& w,
                                                             const float (&acc)[BN / 2], int ctid) {
  constexpr int kConsumerThreads = 128 * kConsumers;
  constexpr int kTile = BM * BN;
  float4* tile_ws = reinterpret_cast<float4*>(p.workspace + (size_t)w.tile * p.splits * kTile);
  float4* mine = tile_ws + (size_t)w.split * (kTile / 4);
  bool stored = !kSkipOwned;
#pragma unroll
  for (int q = 0; q < BN / 8; ++q) {
    if (kSkipOwned && slice_owns_pass(p, w, 8 * q / kRowCols)) continue;
    mine[q * kConsumerThreads + ctid] =
        make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
    stored = true;
  }
  if (stored) splitk_fence();
  return tile_ws;
}

// The last-arrival fix-up: each slice publishes its partial; the last to
// arrive (per warp: a warp reads back only its own lanes' partials) sums them
// all in slice order and continues, the others return false.
template <int BM, int BN>
__device__ __forceinline__ bool splitk_fixup(const GemmParams& p, const WorkUnit& w,
                                             float (&acc)[BN / 2], int ctid) {
  const float4* tile_ws = store_split_partial<BM, BN>(p, w, acc, ctid);
  // A warp reads back only its own lanes' partials: it votes alone.
  __syncwarp();
  int last = 0;
  if ((ctid & 31) == 0) {
    int* counter = p.counters + w.tile * kTileWarps + (ctid >> 5);
    last = atomicAdd(counter, 1) == p.splits - 1;
    if (last) *counter = 0;  // every slice has arrived: ready for the next launch
  }
  if (__shfl_sync(0xffffffffu, last, 0) == 0) return false;
  splitk_fence();
  sum_split_partials<BM, BN, BN / 8>(tile_ws, p.splits, acc, ctid, 0);
  return true;
}

// Split-K with the fix-up shared by the tile's slices (kSharedFixup: the
// megakernel's target.split_k_shared_fixup). splitk_fixup leaves the whole
// sum to the last slice to arrive: one block reads every slice's partial of
// the tile (medium's h @ W2: 8 x 64 KB) while the others wait at the phase's
// end. Here every slice stores its partial, each consumer warp waits until
// the same warp of every slice has (a counter a tile and warp, spun on with
// acquire loads), then sums only the row walk's passes (kRowCols columns)
// that its slice owns, pass i to slice i % splits, in slice order: the same
// additions per element as splitk_fixup, so the same bits. The epilogue then
// runs those passes alone (shared_fixup_owns). The counter counts the
// arrivals, then the departures; the last departure resets it for the next
// launch. A warp waits only for units of other blocks that reach the tile no
// later than it in their own order (units are taken in increasing order, a
// tile's slices are consecutive units), so no cycle forms while no block
// holds two slices of one tile: the caller checks splits <= stride.
// kSplitKKeepOwn (TK_SPLITK_KEEP_OWN, target.split_k_keep_own_partial): a slice
// keeps the partial of the passes it owns in registers instead of storing it
// and reading it back (small's 64 x 32 split tile, one pass: slice 0 stores
// nothing; perf-log step 102).
#if !defined(TK_SPLITK_KEEP_OWN)
#define TK_SPLITK_KEEP_OWN 0
#endif
constexpr bool kSplitKKeepOwn = TK_SPLITK_KEEP_OWN;

// kSplitKTagged (TK_SPLITK_TAGGED, target.split_k_tagged_partials; perf-log
// step 103): the shared fix-up without counters or fences. Each element of a
// published partial is one 8-byte word, its fp32 bits under a tag, stored with
// a relaxed gpu-scope store: single-copy atomic, so a reader that sees the tag
// sees the value. The owner of a pass polls the words of the other slices'
// partials until every tag is there, sums in slice order (its own from
// registers: the same operands in the same order, so the same bits) and
// zeroes the words it read, so every word is untagged again before its next
// use (the next launch, or a later phase behind a grid barrier; one gemm's
// workspace is no other's). A publisher never waits: the chain is its stores
// reaching L2 and the owner's polls (one or two round trips, against the
// store, fence, counter, poll, fence and reload of four or five). The
// workspace holds 8 bytes an element (tile.gemm_partials_bytes); a thread's
// float4 q of slice s is the two 16-byte pairs (2q, 2q + 1) at
// pair * consumer threads + ctid: a warp's access is 512 contiguous bytes.
#if !defined(TK_SPLITK_TAGGED)
#define TK_SPLITK_TAGGED 0
#endif
constexpr bool kSplitKTagged = TK_SPLITK_TAGGED;

namespace tagged {
constexpr unsigned kTag = 1u;  // an untagged (zeroed) word is not yet published
__device__ __forceinline__ unsigned long long word(float v) {
  return (static_cast<unsigned long long>(kTag) << 32) | __float_as_uint(v);
}
__device__ __forceinline__ bool published(const ulonglong2& v) {
  return static_cast<unsigned>(v.x >> 32) == kTag && static_cast<unsigned>(v.y >> 32) == kTag;
}
__device__ __forceinline__ float value(unsigned long long word) {
  return __uint_as_float(static_cast<unsigned>(word));
}
__device__ __forceinline__ void store(ulonglong2* at, unsigned long long a, unsigned long long b) {
  asm volatile("st.relaxed.gpu.global.v2.b64 [%0], {%1, %2};" ::"l"(at), "l"(a), "l"(b) : "memory");
}
__device__ __forceinline__ ulonglong2 load(const ulonglong2* at) {
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.v2.b64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(at) : "memory");
  return v;
}
// Slice `split`'s words of tile w.tile.
template <int BM, int BN>
__device__ __forceinline__ ulonglong2* slice_words(const GemmParams& p, const WorkUnit& w, int split) {
  constexpr int kPairs = BM * BN / 2;
  return reinterpret_cast<ulonglong2*>(p.workspace) + ((size_t)w.tile * p.splits + split) * kPairs;
}
}  // namespace tagged

template <int BM, int BN>
__device__ __forceinline__ void splitk_tagged_fixup(const GemmParams& p, const WorkUnit& w,
                                                    float (&acc)[BN / 2], int ctid) {
  constexpr int kConsumerThreads = 128 * kConsumers;
  // Publish the passes the other slices own.
  ulonglong2* mine = tagged::slice_words<BM, BN>(p, w, w.split);
#pragma unroll
  for (int q = 0; q < BN / 8; ++q) {
    if (slice_owns_pass(p, w, 8 * q / kRowCols)) continue;
    tagged::store(mine + (2 * q) * kConsumerThreads + ctid, tagged::word(acc[4 * q]), tagged::word(acc[4 * q + 1]));
    tagged::store(mine + (2 * q + 1) * kConsumerThreads + ctid, tagged::word(acc[4 * q + 2]),
                  tagged::word(acc[4 * q + 3]));
  }
  // Sum the passes this slice owns, the others' words polled: lane 0 alone
  // polls its first pair until it is tagged, then every lane loads its own and
  // reloads what is not tagged yet (a warp's 32 lanes polling strong loads
  // while the publisher is still in its K loop took L2 bandwidth from it:
  // perf-log step 105), and zeroes what it read.
  constexpr int NQ = kRowCols / 8;
#pragma unroll
  for (int c0 = 0; c0 < BN; c0 += kRowCols) {
    if (!slice_owns_pass(p, w, c0 / kRowCols)) continue;
    const int q0 = c0 / 8;
    ulonglong2 v[2 * NQ];  // the slice being summed: its words of this pass
    auto poll = [&](int s) {
      ulonglong2* theirs = tagged::slice_words<BM, BN>(p, w, s) + 2 * q0 * kConsumerThreads + ctid;
      if ((ctid & 31) == 0)
        while (!tagged::published(tagged::load(theirs))) {
        }
      __syncwarp();
#pragma unroll
      for (int i = 0; i < 2 * NQ; ++i) v[i] = tagged::load(theirs + i * kConsumerThreads);
#pragma unroll
      for (int i = 0; i < 2 * NQ; ++i)
        while (!tagged::published(v[i])) v[i] = tagged::load(theirs + i * kConsumerThreads);
#pragma unroll
      for (int i = 0; i < 2 * NQ; ++i) tagged::store(theirs + i * kConsumerThreads, 0ull, 0ull);
    };
    auto at = [&](int, int q) {
      const ulonglong2 a = v[2 * (q - q0)], b = v[2 * (q - q0) + 1];
      return make_float4(tagged::value(a.x), tagged::value(a.y), tagged::value(b.x), tagged::value(b.y));
    };
    sum_partials_in_slice_order<BN, NQ>(acc, q0, p.splits, w.split, poll, at);
  }
}

template <int BM, int BN>
__device__ __forceinline__ void splitk_shared_fixup(const GemmParams& p, const WorkUnit& w,
                                                    float (&acc)[BN / 2], int ctid) {
  if constexpr (kSplitKTagged) {
    splitk_tagged_fixup<BM, BN>(p, w, acc, ctid);
    return;
  }
  const float4* tile_ws = store_split_partial<BM, BN, kSplitKKeepOwn>(p, w, acc, ctid);
  __syncwarp();
  int* counter = p.counters + w.tile * kTileWarps + (ctid >> 5);
  if ((ctid & 31) == 0) {
    atomicAdd(counter, 1);
    int seen;
    do {
      asm volatile("ld.acquire.gpu.b32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen < p.splits);
  }
  __syncwarp();
  splitk_fence();
#pragma unroll
  for (int c0 = 0; c0 < BN; c0 += kRowCols)  // the passes this slice owns
    if (slice_owns_pass(p, w, c0 / kRowCols))
      sum_split_partials<BM, BN, kRowCols / 8>(tile_ws, p.splits, acc, ctid, c0 / 8, kSplitKKeepOwn ? w.split : -1);
  __syncwarp();  // every lane has read the partials before the warp leaves
  if ((ctid & 31) == 0 && atomicAdd(counter, 1) == 2 * p.splits - 1) *counter = 0;
}

// Split-K's fix-up within a thread block cluster (target.split_k_cluster_fixup,
// perf-log step 124). The shared fix-ups above pass partials through L2: a
// publisher's stores, then the owner's polls, one or two round trips of ~1k
// cycles each (small's p2: 1.6-2.5k cycles of a 7.8k phase), which is what
// kept split-K shallow (ksplit_min_k). Here the kernel runs in clusters and a
// tile's slices sit on consecutive blocks of one cluster in the same round
// (the megakernel puts a cluster-split gemm's first unit on a multiple of its
// splits, the grid is whole clusters and units <= grid), and consumer warp w's
// rows of the tile are summed, and walked by the epilogue, by slice
// w % splits. Every other slice's warp w pushes its fragment (BN / 2 floats a
// lane) into the owner's shared memory by st.async, counted on the owner
// warp's mbarrier; the owner sums in slice order, its own from registers: the
// same operands in the same order as every other fix-up, so the same bits.
// The slots and barriers (`fix`, after the kernel's other shared memory) are
// reused only across a grid barrier, by which every owner has read them: one
// such gemm a phase (the kernel verifier's rule), so a sender never waits.
// kClusterFixup (TK_CLUSTER_FIXUP, which the megakernel's printer defines where a
// gemm has such a fix-up): without it the path is compiled out, so the standalone
// kernel (whose GemmParams are run-time values) carries none of its code.
// Layout: the consumer warps' mbarriers (count 1: the owner warp's
// arrive.expect_tx), then a slot a (owned warp, sender slice): warp w's slot
// for slice s at ((w / splits) * splits + s) * 64 * BN bytes, lane l's float4 q
// of it at q * 512 + l * 16 (a warp's reads are 512 contiguous bytes); the
// printer sizes the region (tile.cluster_fixup_bytes).
#if !defined(TK_CLUSTER_FIXUP)
#define TK_CLUSTER_FIXUP 0
#endif
constexpr bool kClusterFixup = TK_CLUSTER_FIXUP;
__device__ __forceinline__ uint32_t cluster_fixup_bar(uint32_t fix, int warp) { return fix + 8u * (uint32_t)warp; }
template <int BN>
__device__ __forceinline__ uint32_t cluster_fixup_slot(uint32_t fix, int warp, int splits, int split) {
  return fix + 8u * kTileWarps + (uint32_t)(((warp / splits) * splits + split) * 64 * BN);
}
// One thread, before the cluster barrier that publishes the inits.
__device__ __forceinline__ void cluster_fixup_init(uint32_t fix) {
  for (int w = 0; w < kTileWarps; ++w) ptx::mbar_init(cluster_fixup_bar(fix, w), 1);
  ptx::mbar_fence_init();
}

// Whether warp `warp` of this slice owns its rows of the tile (sums and walks them).
__device__ __forceinline__ bool cluster_fixup_owns(const GemmParams& p, const WorkUnit& w, int warp) {
  return warp % p.splits == w.split;
}

// The fix-up of a unit's warp: false where another slice owns the warp's rows
// (its fragment pushed there), true with acc the tile's sum where this one does.
template <int BM, int BN>
__device__ __forceinline__ bool splitk_cluster_fixup(const GemmParams& p, const WorkUnit& w, float (&acc)[BN / 2],
                                                     int ctid, uint32_t& parity) {
  const int warp = ctid >> 5, lane = ctid & 31;
  const uint32_t bar = cluster_fixup_bar(p.fix, warp);
  if (!cluster_fixup_owns(p, w, warp)) {
    const int owner = cluster_rank() - w.split + warp % p.splits;  // the tile's slice 0 on a multiple of splits
    const uint32_t slot = map_rank(cluster_fixup_slot<BN>(p.fix, warp, p.splits, w.split) + 16u * lane, owner);
    const uint32_t rbar = map_rank(bar, owner);
#pragma unroll
    for (int q = 0; q < BN / 8; ++q)
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n"
                   ::"r"(slot + 512u * q), "f"(acc[4 * q]), "f"(acc[4 * q + 1]), "f"(acc[4 * q + 2]),
                   "f"(acc[4 * q + 3]), "r"(rbar) : "memory");
    return false;
  }
  if (lane == 0) ptx::mbar_arrive_expect_tx(bar, (uint32_t)((p.splits - 1) * 64 * BN));
  ptx::mbar_wait<true>(bar, parity);  // acquire at cluster scope: the other slices' st.async
  parity ^= 1u;
  sum_partials_in_slice_order<BN, BN / 8>(acc, 0, p.splits, w.split, [](int) {}, [&](int s, int q) {
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(cluster_fixup_slot<BN>(p.fix, warp, p.splits, s) + 512u * q + 16u * lane) : "memory");
    return v;
  });
  return true;
}

// Whether a unit's thread runs the row walk's pass at column c0 of its tile:
// every pass, but under a shared split-K fix-up the passes its slice owns.
__device__ __forceinline__ bool shared_fixup_owns(bool shared, const GemmParams& p, const WorkUnit& w, int c0) {
  return !shared || slice_owns_pass(p, w, c0 / kRowCols);
}

// A pipeline's position, per thread: the stage the next K step uses and the
// parity of that stage's current use. The producer thread and every consumer
// thread walk the same work units, so their copies agree; a persistent caller
// (the megakernel: several gemms, one pipeline) keeps one from gemm to gemm.
// A kernel that calls preissue_operands defines TK_PREISSUE_READY_OPERANDS 1
// before it includes this header (the printer does, target.preissue_ready_operands);
// without it produce_units compiles to the walk it always was.
#if !defined(TK_PREISSUE_READY_OPERANDS)
#define TK_PREISSUE_READY_OPERANDS 0
#endif
constexpr bool kPreissue = TK_PREISSUE_READY_OPERANDS;

// `preissued` and `preissued_ops`: the producer thread's record of
// preissue_operands (the first K steps of its next gemm's first unit whose
// stages already expect their bytes, and which operands' copies are in flight:
// bit 0 A, bit 1 B); produce_units issues only the rest of those steps.
struct PipeState {
  int stage = 0;
  uint32_t phase = 0;
  int preissued = 0;
  uint32_t preissued_ops = 0;
  uint32_t fix_parity = 0;  // the parity of this thread's warp's next cluster fix-up (splitk_cluster_fixup)
  __device__ __forceinline__ void advance(int stages) {
    if (++stage == stages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// The stages' base in dynamic shared memory (the swizzle atom needs 1024-byte
// alignment; Shape::SMEM_BYTES has the slack), then full[s] and empty[s].
__device__ __forceinline__ uint32_t stage_base(const void* smem_raw) {
  return (gemm_detail::smem_u32(smem_raw) + 1023u) & ~1023u;
}
template <class Shape>
__device__ __forceinline__ uint32_t full_bar(uint32_t base, int s) {
  return base + Shape::STAGES * Shape::STAGE_BYTES + 8u * (uint32_t)s;
}
template <class Shape>
__device__ __forceinline__ uint32_t empty_bar(uint32_t base, int s) {
  return base + Shape::STAGES * Shape::STAGE_BYTES + 8u * (uint32_t)(Shape::STAGES + s);
}

// Consumer warpgroup c's row epilogue scratch, after the barriers.
template <class Shape>
__device__ __forceinline__ uint32_t rows_scratch(uint32_t base, int c) {
  return base + Shape::STAGES * Shape::STAGE_BYTES + 16u * Shape::STAGES + (uint32_t)(c * kRowScratchBytes);
}

// One thread initialises the barriers; the caller then syncs the block (the
// cluster, for a pair). kPair: a stage is freed by both blocks' consumer warps,
// in either block (see "The cluster pair" on why both).
template <class Shape, bool kPair = false>
__device__ __forceinline__ void pipeline_init(uint32_t base) {
  const int releases = 4 * kConsumers * (kPair ? 2 : 1);
  for (int s = 0; s < Shape::STAGES; ++s) {
    ptx::mbar_init(full_bar<Shape>(base, s), 1);
    ptx::mbar_init(empty_bar<Shape>(base, s), releases);
  }
  ptx::mbar_fence_init();
}

// A product's per-item flags (tile.sync items; tk::ItemFlags): NoUnitFlags
// for none. UnitFlags: before a unit's first copy the producer warp (its
// kProducerLanes lanes; thread 0 alone issues the copies) waits for the items
// its operands come from (`producer`: CSR rows and entries of tk::ItemFlags'
// lists, by unit). A whole warp polls because such a list can name every item
// of an operand's producer: a weight cast in row chunks that a tile reads by
// columns (large: 1366 flags a unit, 171 rounds of 8 polls for one thread, 6
// for a warp). Each consumer warp waits for the items its
// epilogue reads after or overwrites (`consumer`) before the unit, and
// arrives on the unit's flag (`base` + unit; base < 0: nothing waits for the
// product) when the unit is done, a split-K slice that leaves the fix-up to
// another included.
struct NoUnitFlags {
  static constexpr int kProducerLanes = 1;
  __device__ __forceinline__ void producer_wait(int) const {}
  __device__ __forceinline__ void consumer_wait(int) const {}
  __device__ __forceinline__ void arrive(int) const {}
};

struct UnitFlags {
  ItemFlags f;
  const unsigned* producer_rows;  // nullptr: no unit's copies wait
  const unsigned* producer;
  const unsigned* consumer_rows;  // nullptr: no unit's epilogue waits
  const unsigned* consumer;
  int base;
  static constexpr int kProducerLanes = 32;
  __device__ __forceinline__ void producer_wait(int u) const {
    if (producer_rows) f.wait(producer, producer_rows[u], producer_rows[u + 1], threadIdx.x % 32, kProducerLanes);
  }
  __device__ __forceinline__ void consumer_wait(int u) const {
    if (consumer_rows) f.wait(consumer, consumer_rows[u], consumer_rows[u + 1]);
  }
  __device__ __forceinline__ void arrive(int u) const {
    if (base >= 0) f.arrive(base + u);
  }
};

// The producer warpgroup's part of gemm_units (thread 0 issues the copies;
// with unit flags, its warp waits for them with it).
// kPair (a cluster pair, see "The cluster pair"): each block loads its own A,
// rank 0 multicasts B into both blocks' stage; each block's full barrier
// expects the whole stage.
template <typename T, class Shape, bool TA, bool TB, bool kPair = false, class Flags = NoUnitFlags>
__device__ __forceinline__ void produce_units(const CUtensorMap* tma_a, const CUtensorMap* tma_b,
                                              const GemmParams& p, uint32_t base, int first,
                                              int stride, PipeState& pipe, const Flags& flags = Flags{}) {
#if TK_HOPPER_DEVICE
  constexpr int BM = Shape::BM, BN = Shape::BN, STAGES = Shape::STAGES;
  const int units = p.tiles_m * p.tiles_n * p.splits;
  if (threadIdx.x == 0 && kPair) {
    // The pair's lockstep walk (pair_step): own boxes, B multicast by rank 0
    // where both units share it, idle steps where this block's unit is shorter.
    const int rank = cluster_rank();
    const int peer_first = pair_peer_first(first, stride, rank);
    for (int k = 0;; ++k) {
      const PairStep ps = pair_step(p, k, first, peer_first, stride, BM, BN);
      if (!ps.has_self && !ps.has_peer) break;
      const int mine = ps.has_self ? ps.self.kb1 - ps.self.kb0 : 0;
      for (int i = 0; i < ps.steps; ++i) {
        ptx::mbar_wait<kPair>(empty_bar<Shape>(base, pipe.stage), pipe.phase ^ 1u);
        const uint32_t full = full_bar<Shape>(base, pipe.stage);
        if (i < mine) {
          ptx::mbar_arrive_expect_tx(full, Shape::LOAD_BYTES);
          const uint32_t sa = base + pipe.stage * Shape::STAGE_BYTES;
          for_each_box<Shape, TA, TB>(ps.self, ps.self.kb0 + i, [&](int op, uint32_t off, int c0, int c1) {
            if (op == 0 || !ps.multicast)
              ptx::tma_load_2d(sa + off, op == 0 ? tma_a : tma_b, full, c0, c1);
            else if (rank == 0)
              ptx::tma_load_2d_multicast(sa + off, tma_b, full, c0, c1, 0x3);
          });
        } else {
          ptx::mbar_arrive(full);  // an idle step: the stage's phases go round without data
        }
        pipe.advance(STAGES);
      }
    }
  } else if (threadIdx.x < Flags::kProducerLanes) {
    for (int u = first; u < units; u += stride) {
      const WorkUnit w = work_unit(p, u, BM, BN);
      flags.producer_wait(u);
      if (threadIdx.x != 0) continue;
      for (int kb = w.kb0; kb < w.kb1; ++kb) {
        // A step preissue_operands began: its stage already expects the bytes and
        // holds the copies of the operands in preissued_ops; the rest go now.
        const bool begun = kPreissue && pipe.preissued > 0;
        const uint32_t full = full_bar<Shape>(base, pipe.stage);
        if (!begun) {
          ptx::mbar_wait(empty_bar<Shape>(base, pipe.stage), pipe.phase ^ 1u);
          ptx::mbar_arrive_expect_tx(full, Shape::LOAD_BYTES);
        }
        const uint32_t sa = base + pipe.stage * Shape::STAGE_BYTES;
        for_each_box<Shape, TA, TB>(w, kb, [&](int op, uint32_t off, int c0, int c1) {
          if (!begun || !((pipe.preissued_ops >> op) & 1u))
            ptx::tma_load_2d(sa + off, op == 0 ? tma_a : tma_b, full, c0, c1);
        });
        if (begun) --pipe.preissued;
        pipe.advance(STAGES);
      }
    }
  }
  // Warp 0 leaves together: a caller's next block barrier (bar.sync is
  // warp-aligned) must not see its lanes split around the producer loop.
  __syncwarp();
#endif
}

// Before the barrier in front of a gemm's phase, the producer thread (thread 0)
// issues the copies of the operands in `ops` (bit 0 A, bit 1 B) for the first K
// steps of its block's first unit of that gemm, as many as the pipeline has
// stages: operands that no op of the phase before the barrier writes (the
// weights' casts), so that they are in flight while the grid meets, and after
// the barrier only the other operand's copies are issued (produce_units, from
// pipe's record). Each such stage expects its whole LOAD_BYTES now, so its
// full barrier completes only once the rest has landed too; the consumers are
// unchanged. Only stages already released are taken (test_wait, in order: the
// first one still in use ends the pre-issue): waiting for a release there, as
// the first form did, made every block's arrival at the barrier wait for its
// own last K loop, and the grid steps lost 0.3-4.3 µs (perf-log step 93; the
// released-only form is step 100). target.preissue_ready_operands.
template <typename T, class Shape, bool TA, bool TB>
__device__ __forceinline__ void preissue_operands(const CUtensorMap* tma_a, const CUtensorMap* tma_b,
                                                  const GemmParams& p, uint32_t base, int first,
                                                  PipeState& pipe, uint32_t ops) {
#if TK_HOPPER_DEVICE
  constexpr int BM = Shape::BM, BN = Shape::BN, STAGES = Shape::STAGES;
  static_assert(kPreissue, "preissue_operands: define TK_PREISSUE_READY_OPERANDS 1 before including tk/hopper_gemm.cuh");
  if (threadIdx.x != 0 || ops == 0 || pipe.preissued > 0 || first >= p.tiles_m * p.tiles_n * p.splits) return;
  const WorkUnit w = work_unit(p, first, BM, BN);
  const int steps = w.kb1 - w.kb0 < STAGES ? w.kb1 - w.kb0 : STAGES;
  PipeState at = pipe;  // produce_units walks the same stages again
  int issued = 0;
  for (; issued < steps; ++issued) {
    if (!ptx::mbar_test_wait(empty_bar<Shape>(base, at.stage), at.phase ^ 1u)) break;  // still in use
    const uint32_t full = full_bar<Shape>(base, at.stage);
    ptx::mbar_arrive_expect_tx(full, Shape::LOAD_BYTES);
    const uint32_t sa = base + at.stage * Shape::STAGE_BYTES;
    for_each_box<Shape, TA, TB>(w, w.kb0 + issued, [&](int op, uint32_t off, int c0, int c1) {
      if ((ops >> op) & 1u) ptx::tma_load_2d(sa + off, op == 0 ? tma_a : tma_b, full, c0, c1);
    });
    at.advance(STAGES);
  }
  pipe.preissued = issued;
  pipe.preissued_ops = issued > 0 ? ops : 0u;
#else
  (void)tma_a; (void)tma_b; (void)p; (void)base; (void)first; (void)pipe; (void)ops;
#endif
}

// produce_units out of line: a kernel of many gemms holds one copy of it for
// each <T, Shape, TA, TB> instead of one for each gemm (mlp4-adamw-ce: 11 gemms
// in 3 layouts; cicc and ptxas spend ~1 s less on it, perf-log step 74). The
// producer issues no wgmma, so the call leaves the consumers' wgmma pipeline
// alone (ptxas reports C7510 where a call does not). Only for a producer that
// runs at the block's register count: after setmaxnreg.dec (grid_gemm_units'
// wide tiles) a callee could need more registers than the warp holds.
template <typename T, class Shape, bool TA, bool TB, bool kPair = false, class Flags = NoUnitFlags>
__device__ __noinline__ void produce_units_call(const CUtensorMap* tma_a, const CUtensorMap* tma_b,
                                                const GemmParams& p, uint32_t base, int first,
                                                int stride, PipeState& pipe, const Flags& flags = Flags{}) {
  produce_units<T, Shape, TA, TB, kPair>(tma_a, tma_b, p, base, first, stride, pipe, flags);
}

// The unit timer's split of a row epilogue (resident_probe --unit-timer, a
// development probe): cycles of the scratch writes, the first sync, the pass's
// loads and stores, the second sync, summed over the passes. Empty without
// TK_UNIT_TIMER.
struct RowsTimer {
#if defined(TK_UNIT_TIMER)
  long long part[4] = {0, 0, 0, 0}, last = 0;
  __device__ __forceinline__ void start() { last = clock64(); }
  __device__ __forceinline__ void lap(int k) {
    const long long now = clock64();
    part[k] += now - last;
    last = now;
  }
#else
  __device__ __forceinline__ void start() {}
  __device__ __forceinline__ void lap(int) {}
#endif
};

// K steps before a unit's end at which each consumer warpgroup asks L2 for its
// slab's epilogue operands (epilogue_prefetch): large's fp32 weight updates
// otherwise wait a DRAM round trip for every chunk of the row walk (perf-log
// step 27). The consumers issue the lines themselves (prefetch.global.L2, a
// few a thread): from the producer, as bulk prefetches, they queued in the TMA
// unit ahead of the next stage's copies and lost everywhere (step 25).
#if !defined(TK_EPILOGUE_PREFETCH_STEPS)  // a probe knob
#define TK_EPILOGUE_PREFETCH_STEPS 8
#endif
constexpr int kEpiloguePrefetchSteps = TK_EPILOGUE_PREFETCH_STEPS;

// The consumer warpgroups' part of gemm_units.
// kPair: the warps free each stage on the peer's empty barrier too.
template <typename T, class Shape, bool TA, bool TB, bool kWholeTiles, bool kSharedFixup = false,
          bool kPair = false, class Epi, class Flags = NoUnitFlags>
__device__ __forceinline__ void consume_units(const GemmParams& p, const Epi& epi, uint32_t base,
                                              int first, int stride, PipeState& pipe,
                                              const Flags& flags = Flags{}) {
#if TK_HOPPER_DEVICE
  constexpr int BM = Shape::BM, BN = Shape::BN, STAGES = Shape::STAGES;
  const int wg = threadIdx.x / 128;
  const int units = p.tiles_m * p.tiles_n * p.splits;
  const int c = wg - 1;                // which 64-row slab of the tile
  const int t = threadIdx.x & 127;     // thread within the warpgroup
  const int ctid = threadIdx.x - 128;  // thread among all consumers
  const bool warp_leader = (threadIdx.x & 31) == 0;
  [[maybe_unused]] const int peer = kPair ? cluster_rank() ^ 1 : 0;
  auto release = [&](int stage) {  // warp leaders, once the stage's wgmma have retired
    const uint32_t empty = empty_bar<Shape>(base, stage);
    ptx::mbar_arrive(empty);
    if constexpr (kPair) ptx::mbar_arrive_cluster(map_rank(empty, peer));
  };
  float acc[BN / 2];
  constexpr bool kPreload = kRowsPreload && has_staged_halves<Epi> && rows_preload_fits<BN, Epi>();
  typename detail::loads_of<Epi>::type pre[kPreload ? BN / 2 : 1];
  // The pair's idle steps (pair_step): a stage's phases without data.
  auto idle_steps = [&](int n) {
    for (int i = 0; i < n; ++i) {
      ptx::mbar_wait(full_bar<Shape>(base, pipe.stage), pipe.phase);
      if (warp_leader) release(pipe.stage);
      pipe.advance(STAGES);
    }
  };
  [[maybe_unused]] const int peer_first = kPair ? pair_peer_first(first, stride, cluster_rank()) : 0;
  // The pair holds units 2q and 2q + 1 at every step (rank 0's first is even).
  [[maybe_unused]] const bool pair_aligned = kPair && (cluster_rank() == 0 ? first : peer_first) % 2 == 0;
  [[maybe_unused]] int k = 0;  // the pair's step
  for (int u = first; kPair || u < units; u += stride) {
    [[maybe_unused]] int idle = 0;  // the pair's idle steps after this unit
    WorkUnit w;
    if constexpr (kPair) {
      const PairStep ps = pair_step(p, k++, first, peer_first, stride, BM, BN);
      if (!ps.has_self && !ps.has_peer) break;
      if (!ps.has_self) {
        idle_steps(ps.steps);
        continue;
      }
      w = ps.self;
      idle = ps.steps - (w.kb1 - w.kb0);
    } else {
      w = work_unit(p, u, BM, BN);
    }
    flags.consumer_wait(u);
    const Arrival<Flags> arrival{flags, u};  // also where a slice leaves the fix-up to another
#if defined(TK_UNIT_TIMER)
    // Development probe (resident_probe --unit-timer): where a unit's time goes.
    const long long tk_u0 = clock64();
    long long tk_u1 = tk_u0;
#endif
#pragma unroll
    for (int r = 0; r < BN / 2; ++r) acc[r] = 0.0f;
    // Safe this early: within a phase only this unit writes its elements, and
    // nothing writes what it reads (the kernel verifier's rules).
    if constexpr (kPreload) rows_preload<BN, !kWholeTiles>(epi, pre, t, w.m0 + 64 * c, w.n0, p.M, p.N);
    int prev = -1;
    const int prefetch_kb = w.kb1 - kEpiloguePrefetchSteps > w.kb0 ? w.kb1 - kEpiloguePrefetchSteps : w.kb0;
    for (int kb = w.kb0; kb < w.kb1; ++kb) {
      // Every slice of a split tile (any may be the one that finishes it); not
      // where the operands were preloaded before the K loop (small: +1 us, step 27).
      if (!kPreload && kb == prefetch_kb)
        epilogue_prefetch(epi, w.m0 + 64 * c, w.n0, p.M - w.m0 - 64 * c < 64 ? p.M - w.m0 - 64 * c : 64,
                          p.N - w.n0 < BN ? p.N - w.n0 : BN, t, 128);
      ptx::mbar_wait(full_bar<Shape>(base, pipe.stage), pipe.phase);
#if defined(TK_UNIT_TIMER)
      if (kb == w.kb0) tk_u1 = clock64();
#endif
      const uint32_t st = base + pipe.stage * Shape::STAGE_BYTES;
#pragma unroll
      for (int r = 0; r < BN / 2; ++r) ptx::fence_operand(acc[r]);
      ptx::wgmma_fence();
#pragma unroll
      for (int k = 0; k < kBK / 16; ++k) {
        uint64_t da, db;
        slab_descs<Shape, TA, TB>(st, c, k, da, db);
        wgmma_k16<T, BN, TA, !TB>(acc, da, db);
      }
      ptx::wgmma_commit();
#pragma unroll
      for (int r = 0; r < BN / 2; ++r) ptx::fence_operand(acc[r]);
      if (prev >= 0) {
        ptx::wgmma_wait<1>();  // the previous K step's group has retired
        if (warp_leader) release(prev);
      }
      prev = pipe.stage;
      pipe.advance(STAGES);
    }
    ptx::wgmma_wait<0>();
#pragma unroll
    for (int r = 0; r < BN / 2; ++r) ptx::fence_operand(acc[r]);
    if (prev >= 0 && warp_leader) release(prev);
    if constexpr (kPair) idle_steps(idle);
#if defined(TK_UNIT_TIMER)
    const long long tk_u2 = clock64();
#endif

    // The row walk's epilogues may share the fix-up (kSharedFixup) where no block
    // holds two slices of a tile (splits <= stride); the fragment-order ones cannot.
    // A cluster pair (kPair) walks as one block whose loads wait for both blocks'
    // consumers, so no pair may hold two slices of a tile at different steps
    // either: otherwise a block spinning for a slice its peer loads only later
    // stalls that peer's loads for good (tests/test_pair_protocol.py). Its units
    // are 2q and 2q + 1 where rank 0's first is even (the megakernel aligns each
    // gemm's offset so), and then two steps are G - 1 units apart: splits < stride.
    constexpr bool kRowWalk = detail::is_run_time_typed<Epi>::value || has_staged_halves<Epi> || kRowsPlain ||
                              has_column_partials<Epi>;
    const bool shared = kSharedFixup && kRowWalk && p.splits > 1 &&
                        (kPair ? p.splits < stride && pair_aligned : p.splits <= stride);
    if (kClusterFixup && p.fix && p.splits > 1) {  // within the cluster: a warp whose rows another slice owns is done
      if (!splitk_cluster_fixup<BM, BN>(p, w, acc, ctid, pipe.fix_parity)) continue;
    } else if (shared) {
      splitk_shared_fixup<BM, BN>(p, w, acc, ctid);
    } else if (p.splits > 1 && !splitk_fixup<BM, BN>(p, w, acc, ctid)) {
      continue;
    }
#if defined(TK_UNIT_TIMER)
    const long long tk_u3 = clock64();
#endif
    RowsTimer tk_rows;
    // The unit's epilogue through the typed functor e (epi itself, or the one
    // a run-time typed epilogue picks).
    auto unit_epilogue = [&](const auto& e) {
      using E = std::decay_t<decltype(e)>;
      if constexpr (has_staged_halves<E> || kRowsPlain || has_column_partials<E>) {  // by rows
        float* scratch = static_cast<float*>(__cvta_shared_to_generic(rows_scratch<Shape>(base, c)));
        // The passes, with every element's bounds test (kGuard) or none: a
        // guarded element is a branch around its own load-compute-store chain,
        // so ptxas runs the chains one after another (the unit timer's 4.5k-cycle
        // body on a 64-wide tile, perf-log step 22); unguarded they interleave.
        auto passes = [&](auto guard) {
          constexpr bool kGuard = decltype(guard)::value;
#pragma unroll
          for (int c0 = 0; c0 < BN; c0 += kRowCols) {
            if (kGuard && w.n0 + c0 >= p.N) break;
            if (!shared_fixup_owns(shared, p, w, c0)) continue;
            tk_rows.start();
            frag_to_rows<BN>(acc, scratch, t, c0);
            tk_rows.lap(0);
            __syncwarp();  // only the warp's lanes share its rows
            tk_rows.lap(1);
            if constexpr (kPreload && std::is_same_v<E, Epi>)
              rows_store_preloaded<BN, kGuard>(e, pre, scratch, t, c0 / kRowCols, w.m0 + 64 * c, w.n0, p.M, p.N);
            else
              rows_epilogue<BN, kGuard>(e, scratch, t, w.m0 + 64 * c, w.n0 + c0, p.M, p.N);
            tk_rows.lap(2);
            __syncwarp();  // read before the next pass (or unit) writes
            tk_rows.lap(3);
          }
        };
#if defined(TK_ROWS_ALWAYS_GUARDED)  // probe: every element tested, as before step 22
        passes(std::true_type{});
#else
        if constexpr (kWholeTiles)
          passes(std::false_type{});
        else if (w.m0 + BM <= p.M && w.n0 + BN <= p.N)  // this tile is whole
          passes(std::false_type{});
        else
          passes(std::true_type{});
#endif
      } else {
        apply_epilogue<BN>(e, acc, t, w.m0 + 64 * c, w.n0, p.M, p.N);
      }
    };
    if constexpr (detail::is_run_time_typed<Epi>::value)
      epi.visit(unit_epilogue);
    else
      unit_epilogue(epi);
#if defined(TK_UNIT_TIMER)
    // Cycles of block 0's first consumer thread: to the first K step's operands,
    // the K loop, the split-K fix-up, the epilogue; of a row epilogue, its
    // scratch writes, first sync, loads and stores, second sync (RowsTimer).
    if (blockIdx.x == 0 && threadIdx.x == 128)
      printf("tk-unit %dx%dx%d tile %dx%d unit %d ksteps %d first %lld kloop %lld fixup %lld epilogue %lld"
             " rows write %lld sync %lld body %lld sync %lld\n", p.M, p.N, p.K, BM, BN, u, w.kb1 - w.kb0, tk_u1 - tk_u0,
             tk_u2 - tk_u1, tk_u3 - tk_u2, clock64() - tk_u3, tk_rows.part[0], tk_rows.part[1], tk_rows.part[2],
             tk_rows.part[3]);
#endif
  }
#endif
}

// The block's work units first, first + stride, ... of one product, through
// the pipeline at `base` (warpgroup 0: producer, thread 0 issues the TMA
// copies; warpgroups 1 and 2: consumers). Every thread of the block calls it;
// it returns as soon as the thread's part is done (the producer may run ahead
// into the caller's next gemm, which is how its loads overlap this one's
// epilogues).
// kProducerCall: the producer's part as a call (produce_units_call), for a
// producer at the block's register count.
template <typename T, class Shape, bool TA, bool TB, bool kWholeTiles = false, bool kProducerCall = false,
          bool kSharedFixup = false, bool kPair = false, class Epi, class Flags = NoUnitFlags>
__device__ __forceinline__ void gemm_units(const CUtensorMap* tma_a, const CUtensorMap* tma_b,
                                           const GemmParams& p, const Epi& epi, uint32_t base,
                                           int first, int stride, PipeState& pipe,
                                           const Flags& flags = Flags{}) {
  static_assert(!kPair || std::is_same_v<Flags, NoUnitFlags>, "a cluster pair's lockstep walk has no item flags");
#if TK_HOPPER_DEVICE
  if (threadIdx.x < 128) {
    if constexpr (kProducerCall)
      produce_units_call<T, Shape, TA, TB, kPair>(tma_a, tma_b, p, base, first, stride, pipe, flags);
    else
      produce_units<T, Shape, TA, TB, kPair>(tma_a, tma_b, p, base, first, stride, pipe, flags);
  } else
    consume_units<T, Shape, TA, TB, kWholeTiles, kSharedFixup, kPair>(p, epi, base, first, stride, pipe, flags);
#else
  (void)tma_a;
  (void)tma_b;
  (void)p;
  (void)epi;
  (void)base;
  (void)first;
  (void)stride;
  (void)pipe;
  (void)flags;
  __trap();  // built without sm_90a: see the header comment
#endif
}

// gemm_units for a kernel whose other work runs every thread at the base
// register count (the megakernel). A tile wider than 128 (a 64 x 256 fp32
// accumulator: 128 registers a consumer thread) cannot fit at 168: for the
// gemm, the producer warpgroup gives its registers to the consumers
// (setmaxnreg) and takes them back after. The take-back waits at a block
// barrier (id 2) that the consumers reach only after their release: without
// it a producer with little or nothing to load (a block without units, a
// unit of a few K steps) could re-take the registers it freed before the
// consumers took them, and their setmaxnreg.inc would wait forever. So the
// producer does not run ahead into the next gemm here.
// kProducerCall (gemm_units'): tiles up to 128 wide only, whose producer keeps its registers.
// kSharedFixup: split-K's fix-up shared by the tile's slices (splitk_shared_fixup).
// kPair: the kernel runs in clusters of two and every gemm of it walks as a pair
// (pair_step; pipeline_init<Shape, true>, see "The cluster pair").
template <typename T, class Shape, bool TA, bool TB, bool kWholeTiles = false, bool kProducerCall = false,
          bool kSharedFixup = false, bool kPair = false, class Epi, class Flags = NoUnitFlags>
__device__ __forceinline__ void grid_gemm_units(const CUtensorMap* tma_a, const CUtensorMap* tma_b,
                                                const GemmParams& p, const Epi& epi, uint32_t base,
                                                int first, int stride, PipeState& pipe,
                                                const Flags& flags = Flags{}) {
  static_assert(!(kProducerCall && Shape::BN > 128), "a wide tile's producer runs after setmaxnreg.dec: no calls");
#if TK_HOPPER_DEVICE
  if constexpr (Shape::BN > 128) {
    const bool producer = threadIdx.x < 128;
    // Two separate paths: ptxas allocates each under its own register limit.
    if (producer) {
      ptx::setmaxnreg_dec<kProducerRegs>();
      produce_units<T, Shape, TA, TB, kPair>(tma_a, tma_b, p, base, first, stride, pipe, flags);
      ptx::named_barrier(kRegsBarrier, kThreads);
      ptx::setmaxnreg_inc<kBaseRegs>();
    } else {
      ptx::setmaxnreg_inc<kConsumerRegs>();
      consume_units<T, Shape, TA, TB, kWholeTiles, kSharedFixup, kPair>(p, epi, base, first, stride, pipe, flags);
      ptx::setmaxnreg_dec<kBaseRegs>();
      ptx::named_barrier(kRegsBarrier, kThreads);
    }
    return;
  }
#endif
  gemm_units<T, Shape, TA, TB, kWholeTiles, kProducerCall, kSharedFixup, kPair>(tma_a, tma_b, p, epi, base, first,
                                                                               stride, pipe, flags);
}

// The tensor maps of a gemm the block runs next, asked for ahead of their first
// use (the megakernel: before the grid barrier in front of the gemm's phase,
// target.prefetch_tensor_maps). Otherwise the TMA unit fetches a map's 128
// bytes at the phase's first copy, in front of its data. The standalone
// kernel does the same at its start.
__device__ __forceinline__ void prefetch_maps(const CUtensorMap* a, const CUtensorMap* b) {
#if TK_HOPPER_DEVICE
  if (threadIdx.x == 0) {
    ptx::prefetch_tensormap(a);
    ptx::prefetch_tensormap(b);
  }
#else
  (void)a;
  (void)b;
#endif
}

// Generic-proxy writes to global memory (a previous phase's stores) and the
// async proxy's reads of them (TMA) are ordered only through a proxy fence:
// the megakernel issues one on both sides of each grid barrier.
__device__ __forceinline__ void fence_proxy_async_global() {
#if TK_HOPPER_DEVICE
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
#endif
}

// The standalone kernel: one product, one pipeline, persistent blocks. The
// producer gives registers to the consumers (setmaxnreg), so a 128 x 256
// tile's accumulator (128 registers a thread) fits. The producer and the
// consumers are two separate paths from the setmaxnreg on, as in
// grid_gemm_units: where a path from setmaxnreg.dec could reach the consumers'
// code, ptxas ignores every setmaxnreg of the kernel (C7507) and the
// consumers stay at the launch bound's 168 registers.
// kPair: launched in clusters of two (launch_tma), a plan with plan.pair (see
// "The cluster pair"): the barriers are initialised and published to the
// peer before any copy, and no block leaves while its peer may still arrive
// on its barriers.
template <typename T, class Shape, bool TA, bool TB, class Epi, bool kPair = false>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap tma_a,
                const __grid_constant__ CUtensorMap tma_b, const GemmParams p, const Epi epi) {
#if TK_HOPPER_DEVICE
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = stage_base(smem_raw);
  if (threadIdx.x == 0) {
    pipeline_init<Shape, kPair>(base);
    ptx::prefetch_tensormap(&tma_a);
    ptx::prefetch_tensormap(&tma_b);
  }
  if constexpr (kPair)
    cluster_sync();
  else
    __syncthreads();
  PipeState pipe;
  if (threadIdx.x < 128) {
    ptx::setmaxnreg_dec<kProducerRegs>();
    produce_units<T, Shape, TA, TB, kPair>(&tma_a, &tma_b, p, base, blockIdx.x, gridDim.x, pipe);
  } else {
    ptx::setmaxnreg_inc<kConsumerRegs>();
    consume_units<T, Shape, TA, TB, false, false, kPair>(p, epi, base, blockIdx.x, gridDim.x, pipe);
  }
  if constexpr (kPair) cluster_sync();
#else
  (void)tma_a;
  (void)tma_b;
  (void)p;
  (void)epi;
  __trap();  // built without sm_90a: see the header comment
#endif
}

// =============================================================================
// Layer 5: fallback (any alignment, K == 0): gemm.cuh's mma.sync tile
// =============================================================================
constexpr int kFallbackBM = 128, kFallbackBN = 128, kFallbackBK = 32, kFallbackThreads = 256;

template <typename T, bool TA, bool TB, class Epi>
__device__ __forceinline__ void fallback_tiles(const T* A, int lda, const T* B, int ldb, int M,
                                               int N, int K, const Epi& epi, char* smem) {
  const int tiles_n = gemm_tiles_n(N, kFallbackBN);
  const int tiles = gemm_num_tiles(M, N, kFallbackBM, kFallbackBN);
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    gemm_tile_nt<kFallbackThreads, T, kFallbackBM, kFallbackBN, kFallbackBK, TA, TB>(
        A, lda, B, ldb, M, N, K, tile / tiles_n, tile % tiles_n, smem,
        [&](int i, int j, float v) { epi(i, j, v); });
  }
}

template <typename T, bool TA, bool TB, class Epi>
__global__ void __launch_bounds__(kFallbackThreads, 1)
    fallback_kernel(const T* A, int lda, const T* B, int ldb, int M, int N, int K, const Epi epi) {
  extern __shared__ __align__(16) char fallback_smem[];
  if constexpr (detail::is_run_time_typed<Epi>::value) {
    // The per-element calls are not branched on the output type.
    epi.visit([&](const auto& typed) {
      fallback_tiles<T, TA, TB>(A, lda, B, ldb, M, N, K, typed, fallback_smem);
    });
  } else {
    fallback_tiles<T, TA, TB>(A, lda, B, ldb, M, N, K, epi, fallback_smem);
  }
}
#endif  // __CUDACC__

constexpr int fallback_smem_bytes() {
  return gemm_smem_bytes<__nv_bfloat16, kFallbackBM, kFallbackBN, kFallbackBK>();
}

// =============================================================================
// Layer 6: host side
// =============================================================================

// Can TMA describe this operand? (16-byte aligned base, row stride a
// multiple of 16 bytes; bf16 / f16: ld % 8 == 0.)
inline bool tma_compatible(const void* ptr, long long ld_elems, int elem_bytes = 2) {
  return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0 && ((ld_elems * elem_bytes) & 15) == 0 &&
         ld_elems > 0;
}

enum Path : int { kPathTma = 0, kPathFallback = 1, kPathEmpty = 2 };

struct Plan {
  int path;          // Path
  int tile;          // kHopperTiles index (kPathTma)
  int bm, bn;
  int splits;        // K slices (1: none)
  int kb_per_split;  // 64-wide K steps per slice
  int tiles_m, tiles_n;
  int units, grid;   // work units, blocks launched
  int pair;          // 1: clusters of two sharing B by multicast ("The cluster pair")
  size_t partial_bytes;  // split-K: fp32 partial tiles (0 without split-K)
  int counters;          // split-K: tile counters needed (0 without split-K)
  float model_us;    // the cost model's estimate (diagnostic)
};

// The parameters a plan gives a launch of M x N x K (no split-K buffers yet).
inline GemmParams gemm_params(const Plan& plan, int M, int N, int K) {
  GemmParams p{};
  p.M = M;
  p.N = N;
  p.K = K;
  p.tiles_m = plan.tiles_m;
  p.tiles_n = plan.tiles_n;
  p.splits = plan.splits;
  p.kb_total = (K + kBK - 1) / kBK;
  p.kb_per_split = plan.kb_per_split;
  return p;
}

// Cost model constants (microseconds, bytes/us, flop/us per SM). Rough leads
// for the H200 (GPU.md: ~790 TFLOP/s bf16 through cuBLAS over 132 SMs); the
// benchmark records the measured best (tile, splits) per shape to refit them.
constexpr float kModelSmFlopPerUs = 5.6e6f;       // ~740 TFLOP/s / 132 SMs
constexpr float kModelSmStoreBytesPerUs = 1.5e5f;  // one SM's epilogue stores
constexpr float kModelSmL2BytesPerUs = 2.0e5f;    // one SM's L2 reads (split-K sum)
constexpr float kModelUnitFixedUs = 0.6f;         // per unit: pipeline ramp, epilogue start
constexpr float kModelSplitFixedUs = 1.0f;        // per split-K unit: fences, counter

inline float model_time_us(int tile, int splits, int kb_per_split, int tiles, int sms, int out_bytes) {
  const TileInfo& ti = kHopperTiles[tile];
  const int units = tiles * splits;
  const int waves = (units + sms - 1) / sms;
  const float mma = 2.0f * ti.bm * ti.bn * (float)kb_per_split * kBK / (kModelSmFlopPerUs * ti.eff);
  float per_unit = mma + kModelUnitFixedUs;
  float last = (float)ti.bm * ti.bn * out_bytes / kModelSmStoreBytesPerUs;
  if (splits > 1) {
    per_unit += (float)ti.bm * ti.bn * 4 / kModelSmStoreBytesPerUs + kModelSplitFixedUs;
    last += (float)splits * ti.bm * ti.bn * 4 / kModelSmL2BytesPerUs;
  }
  // Non-last units' epilogues are partly hidden by the producer running
  // ahead; the unit that stores the result pays its epilogue in full.
  return waves * per_unit + last;
}

// Whether units (2q, 2q + 1) of a plan are always tiles (m, n) and (m + 1, n)
// over the same K steps, so that a cluster pair walking them multicasts B at
// every step: no split-K (a tile's slices are consecutive units) and an even
// number of tile-rows (the raster groups of kGroupM rows, and the last one,
// then hold whole pairs in every column).
__host__ __device__ inline bool pairs_share_b(int tiles_m, int splits) {
  return splits == 1 && tiles_m % 2 == 0;
}

// Choose tile shape and split count for an M x N x K product on `sms` SMs.
// tile_req >= 0 / splits_req > 0 force a choice (benchmarks, tests).
// out_bytes: bytes per output element (for the epilogue term).
// pair_req = 1: the plan as without, in clusters of two sharing B ("The
// cluster pair") where its units do at every step (pairs_share_b; plan.pair
// says whether). Not chosen by the model yet: it does not price L2 traffic,
// and the pair is unmeasured. pair_req = 2: the plan as without, walked as a
// pair whatever its units (tests: idle steps, units that do not share B, as
// in the megakernel's paired kernels).
inline Plan choose_plan(int M, int N, int K, int sms, int tile_req = -1, int splits_req = 0,
                        int out_bytes = 2, int pair_req = 0) {
  if (pair_req != 0) {
    Plan plan = choose_plan(M, N, K, sms, tile_req, splits_req, out_bytes);
    if (plan.path == kPathTma && sms >= 2 && plan.grid >= 2 &&
        (pair_req == 2 || pairs_share_b(plan.tiles_m, plan.splits))) {
      plan.pair = 1;
      plan.grid &= ~1;  // whole clusters
    }
    return plan;
  }
  Plan best{};
  best.path = kPathTma;
  best.model_us = 3.4e38f;
  if (M <= 0 || N <= 0) {
    best.path = kPathEmpty;
    return best;
  }
  if (K <= 0) {
    best.path = kPathFallback;
    return best;
  }
  if (sms <= 0) sms = 1;
  const int kb_total = (K + kBK - 1) / kBK;
  static const int kSplits[] = {1, 2, 3, 4, 5, 6, 8, 10, 12, 16};
  for (int tile = 0; tile < kNumTiles; ++tile) {
    if (tile_req >= 0 && tile != tile_req) continue;
    const TileInfo& ti = kHopperTiles[tile];
    const int tiles_m = (M + ti.bm - 1) / ti.bm, tiles_n = (N + ti.bn - 1) / ti.bn;
    const int tiles = tiles_m * tiles_n;
    for (int si = 0; si < (int)(sizeof(kSplits) / sizeof(kSplits[0])); ++si) {
      int s = splits_req > 0 ? splits_req : kSplits[si];
      if (splits_req <= 0 && s > 1 && (tiles >= sms || kb_total / s < 4)) break;
      if (s > kb_total) s = kb_total;
      const int kbps = (kb_total + s - 1) / s;
      s = (kb_total + kbps - 1) / kbps;  // no empty slice
      const float t = model_time_us(tile, s, kbps, tiles, sms, out_bytes);
      if (t < best.model_us) {
        best.model_us = t;
        best.tile = tile;
        best.bm = ti.bm;
        best.bn = ti.bn;
        best.splits = s;
        best.kb_per_split = kbps;
        best.tiles_m = tiles_m;
        best.tiles_n = tiles_n;
      }
      if (splits_req > 0) break;
    }
  }
  const int tiles = best.tiles_m * best.tiles_n;
  best.units = tiles * best.splits;
  best.grid = best.units < sms ? best.units : sms;
  best.partial_bytes =
      best.splits > 1 ? (size_t)tiles * best.splits * best.bm * best.bn * sizeof(float) : 0;
  best.counters = best.splits > 1 ? tiles * kTileWarps : 0;
  return best;
}

// A plan for the fallback path (any alignment, K == 0).
inline Plan fallback_plan(int M, int N, int sms) {
  Plan p{};
  p.path = (M <= 0 || N <= 0) ? kPathEmpty : kPathFallback;
  p.bm = kFallbackBM;
  p.bn = kFallbackBN;
  p.splits = 1;
  p.tiles_m = M > 0 ? (M + kFallbackBM - 1) / kFallbackBM : 0;
  p.tiles_n = N > 0 ? (N + kFallbackBN - 1) / kFallbackBN : 0;
  p.units = p.tiles_m * p.tiles_n;
  p.grid = p.units < sms ? p.units : sms;
  return p;
}

#if defined(__CUDACC__)
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled from the driver the runtime already loaded (no -lcuda).
inline EncodeTiledFn encode_tiled_fn() {
  static EncodeTiledFn fn = []() -> EncodeTiledFn {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return nullptr;
    return reinterpret_cast<EncodeTiledFn>(f);
  }();
  return fn;
}

// A 2-D tensor map over a row-major (outer x inner) bf16/f16 matrix with row
// stride ld (elements), box box_inner x box_outer, a 128- (or 64-) byte
// swizzle, out-of-bounds reads zero-filled.
inline cudaError_t make_tma_2d(CUtensorMap* map, const void* ptr, int dtype, uint64_t inner,
                               uint64_t outer, uint64_t ld, uint32_t box_inner,
                               uint32_t box_outer, uint32_t swizzle = 128u) {
  EncodeTiledFn fn = encode_tiled_fn();
  if (fn == nullptr) return cudaErrorNotSupported;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {ld * 2};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = fn(map,
                        dtype == kF16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                      : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                        2, const_cast<void*>(ptr), dims, strides, box, elem_strides,
                        CU_TENSOR_MAP_INTERLEAVE_NONE,
                        swizzle == 128u ? CU_TENSOR_MAP_SWIZZLE_128B
                        : swizzle == 64u ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

// The tensor maps of one product's operands (A: op(A) is M x K with row
// stride lda, B: op(B) is K x N with row stride ldb; see "What it computes").
// Fails (cudaErrorInvalidValue) where TMA cannot address an operand: a base
// not 16-byte aligned or a row stride not a multiple of 16 bytes.
template <typename T, class Shape, bool TA, bool TB>
inline cudaError_t operand_maps(CUtensorMap* ma, CUtensorMap* mb, const void* A, long long lda,
                                const void* B, long long ldb, int M, int N, int K) {
  constexpr int dt = dtype_of<T>::value;
  using Maps = OperandMaps<Shape, TA, TB>;
  cudaError_t e = make_tma_2d(ma, A, dt, Maps::a_inner(M, K), Maps::a_outer(M, K), lda,
                              Maps::a_box_inner, Maps::a_box_outer, Maps::a_swizzle);
  if (e != cudaSuccess) return e;
  return make_tma_2d(mb, B, dt, Maps::b_inner(N, K), Maps::b_outer(N, K), ldb, Maps::b_box_inner,
                     Maps::b_box_outer, Maps::b_swizzle);
}

namespace detail {
template <typename T, class Shape, bool TA, bool TB, bool kPair, class Epi>
inline cudaError_t launch_tma(const Plan& plan, const T* A, long long lda, const T* B,
                              long long ldb, int M, int N, int K, const Epi& epi, float* partials,
                              int* counters, cudaStream_t stream) {
  CUtensorMap ma, mb;
  cudaError_t e = operand_maps<T, Shape, TA, TB>(&ma, &mb, A, lda, B, ldb, M, N, K);
  if (e != cudaSuccess) return e;
  GemmParams p = gemm_params(plan, M, N, K);
  p.workspace = partials;
  p.counters = counters;
  if (plan.splits > 1 && (partials == nullptr || counters == nullptr)) return cudaErrorInvalidValue;
  if (kPair && plan.grid % 2 != 0) return cudaErrorInvalidValue;  // whole clusters
  auto kernel = gemm_kernel<T, Shape, TA, TB, Epi, kPair>;
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = 2;
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = Shape::SMEM_BYTES;
  cfg.stream = stream;
  cfg.attrs = kPair ? cluster : nullptr;
  cfg.numAttrs = kPair ? 1 : 0;
  // Once per instantiation (not during graph capture): the shared memory limit,
  // and for pairs how many clusters of two fit at once (the GPCs' SM counts
  // need not be even): the persistent grid is no larger.
  static bool attr_done = false;
  static int pair_blocks = 0;
  if (!attr_done) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Shape::SMEM_BYTES);
    if (e != cudaSuccess) return e;
    if (kPair) {
      int clusters = 0;
      cfg.gridDim = dim3(plan.grid);
      e = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg);
      if (e != cudaSuccess) return e;
      if (clusters <= 0) return cudaErrorInvalidConfiguration;
      pair_blocks = 2 * clusters;
    }
    attr_done = true;
  }
  cfg.gridDim = dim3(kPair && plan.grid > pair_blocks ? pair_blocks : plan.grid);
  e = cudaLaunchKernelEx(&cfg, kernel, ma, mb, p, epi);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

template <typename T, class Shape, bool TA, bool TB, class Epi>
inline cudaError_t launch_plan(const Plan& plan, const T* A, long long lda, const T* B, long long ldb, int M,
                               int N, int K, const Epi& epi, float* partials, int* counters,
                               cudaStream_t stream) {
  if (plan.pair)
    return launch_tma<T, Shape, TA, TB, true>(plan, A, lda, B, ldb, M, N, K, epi, partials, counters, stream);
  return launch_tma<T, Shape, TA, TB, false>(plan, A, lda, B, ldb, M, N, K, epi, partials, counters, stream);
}
}  // namespace detail

// Launch the fallback kernel (any alignment, any K >= 0).
template <typename T, bool TA, bool TB, class Epi>
inline cudaError_t gemm_fallback(const Plan& plan, const T* A, long long lda, const T* B,
                                 long long ldb, int M, int N, int K, const Epi& epi,
                                 cudaStream_t stream) {
  if (plan.grid <= 0) return cudaSuccess;
  auto kernel = fallback_kernel<T, TA, TB, Epi>;
  static bool attr_done = false;
  if (!attr_done) {
    const cudaError_t e = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, fallback_smem_bytes());
    if (e != cudaSuccess) return e;
    attr_done = true;
  }
  kernel<<<plan.grid, kFallbackThreads, fallback_smem_bytes(), stream>>>(
      A, (int)lda, B, (int)ldb, M, N, K, epi);
  return cudaGetLastError();
}

// Launch a plan from choose_plan (kPathTma) or fallback_plan. The caller has
// checked tma_compatible(A, lda) and tma_compatible(B, ldb) for kPathTma.
// Split-K (plan.splits > 1) needs plan.partial_bytes of scratch in `partials`
// and plan.counters ints in `counters` that are zero (a cudaMemset once, at
// allocation: every launch leaves them zero). Keep the counters in a buffer
// of their own: partials of another plan would overwrite them.
template <typename T, bool TA, bool TB, class Epi>
inline cudaError_t gemm(const Plan& plan, const T* A, long long lda, const T* B, long long ldb,
                        int M, int N, int K, const Epi& epi, float* partials, int* counters,
                        cudaStream_t stream) {
  switch (plan.path) {
    case kPathEmpty:
      return cudaSuccess;
    case kPathFallback:
      return gemm_fallback<T, TA, TB>(plan, A, lda, B, ldb, M, N, K, epi, stream);
    default:
      break;
  }
  switch (plan.tile) {
    case 0:
      return detail::launch_plan<T, TileById<0>::type, TA, TB>(plan, A, lda, B, ldb, M, N, K, epi,
                                                               partials, counters, stream);
    case 1:
      return detail::launch_plan<T, TileById<1>::type, TA, TB>(plan, A, lda, B, ldb, M, N, K, epi,
                                                               partials, counters, stream);
    case 2:
      return detail::launch_plan<T, TileById<2>::type, TA, TB>(plan, A, lda, B, ldb, M, N, K, epi,
                                                               partials, counters, stream);
    default:
      return cudaErrorInvalidValue;
  }
}
#endif  // __CUDACC__

}  // namespace hopper
}  // namespace tk
