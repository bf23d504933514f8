// -t cuda, prefetch_maps (target.prefetch_tensor_maps) on online's schedule as
// a grid kernel (resident-exchange.mlir without tile-resident, wgmma). Before
// the grid barrier in front of each phase, thread 0 asks for the tensor maps
// of the phase's wgmma gemms (tk::hopper::prefetch_maps: prefetch.tensormap),
// so the phase's first copies do not wait for their maps' fetch; phase 3 has
// two gemms, phase 0 none. A carried cast's pair follows the launch's parity.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile' -t 'cuda{prefetch_maps=on grid_casts=off last_outputs=off}' | filecheck %s
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile' -t 'cuda{prefetch_maps=on grid_casts=on last_outputs=off}' | filecheck %s --check-prefix=CHAIN
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile' -t 'cuda{prefetch_maps=off grid_casts=off last_outputs=off}' | filecheck %s --check-prefix=OFF

// CHECK:       // ---- phase 0
// CHECK:       tk::hopper::prefetch_maps(&p.maps[0], &p.maps[1]);  // phase 1's
// CHECK-NEXT:  tk::hopper::fence_proxy_async_global();
// CHECK-NEXT:  tk::grid_sync();
// CHECK:       // ---- phase 1
// CHECK:       tk::hopper::prefetch_maps(&p.maps[2], &p.maps[3]);  // phase 2's
// CHECK-NEXT:  tk::hopper::fence_proxy_async_global();
// CHECK:       // ---- phase 2
// CHECK:       tk::hopper::prefetch_maps(&p.maps[4], &p.maps[5]);  // phase 3's
// CHECK-NEXT:  tk::hopper::prefetch_maps(&p.maps[6], &p.maps[7]);  // phase 3's
// CHECK:       // ---- phase 3
// CHECK:       tk::hopper::prefetch_maps(&p.maps[8], &p.maps[9]);  // phase 4's
// CHECK:       // ---- phase 4
// CHECK-NOT:   prefetch_maps

// CHAIN:       tk::hopper::prefetch_maps(&p.maps[tk_parity ? 10 : 2], &p.maps[tk_parity ? 11 : 3]);  // phase 2's

// OFF-NOT:     prefetch_maps
