// -t cuda: tk.argmax in a resident cluster (the companion of argmax.mlir).
// A resident cluster of 2 may split an argmax over a kept axis: block `rank`
// does rows 4*rank.. of its slice of the staged input (split 0), folding the
// global index of the reduced axis. Two blocks divide 8 rows: no block's slice
// is short, so no guard (target.static_slices); with static_slices=off, the guard.
// RUN: trainkernel-opt %s -t 'cuda{thread_rows=off static_slices=off}' | filecheck %s --check-prefix=SPLIT
// RUN: trainkernel-opt %s -t 'cuda{thread_rows=off}' | filecheck %s --check-prefix=WHOLE
// WHOLE:       { // tile.reduce tk.argmax split 0 (warp): 10 elements into each of 4 outputs
// WHOLE:         const int o0 = ol0 + 4 * rank;
// WHOLE-NOT:     continue;
// WHOLE:         tk::warp_argmax(accum, arg);
// SPLIT-LABEL: static __device__ __noinline__ void tk_step(
// SPLIT:       { // tile.reduce tk.argmax split 0 (warp): 10 elements into each of 4 outputs
// SPLIT:         for (int o = warp; o < 4; o += 4) {
// SPLIT-NEXT:      const int ol0 = (o);
// SPLIT-NEXT:      const int o0 = ol0 + 4 * rank;
// SPLIT-NEXT:      if (o0 >= 8) continue;
// SPLIT:           tk::argmax_step(accum, arg, tk::to_float({{s[0-9]+}}_s[((o0) - 4 * rank)*10 + (ql0)]), ql0);
// SPLIT:           tk::warp_argmax(accum, arg);
// SPLIT-NEXT:      if (lane == 0) {
// SPLIT-NEXT:        const long long rv = arg;
// SPLIT-NEXT:        b{{[0-9]+}}_o[(o0)] = (long long)(rv);
tile.kernel @split(%a: memref<8x10xf32>, %o: memref<8xi64>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 256 : i64, cluster = 2 : i64} {
  %s = tile.smem stage %a offset 0 split 0 : memref<8x10xf32>
  tile.reduce ins(%s : memref<8x10xf32>) outs(%o : memref<8xi64>) config {items = 8 : i64, offset = 0 : i64, rows = 1 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<8x10xf32>):
    %r = tk.argmax %x axes [1] : tensor<8x10xf32> -> tensor<8xi64>
    tk.yield %r : tensor<8xi64>
  }
}
