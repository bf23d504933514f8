// -t cuda, cast_copies (target.carried_cast_copies) on online's schedule
// (resident-exchange.mlir: 64 x 128-256-16 in bf16, a cluster of 16). W2's bf16
// copy (s20) is read by dh = dy @ W2^T in phase 3, the phase whose dW2 epilogue
// updates W2: its own home cannot carry the next step's cast, so without copies
// the map casts W2 again every step. With copies, the home gets a second copy
// past the placement's 88256 bytes (its 768-byte slice), the step's parity
// picks which one the step reads (s20) and which one the update writes for the
// next step (s20_next), and the cast runs in the first step alone. The casts
// that their own homes carry (W1, b1, b2) are unchanged.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{cast_copies=on}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{cast_copies=off}' | filecheck %s --check-prefix=OFF
// RUN: not trainkernel-opt %S/resident-exchange.mlir -t 'cuda{cast_copies=both}' 2>&1 | filecheck %s --check-prefix=BAD

// ON:       static constexpr int kSmem = 89024;
// ON:       __nv_bfloat16* s20 = (__nv_bfloat16*)(smem + (tk_odd ? 88256 : 55552));
// ON-NEXT:  __nv_bfloat16* s20_next = (__nv_bfloat16*)(smem + (tk_odd ? 55552 : 88256));
// (W1's and b1's carried casts first, then W2's)
// ON:       if (tk_first)  // carried from the previous step (plan_carried_casts)
// ON:       if (tk_first)  // carried from the previous step (plan_carried_casts)
// ON:       if (tk_first)  // carried from the previous step (plan_carried_casts)
// ON-NEXT:  { // tile.map split 0: 256 elements per block
// ON:       s20[((u0g0) - 16 * rank)*24 + (u0l1)] = v1_bits;
// ON:       tk::smem_gemm<{{.*}}>(64, 16, 16, s24, 24, 1, s20, 1, 24,
// ON:       if (tk_more) s14[((i) - 16 * rank)*20 + (j)] = tk::from_float<float>(vals[1]);
// ON-NEXT:  if (tk_more) s20_next[((i) - 16 * rank)*24 + (j)] = tk::from_float<__nv_bfloat16>(vals[1]);
// ON-NOT:   s20_next[
// ON-NOT:   s20[

// OFF:      static constexpr int kSmem = 88256;
// OFF-NOT:  s20_next
// OFF:      __nv_bfloat16* s20 = (__nv_bfloat16*)(smem + 55552);
// OFF:      if (tk_first)  // carried from the previous step (plan_carried_casts)
// OFF:      if (tk_first)  // carried from the previous step (plan_carried_casts)
// OFF-NOT:  if (tk_first)  // carried
// OFF:      { // tile.map split 0: 256 elements per block
// OFF-NOT:  s20_next

// BAD: -t cuda: cast_copies must be target, on or off, got 'both'
