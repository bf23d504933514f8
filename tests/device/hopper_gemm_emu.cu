// Host-only emulation of tk/hopper_gemm.cuh's data path (no GPU needed).
//
// It replays, on the CPU, what the kernel asks the hardware to do, using the
// header's own helpers (work_unit, for_each_box, OperandMaps, slab_descs,
// frag_row / frag_col, choose_plan), and models the hardware from the PTX
// ISA / CUDA documentation, independently of those helpers:
//   * TMA (cp.async.bulk.tensor.2d, SWIZZLE_128B / _64B): box row o, element
//     i goes to  dst + R*o + 2*i  (R: the box row's bytes, at most the
//     swizzle span S), then the 16-byte chunk index (address bits 4-6 for
//     S = 128, bits 4-5 for S = 64) is XORed with bits 7-9 (7-8); out-of-bounds
//     elements are zero.
//   * wgmma's shared-memory operand, decoded from the 64-bit descriptor
//     (start, LBO, SBO fields; swizzle mode 1 = 128B, 2 = 64B) by the
//     canonical layouts (S the mode's span, W = S/2 elements):
//       K-major  (row r, k):  start + 128*(r%8) + SBO*(r/8) + 2*k   (S = 128)
//       MN-major (x, k):      start + 2*(x%W) + LBO*(x/W) + S*(k%8) + SBO*(k/8)
//     then the same swizzle (ISA "Shared Memory Matrix Layout", cute's
//     GmmaDescriptor comments).
//   * the m64nNk16 D fragment:  register r of thread t -> row
//     16*(t/32) + (t%32)/4 + 8*((r/2)%2), column 8*(r/4) + 2*(t%4) + r%2.
// With these it multiplies small matrices through the kernel's exact sequence
// of boxes, stages, descriptors, K steps, split-K slices and fragment stores,
// and compares with a plain triple loop. It checks the plumbing (offsets,
// LBO/SBO, coordinates, transposes, tails, the schedule, split-K coverage);
// the hardware model itself is only checked on the GPU.
//
// Protocol: "PASS name" / "FAIL name why" lines, exit 1 on any failure.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tk/hopper_gemm.cuh"
#include "tk_test.cuh"

namespace hg = tk::hopper;

