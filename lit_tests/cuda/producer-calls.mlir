// -t cuda, producer_calls (target.wgmma_producer_calls) on sched-to-tile's
// engine.mlir: a grid kernel of two wgmma gemms, 64-wide tiles. With it each
// grid_gemm_units call takes a sixth template argument, kProducerCall, and the
// producer warpgroup's loop is one out-of-line function for each layout
// (tk::hopper::produce_units_call) instead of a copy inlined at every gemm;
// without it the calls are as before. Tiles 256 wide never take it (their
// producer runs after setmaxnreg.dec; tests/test_producer_calls.py).
// RUN: trainkernel-opt %S/../passes/sched-to-tile/engine.mlir -p 'sched-to-tile' -t 'cuda{producer_calls=on}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/../passes/sched-to-tile/engine.mlir -p 'sched-to-tile' -t 'cuda{producer_calls=off}' | filecheck %s --check-prefix=OFF

// ON:       using TkShape = tk::hopper::TileById<2>::type;
// ON:       tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true, true>(&p.maps[0], &p.maps[1], tk_gp,
// ON:       tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, true, true, true>(&p.maps[2], &p.maps[3], tk_gp,

// OFF:      tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true>(&p.maps[0], &p.maps[1], tk_gp,
// OFF:      tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, true, true>(&p.maps[2], &p.maps[3], tk_gp,
