// -t cuda, grid_pdl (target.grid_programmatic_launch) on online's schedule as a
// grid kernel (resident-exchange.mlir without tile-resident). The kernel lets
// the next kernel of the stream be scheduled and waits for the previous one
// before its first global access (after the wgmma pipeline's shared-memory
// set-up); the launcher's cooperative launch goes through cudaLaunchKernelEx
// with the cooperative and programmatic-serialization attributes.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile' -t 'cuda{grid_pdl=on grid_casts=off last_outputs=off prefetch_maps=off}' | filecheck %s
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile' -t 'cuda{grid_pdl=off grid_casts=off last_outputs=off prefetch_maps=off}' | filecheck %s --check-prefix=OFF

// CHECK:       tk::hopper::PipeState tk_pipe;
// CHECK-NEXT:  tk::launch_dependents();
// CHECK-NEXT:  tk::wait_prior_grid();
// CHECK-NEXT:  // ---- phase 0
// CHECK:       extern "C" int tk_launch(void** buffers, void* arena, int grid, void* stream) {
// CHECK:         attr[0].id = cudaLaunchAttributeCooperative;
// CHECK-NEXT:    attr[0].val.cooperative = 1;
// CHECK-NEXT:    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
// CHECK-NEXT:    attr[1].val.programmaticStreamSerializationAllowed = 1;
// CHECK:         return (int)cudaLaunchKernelExC(&cfg, tk_kernel, args);

// OFF-NOT:     wait_prior_grid
// OFF:         return (int)cudaLaunchCooperativeKernel(tk_kernel, dim3(grid), dim3(kThreads), args, kSmem,
