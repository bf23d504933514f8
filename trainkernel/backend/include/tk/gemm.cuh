// tk/gemm.cuh -- block-level GEMM tile for persistent megakernel loops.
//
// =============================================================================
// API
// =============================================================================
//
//   template <typename T, int BM, int BN, int BK, bool TRANS_A, bool TRANS_B,
//             class Epilogue>
//   __device__ void tk::gemm_tile(const T* A, int lda, const T* B, int ldb,
//                                 int M, int N, int K, int tile_m, int tile_n,
//                                 char* smem, Epilogue epi);
//
// computes the BM x BN block C[tile_m*BM .., tile_n*BN ..] of C = op(A) @ op(B)
// (op(A) is M x K, op(B) is K x N), accumulating in fp32 in a fixed K order,
// then calls epi(i, j, acc) (int i, int j, float acc) exactly once for every
// in-bounds element (i < M, j < N) of the tile, where i, j are GLOBAL indices.
// The epilogue (a device lambda from generated code) does bias / relu / cast /
// stores; gemm_tile itself writes nothing to global memory.
//
// Storage (all row-major, leading dimensions in elements, any value >= the row
// length is fine):
//   !TRANS_A: A is M x K,  op(A)[i][k] = A[i * lda + k]
//    TRANS_A: A is K x M,  op(A)[i][k] = A[k * lda + i]
//   !TRANS_B: B is K x N,  op(B)[k][j] = B[k * ldb + j]
//    TRANS_B: B is N x K,  op(B)[k][j] = B[j * ldb + k]
//
// Any M, N, K >= 0 (no multiple-of-tile requirement), any lda/ldb, any base
// pointer alignment: 16-byte cp.async copies are used when the base pointer is
// 16-byte aligned and ld is a multiple of 16 bytes (8 bf16/f16 or 4 floats);
// otherwise a scalar load path fills shared memory. Out-of-range elements are
// zero-filled in shared memory, so the K tail contributes exact zeros.
//
// Persistent loop idiom (every block walks the tile space, grid-stride):
//
//   const int tiles_n = tk::gemm_tiles_n(N, BN);
//   const int tiles   = tk::gemm_num_tiles(M, N, BM, BN);
//   for (int t = blockIdx.x; t < tiles; t += gridDim.x)
//     tk::gemm_tile<T, BM, BN, BK, TA, TB>(A, lda, B, ldb, M, N, K,
//                                          t / tiles_n, t % tiles_n, smem, epi);
//
// gemm_tile begins and ends with __syncthreads(), so it can be called back to
// back (and after/before other code that uses the same shared memory) with the
// same smem buffer. All threads of the block must call it with the same
// arguments (it contains barriers).
//
// =============================================================================
// Block size, shared memory, defaults
// =============================================================================
//
// The routine is written for NT = 128 or 256 "worker" threads:
//   * tk::gemm_tile_nt<NT, T, BM, BN, BK, TA, TB>(...) fixes NT at compile
//     time; it needs blockDim.x >= NT, blockDim.x a multiple of 32. Threads
//     with threadIdx.x >= NT only take part in the barriers. Prefer this one
//     from generated code: the printer knows the block size, and it compiles
//     one body instead of two.
//   * tk::gemm_tile<...>(...) picks NT = 256 when blockDim.x >= 256, else
//     NT = 128 (blockDim.x < 128 traps).
//
// Shared memory: tk::gemm_smem_bytes<T, BM, BN, BK>() bytes, 16-byte aligned
// (extern __shared__ __align__(16) char smem[] is). It does not depend on
// TRANS_A / TRANS_B or NT. It is kGemmStages (3) stages of an A tile and a B
// tile, each padded by 16 bytes per row (see "Bank conflicts" below):
//
//    T      BM  BN  BK   bytes
//    bf16   64  64  32   30720   (default for bf16 / f16)
//    bf16  128 128  32   61440   (> 48 KiB: needs cudaFuncSetAttribute(
//                                  cudaFuncAttributeMaxDynamicSharedMemorySize))
//    bf16   32  32  32   15360
//    float  64  64  16   30720   (default for fp32)
//    float  32  32  16   15360
//
// Defaults (tk::GemmConfig<T>): 64 x 64 x 32 for bf16/f16, 64 x 64 x 16 for
// float. Constraints (static_asserts): BM, BN multiples of 16 and large enough
// that NT/32 warps each get a >= 16 x 16 warp tile (16-bit path), BK a
// multiple of 16; fp32 path: BN % 16 == 0, BM % (NT/16) == 0, BK % 4 == 0.
//
// =============================================================================
// Tensor-core path (T = __nv_bfloat16 / __half)
// =============================================================================
//
// Warps are arranged WARPS_M x WARPS_N over the BM x BN tile (2 x 2 warps of
// 32 x 32 for 64 x 64 at NT=128; 2 x 4 warps of 32 x 16 at NT=256). Each warp
// computes its WM x WN piece with mma.sync.aligned.m16n8k16.row.col.f32.
// {bf16,f16}: (WM/16) x (WN/8) mma tiles per 16-wide K step, fp32 accumulate.
//
// Shared memory keeps each operand in the SAME layout as global memory (so
// 16-byte cp.async copies go straight from global to shared with no
// transposition), and ldmatrix / ldmatrix.trans produce the mma fragments:
//   A: !TRANS_A  smem [BM][BK+8]  (k contiguous) -> ldmatrix.x4
//       TRANS_A  smem [BK][BM+8]  (m contiguous) -> ldmatrix.x4.trans
//   B:  TRANS_B  smem [BN][BK+8]  (k contiguous) -> ldmatrix.x4
//      !TRANS_B  smem [BK][BN+8]  (n contiguous) -> ldmatrix.x4.trans
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type"; g = lane>>2, t = lane&3):
//   A regs a0..a3 = (row g, k 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..)
//   B regs b0, b1 = (k 2t..2t+1, col g), (k 2t+8.., col g)
//   C c0..c3      = (row g, col 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)
// ldmatrix.x4: lanes 8q..8q+7 give the 8 row addresses of matrix q; register q
// of lane l holds row l/4, columns 2(l%4)..+1 of matrix q (with .trans: rows
// and columns swapped), which is exactly the per-8x8 piece of the layouts
// above. gemm_detail::ldsm_coord_a / ldsm_coord_b pick the row each lane
// addresses; tests/device/test_gemm_fragments.cu checks them on the host
// against an emulation of ldmatrix + mma.
//
// Bank conflicts: one 8x8 ldmatrix matrix reads 8 rows x 16 bytes. With an
// unpadded row of 32 bf16 (64 B) or 64 bf16 (128 B), those 8 rows map onto the
// same 16-byte bank groups (4- or 8-way conflicts). Padding every row by 8
// elements (16 bytes) makes the row stride an odd number of 16-byte units
// (BK=32: 80 B = 5 units; 64-wide: 144 B = 9 units), so 8 consecutive rows hit
// 8 distinct bank groups: conflict-free, and every row stays 16-byte aligned
// for cp.async and ldmatrix.
//
// Pipeline: kGemmStages = 3 shared-memory stages with cp.async.cg (L2 only,
// so data written by other blocks earlier in the kernel is never read stale
// from L1). Stage kt+2 is being fetched while stage kt is multiplied; one
// __syncthreads() per K tile both publishes the landed copies and retires the
// stage that the next copy overwrites.
//
// =============================================================================
// SIMT path (T = float)
// =============================================================================
//
// Plain fp32 FMA, no TF32: results match fp32 PyTorch (cuBLAS without TF32)
// to ~1e-6 relative. 16 threads along N x (NT/16) along M; each thread owns a
// TM x TN register block (8 x 4 for 64 x 64 at NT=128, 4 x 4 at NT=256) with
// rows ty + r*(NT/16) and columns tx + c*16, so that at a fixed k a warp reads
// 2 A words (broadcast) and 16 consecutive B words: conflict-free except the
// TRANS_B layout ([BN][BK+4], 2-way). Shared memory again mirrors global
// layout ([BM][BK+4] or [BK][BM+4] for A, likewise B), filled by the same
// 3-stage cp.async pipeline (16 B = 4 floats per copy).
//
// Determinism: every output element is accumulated by exactly one thread, in
// increasing k order (mma.sync's internal order is fixed by hardware), so the
// same inputs always give the same bits.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "epilogue.cuh"
#include "types.cuh"

