// -t cuda of a grid kernel whose phases tile-item-flags joined by `tile.sync
// items` (online's schedule as a grid kernel, as grid-carried-casts.mlir):
// the flags of the items something waits for, the launch counter, and per op
// its dependency tables (rows: each item's first entry; entries: a range's
// first flag | arrivals << 24, and the flags up to its end). Each map or
// reduce item waits for its table, then every warp arrives on the item's flag
// as it leaves it; a wgmma gemm passes tk::hopper::UnitFlags (its producer's
// table, its consumers' table, its first flag; none where it neither waits
// nor is waited for); an op a launch skips (the chain's first-only casts)
// still arrives; the last block out advances the counter. No grid barrier is
// left between the joined phases.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128 cols=64},tile-item-flags{mode=on}' -t 'cuda{grid_casts=on last_outputs=off prefetch_maps=off reduce_tails=off}' | filecheck %s

// CHECK:       static __device__ unsigned tk_item_flag[11 * tk::ItemFlags::kStride];
// CHECK-NEXT:  static __device__ unsigned tk_flags_epoch, tk_flags_left;
// W1's cast (6 map items of 12 warps: 12 << 24 | 0, 6 flags) before the first gemm's copies:
// CHECK:       static __device__ const unsigned tk_pwait_5_rows[5] = {0, 1, 2, 3, 4};
// CHECK-NEXT:  static __device__ const unsigned tk_pwait_5[8] = {201326592, 6, 201326592, 6,
// CHECK:       const tk::ItemFlags tk_flags = tk::item_flags(tk_item_flag, &tk_flags_epoch);
// CHECK:       if (tk_first)  // a carried cast
// CHECK:         const tk::ItemArrival tk_arrival{tk_flags, 0 + (int)item};
// CHECK:       else  // not run in this launch: its items still arrive
// CHECK-NEXT:    for (int item = blockIdx.x; item < 6; item += G) tk_flags.arrive(0 + (int)item);
// CHECK-NOT:   tk::grid_sync();
// CHECK:       // tile.sync items: each item of the next phases waits for its own producers' flags
// CHECK:       tk_pipe, tk::hopper::UnitFlags{tk_flags, tk_pwait_5_rows, tk_pwait_5, tk_wait_5_rows, tk_wait_5, -1});
// A gemm nothing waits for and that waits for nothing: the default (no flags).
// CHECK:       , tk_hbase, (int)blockIdx.x, G, tk_pipe);
// CHECK:       tk_pipe, tk::hopper::UnitFlags{tk_flags, nullptr, nullptr, nullptr, nullptr, 7});
// CHECK:       tk_flags.wait(tk_wait_12, tk_wait_12_rows[item], tk_wait_12_rows[item + 1]);
// CHECK:       tk::leave_item_flags(tk_flags, &tk_flags_epoch, &tk_flags_left);
// CHECK-NEXT:  }
