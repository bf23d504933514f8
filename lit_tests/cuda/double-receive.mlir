// -t cuda, double_receive (target.double_receive) with step_block_barrier on the
// online schedule of resident-exchange.mlir: the exchange's receive buffer gets two
// copies past the placement's bytes (the kernel asks for 2 x 4096 bytes more), the
// step's parity (tk_odd) picks one, and only the first step arrives at the cluster
// barrier and waits on it before its first push; a block barrier ends each step.
// Off: one buffer at the placement's offset, every step arrives and waits.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{double_receive=on step_block_barrier=on prefetch_inputs=off async_pushes=off async_publish=off cast_copies=off}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{double_receive=off step_block_barrier=on prefetch_inputs=off async_pushes=off async_publish=off cast_copies=off}' | filecheck %s --check-prefix=OFF

// ON:       void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd) {
// ON:       if (tk_first) tk::cluster_arrive();  // later steps push into the other copy
// ON:       float* part = (float*)(smem + (tk_odd ? {{[0-9]+}} : {{[0-9]+}}));  // receive buffer of the exchange
// ON-NEXT:  if (tk_first) tk::cluster_wait();
// ON:       tk_step({{.*}}, tk_s == 0, tk_more, (tk_s & 1) != 0);
// ON-NEXT:  if (tk_more) __syncthreads();

// OFF:      void tk_step(void* const* tk_in, bool tk_first, bool tk_more) {
// OFF:      tk::cluster_arrive_release();
// OFF:      float* part = (float*)(smem + {{[0-9]+}});  // receive buffer of the exchange
// OFF-NEXT: tk::cluster_wait();
// OFF-NOT:  tk_odd