namespace {

// The swizzle of span `span` bytes (128: Swizzle<3,4,3>, 64: <2,4,3>, 32: <1,4,3>).
uint32_t swizzle(uint32_t addr, uint32_t span) {
  const uint32_t mask = span == 128u ? 0x70u : span == 64u ? 0x30u : 0x10u;
  return addr ^ ((addr >> 3) & mask);
}

struct Desc {
  uint32_t start, lbo, sbo, mode;
};
Desc decode(uint64_t d) {
  Desc r;
  r.start = (uint32_t)(d & 0x3FFFu) << 4;
  r.lbo = (uint32_t)((d >> 16) & 0x3FFFu) << 4;
  r.sbo = (uint32_t)((d >> 32) & 0x3FFFu) << 4;
  r.mode = (uint32_t)(d >> 62);
  return r;
}
uint32_t mode_span(uint32_t mode) { return mode == 1u ? 128u : mode == 2u ? 64u : mode == 3u ? 32u : 0u; }

// Byte address of element (row/x, k) of a wgmma operand.
uint32_t operand_addr(const Desc& d, bool mn_major, int x, int k) {
  const uint32_t span = mode_span(d.mode), w = span / 2;
  uint32_t a;
  if (!mn_major) {
    a = d.start + 128u * (x % 8) + d.sbo * (x / 8) + 2u * k;
  } else {
    a = d.start + 2u * (x % w) + d.lbo * (x / w) + span * (k % 8) + d.sbo * (k / 8);
  }
  return swizzle(a, span);
}

// A plan of the megakernel's kind for Shape: choose_plan's splits and K
// slices, the tiles counted at Shape's BM x BN (the megakernel sets both
// itself; the standalone table has no 32-wide or 64-row tiles).
template <class Shape>
hg::Plan shape_plan(int M, int N, int K, int splits_req) {
  hg::Plan plan = hg::choose_plan(M, N, K, 132, Shape::BN == 256 ? 0 : Shape::BN == 128 ? 1 : 2, splits_req);
  plan.tiles_m = (M + Shape::BM - 1) / Shape::BM;
  plan.tiles_n = (N + Shape::BN - 1) / Shape::BN;
  plan.units = plan.tiles_m * plan.tiles_n * plan.splits;
  return plan;
}

// A row-major matrix stored as floats (values are small integers: exact).
struct Mat {
  int rows, cols;
  std::vector<float> v;
  Mat(int r, int c) : rows(r), cols(c), v((size_t)r * c) {}
  float at(long long r, long long c) const {
    return (r >= 0 && c >= 0 && r < rows && c < cols) ? v[(size_t)r * cols + c] : 0.0f;
  }
};

template <class Shape, bool TA, bool TB>
bool emulate(int M, int N, int K, int splits_req, tktest::Rng& rng, char* why) {
  constexpr int BM = Shape::BM, BN = Shape::BN, STAGES = Shape::STAGES;
  using Maps = hg::OperandMaps<Shape, TA, TB>;
  // Stored operands: A is M x K (K x M if TA), B is K x N (N x K if TB).
  Mat A(TA ? K : M, TA ? M : K), B(TB ? N : K, TB ? K : N);
  for (auto& x : A.v) x = (float)((int)(rng.next() % 7) - 3);
  for (auto& x : B.v) x = (float)((int)(rng.next() % 7) - 3);
  auto opA = [&](int i, int k) { return TA ? A.at(k, i) : A.at(i, k); };
  auto opB = [&](int k, int j) { return TB ? B.at(j, k) : B.at(k, j); };
  // The tensor maps' view: tensor `outer` rows of `inner` elements.
  if (Maps::a_inner(M, K) != (uint64_t)A.cols || Maps::a_outer(M, K) != (uint64_t)A.rows ||
      Maps::b_inner(N, K) != (uint64_t)B.cols || Maps::b_outer(N, K) != (uint64_t)B.rows) {
    snprintf(why, 200, "OperandMaps dims disagree with the storage convention");
    return false;
  }
  const hg::Plan plan = shape_plan<Shape>(M, N, K, splits_req);
  const hg::GemmParams p = hg::gemm_params(plan, M, N, K);
  const int tiles = p.tiles_m * p.tiles_n;
  const int units = tiles * p.splits;

  std::vector<float> smem((size_t)STAGES * Shape::STAGE_BYTES / 2, NAN);
  std::vector<double> C((size_t)M * N, 0.0);
  std::vector<int> written((size_t)M * N, 0);
  std::vector<int> kcover((size_t)tiles * p.kb_total, 0);
  std::vector<int> tile_seen(tiles, 0);
  int stage = 0;
  // One block walks all units (grid-stride order does not matter here).
  for (int u = 0; u < units; ++u) {
    const hg::WorkUnit w = hg::work_unit(p, u, BM, BN);
    if (w.split == 0) tile_seen[w.tile]++;
    if (w.kb0 >= w.kb1) {
      snprintf(why, 200, "unit %d has an empty K slice", u);
      return false;
    }
    std::vector<double> acc((size_t)BM * BN, 0.0);
    for (int kb = w.kb0; kb < w.kb1; ++kb) {
      kcover[(size_t)w.tile * p.kb_total + kb]++;
      const uint32_t sbase = (uint32_t)stage * Shape::STAGE_BYTES;
      uint32_t bytes = 0;
      // --- TMA: place every box the producer issues
      bool spans_ok = true;
      hg::for_each_box<Shape, TA, TB>(w, kb, [&](int op, uint32_t off, int c0, int c1) {
        const Mat& T = op == 0 ? A : B;
        const uint32_t bi = op == 0 ? Maps::a_box_inner : Maps::b_box_inner;
        const uint32_t bo = op == 0 ? Maps::a_box_outer : Maps::b_box_outer;
        const uint32_t span = op == 0 ? Maps::a_swizzle : Maps::b_swizzle;
        spans_ok = spans_ok && 2u * bi <= span;  // TMA: a box row fits the swizzle span
        for (uint32_t o = 0; o < bo; ++o)
          for (uint32_t i = 0; i < bi; ++i) {
            const uint32_t addr = swizzle(sbase + off + 2u * bi * o + 2u * i, span);
            smem[addr / 2] = T.at((long long)c1 + o, (long long)c0 + i);
          }
        bytes += bi * bo * 2;
      });
      if (!spans_ok) {
        snprintf(why, 200, "a box row is wider than its map's swizzle span");
        return false;
      }
      if (bytes != (uint32_t)Shape::LOAD_BYTES) {
        snprintf(why, 200, "boxes of one stage carry %u bytes, expect_tx says %d", bytes,
                 Shape::LOAD_BYTES);
        return false;
      }
      // --- wgmma: each consumer, four K=16 slices, read through descriptors
      for (int c = 0; c < hg::kConsumers; ++c)
        for (int k = 0; k < hg::kBK / 16; ++k) {
          uint64_t da, db;
          hg::slab_descs<Shape, TA, TB>(sbase, c, k, da, db);
          const Desc a = decode(da), b = decode(db);
          if (mode_span(a.mode) != Maps::a_swizzle || mode_span(b.mode) != Maps::b_swizzle) {
            snprintf(why, 200, "descriptor swizzle modes %u/%u, the maps' spans %u/%u", a.mode, b.mode,
                     Maps::a_swizzle, Maps::b_swizzle);
            return false;
          }
          for (int r = 0; r < 64; ++r)
            for (int n = 0; n < BN; ++n) {
              double s = 0;
              for (int kk = 0; kk < 16; ++kk) {
                const float av = smem[operand_addr(a, TA, r, kk) / 2];
                const float bv = smem[operand_addr(b, !TB, n, kk) / 2];
                s += (double)av * bv;
              }
              acc[(size_t)(64 * c + r) * BN + n] += s;
            }
        }
      if (++stage == STAGES) stage = 0;
    }
    // --- split-K: the partial joins the tile's sum (order is the kernel's
    // business; here only coverage matters); epilogue through the fragment map
    for (int c = 0; c < hg::kConsumers; ++c)
      for (int t = 0; t < 128; ++t)
        for (int r = 0; r < BN / 2; ++r) {
          const int i = w.m0 + 64 * c + hg::frag_row(t, r);
          const int j = w.n0 + hg::frag_col(t, r);
          const double v = acc[(size_t)(64 * c + hg::frag_row(t, r)) * BN + hg::frag_col(t, r)];
          if (i < M && j < N) {
            C[(size_t)i * N + j] += v;
            if (w.split == 0) written[(size_t)i * N + j]++;
          }
        }
  }
  for (int t = 0; t < tiles; ++t)
    if (tile_seen[t] != 1) {
      snprintf(why, 200, "tile %d scheduled %d times", t, tile_seen[t]);
      return false;
    }
  for (size_t x = 0; x < kcover.size(); ++x)
    if (kcover[x] != 1) {
      snprintf(why, 200, "tile %zu K step %zu covered %d times", x / p.kb_total, x % p.kb_total,
               kcover[x]);
      return false;
    }
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += (double)opA(i, k) * opB(k, j);
      if (written[(size_t)i * N + j] != 1) {
        snprintf(why, 200, "C[%d,%d] written %d times", i, j, written[(size_t)i * N + j]);
        return false;
      }
      if (C[(size_t)i * N + j] != ref) {
        snprintf(why, 200, "C[%d,%d] = %g, want %g (M N K = %d %d %d, splits %d)", i, j,
                 C[(size_t)i * N + j], ref, M, N, K, p.splits);
        return false;
      }
    }
  return true;
}