namespace tk {

constexpr int kGemmStages = 3;

// Default tile configuration per element type (see header comment).
template <typename T>
struct GemmConfig {
  static constexpr int BM = 64, BN = 64, BK = 32;
};
template <>
struct GemmConfig<float> {
  static constexpr int BM = 64, BN = 64, BK = 16;
};

__host__ __device__ constexpr int gemm_tiles_m(int M, int BM) { return (M + BM - 1) / BM; }
__host__ __device__ constexpr int gemm_tiles_n(int N, int BN) { return (N + BN - 1) / BN; }
__host__ __device__ constexpr int gemm_num_tiles(int M, int N, int BM, int BN) {
  return gemm_tiles_m(M, BM) * gemm_tiles_n(N, BN);
}

namespace gemm_detail {

template <typename A, typename B>
struct same_type {
  static constexpr bool value = false;
};
template <typename A>
struct same_type<A, A> {
  static constexpr bool value = true;
};

__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }

// Row padding in elements: 16 bytes (keeps rows 16-byte aligned, see above).
template <typename T>
__host__ __device__ constexpr int pad() { return 16 / (int)sizeof(T); }

// Elements of one pipeline stage of an operand tile with R x C logical extent
// (R = BM or BN, C = BK), big enough for either storage orientation.
template <typename T, int R, int C>
__host__ __device__ constexpr int stage_elems() {
  return cmax(R * (C + pad<T>()), C * (R + pad<T>()));
}

// ---------------------------------------------------------------------------
// Warp layout for the tensor-core path: choose WARPS_M (WARPS_N = NW/WARPS_M)
// such that the warp tile is a multiple of 16 x 16, minimising WM + WN (the
// ldmatrix traffic per mma). 0 when no layout fits.
// ---------------------------------------------------------------------------
__host__ __device__ constexpr int choose_warps_m(int BM, int BN, int NW) {
  int best = 0, best_cost = 1 << 30;
  for (int wm = 1; wm <= NW; wm *= 2) {
    if (NW % wm) continue;
    const int wn = NW / wm;
    if (BM % (wm * 16) || BN % (wn * 16)) continue;
    const int cost = BM / wm + BN / wn;
    if (cost < best_cost) {
      best = wm;
      best_cost = cost;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------
// ldmatrix addressing (host+device so the host test can emulate it).
//
// Lane l supplies the address of row (l & 7) of 8x8 matrix q = l >> 3.
// Returned (row, col) index the operand's shared-memory stage, whose layout
// is [rows][cols] as listed in the header comment.
// ---------------------------------------------------------------------------

// A fragment for the 16 x 16 (m x k) block at (m_base, k_base).
//  !TRANS_A ([m][k], ldmatrix): matrices q = 0..3 are (m 0-7, k 0-7),
//    (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15) -> a0..a3.
//    Lane l addresses m = l & 15, k = (l >> 4) * 8.
//   TRANS_A ([k][m], ldmatrix.trans): the same four matrices, stored with k
//    as the row: matrix q has rows k = (q >> 1) * 8 + 0..7, cols m = (q & 1) * 8.
template <bool TRANS_A>
__host__ __device__ __forceinline__ void ldsm_coord_a(int lane, int m_base, int k_base, int& row,
                                                      int& col) {
  const int q = lane >> 3, r = lane & 7;
  if (!TRANS_A) {
    row = m_base + (q & 1) * 8 + r;  // == m_base + (lane & 15)
    col = k_base + (q >> 1) * 8;
  } else {
    row = k_base + (q >> 1) * 8 + r;
    col = m_base + (q & 1) * 8;
  }
}

// B fragments for TWO adjacent n8 tiles (n_base .. n_base+15) x k16:
// registers 0,1 = (b0, b1) of n tile 0; registers 2,3 = (b0, b1) of n tile 1.
// Matrix q: n tile (q >> 1), k half (q & 1).
//   TRANS_B ([n][k], ldmatrix): rows n = n_base + (q>>1)*8 + 0..7, col k = (q&1)*8.
//  !TRANS_B ([k][n], ldmatrix.trans): rows k = k_base + (q&1)*8 + 0..7,
//    col n = n_base + (q>>1)*8.
template <bool TRANS_B>
__host__ __device__ __forceinline__ void ldsm_coord_b(int lane, int n_base, int k_base, int& row,
                                                      int& col) {
  const int q = lane >> 3, r = lane & 7;
  if (TRANS_B) {
    row = n_base + (q >> 1) * 8 + r;
    col = k_base + (q & 1) * 8;
  } else {
    row = k_base + (q & 1) * 8 + r;
    col = n_base + (q >> 1) * 8;
  }
}

// Accumulator register e (0..3) of lane -> (row, col) within the 16 x 8 tile.
__host__ __device__ __forceinline__ void acc_coord(int lane, int e, int& row, int& col) {
  row = (lane >> 2) + ((e >> 1) << 3);
  col = ((lane & 3) << 1) + (e & 1);
}

#if defined(__CUDACC__)
// ---------------------------------------------------------------------------
// PTX wrappers
// ---------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// 16-byte async copy global -> shared; copies src_bytes (0..16) and
// zero-fills the rest ("ignore-src" form), so partial / out-of-range chunks
// need no branch. .cg: cache in L2 only.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem_dst)),
               "l"(__cvta_generic_to_global(gmem_src)), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

template <bool TRANS>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row) {
  if (TRANS) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(smem_row))
                 : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(smem_row))
                 : "memory");
  }
}

