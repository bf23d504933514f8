// Host-only check (runs WITHOUT a GPU) of the tensor-core GEMM's index math.
//
// gemm_tile_mma never touches an element by (row, col) itself: ldmatrix
// delivers the operands and mma.sync consumes them in the layouts the PTX ISA
// defines. A wrong lane -> address mapping would therefore show up only as
// wrong numbers on the GPU. This program emulates, on the CPU, exactly what
// the kernel does for one shared-memory stage:
//   1. operand tiles stored in the kernel's shared-memory layouts (padded row
//      stride, orientation per TRANS_A / TRANS_B);
//   2. every warp's ldmatrix.x4 (.trans where the kernel uses it) with the
//      row addresses from tk::gemm_detail::ldsm_coord_a / ldsm_coord_b;
//   3. mma.m16n8k16 using the fragment layouts written out from the PTX ISA
//      ("Matrix Fragments for mma.m16n8k16 with floating point type"),
//      independently of tk::gemm_detail::acc_coord;
//   4. the result scattered with acc_coord and the warp placement of
//      gemm_tile_mma, compared with a plain triple loop.
// Emulated semantics of ldmatrix.m8n8.x4.b16: lanes 8q..8q+7 give the row
// addresses of matrix q; register q of lane l receives row l/4, elements
// 2(l%4) and 2(l%4)+1 of matrix q; with .trans it receives element
// (row 2(l%4)+h, col l/4), h = 0, 1.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tk/gemm.cuh"

namespace {

using tk::gemm_detail::acc_coord;
using tk::gemm_detail::choose_warps_m;
using tk::gemm_detail::ldsm_coord_a;
using tk::gemm_detail::ldsm_coord_b;

struct Smem2D {
  std::vector<double> v;
  int ld;
  double at(int r, int c) const { return v[(size_t)r * ld + c]; }
};

// One 32-bit register: two 16-bit elements (low, high).
struct Reg {
  double lo, hi;
};

// Emulated ldmatrix.x4: addr_row/addr_col[lane] is the row start lane supplies.
void ldmatrix_x4(const Smem2D& s, const int (&ar)[32], const int (&ac)[32], bool trans,
                 Reg (&out)[32][4]) {
  for (int l = 0; l < 32; ++l)
    for (int q = 0; q < 4; ++q) {
      double e[2];
      for (int h = 0; h < 2; ++h) {
        if (!trans) {
          const int src = 8 * q + l / 4;  // lane that addressed row l/4 of matrix q
          e[h] = s.at(ar[src], ac[src] + 2 * (l % 4) + h);
        } else {
          const int src = 8 * q + 2 * (l % 4) + h;  // row 2(l%4)+h of matrix q
          e[h] = s.at(ar[src], ac[src] + l / 4);
        }
      }
      out[l][q] = Reg{e[0], e[1]};
    }
}

// Emulated mma.m16n8k16.row.col: D += A(16x16) * B(16x8), fragments per PTX.
void mma(const Reg (&a)[32][4], const Reg (&b)[32][2], double (&d)[32][4]) {
  double A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    for (int i = 0; i < 8; ++i) {  // a0..a7: reg i/2, half i%2
      const int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
      const int col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      const Reg& r = a[l][i / 2];
      A[row][col] = (i & 1) ? r.hi : r.lo;
    }
    for (int i = 0; i < 4; ++i) {  // b0..b3
      const int row = t * 2 + (i & 1) + (i >= 2 ? 8 : 0);
      const int col = g;
      const Reg& r = b[l][i / 2];
      B[row][col] = (i & 1) ? r.hi : r.lo;
    }
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; ++i) {  // c0..c3
      const int row = g + (i >= 2 ? 8 : 0);
      const int col = t * 2 + (i & 1);
      double s = 0;
      for (int k = 0; k < 16; ++k) s += A[row][k] * B[k][col];
      d[l][i] += s;
    }
  }
}

