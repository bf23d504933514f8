// -t cuda, async_pushes (target.exchange_async_pushes) on the online schedule of
// resident-exchange.mlir: the exchange's pushes are st.async stores counted on an
// mbarrier of the owner (one per exchange, initialised by the first step before the
// block's first cluster arrive), and the owner waits on it with the step's parity
// instead of a first cluster barrier (tk::exchange_async). Off: DSMEM stores and
// tk::exchange's two cluster barriers.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{async_pushes=on}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{async_pushes=off}' | filecheck %s --check-prefix=OFF

// ON:       void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd) {
// ON:       __shared__ uint64_t tk_xbar[1];  // the exchanges' mbarriers (push_async)
// ON:       if (tk_first && threadIdx.x == 0) tk::init_exchange_barriers(tk_xbar, 1);
// ON-NEXT:  if (tk_first) tk::cluster_arrive();
// ON:       tk::push_async<kCluster>(part, 1024, i * 16 + j, vals[0], rank, tk_xbar + 0); });
// ON-NEXT:  tk::exchange_async<kCluster, tk::SumOp>(part, 1024, rank, tk_xbar + 0, tk_odd, [&](int e, float acc) {
// ON-NOT:   push_partial

// OFF-NOT:  tk_xbar
// OFF:      tk::push_partial<kCluster>(part, 1024, i * 16 + j, vals[0], rank); });
// OFF-NEXT: tk::exchange<kCluster, tk::SumOp>(part, 1024, rank, [&](int e, float acc) {
