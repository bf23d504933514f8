// Host program (no GPU): tk::hopper::apply_epilogue (the fragment walk) and
// the row epilogue (frag_to_rows + rows_epilogue through a scratch, as the
// megakernel's consumers run it, pass by pass) with a staged epilogue
// (tk/epilogue.cuh), driven by tests/test_epilogue_order.py. For every
// warpgroup thread t of a 64 x BN slab it records each load and store the
// epilogue makes, and checks:
//   - every in-bounds element is loaded once and stored once, no other;
//   - within a thread, each load comes before every store of its chunk, and
//     each element's load before its own store (what makes an in-place
//     update exact);
//   - an in-place SGD update (w -= lr * acc, the gradient stored too) gives
//     the bits of the per-element form.
// stdout: one line per case, "WALK BN M N ok run R" or "WALK BN M N FAIL <what> run R"
// (WALK: frag, rows, or pre: rows with the operands preloaded where they fit),
// R: the longest run of loads before a store (the chunk the tile staged); then
// "owner BN ok|FAIL": every scratch element a thread reads in the row walk
// was written by a thread of its own warp (what lets __syncwarp be the walk's
// only sync).
#include <cstdio>
#include <cstring>
#include <vector>

#include "tk/hopper_gemm.cuh"

static size_t longest_run;  // the longest run of loads before a store (the chunk)

struct Event {
  bool store;
  int i, j;
};

template <int BN, int ROWS, bool kGuard>
static const char* run_case(int M, int N) {
  const int rows = 64, row0 = 0, col0 = 0;
  std::vector<float> w0(rows * BN), acc_all(128 * (BN / 2));
  for (int k = 0; k < rows * BN; ++k) w0[k] = 0.25f * (float)((k * 37) % 101) - 3.0f;
  for (int k = 0; k < (int)acc_all.size(); ++k) acc_all[k] = 0.125f * (float)((k * 53) % 97) - 5.0f;
  std::vector<float> w_staged = w0, w_plain = w0, g_staged(rows * BN, 0.0f), g_plain(rows * BN, 0.0f);
  std::vector<int> loads(rows * BN, 0), stores(rows * BN, 0);
  const float lr = 0.001f;
  std::vector<std::vector<Event>> logs(128);
  auto acc_of = [&](int t, float (&acc)[BN / 2]) {
    for (int r = 0; r < BN / 2; ++r) acc[r] = acc_all[t * (BN / 2) + r];
  };
  auto staged_for = [&](std::vector<Event>& log) {
    return tk::staged_epilogue(
        [&](int i, int j) {
          log.push_back({false, i, j});
          tk::EpilogueLoads<1> l;
          l.v[0] = w_staged[i * BN + j];
          return l;
        },
        [&](int i, int j, float a, const tk::EpilogueLoads<1>& l) {
          log.push_back({true, i, j});
          g_staged[i * BN + j] = a;
          w_staged[i * BN + j] = l.v[0] - a * lr;
        });
  };
  using Loads = tk::EpilogueLoads<1>;
  // ROWS 2: the operands preloaded first where they fit (rows_preload_fits), as the consumers do.
  const bool preload = ROWS == 2 && tk::hopper::rows_preload_fits<BN, decltype(staged_for(logs[0]))>();
  std::vector<std::vector<Loads>> pre(128, std::vector<Loads>(BN / 2));
  if (preload) {
    for (int t = 0; t < 128; ++t) {
      Loads loaded[BN / 2];
      tk::hopper::rows_preload<BN, kGuard>(staged_for(logs[t]), loaded, t, row0, col0, M, N);
      for (int e = 0; e < BN / 2; ++e) pre[t][e] = loaded[e];
    }
  }
  if (ROWS) {  // pass by pass: every thread writes the scratch, then every thread reads it
    std::vector<float> scratch(64 * tk::hopper::kRowPitch, -1.0f);
    for (int c0 = 0; c0 < BN && col0 + c0 < N; c0 += tk::hopper::kRowCols) {
      for (int t = 0; t < 128; ++t) {
        float acc[BN / 2];
        acc_of(t, acc);
        tk::hopper::frag_to_rows<BN>(acc, scratch.data(), t, c0);
      }
      for (int t = 0; t < 128; ++t) {
        if (preload) {
          Loads loaded[BN / 2];
          for (int e = 0; e < BN / 2; ++e) loaded[e] = pre[t][e];
          tk::hopper::rows_store_preloaded<BN, kGuard>(staged_for(logs[t]), loaded, scratch.data(), t,
                                                       c0 / tk::hopper::kRowCols, row0, col0, M, N);
        } else {
          tk::hopper::rows_epilogue<BN, kGuard>(staged_for(logs[t]), scratch.data(), t, row0, col0 + c0, M, N);
        }
      }
    }
  }
  for (int t = 0; t < 128; ++t) {
    float acc[BN / 2];
    acc_of(t, acc);
    std::vector<Event>& log = logs[t];
    if (!ROWS) tk::hopper::apply_epilogue<BN>(staged_for(log), acc, t, row0, col0, M, N);
    auto plain = [&](int i, int j, float a) {
      const float old = w_plain[i * BN + j];
      g_plain[i * BN + j] = a;
      w_plain[i * BN + j] = old - a * lr;
    };
    tk::hopper::apply_epilogue<BN>(plain, acc, t, row0, col0, M, N);
    // A thread's log: runs of loads, each followed by the run of its stores.
    size_t k = 0;
    while (k < log.size()) {
      size_t l0 = k;
      while (k < log.size() && !log[k].store) ++k;
      size_t s0 = k;
      if (s0 - l0 > longest_run) longest_run = s0 - l0;
      while (k < log.size() && log[k].store) ++k;
      if (k - s0 != s0 - l0) return "a chunk stores other elements than it loads";
      for (size_t x = 0; x < s0 - l0; ++x)
        if (log[l0 + x].i != log[s0 + x].i || log[l0 + x].j != log[s0 + x].j) return "store order differs from load order";
    }
    for (const Event& e : log) {
      if (e.i >= M || e.j >= N) return "out-of-bounds element touched";
      (e.store ? stores : loads)[e.i * BN + e.j] += 1;
    }
  }
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < BN; ++j) {
      const int want = (i < M && j < N) ? 1 : 0;
      if (loads[i * BN + j] != want || stores[i * BN + j] != want) return "an element loaded or stored other than once";
    }
  if (std::memcmp(w_staged.data(), w_plain.data(), w0.size() * sizeof(float)) ||
      std::memcmp(g_staged.data(), g_plain.data(), w0.size() * sizeof(float)))
    return "in-place update differs from the per-element form";
  return nullptr;
}