// D = A * B + D, m16n8k16, fp32 accumulate.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                         uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4],
                                                  uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---------------------------------------------------------------------------
// Global -> shared copy of one ROWS x COLS operand tile into a stage laid out
// [ROWS][COLS + pad]. Element (r, c) comes from g[(row0 + r) * ld + col0 + c]
// when row0 + r < row_ext and col0 + c < col_ext, else it is 0.
//
// vec: base pointer 16-byte aligned and ld a multiple of the 16-byte element
// count. Then (col0 and COLS being multiples of it too) every 16-byte chunk
// of a row is 16-byte aligned in global memory, and one cp.async per chunk
// copies it, with src_bytes trimming the K / M / N edge and zero-filling the
// rest. Otherwise each element is loaded with ld.global.cg (__ldcg: L2, like
// cp.async.cg) and stored to shared. Never ld.global.nc / __ldg: the operand
// may have been written earlier in the same kernel by other blocks, and an
// explicit .cg load stays coherent even if the caller's pointer is
// const __restrict__ (which would let the compiler pick .nc for a plain load).
// ---------------------------------------------------------------------------
template <typename T, int ROWS, int COLS, int NT>
__device__ __forceinline__ void load_tile(T* s, const T* g, int ld, int row0, int col0,
                                          int row_ext, int col_ext, bool vec, int tid) {
  constexpr int LDS = COLS + pad<T>();
  constexpr int V = vec16_elems<T>();
  static_assert(COLS % V == 0, "tile width must be a multiple of 16 bytes");
  if (vec) {
    constexpr int CPR = COLS / V;  // 16-byte chunks per row
    constexpr int CHUNKS = ROWS * CPR;
#pragma unroll
    for (int c0 = 0; c0 < CHUNKS; c0 += NT) {
      const int c = c0 + tid;
      if (CHUNKS % NT == 0 || c < CHUNKS) {
        const int r = c / CPR;
        const int cc = (c % CPR) * V;
        const int gr = row0 + r, gc = col0 + cc;
        int valid = col_ext - gc;
        valid = valid < 0 ? 0 : (valid > V ? V : valid);
        if (gr >= row_ext) valid = 0;
        // With 0 valid bytes nothing is read; still pass a valid address.
        const T* src = valid > 0 ? g + ((size_t)gr * (size_t)ld + (size_t)gc) : g;
        cp_async_16(s + r * LDS + cc, src, valid * (int)sizeof(T));
      }
    }
  } else {
    constexpr int ELEMS = ROWS * COLS;
#pragma unroll 4
    for (int e = tid; e < ELEMS; e += NT) {
      const int r = e / COLS, c = e % COLS;
      const int gr = row0 + r, gc = col0 + c;
      T v = from_float<T>(0.0f);
      if (gr < row_ext && gc < col_ext) v = __ldcg(g + ((size_t)gr * (size_t)ld + (size_t)gc));
      s[r * LDS + c] = v;
    }
  }
}

