// -t cuda, rounded_bits (target.store_rounded_bits, perf-log step 96) on online's
// schedule as a grid kernel (resident-exchange.mlir without tile-resident, wgmma).
// A value rounded to bf16 keeps its bits under a name of its own, and a store of
// it into a bf16 buffer writes those bits, not a second rounding of the widened
// float: the weights' cast maps, and the forward gemm's epilogue (the product, the
// bias sum, the relu, whose bits are the stored activation). relu and its
// gradient return an operand or +0: they select the operand's kept bits or
// tk::zero's instead of rounding the selected float again. fp32 values (the
// loss, dW2's fp32 output) are stored as before. Off: one rounding expression a
// value and `tk::from_float` at every store, as always.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile' -t 'cuda{rounded_bits=on}' | filecheck %s
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile' -t 'cuda{rounded_bits=off}' | filecheck %s --check-prefix=OFF

// CHECK:       const __nv_bfloat16 v1_bits = tk::from_float<__nv_bfloat16>(tk_l0[u]);
// CHECK-NEXT:  const float v1 = tk::to_float(v1_bits);
// CHECK-NEXT:  t11[(i0)*256 + (i1)] = v1_bits;
// CHECK:       t16[(i0)*16 + (i1)] = tk::from_float<float>(v1);
// CHECK:       const __nv_bfloat16 mmv_bits = tk::from_float<__nv_bfloat16>(acc);
// CHECK-NEXT:  const float mmv = tk::to_float(mmv_bits);
// CHECK-NEXT:  const __nv_bfloat16 v1_bits = tk::from_float<__nv_bfloat16>(__fadd_rn(mmv, tk_l.v[0]));
// CHECK-NEXT:  const float v1 = tk::to_float(v1_bits);
// CHECK-NEXT:  const __nv_bfloat16 v2_bits = ((v1) > 0.0f || (v1) != (v1) ? (v1_bits) : tk::zero<__nv_bfloat16>());
// CHECK-NEXT:  const float v2 = tk::to_float(v2_bits);
// CHECK-NEXT:  t13[(i)*256 + (j)] = v2_bits;
// CHECK:       b6_out0[0] = tk::from_float<float>(v2);
// CHECK:       const __nv_bfloat16 v1_bits = ((tk_l.v[0]) <= 0.0f ? tk::zero<__nv_bfloat16>() : (mmv_bits));

// OFF-NOT:     _bits
// OFF:         const float v1 = tk::to_float(tk::from_float<__nv_bfloat16>(tk_l0[u]));
// OFF-NEXT:    t11[(i0)*256 + (i1)] = tk::from_float<__nv_bfloat16>(v1);
// OFF:         const float mmv = tk::to_float(tk::from_float<__nv_bfloat16>(acc));
// OFF-NOT:     _bits