// Every (thread, register) of a warpgroup maps to a distinct element of the
// 64 x BN slab, and all are covered.
template <int BN>
bool fragment_is_bijection(char* why) {
  std::vector<int> hit(64 * BN, 0);
  for (int t = 0; t < 128; ++t)
    for (int r = 0; r < BN / 2; ++r) {
      const int i = hg::frag_row(t, r), j = hg::frag_col(t, r);
      if (i < 0 || i >= 64 || j < 0 || j >= BN) {
        snprintf(why, 200, "t %d r %d -> (%d, %d) out of the slab", t, r, i, j);
        return false;
      }
      hit[i * BN + j]++;
      if (r % 2 == 1 && (hg::frag_col(t, r) != hg::frag_col(t, r - 1) + 1 ||
                         hg::frag_row(t, r) != hg::frag_row(t, r - 1))) {
        snprintf(why, 200, "registers %d, %d of t %d are not a column pair", r - 1, r, t);
        return false;
      }
    }
  for (int x = 0; x < 64 * BN; ++x)
    if (hit[x] != 1) {
      snprintf(why, 200, "slab element %d hit %d times", x, hit[x]);
      return false;
    }
  return true;
}

// The cluster pair's walk (pair_step) for the blocks of a grid of `grid`
// (even) whose units start at `offset` (the megakernel's ops: block b's first
// unit (b - offset) mod grid): both blocks of every cluster agree on each
// step's K steps and multicast, one's own unit is the other's peer, the
// walks cover every unit once, and a multicast step's two units load the same
// B boxes. With expect_all (a plan where pairs_share_b and an even offset),
// every step where both blocks have a unit multicasts.
template <class Shape, bool TA, bool TB>
bool pair_walks_agree(int M, int N, int K, int splits_req, int grid, int offset, bool expect_all, char* why) {
  constexpr int BM = Shape::BM, BN = Shape::BN;
  const hg::Plan plan = shape_plan<Shape>(M, N, K, splits_req);
  const hg::GemmParams p = hg::gemm_params(plan, M, N, K);
  if (expect_all != (hg::pairs_share_b(plan.tiles_m, plan.splits) && offset % 2 == 0)) {
    snprintf(why, 200, "case expects multicast everywhere = %d, plan tiles_m %d splits %d offset %d", expect_all,
             plan.tiles_m, plan.splits, offset);
    return false;
  }
  std::vector<int> seen(plan.units, 0);
  for (int b = 0; b < grid; b += 2) {
    const int f0 = ((b - offset) % grid + grid) % grid, f1 = ((b + 1 - offset) % grid + grid) % grid;
    if (hg::pair_peer_first(f0, grid, 0) != f1 || hg::pair_peer_first(f1, grid, 1) != f0) {
      snprintf(why, 200, "grid %d offset %d: blocks %d, %d start at %d, %d; pair_peer_first disagrees", grid,
               offset, b, b + 1, f0, f1);
      return false;
    }
    for (int k = 0;; ++k) {
      const hg::PairStep s0 = hg::pair_step(p, k, f0, f1, grid, BM, BN), s1 = hg::pair_step(p, k, f1, f0, grid, BM, BN);
      if (s0.has_self != s1.has_peer || s0.has_peer != s1.has_self || s0.steps != s1.steps ||
          s0.multicast != s1.multicast) {
        snprintf(why, 200, "grid %d offset %d blocks %d, %d step %d: the two walks disagree", grid, offset, b, b + 1, k);
        return false;
      }
      if (!s0.has_self && !s0.has_peer) break;
      if (s0.has_self) seen[f0 + k * grid]++;
      if (s1.has_self) seen[f1 + k * grid]++;
      if (expect_all && s0.has_self && s0.has_peer && !s0.multicast) {
        snprintf(why, 200, "grid %d offset %d blocks %d, %d step %d: units %d, %d do not share B", grid, offset, b,
                 b + 1, k, f0 + k * grid, f1 + k * grid);
        return false;
      }
      if (s0.multicast)
        for (int i = 0; i < s0.steps; ++i) {
          std::vector<int> b0, b1;
          hg::for_each_box<Shape, TA, TB>(s0.self, s0.self.kb0 + i, [&](int op, uint32_t off, int c0, int c1) {
            if (op == 1) b0.insert(b0.end(), {(int)off, c0, c1});
          });
          hg::for_each_box<Shape, TA, TB>(s1.self, s1.self.kb0 + i, [&](int op, uint32_t off, int c0, int c1) {
            if (op == 1) b1.insert(b1.end(), {(int)off, c0, c1});
          });
          if (b0 != b1) {
            snprintf(why, 200, "grid %d blocks %d, %d step %d: multicast over different B boxes", grid, b, b + 1, k);
            return false;
          }
        }
    }
  }
  for (int u = 0; u < plan.units; ++u)
    if (seen[u] != 1) {
      snprintf(why, 200, "grid %d offset %d: unit %d walked %d times", grid, offset, u, seen[u]);
      return false;
    }
  return true;
}