// Fill pipeline stage `stage` with K tile kt of both operands.
template <int NT, typename T, int BM, int BN, int BK, bool TA, bool TB>
__device__ __forceinline__ void load_stage(T* sA, T* sB, const T* A, int lda, const T* B, int ldb,
                                           int M, int N, int K, int m0, int n0, int kt, bool a_vec,
                                           bool b_vec, int tid) {
  const int k0 = kt * BK;
  if (!TA)
    load_tile<T, BM, BK, NT>(sA, A, lda, m0, k0, M, K, a_vec, tid);
  else
    load_tile<T, BK, BM, NT>(sA, A, lda, k0, m0, K, M, a_vec, tid);
  if (!TB)
    load_tile<T, BK, BN, NT>(sB, B, ldb, k0, n0, K, N, b_vec, tid);
  else
    load_tile<T, BN, BK, NT>(sB, B, ldb, n0, k0, N, K, b_vec, tid);
}

// ---------------------------------------------------------------------------
// Tensor-core tile (T = bf16 / f16)
// ---------------------------------------------------------------------------
template <int NT, typename T, int BM, int BN, int BK, bool TA, bool TB, class Epilogue>
__device__ __forceinline__ void gemm_tile_mma(const T* A, int lda, const T* B, int ldb, int M,
                                              int N, int K, int tile_m, int tile_n, char* smem,
                                              Epilogue& epi) {
  constexpr int NW = NT / 32;
  constexpr int WARPS_M = choose_warps_m(BM, BN, NW);
  static_assert(WARPS_M > 0,
                "gemm_tile (bf16/f16): BM x BN too small or not a multiple of 16 for the "
                "number of warps (each warp needs a tile that is a multiple of 16 x 16)");
  constexpr int WARPS_N = NW / WARPS_M;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  constexpr int MI = WM / 16;  // m16 tiles per warp
  constexpr int NI = WN / 8;   // n8 tiles per warp (even: WN % 16 == 0)
  static_assert(BK % 16 == 0, "gemm_tile (bf16/f16): BK must be a multiple of 16");
  constexpr int A_STAGE = stage_elems<T, BM, BK>();
  constexpr int B_STAGE = stage_elems<T, BN, BK>();
  constexpr int LDA_S = TA ? BM + pad<T>() : BK + pad<T>();  // smem row stride of A
  constexpr int LDB_S = TB ? BK + pad<T>() : BN + pad<T>();  // smem row stride of B
  constexpr int S = kGemmStages;

  T* sA = reinterpret_cast<T*>(smem);
  T* sB = sA + S * A_STAGE;

  const int tid = threadIdx.x;
  const bool active = tid < NT;  // warp-uniform: NT is a multiple of 32
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp % WARPS_M, wn = warp / WARPS_M;
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  constexpr int V = vec16_elems<T>();
  const bool a_vec = is_aligned(A, 16) && (lda % V) == 0;
  const bool b_vec = is_aligned(B, 16) && (ldb % V) == 0;
  const int ktiles = (K + BK - 1) / BK;

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Per-lane ldmatrix coordinates for kk = 0 (k offsets added in the loop).
  int a_row[MI], a_col[MI], b_row[NI / 2], b_col[NI / 2];
#pragma unroll
  for (int i = 0; i < MI; ++i) ldsm_coord_a<TA>(lane, wm * WM + i * 16, 0, a_row[i], a_col[i]);
#pragma unroll
  for (int p = 0; p < NI / 2; ++p) ldsm_coord_b<TB>(lane, wn * WN + p * 16, 0, b_row[p], b_col[p]);

  // Whoever used smem before us (a previous tile's ldmatrix, other code) is done.
  __syncthreads();

#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (active && s < ktiles)
      load_stage<NT, T, BM, BN, BK, TA, TB>(sA + s * A_STAGE, sB + s * B_STAGE, A, lda, B, ldb, M,
                                            N, K, m0, n0, s, a_vec, b_vec, tid);
    cp_async_commit();  // possibly empty group: keeps the group count uniform
  }

  for (int kt = 0; kt < ktiles; ++kt) {
    // Groups committed so far: kt + S - 1; group j holds K tile j. Allowing
    // S - 2 in flight means tile kt has landed (for this thread's copies) ...
    cp_async_wait<S - 2>();
    // ... and after the barrier everyone's copies (and scalar stores) are
    // visible, and every warp has finished reading stage (kt - 1) % S, which
    // the copy issued below overwrites.
    __syncthreads();
    {
      const int nk = kt + S - 1;
      if (active && nk < ktiles) {
        const int st = nk % S;
        load_stage<NT, T, BM, BN, BK, TA, TB>(sA + st * A_STAGE, sB + st * B_STAGE, A, lda, B, ldb,
                                              M, N, K, m0, n0, nk, a_vec, b_vec, tid);
      }
      cp_async_commit();
    }
    if (active) {
      const T* a_st = sA + (kt % S) * A_STAGE;
      const T* b_st = sB + (kt % S) * B_STAGE;
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        uint32_t af[MI][4];
        uint32_t bf[NI][2];
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          // !TA: k advances along the row; TA: k advances the row index.
          const T* p = TA ? a_st + (a_row[i] + kk) * LDA_S + a_col[i]
                          : a_st + a_row[i] * LDA_S + a_col[i] + kk;
          ldmatrix_x4<TA>(af[i], p);
        }
#pragma unroll
        for (int pp = 0; pp < NI / 2; ++pp) {
          const T* p = TB ? b_st + b_row[pp] * LDB_S + b_col[pp] + kk
                          : b_st + (b_row[pp] + kk) * LDB_S + b_col[pp];
          uint32_t r[4];
          ldmatrix_x4<!TB>(r, p);
          bf[2 * pp][0] = r[0];
          bf[2 * pp][1] = r[1];
          bf[2 * pp + 1][0] = r[2];
          bf[2 * pp + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j) mma_16816<T>(acc[i][j], af[i], bf[j][0], bf[j][1]);
      }
    }
  }
  // Drain (only empty groups can remain) and make smem free for the caller.
  cp_async_wait<0>();
  __syncthreads();

  if (active) {
    if constexpr (is_staged_epilogue<Epilogue>) {  // a chunk's loads before its stores (tk/epilogue.cuh)
      constexpr int kAll = MI * NI * 4;
      constexpr int kChunk = Epilogue::kChunk < kAll ? Epilogue::kChunk : kAll;
#pragma unroll
      for (int c0 = 0; c0 < kAll; c0 += kChunk)
        stage_epilogue_chunk<kChunk>(
            epi,
            [&](int x, int& gi, int& gj) {
              const int i = (c0 + x) / (NI * 4), j = (c0 + x) / 4 % NI, e = (c0 + x) % 4;
              int r, c;
              acc_coord(lane, e, r, c);
              gi = m0 + wm * WM + i * 16 + r;
              gj = n0 + wn * WN + j * 8 + c;
              return gi < M && gj < N;
            },
            [&](int x) { return acc[(c0 + x) / (NI * 4)][(c0 + x) / 4 % NI][(c0 + x) % 4]; });
    } else {
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            int r, c;
            acc_coord(lane, e, r, c);
            const int gi = m0 + wm * WM + i * 16 + r;
            const int gj = n0 + wn * WN + j * 8 + c;
            if (gi < M && gj < N) epi(gi, gj, acc[i][j][e]);
          }
    }
  }
}