template <int BN, int ROWS, bool kGuard = true>
static void report(int M, int N) {
  longest_run = 0;
  const char* err = run_case<BN, ROWS, kGuard>(M, N);
  const char* walk = ROWS == 2 ? (kGuard ? "pre" : "pre-whole") : ROWS ? (kGuard ? "rows" : "rows-whole") : "frag";
  std::printf("%s %d %d %d %s%s run %zu\n", walk, BN, M, N, err ? "FAIL " : "ok", err ? err : "", longest_run);
}

template <int ROWS>
static void report_all() {
  for (int m : {64, 37, 1}) {
    for (int n : {64, 33, 1}) report<64, ROWS>(m, n);
    for (int n : {128, 101, 2, 1}) report<128, ROWS>(m, n);
    for (int n : {256, 129, 1}) report<256, ROWS>(m, n);
  }
  if (ROWS) {  // a whole slab without bounds tests (kGuard = false), as the consumers run whole tiles
    report<64, ROWS, false>(64, 64);
    report<128, ROWS, false>(64, 128);
    report<256, ROWS, false>(64, 256);
  }
}

// Column partials (tk::hopper::ColumnPartials) through the row walks: the
// staged epilogue (PLAIN 0; preloaded where it fits, PRE 1) or a plain
// functor (PLAIN 1) returns the value it stores; every run of 16 rows of an
// in-bounds column gets the fp32 sum of its in-bounds values in row order
// (the bits of that loop), and no other partial is written.
template <int BN, bool PLAIN, bool PRE, bool kGuard>
static const char* partials_case(int M, int N) {
  const int rows = 64, row0 = 0, col0 = 0, runs = rows / tk::hopper::kColumnPartialRows;
  std::vector<float> acc_all(128 * (BN / 2)), stored(rows * BN, 0.0f), P(runs * BN, -7.0f);
  for (int k = 0; k < (int)acc_all.size(); ++k) acc_all[k] = 0.37f * (float)((k * 53) % 97) - 17.0f;
  auto staged = tk::hopper::column_partials(
      tk::staged_epilogue([&](int i, int j) { tk::EpilogueLoads<1> l; l.v[0] = 0.5f * (float)(i - j); return l; },
                          [&](int i, int j, float a, const tk::EpilogueLoads<1>& l) {
                            const float v = a * 1.25f + l.v[0];
                            stored[i * BN + j] = v;
                            return v;
                          }),
      P.data(), BN);
  auto plain = tk::hopper::column_partials(
      [&](int i, int j, float a) {
        const float v = a * 1.25f + 0.5f * (float)(i - j);
        stored[i * BN + j] = v;
        return v;
      },
      P.data(), BN);
  using Loads = tk::EpilogueLoads<1>;
  const bool preload = PRE && tk::hopper::rows_preload_fits<BN, decltype(staged)>();
  if (PRE && !preload) return "skip";
  std::vector<std::vector<Loads>> pre(128, std::vector<Loads>(BN / 2));
  if (preload)
    for (int t = 0; t < 128; ++t) {
      Loads loaded[BN / 2];
      tk::hopper::rows_preload<BN, kGuard>(staged, loaded, t, row0, col0, M, N);
      for (int e = 0; e < BN / 2; ++e) pre[t][e] = loaded[e];
    }
  std::vector<float> scratch(64 * tk::hopper::kRowPitch, -1.0f);
  for (int c0 = 0; c0 < BN && col0 + c0 < N; c0 += tk::hopper::kRowCols) {
    for (int t = 0; t < 128; ++t) {
      float acc[BN / 2];
      for (int r = 0; r < BN / 2; ++r) acc[r] = acc_all[t * (BN / 2) + r];
      tk::hopper::frag_to_rows<BN>(acc, scratch.data(), t, c0);
    }
    for (int t = 0; t < 128; ++t) {
      if (PLAIN) {
        tk::hopper::rows_epilogue<BN, kGuard>(plain, scratch.data(), t, row0, col0 + c0, M, N);
      } else if (preload) {
        Loads loaded[BN / 2];
        for (int e = 0; e < BN / 2; ++e) loaded[e] = pre[t][e];
        tk::hopper::rows_store_preloaded<BN, kGuard>(staged, loaded, scratch.data(), t, c0 / tk::hopper::kRowCols,
                                                     row0, col0, M, N);
      } else {
        tk::hopper::rows_epilogue<BN, kGuard>(staged, scratch.data(), t, row0, col0 + c0, M, N);
      }
    }
  }
  for (int g = 0; g < runs; ++g)
    for (int j = 0; j < BN; ++j) {
      const int i0 = g * tk::hopper::kColumnPartialRows;
      if (i0 >= M || j >= N) {
        if (P[g * BN + j] != -7.0f) return "a partial written outside the product";
        continue;
      }
      float want = 0.0f;
      for (int i = i0; i < i0 + tk::hopper::kColumnPartialRows && i < M; ++i) want += stored[i * BN + j];
      if (std::memcmp(&want, &P[g * BN + j], sizeof(float))) return "a partial is not the row-order sum of its stores";
    }
  return nullptr;
}

