// -t cuda, preissue (target.preissue_ready_operands, perf-log step 93) on online's
// schedule as a grid kernel (resident-exchange.mlir without tile-resident, wgmma).
// Before the grid barrier in front of each phase, the producer thread copies the
// operands of the phase's first wgmma gemm that no op writes since the last grid
// barrier (tk::hopper::preissue_operands; bit 0 A, bit 1 B) into its first unit's
// stages; the kernel defines TK_PREISSUE_READY_OPERANDS before the header. Phase 1
// (h = x @ W1): x is the batch, W1's cast is written by phase 0 every launch, so A
// alone; with the casts carried through a chain (grid_casts) phase 0 casts in the
// first launch alone, so B too in the later launches. Phases 2 and 3 read weights'
// casts (B), phase 4 (dW1 = x^T @ dh) the batch (A). Off: nothing.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128 cols=64}' -t 'cuda{preissue=on grid_casts=off last_outputs=off}' | filecheck %s
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128 cols=64}' -t 'cuda{preissue=on grid_casts=on last_outputs=off}' | filecheck %s --check-prefix=CHAIN
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128 cols=64}' -t 'cuda{preissue=off grid_casts=off last_outputs=off}' | filecheck %s --check-prefix=OFF

// CHECK:       #define TK_PREISSUE_READY_OPERANDS 1
// CHECK-NEXT:  #include "tk/hopper_gemm.cuh"
// CHECK:       // ---- phase 0
// CHECK:       tk::hopper::preissue_operands<__nv_bfloat16, TkShape, false, false>(&p.maps[0], &p.maps[1], tk::hopper::GemmParams{64, 256, 128, 1, 4, 1, 2, 2, nullptr, nullptr}, tk_hbase, (int)blockIdx.x, tk_pipe, 1u);  // phase 1's ready operands (plan_preissue)
// CHECK-NEXT:  tk::hopper::fence_proxy_async_global();
// CHECK-NEXT:  tk::grid_sync();
// CHECK:       // ---- phase 1
// CHECK:       tk::hopper::preissue_operands<__nv_bfloat16, TkShape, false, false>(&p.maps[2], &p.maps[3], {{.*}}, tk_pipe, 2u);  // phase 2's
// CHECK:       // ---- phase 2
// CHECK:       tk::hopper::preissue_operands<__nv_bfloat16, TkShape, false, true>(&p.maps[4], &p.maps[5], {{.*}}, (int)((blockIdx.x + G - 1 % G) % G), tk_pipe, 2u);  // phase 3's
// CHECK:       // ---- phase 3
// CHECK:       tk::hopper::preissue_operands<__nv_bfloat16, TkShape, true, false>(&p.maps[8], &p.maps[9], {{.*}}, tk_pipe, 1u);  // phase 4's
// CHECK:       // ---- phase 4
// CHECK-NOT:   preissue_operands

// CHAIN:       tk::hopper::preissue_operands<{{.*}}>(&p.maps[0], &p.maps[1], {{.*}}, tk_pipe, (tk_first ? 1u : 3u));  // phase 1's
// CHAIN:       tk::hopper::preissue_operands<{{.*}}>(&p.maps[tk_parity ? 10 : 2], &p.maps[tk_parity ? 11 : 3], {{.*}}, tk_pipe, 2u);  // phase 2's

// OFF-NOT:     TK_PREISSUE
// OFF-NOT:     preissue_operands