// ---------------------------------------------------------------------------
// SIMT fp32 tile
// ---------------------------------------------------------------------------
template <int NT, int BM, int BN, int BK, bool TA, bool TB, class Epilogue>
__device__ __forceinline__ void gemm_tile_simt(const float* A, int lda, const float* B, int ldb,
                                               int M, int N, int K, int tile_m, int tile_n,
                                               char* smem, Epilogue& epi) {
  constexpr int TXC = 16;       // threads along N
  constexpr int TYC = NT / 16;  // threads along M
  static_assert(NT % 16 == 0, "NT must be a multiple of 16");
  static_assert(BN % TXC == 0, "gemm_tile (fp32): BN must be a multiple of 16");
  static_assert(BM % TYC == 0, "gemm_tile (fp32): BM must be a multiple of NT/16");
  static_assert(BK % 4 == 0, "gemm_tile (fp32): BK must be a multiple of 4");
  constexpr int TM = BM / TYC, TN = BN / TXC;
  constexpr int A_STAGE = stage_elems<float, BM, BK>();
  constexpr int B_STAGE = stage_elems<float, BN, BK>();
  constexpr int LDA_S = TA ? BM + 4 : BK + 4;
  constexpr int LDB_S = TB ? BK + 4 : BN + 4;
  constexpr int S = kGemmStages;

  float* sA = reinterpret_cast<float*>(smem);
  float* sB = sA + S * A_STAGE;

  const int tid = threadIdx.x;
  const bool active = tid < NT;
  const int tx = tid % TXC, ty = (tid / TXC) % TYC;
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const bool a_vec = is_aligned(A, 16) && (lda % 4) == 0;
  const bool b_vec = is_aligned(B, 16) && (ldb % 4) == 0;
  const int ktiles = (K + BK - 1) / BK;

  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int c = 0; c < TN; ++c) acc[r][c] = 0.0f;

  __syncthreads();

