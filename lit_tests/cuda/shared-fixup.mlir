// -t cuda, shared_fixup (target.split_k_shared_fixup) on the split-K schedule
// of passes/sched-to-tile/split-k.mlir on the wgmma engine (grid 64: both
// gemms split 8 ways). A split gemm's call gains grid_gemm_units' seventh
// template argument, kSharedFixup (the sixth, kProducerCall, spelled out):
// the slices share the fix-up (tk::hopper::splitk_shared_fixup). An unsplit
// gemm prints as before; without the switch nothing changes. keep_own
// (target.split_k_keep_own_partial) defines TK_SPLITK_KEEP_OWN before the
// header where a gemm splits and the fix-up is shared, and nowhere else;
// tagged (target.split_k_tagged_partials, on by default: the other lines turn it
// off) defines TK_SPLITK_TAGGED the same way.
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=64 engine=wgmma rows=128 cols=64}' -t 'cuda{tagged=off shared_fixup=on}' | filecheck %s
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=64 engine=wgmma rows=128 cols=64}' -t 'cuda{tagged=off shared_fixup=on producer_calls=on}' | filecheck %s --check-prefix=CALLS
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=64 engine=wgmma rows=128 cols=64}' -t 'cuda{tagged=off shared_fixup=off}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=1 engine=wgmma rows=128 cols=64}' -t 'cuda{tagged=off shared_fixup=on}' | filecheck %s --check-prefix=ONE
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=64 engine=wgmma rows=128 cols=64}' -t 'cuda{tagged=off shared_fixup=on keep_own=on}' | filecheck %s --check-prefix=KEEP
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=64 engine=wgmma rows=128 cols=64}' -t 'cuda{tagged=off shared_fixup=off keep_own=on}' | filecheck %s --check-prefix=NOKEEP
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=1 engine=wgmma rows=128 cols=64}' -t 'cuda{tagged=off shared_fixup=on keep_own=on}' | filecheck %s --check-prefix=NOKEEP
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=64 engine=wgmma rows=128 cols=64}' -t 'cuda{tagged=off shared_fixup=on}' | filecheck %s --check-prefix=NOKEEP
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=64 engine=wgmma rows=128 cols=64}' -t 'cuda{shared_fixup=on tagged=on}' | filecheck %s --check-prefix=TAGGED
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=64 engine=wgmma rows=128 cols=64}' -t 'cuda{shared_fixup=off tagged=on}' | filecheck %s --check-prefix=NOTAG
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=1 engine=wgmma rows=128 cols=64}' -t 'cuda{shared_fixup=on tagged=on}' | filecheck %s --check-prefix=NOTAG
// RUN: trainkernel-opt %S/../passes/sched-to-tile/split-k.mlir -p 'sched-to-tile{grid=64 engine=wgmma rows=128 cols=64}' -t 'cuda{tagged=off shared_fixup=on}' | filecheck %s --check-prefix=NOTAG

// CHECK:      split-K: 8 slices of 512
// CHECK:      tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true, false, true>(&p.maps[0], &p.maps[1], tk_gp,
// CHECK:      split-K: 8 slices of 512
// CHECK:      tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true, false, true>(&p.maps[2], &p.maps[3], tk_gp,

// CALLS:      tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true, true, true>(&p.maps[0], &p.maps[1], tk_gp,

// OFF:        tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true>(&p.maps[0], &p.maps[1], tk_gp,
// OFF:        tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true>(&p.maps[2], &p.maps[3], tk_gp,

// One block: no split, nothing to share.
// ONE-NOT:    split-K
// ONE:        tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true>(&p.maps[0], &p.maps[1], tk_gp,

// KEEP:       #define TK_SPLITK_KEEP_OWN 1
// KEEP-NEXT:  #include "tk/hopper_gemm.cuh"
// KEEP:       tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true, false, true>(&p.maps[0], &p.maps[1], tk_gp,

// NOKEEP-NOT: TK_SPLITK_KEEP_OWN

// TAGGED:     #define TK_SPLITK_TAGGED 1
// TAGGED-NEXT: #include "tk/hopper_gemm.cuh"
// TAGGED-NOT: TK_SPLITK_KEEP_OWN
// TAGGED:     tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true, false, true>(&p.maps[0], &p.maps[1], tk_gp,

// NOTAG-NOT:  TK_SPLITK_TAGGED