template <class Shape, bool TA, bool TB>
void run_pairs(const char* tile_name) {
  struct Case {
    int m, n, k, splits, grid, offset;
    bool all;
  };
  // pairs sharing B (even tile-rows, no split-K, even offset), odd tile-rows,
  // split-K, an odd offset, more blocks than units, a grid smaller than the units
  const Case cases[] = {{1024, 4096, 1024, 1, 132, 0, true}, {2048, 2048, 8192, 1, 66, 0, true},
                        {129, 300, 200, 1, 132, 86, true},   {300, 256, 256, 1, 132, 0, false},
                        {1024, 256, 4096, 4, 132, 0, false}, {1024, 4096, 1024, 1, 132, 91, false},
                        {128, 64, 64, 1, 8, 0, false},       {640, 520, 1000, 3, 6, 2, false}};
  for (const Case& c : cases) {
    char why[256] = "";
    char name[160];
    snprintf(name, sizeof(name), "pair_%s_%s%s_%dx%dx%d_s%d_g%d_o%d", tile_name, TA ? "T" : "N", TB ? "T" : "N",
             c.m, c.n, c.k, c.splits, c.grid, c.offset);
    // The cases' flags are for 128-row tiles; 64-row ones have other tile-rows.
    const bool all = Shape::BM == 128 ? c.all
                                      : hg::pairs_share_b((c.m + Shape::BM - 1) / Shape::BM, c.splits) && c.offset % 2 == 0;
    const bool ok = pair_walks_agree<Shape, TA, TB>(c.m, c.n, c.k, c.splits, c.grid, c.offset, all, why);
    tktest::report(ok, name, ok ? nullptr : "%s", why);
  }
  // choose_plan's pair_req: pairs only where they share B, else the unpaired plan
  for (const Case& c : cases) {
    if (c.offset != 0) continue;
    const hg::Plan pp = hg::choose_plan(c.m, c.n, c.k, 132, -1, c.splits, 2, 1);
    const hg::Plan alone = hg::choose_plan(c.m, c.n, c.k, 132, -1, c.splits, 2, 0);
    const bool want = hg::pairs_share_b(alone.tiles_m, alone.splits);
    char name[160];
    snprintf(name, sizeof(name), "pair_plan_%s_%s%s_%dx%dx%d_s%d", tile_name, TA ? "T" : "N", TB ? "T" : "N", c.m,
             c.n, c.k, c.splits);
    const bool ok = pp.pair == (want ? 1 : 0) && alone.pair == 0 && (!pp.pair || pp.grid % 2 == 0);
    tktest::report(ok, name, ok ? nullptr : "pair %d (want %d), grid %d", pp.pair, want, pp.grid);
  }
}