#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (active && s < ktiles)
      load_stage<NT, float, BM, BN, BK, TA, TB>(sA + s * A_STAGE, sB + s * B_STAGE, A, lda, B, ldb,
                                                M, N, K, m0, n0, s, a_vec, b_vec, tid);
    cp_async_commit();
  }

  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<S - 2>();  // same protocol as the tensor-core path
    __syncthreads();
    {
      const int nk = kt + S - 1;
      if (active && nk < ktiles) {
        const int st = nk % S;
        load_stage<NT, float, BM, BN, BK, TA, TB>(sA + st * A_STAGE, sB + st * B_STAGE, A, lda, B,
                                                  ldb, M, N, K, m0, n0, nk, a_vec, b_vec, tid);
      }
      cp_async_commit();
    }
    if (active) {
      const float* a_st = sA + (kt % S) * A_STAGE;
      const float* b_st = sB + (kt % S) * B_STAGE;
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        float a[TM], b[TN];
#pragma unroll
        for (int r = 0; r < TM; ++r) {
          const int m = ty + r * TYC;
          a[r] = TA ? a_st[k * LDA_S + m] : a_st[m * LDA_S + k];
        }
#pragma unroll
        for (int c = 0; c < TN; ++c) {
          const int n = tx + c * TXC;
          b[c] = TB ? b_st[n * LDB_S + k] : b_st[k * LDB_S + n];
        }
#pragma unroll
        for (int r = 0; r < TM; ++r)
#pragma unroll
          for (int c = 0; c < TN; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();

  if (active) {
    if constexpr (is_staged_epilogue<Epilogue>) {  // a chunk's loads before its stores (tk/epilogue.cuh)
      constexpr int kAll = TM * TN;
      constexpr int kChunk = Epilogue::kChunk < kAll ? Epilogue::kChunk : kAll;
#pragma unroll
      for (int c0 = 0; c0 < kAll; c0 += kChunk)
        stage_epilogue_chunk<kChunk>(
            epi,
            [&](int x, int& gi, int& gj) {
              gi = m0 + ty + (c0 + x) / TN * TYC;
              gj = n0 + tx + (c0 + x) % TN * TXC;
              return gi < M && gj < N;
            },
            [&](int x) { return acc[(c0 + x) / TN][(c0 + x) % TN]; });
    } else {
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c) {
          const int gi = m0 + ty + r * TYC;
          const int gj = n0 + tx + c * TXC;
          if (gi < M && gj < N) epi(gi, gj, acc[r][c]);
        }
    }
  }
}
#endif  // __CUDACC__

}  // namespace gemm_detail