template <int BN, bool PLAIN, bool PRE, bool kGuard = true>
static void report_partials(int M, int N) {
  const char* err = partials_case<BN, PLAIN, PRE, kGuard>(M, N);
  if (err && !std::strcmp(err, "skip")) return;
  std::printf("partials-%s%s %d %d %d %s%s\n", PLAIN ? "plain" : PRE ? "pre" : "staged", kGuard ? "" : "-whole", BN,
              M, N, err ? "FAIL " : "ok", err ? err : "");
}

template <bool PLAIN, bool PRE>
static void report_partials_all() {
  for (int m : {64, 37, 16, 1}) {
    for (int n : {64, 33}) report_partials<64, PLAIN, PRE>(m, n);
    for (int n : {128, 101}) report_partials<128, PLAIN, PRE>(m, n);
    report_partials<256, PLAIN, PRE>(m, 129);
  }
  report_partials<64, PLAIN, PRE, false>(64, 64);
  report_partials<256, PLAIN, PRE, false>(64, 256);
}

// Each pass's scratch filled by frag_to_rows with the writer's thread index,
// then read back at every thread's rows_scratch_index.
template <int BN>
static void report_owner() {
  const int group = 32;  // a warp
  bool ok = true;
  for (int c0 = 0; c0 < BN; c0 += tk::hopper::kRowCols) {
    std::vector<float> scratch(64 * tk::hopper::kRowPitch, -1.0f);
    for (int t = 0; t < 128; ++t) {
      float acc[BN / 2];
      for (int r = 0; r < BN / 2; ++r) acc[r] = (float)t;
      tk::hopper::frag_to_rows<BN>(acc, scratch.data(), t, c0);
    }
    for (int t = 0; t < 128; ++t)
      for (int k = 0; k < tk::hopper::kRowsPerThread; ++k) {
        const float writer = scratch[tk::hopper::rows_scratch_index(t, k)];
        ok = ok && writer >= 0.0f && (int)writer / group == t / group;
      }
  }
  std::printf("owner %d %s\n", BN, ok ? "ok" : "FAIL");
}

int main() {
  report_all<0>();
  report_all<1>();
  report_all<2>();
  report_owner<64>();
  report_owner<128>();
  report_owner<256>();
  report_partials_all<false, false>();
  report_partials_all<false, true>();
  report_partials_all<true, false>();
  return 0;
}
