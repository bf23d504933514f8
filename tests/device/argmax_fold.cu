// Host program (no GPU): the argmax fold of tk/reduce.cuh in the orders the
// generated kernels use, driven by tests/test_argmax.py, which compares every
// answer with torch.argmax.
//
// stdin:  R N, then R*N float32 bit patterns (hex), row-major
// stdout: per row, one line "seq block128 warp32" with the index each order
//         gives (and " lanes-disagree" if two lanes of a butterfly ended apart):
//   seq      one thread folds the row in order (a column-mode reduction);
//   block128 the grid printer's tile.reduce and the resident block mode:
//            thread t of 128 folds t, t+128, ... (tk::argmax_step), then
//            block_argmax's two XOR butterflies (the lanes of each warp, then
//            the 4 warp partials padded with empty pairs);
//   warp32   the resident warp mode: lane l folds l, l+32, ..., one butterfly.
// The butterflies are emulated lane by lane with the header's own
// tk::argmax_step (the combine the device code calls after each shuffle).
#include <cstdio>
#include <cstring>
#include <vector>

#include "tk/reduce.cuh"

struct Pair {
  float v;
  int i;
};

static void butterfly(std::vector<Pair>& lanes) {  // 32 lanes, __shfl_xor_sync order
  for (int offset = 16; offset > 0; offset >>= 1) {
    std::vector<Pair> before = lanes;
    for (int l = 0; l < 32; ++l) tk::argmax_step(lanes[l].v, lanes[l].i, before[l ^ offset].v, before[l ^ offset].i);
  }
}

static bool lanes_agree(const std::vector<Pair>& lanes) {
  for (const Pair& p : lanes)
    if (p.i != lanes[0].i) return false;
  return true;
}

static int strided(const std::vector<float>& row, int threads, bool* agree) {
  std::vector<Pair> t(threads, Pair{-INFINITY, -1});
  for (int k = 0; k < threads; ++k)
    for (int r = k; r < (int)row.size(); r += threads) tk::argmax_step(t[k].v, t[k].i, row[r], r);
  const int nwarps = threads / 32;
  std::vector<Pair> partial(nwarps);
  for (int w = 0; w < nwarps; ++w) {
    std::vector<Pair> lanes(t.begin() + 32 * w, t.begin() + 32 * (w + 1));
    butterfly(lanes);
    *agree = *agree && lanes_agree(lanes);
    partial[w] = lanes[0];
  }
  if (nwarps == 1) return partial[0].i;
  std::vector<Pair> lanes(32, Pair{-INFINITY, -1});
  for (int w = 0; w < nwarps; ++w) lanes[w] = partial[w];
  butterfly(lanes);
  *agree = *agree && lanes_agree(lanes);
  return lanes[0].i;
}

int main() {
  int rows = 0, n = 0;
  if (scanf("%d %d", &rows, &n) != 2) return 2;
  for (int r = 0; r < rows; ++r) {
    std::vector<float> row(n);
    for (int k = 0; k < n; ++k) {
      unsigned bits = 0;
      if (scanf("%x", &bits) != 1) return 2;
      memcpy(&row[k], &bits, 4);
    }
    float best = -INFINITY;
    int seq = -1;
    for (int k = 0; k < n; ++k) tk::argmax_step(best, seq, row[k], k);
    bool agree = true;
    const int block = strided(row, 128, &agree);
    const int warp = strided(row, 32, &agree);
    printf("%d %d %d%s\n", seq, block, warp, agree ? "" : " lanes-disagree");
  }
  return 0;
}
