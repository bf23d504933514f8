// -t cuda, last_step_outputs (target.last_step_outputs) on the online schedule of
// resident-exchange.mlir: the step loop stores the loss from its last step alone,
// so the loss's block sum runs only when no step follows (`if (!tk_more)`), and the
// squared errors it sums, an exchange's second output, are stored and published to
// the other ranks by the last step alone. The exchange itself (and its loss
// gradient) runs every step. Off: every step runs everything.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{last_step_outputs=on prefetch_inputs=off async_pushes=off async_publish=off}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{last_step_outputs=off prefetch_inputs=off async_pushes=off async_publish=off}' | filecheck %s --check-prefix=OFF

// ON:       tk::exchange<kCluster, tk::SumOp>(part, 1024, rank, [&](int e, float acc) {
// ON:         if (!tk_more) [[SQ:s[0-9]+]][(i)*20 + (j)] = tk::from_float<float>(
// ON-NEXT:    [[DY:s[0-9]+]][(i)*24 + (j)] = v{{[0-9]+}}_bits;
// ON:         if (!tk_more) tk::at_rank([[SQ]], r)
// ON-NEXT:    tk::at_rank([[DY]], r)
// ON:       if (!tk_more)  // only the last step's outputs read it (plan_last_step_ops)
// ON-NEXT:  { // tile.reduce tk.sum split -1 (block): 1024 elements into each of 1 outputs
// ON:         accum = __fadd_rn(accum, tk::to_float([[SQ]][
// ON-NOT:   plan_last_step_ops

// OFF-NOT:  if (!tk_more) s
// OFF-NOT:  plan_last_step_ops