// Shared memory (bytes) needed by gemm_tile<T, BM, BN, BK, *, *> for any
// transposition and block size.
template <typename T, int BM, int BN, int BK>
__host__ __device__ constexpr int gemm_smem_bytes() {
  return kGemmStages *
         (gemm_detail::stage_elems<T, BM, BK>() + gemm_detail::stage_elems<T, BN, BK>()) *
         (int)sizeof(T);
}

// Whether gemm_tile_nt<NT, T, BM, BN, BK, ...> satisfies its static_asserts.
template <typename T, int BM, int BN, int BK, int NT>
__host__ __device__ constexpr bool gemm_tile_supported() {
  if (NT % 32 != 0 || NT < 32 || NT > 1024) return false;
  if (gemm_detail::same_type<T, float>::value)
    return BN % 16 == 0 && BM % (NT / 16) == 0 && BK % 4 == 0;
  return BK % 16 == 0 && gemm_detail::choose_warps_m(BM, BN, NT / 32) > 0;
}

#if defined(__CUDACC__)
// Compile-time worker count NT (128 or 256 recommended; blockDim.x >= NT).
template <int NT, typename T, int BM, int BN, int BK, bool TRANS_A, bool TRANS_B, class Epilogue>
__device__ __forceinline__ void gemm_tile_nt(const T* A, int lda, const T* B, int ldb, int M, int N,
                                             int K, int tile_m, int tile_n, char* smem,
                                             Epilogue epi) {
  static_assert(NT % 32 == 0 && NT >= 32 && NT <= 1024, "NT must be a multiple of 32");
  if constexpr (gemm_detail::same_type<T, float>::value) {
    gemm_detail::gemm_tile_simt<NT, BM, BN, BK, TRANS_A, TRANS_B>(A, lda, B, ldb, M, N, K, tile_m,
                                                                  tile_n, smem, epi);
  } else {
    static_assert(gemm_detail::same_type<T, __nv_bfloat16>::value ||
                      gemm_detail::same_type<T, __half>::value,
                  "gemm_tile: T must be float, __nv_bfloat16 or __half");
    gemm_detail::gemm_tile_mma<NT, T, BM, BN, BK, TRANS_A, TRANS_B>(A, lda, B, ldb, M, N, K, tile_m,
                                                                    tile_n, smem, epi);
  }
}