template <int BM, int BN, int BK, int NW, bool TA, bool TB>
bool run_case() {
  constexpr int P = 8;  // padding of the 16-bit path
  constexpr int WARPS_M = choose_warps_m(BM, BN, NW);
  static_assert(WARPS_M > 0, "bad config");
  constexpr int WARPS_N = NW / WARPS_M;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, MI = WM / 16, NI = WN / 8;

  // Small integers: every product and sum is exact in double.
  std::vector<double> opA(BM * BK), opB(BK * BN);
  unsigned seed = 12345u + BM * 7 + BN * 13 + BK * 17 + NW * 19 + TA * 23 + TB * 29;
  auto rnd = [&]() {
    seed = seed * 1664525u + 1013904223u;
    return (double)((int)(seed >> 24) % 9 - 4);
  };
  for (auto& x : opA) x = rnd();
  for (auto& x : opB) x = rnd();

  // Shared-memory stage layouts used by gemm_tile_mma.
  Smem2D sA, sB;
  sA.ld = TA ? BM + P : BK + P;
  sB.ld = TB ? BK + P : BN + P;
  sA.v.assign((size_t)(TA ? BK : BM) * sA.ld, 1e300);  // padding poisoned
  sB.v.assign((size_t)(TB ? BN : BK) * sB.ld, 1e300);
  for (int m = 0; m < BM; ++m)
    for (int k = 0; k < BK; ++k)
      sA.v[TA ? (size_t)k * sA.ld + m : (size_t)m * sA.ld + k] = opA[m * BK + k];
  for (int k = 0; k < BK; ++k)
    for (int n = 0; n < BN; ++n)
      sB.v[TB ? (size_t)n * sB.ld + k : (size_t)k * sB.ld + n] = opB[k * BN + n];

  std::vector<double> C(BM * BN, 0.0);
  std::vector<int> hits(BM * BN, 0);
  for (int warp = 0; warp < NW; ++warp) {
    const int wm = warp % WARPS_M, wn = warp / WARPS_M;
    static double acc[MI][NI][32][4];
    for (int i = 0; i < MI; ++i)
      for (int j = 0; j < NI; ++j)
        for (int l = 0; l < 32; ++l)
          for (int e = 0; e < 4; ++e) acc[i][j][l][e] = 0;
    for (int kk = 0; kk < BK; kk += 16) {
      static Reg af[MI][32][4];
      static Reg bf[NI][32][2];
      for (int i = 0; i < MI; ++i) {
        int ar[32], ac[32];
        for (int l = 0; l < 32; ++l) {
          ldsm_coord_a<TA>(l, wm * WM + i * 16, 0, ar[l], ac[l]);
          if (TA) ar[l] += kk; else ac[l] += kk;  // as in gemm_tile_mma
        }
        ldmatrix_x4(sA, ar, ac, TA, af[i]);
      }
      for (int p = 0; p < NI / 2; ++p) {
        int br[32], bc[32];
        for (int l = 0; l < 32; ++l) {
          ldsm_coord_b<TB>(l, wn * WN + p * 16, 0, br[l], bc[l]);
          if (TB) bc[l] += kk; else br[l] += kk;
        }
        Reg r[32][4];
        ldmatrix_x4(sB, br, bc, !TB, r);
        for (int l = 0; l < 32; ++l) {
          bf[2 * p][l][0] = r[l][0];
          bf[2 * p][l][1] = r[l][1];
          bf[2 * p + 1][l][0] = r[l][2];
          bf[2 * p + 1][l][1] = r[l][3];
        }
      }
      for (int i = 0; i < MI; ++i)
        for (int j = 0; j < NI; ++j) mma(af[i], bf[j], acc[i][j]);
    }
    for (int i = 0; i < MI; ++i)
      for (int j = 0; j < NI; ++j)
        for (int l = 0; l < 32; ++l)
          for (int e = 0; e < 4; ++e) {
            int r, c;
            acc_coord(l, e, r, c);
            const int gi = wm * WM + i * 16 + r, gj = wn * WN + j * 8 + c;
            C[gi * BN + gj] = acc[i][j][l][e];
            hits[gi * BN + gj]++;
          }
  }

  int bad = 0;
  for (int m = 0; m < BM; ++m)
    for (int n = 0; n < BN; ++n) {
      double ref = 0;
      for (int k = 0; k < BK; ++k) ref += opA[m * BK + k] * opB[k * BN + n];
      if (hits[m * BN + n] != 1 || C[m * BN + n] != ref) {
        if (bad < 5)
          fprintf(stderr, "  (%d,%d): got %g want %g, hits %d\n", m, n, C[m * BN + n], ref,
                  hits[m * BN + n]);
        ++bad;
      }
    }
  char name[128];
  snprintf(name, sizeof name, "fragments_%dx%dx%d_warps%d_%s%s", BM, BN, BK, NW, TA ? "T" : "N",
           TB ? "T" : "N");
  if (bad) {
    printf("FAIL %s %d wrong elements\n", name, bad);
    return false;
  }
  printf("PASS %s\n", name);
  return true;
}

template <int BM, int BN, int BK, int NW>
bool run_all_trans() {
  bool ok = true;
  ok &= run_case<BM, BN, BK, NW, false, false>();
  ok &= run_case<BM, BN, BK, NW, false, true>();
  ok &= run_case<BM, BN, BK, NW, true, false>();
  ok &= run_case<BM, BN, BK, NW, true, true>();
  return ok;
}

}  // namespace

int main() {
  bool ok = true;
  ok &= run_all_trans<64, 64, 32, 4>();    // default, 128 threads
  ok &= run_all_trans<64, 64, 32, 8>();    // default, 256 threads
  ok &= run_all_trans<32, 32, 16, 4>();
  ok &= run_all_trans<128, 128, 32, 8>();
  ok &= run_all_trans<128, 64, 64, 4>();
  // The persistent-loop tile helpers.
  if (tk::gemm_num_tiles(33, 7, 64, 64) != 1 || tk::gemm_num_tiles(100, 300, 64, 64) != 10 ||
      tk::gemm_tiles_n(300, 64) != 5 || tk::gemm_num_tiles(0, 5, 64, 64) != 0) {
    printf("FAIL gemm_num_tiles\n");
    ok = false;
  } else {
    printf("PASS gemm_num_tiles\n");
  }
  // Documented shared-memory sizes.
  static_assert(tk::gemm_smem_bytes<__nv_bfloat16, 64, 64, 32>() == 30720, "smem");
  static_assert(tk::gemm_smem_bytes<__nv_bfloat16, 128, 128, 32>() == 61440, "smem");
  static_assert(tk::gemm_smem_bytes<__nv_bfloat16, 32, 32, 32>() == 15360, "smem");
  static_assert(tk::gemm_smem_bytes<float, 64, 64, 16>() == 30720, "smem");
  static_assert(tk::gemm_smem_bytes<float, 32, 32, 16>() == 15360, "smem");
  return ok ? 0 : 1;
}