template <class Shape, bool TA, bool TB>
void run_layout(const char* tile_name, tktest::Rng& rng) {
  run_pairs<Shape, TA, TB>(tile_name);
  struct Case {
    int m, n, k, splits;
  };
  // tails in every dimension, K of one step, several steps, split-K
  const Case cases[] = {{1, 1, 1, 1},     {130, 70, 136, 1},  {128, 256, 64, 1},
                        {257, 300, 200, 1}, {200, 264, 640, 3}, {129, 65, 1000, 4}};
  for (const Case& c : cases) {
    char why[256] = "";
    char name[160];
    snprintf(name, sizeof(name), "emulate_%s_%s%s_%dx%dx%d_s%d", tile_name, TA ? "T" : "N",
             TB ? "T" : "N", c.m, c.n, c.k, c.splits);
    const bool ok = emulate<Shape, TA, TB>(c.m, c.n, c.k, c.splits, rng, why);
    tktest::report(ok, name, ok ? nullptr : "%s", why);
  }
}

template <class Shape>
void run_tile(tktest::Rng& rng) {
  char name[48];
  if (Shape::STAGE_BYTES == Shape::LOAD_BYTES)
    snprintf(name, sizeof(name), "%dx%d", Shape::BM, Shape::BN);
  else  // in a kernel of wider tiles: their stages and stride
    snprintf(name, sizeof(name), "%dx%d-stride%d", Shape::BM, Shape::BN, Shape::STAGE_BYTES);
  run_layout<Shape, false, false>(name, rng);
  run_layout<Shape, false, true>(name, rng);
  run_layout<Shape, true, false>(name, rng);
  run_layout<Shape, true, true>(name, rng);
}

}  // namespace

int main() {
  tktest::Rng rng(12345);
  char why[256] = "";
  tktest::report(fragment_is_bijection<32>(why), "fragment_bijection_n32", "%s", why);
  tktest::report(fragment_is_bijection<64>(why), "fragment_bijection_n64", "%s", why);
  tktest::report(fragment_is_bijection<128>(why), "fragment_bijection_n128", "%s", why);
  tktest::report(fragment_is_bijection<256>(why), "fragment_bijection_n256", "%s", why);
  // Every tile of the megakernel at this build's consumers (TK_WGMMA_CONSUMERS:
  // the test builds it for 2 and for 1); 256-wide tiles need two.
  if constexpr (hg::kConsumers == 2) run_tile<hg::TileById<0>::type>(rng);
  run_tile<hg::TileById<1>::type>(rng);
  run_tile<hg::TileById<2>::type>(rng);
  run_tile<hg::TileById<3>::type>(rng);
  // Narrower gemms of a kernel whose widest tile is 128 wide (its 6 stages and stride).
  constexpr int kStride128 = hg::TileById<1>::type::STAGE_BYTES;
  run_tile<hg::TileShape<32, 6, kStride128>>(rng);
  run_tile<hg::TileShape<64, 6, kStride128>>(rng);
  return tktest::finish();
}
