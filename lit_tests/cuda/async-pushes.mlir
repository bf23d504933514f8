// -t cuda, async_pushes (target.exchange_async_pushes) on the online schedule of
// resident-exchange.mlir: the exchange's pushes are st.async stores counted on an
// mbarrier of the owner (one per exchange, initialised by the first step before the
// block's first cluster arrive), and the owner waits on it with the step's parity
// instead of a first cluster barrier (tk::exchange_async). Off: DSMEM stores and
// tk::exchange's two cluster barriers.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{async_pushes=on prefetch_inputs=off async_publish=off wide_stores=off}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{async_pushes=off prefetch_inputs=off async_publish=off wide_stores=off}' | filecheck %s --check-prefix=OFF
// With async_publish (target.exchange_async_publish) too, the publish is st.async
// stores (dy's bf16 in pairs, the squared errors an element a store, the last
// step's alone) counted on each receiver's second mbarrier: no tk::publish, no
// cluster barrier in the exchange, one at the kernel's end.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{async_pushes=on async_publish=on prefetch_inputs=off wide_stores=off}' | filecheck %s --check-prefix=PUB
// With wide_stores (target.exchange_wide_stores) too: the pushes of a fragment's
// column pairs as one 8-byte st.async (the exchange's 1024 elements and each
// owner's 64 even), and the publish in runs of 4 elements (the squared errors'
// 20-float pitch takes no run of 8): 16 bytes of them, 8 of dy, a store each.
// Without async pushes the pairs are plain DSMEM stores.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{async_pushes=on async_publish=on prefetch_inputs=off wide_stores=on}' | filecheck %s --check-prefix=WIDE
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{async_pushes=off async_publish=off prefetch_inputs=off wide_stores=on}' | filecheck %s --check-prefix=WIDE-DSMEM

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

// PUB:      __shared__ uint64_t tk_xbar[2];
// PUB:      tk::init_exchange_barriers(tk_xbar, 2);
// PUB:      tk::exchange_async_published<kCluster, 2, tk::SumOp>(part, 1024, rank, tk_xbar + 0, tk_xbar + 1, tk_odd, (!tk_more ? 4u : 0u) + 2u, [&](int e, float acc) {
// PUB:      }, [&](int r, int e) {  // tk::store_async_b32: into the other ranks' copies
// PUB-NEXT:   const int i = e / 16, j = e % 16;
// PUB-NEXT:   if (!tk_more) tk::store_async_b32(&[[SQ:s[0-9]+]][(i)*20 + (j)], r, tk::bits32(&[[SQ]][(i)*20 + (j)]), tk_xbar + 1);
// PUB-NEXT:   if (!tk_more) tk::store_async_b32(&[[SQ]][(i)*20 + ((j) + 1)], r,
// PUB-NEXT:   tk::store_async_b32(&[[DY:s[0-9]+]][(i)*24 + (j)], r, tk::bits32(&[[DY]][(i)*24 + (j)]), tk_xbar + 1);
// PUB-NEXT: });
// PUB-NOT:  tk::publish
// PUB:      tk::cluster_sync();  // no block leaves while another's publish may still be in flight

// WIDE:      [&](int i, int j, const float* vals) { tk::push_async<kCluster>(part, 1024, i * 16 + j, vals[0], rank, tk_xbar + 0); },
// WIDE-NEXT: [&](int i, int j, const float* va, const float* vb) { tk::push_async_pair<kCluster>(part, 1024, i * 16 + j, va[0], vb[0], rank, tk_xbar + 0); });
// WIDE-NEXT: tk::exchange_async_published<kCluster, 4, tk::SumOp>(part, 1024, rank, tk_xbar + 0, tk_xbar + 1, tk_odd, (!tk_more ? 4u : 0u) + 2u, [&](int e, float acc) {
// WIDE:      }, [&](int r, int e) {  // tk::store_async_bytes: into the other ranks' copies
// WIDE-NEXT:   const int i = e / 16, j = e % 16;
// WIDE-NEXT:   if (!tk_more) tk::store_async_bytes<16>(&[[SQ:s[0-9]+]][(i)*20 + (j)], r, tk_xbar + 1);
// WIDE-NEXT:   tk::store_async_bytes<8>(&[[DY:s[0-9]+]][(i)*24 + (j)], r, tk_xbar + 1);
// WIDE-NEXT: });
// WIDE-NOT:  store_async_b32

// WIDE-DSMEM:      tk::push_partial_pair<kCluster>(part, 1024, i * 16 + j, va[0], vb[0], rank); });
// WIDE-DSMEM-NEXT: tk::exchange<kCluster, tk::SumOp>(part, 1024, rank, [&](int e, float acc) {
