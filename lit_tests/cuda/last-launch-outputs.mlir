// -t cuda, last_outputs (target.grid_last_launch_outputs) on online's schedule as
// a grid kernel (resident-exchange.mlir without tile-resident). In a chain of
// launches (capture) only the last launch's outputs reach the caller: the loss
// (a full sum, phase 3) runs in the last launch alone, and every output that
// is not state and that nothing in the kernel reads (the loss, the four
// returned gradients) is stored by it alone, as are the squared errors only
// the loss reads. The state's stores (b0..b3) run every launch. The launcher
// exports tk_launch_chain; tk_launch is a chain of one (its only launch is the
// last).
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile' -t 'cuda{last_outputs=on grid_casts=off}' | filecheck %s
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile' -t 'cuda{last_outputs=off grid_casts=off}' | filecheck %s --check-prefix=OFF

// CHECK:       const bool tk_first = p.first, tk_more = p.more, tk_parity = p.parity;
// CHECK:       if (!tk_more) [[SQ:t[0-9]+]][(i)*16 + (j)] = tk::from_float<float>(
// CHECK:       // ---- phase 3
// CHECK-NEXT:  if (!tk_more)  // only outputs read it: a chain's last launch alone
// CHECK-NEXT:  { // tile.reduce tk.sum over 1024 elements into 1 outputs
// CHECK:       if (!tk_more) b6_out0[0] =
// CHECK:       if (!tk_more) b9_out3[
// CHECK-NOT:   if (!tk_more) b2[
// CHECK:       b2[(i)*16 + (j)] = tk::from_float<float>(
// CHECK:       extern "C" int tk_launch_chain(

// OFF-NOT:     tk_more