// Runtime-dispatched worker count: NT = 256 if blockDim.x >= 256 and the
// tile shape supports 8 warps (e.g. not 32 x 32 on the tensor-core path),
// else NT = 128 (the extra threads then only join the barriers).
// blockDim.x < 128 traps.
template <typename T, int BM, int BN, int BK, bool TRANS_A, bool TRANS_B, class Epilogue>
__device__ __forceinline__ void gemm_tile(const T* A, int lda, const T* B, int ldb, int M, int N,
                                          int K, int tile_m, int tile_n, char* smem,
                                          Epilogue epi) {
  constexpr bool ok256 = gemm_tile_supported<T, BM, BN, BK, 256>();
  constexpr bool ok128 = gemm_tile_supported<T, BM, BN, BK, 128>();
  static_assert(ok128 || ok256, "gemm_tile: unsupported tile shape (see gemm.cuh)");
  if constexpr (ok256) {
    if (blockDim.x >= 256) {
      gemm_tile_nt<256, T, BM, BN, BK, TRANS_A, TRANS_B>(A, lda, B, ldb, M, N, K, tile_m, tile_n,
                                                         smem, epi);
      return;
    }
  }
  if constexpr (ok128) {
    if (blockDim.x >= 128) {
      gemm_tile_nt<128, T, BM, BN, BK, TRANS_A, TRANS_B>(A, lda, B, ldb, M, N, K, tile_m, tile_n,
                                                         smem, epi);
      return;
    }
  }
  __trap();  // block too small for this tile configuration
}
#endif  // __CUDACC__

// ---------------------------------------------------------------------------
// Split-K arrival (grid kernels)
// ---------------------------------------------------------------------------
// Called by every thread of the block after it stored its slice's fp32
// partials of one output tile: true, for the whole block, in the block whose
// slice arrived last; that block then reads every slice's partials (with
// __ldcg: they were written by other SMs, past this SM's L1) and sums them
// in slice order. The counter (zero before the tile's first arrival) is reset
// to zero by the last block, so it is zero again for the next launch.
__device__ __forceinline__ bool split_k_last(unsigned* counter, unsigned slices) {
  __shared__ unsigned ticket;
  __threadfence();  // this thread's partials are visible to the grid before the arrival
  __syncthreads();
  if (threadIdx.x == 0) ticket = atomicAdd(counter, 1u);
  __syncthreads();
  const bool last = ticket == slices - 1;
  if (last) {
    __threadfence();  // and the others' partials are visible to this block after it
    if (threadIdx.x == 0) *counter = 0u;
  }
  return last;
}

}  // namespace tk
