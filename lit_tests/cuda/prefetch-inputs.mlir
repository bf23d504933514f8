// -t cuda, prefetch_inputs (target.prefetch_step_inputs) on the online schedule of
// resident-exchange.mlir: each batch home gets an even and an odd copy, picked by the
// step's parity (x keeps its own bytes for even steps; y, whose bytes the squared
// errors reuse, gets two copies past the placement and the receive copies); no batch
// is staged at a later step's start; once the step's own homes are staged it copies
// the next step's batch (tk_next, the loop's next row) into the other parity's copy.
// Both pointers are loaded before the first copy (pointers_first,
// target.prefetch_pointers_first: cp.async is a memory barrier to the compiler);
// with it off, each where its copy reads it. constant_threads
// (target.stage_constant_threads, on by default): the block size is a constant for
// the staging loops (TK_BLOCK_THREADS, before the header). bulk_rows
// (target.prefetch_bulk_rows, off by default): the next step's rows of 16-byte units
// by tk::stage_rows_bulk on the mbarrier tk_inbar, one arrival after the last
// home, and a later step's staging wait waits on the phase of the step before.
// late_prefetch (target.prefetch_copies_after_work, off by default): the pointers are
// loaded where the copies were, and the copies wait until the barrier that closes the
// step's first phase with a product (phase 1 here), so that the pointers' round trip
// overlaps that phase; nothing of the step's own staging moves.
// multicast_rows (target.prefetch_multicast_rows, off by default): x and y, which
// every block of the cluster of 16 stages whole, in 16-byte rows, are copied once
// for the cluster by tk::stage_rows_multicast (each block its share of the rows,
// multicast into all) on tk_inbar, initialised before the block's first arrive
// (other blocks' copies count on it); the copies wait for the barrier that closes
// the first exchange's phase (phase 2: every block has left the step before, which
// read the copies being filled), the pointers loaded at the step's start.
// multicast_in_publish (target.prefetch_multicast_in_publish): the same copies are
// the first exchange's `during` lambda, issued inside its publish wait, and no
// barrier of a phase is followed by them.
// multicast_min_copy_bytes=64 (target.prefetch_multicast_min_copy_bytes): y's 32-byte
// rows are copied by the block's own cp.async (tk::stage_rows) into the same copy,
// x's 256-byte rows multicast, one arrival after both.
// Off: the batch is staged at every step's start into its one home.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=off pointer_copies=off cast_copies=off}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=off pointer_copies=off cast_copies=off}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=off pointer_copies=off pointers_first=off constant_threads=off cast_copies=off}' | filecheck %s --check-prefix=LATE
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=off pointer_copies=off constant_threads=on cast_copies=off}' | filecheck %s --check-prefix=CONST
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=off pointer_copies=off bulk_rows=on cast_copies=off}' | filecheck %s --check-prefix=BULK
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=off pointer_copies=off late_prefetch=on cast_copies=off}' | filecheck %s --check-prefix=AFTER
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=off pointer_copies=off multicast_rows=on multicast_in_publish=off cast_copies=off}' | filecheck %s --check-prefix=MULTICAST
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=off pointer_copies=off multicast_rows=on multicast_in_publish=on cast_copies=off}' | filecheck %s --check-prefix=INPUBLISH
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=off pointer_copies=off multicast_rows=on multicast_in_publish=on multicast_min_copy_bytes=64 cast_copies=off}' | filecheck %s --check-prefix=MINCOPY

// ON:       #define TK_BLOCK_THREADS
// ON-NOT:   tk_inbar
// ON:       static constexpr int kSmem = 88256;
// ON:       void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd, void* const* tk_next) {
// ON:       [[Y:s[0-9]+]] = (__nv_bfloat16*)(smem + (tk_odd ? 67776 : 64704));
// ON-NEXT:  [[X:s[0-9]+]] = (__nv_bfloat16*)(smem + (tk_odd ? 70848 : 0));
// ON-NOT:   if (!tk_first) {
// ON:       if (tk_first) {
// ON-NEXT:  // ---- prologue
// ON:       tk::stage_rows([[Y]], b{{[0-9]+}}, 64, 16, 16LL, 24);
// ON-NEXT:  tk::stage_rows([[X]], b{{[0-9]+}}, 64, 128, 128LL, 136);
// ON-NEXT:  }
// ON:       tk::stage_wait();
// ON-NEXT:  if (tk_more) {  // the next step's batch, in flight through this step (plan_prefetched_inputs)
// ON-NEXT:    void* tk_from[2];
// ON-NEXT:    tk_from[0] = tk_next[0];
// ON-NEXT:    tk_from[1] = tk_next[1];
// ON-NEXT:    tk::stage_rows((__nv_bfloat16*)(smem + (tk_odd ? 64704 : 67776)), ((__nv_bfloat16*)tk_from[1]), 64, 16, 16LL, 24);
// ON-NEXT:    tk::stage_rows((__nv_bfloat16*)(smem + (tk_odd ? 0 : 70848)), ((__nv_bfloat16*)tk_from[0]), 64, 128, 128LL, 136);
// ON-NEXT:  }
// ON-NEXT:  // ---- phase 0
// ON:       tk_step({{.*}}, tk_s == 0, tk_more, (tk_s & 1) != 0, tk_more ? p.step_inputs + (size_t)(tk_s + 1) * 2 : nullptr);

// LATE-NOT:  TK_BLOCK_THREADS
// LATE:      if (tk_more) {  // the next step's batch, in flight through this step (plan_prefetched_inputs)
// LATE-NEXT:    tk::stage_rows((__nv_bfloat16*)(smem + (tk_odd ? 64704 : 67776)), ((__nv_bfloat16*)tk_next[1]), 64, 16, 16LL, 24);
// LATE-NEXT:    tk::stage_rows((__nv_bfloat16*)(smem + (tk_odd ? 0 : 70848)), ((__nv_bfloat16*)tk_next[0]), 64, 128, 128LL, 136);
// LATE-NEXT:  }

// CONST:       #define TK_BLOCK_THREADS [[NT:[0-9]+]]
// CONST-NEXT:  #include "tk/resident.cuh"
// CONST:       static constexpr int kSmem = 88256;
// CONST-NEXT:  static constexpr int kThreads = [[NT]];

// OFF:      static constexpr int kSmem = 64704;
// OFF:      void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd) {
// OFF-NOT:  tk_odd ? {{[0-9]+}} : 0
// OFF:      if (!tk_first) {
// OFF-NEXT:   tk::stage_rows(s{{[0-9]+}}, b{{[0-9]+}}, 64, 16, 16LL, 24);
// OFF-NEXT:   tk::stage_rows(s{{[0-9]+}}, b{{[0-9]+}}, 64, 128, 128LL, 136);
// OFF-NOT:  tk_next

// BULK:       __shared__ uint64_t tk_inbar;
// BULK:       if (tk_first && threadIdx.x == 0) tk::init_stage_barrier(&tk_inbar);
// BULK-NEXT:  if (tk_first) tk::cluster_arrive();
// BULK-NEXT:  tk::stage_wait_bulk(&tk_inbar, !tk_first, !tk_odd);
// BULK-NEXT:  if (tk_more) {  // the next step's batch, in flight through this step (plan_prefetched_inputs)
// BULK:         tk::stage_rows_bulk((__nv_bfloat16*)(smem + (tk_odd ? 64704 : 67776)), ((__nv_bfloat16*)tk_from[1]), 64, 16, 16LL, 24, &tk_inbar);
// BULK-NEXT:    tk::stage_rows_bulk((__nv_bfloat16*)(smem + (tk_odd ? 0 : 70848)), ((__nv_bfloat16*)tk_from[0]), 64, 128, 128LL, 136, &tk_inbar);
// BULK-NEXT:    tk::stage_bulk_arrive(&tk_inbar);
// BULK-NEXT:  }
// BULK-NOT:   tk::stage_wait();

// AFTER:      tk::stage_wait();
// AFTER-NEXT: void* tk_from[2];  // the next step's pointers, copied from after a phase's work
// AFTER-NEXT: if (tk_more) {
// AFTER-NEXT:   tk_from[0] = tk_next[0];
// AFTER-NEXT:   tk_from[1] = tk_next[1];
// AFTER-NEXT: }
// AFTER-NEXT: // ---- phase 0
// AFTER-NOT:  tk::stage_rows(
// AFTER:      // ---- phase 1
// AFTER:      tk::smem_gemm<
// AFTER-NOT:  // ---- phase
// AFTER:      __syncthreads();
// AFTER-NEXT: if (tk_more) {  // the next step's batch, in flight through the rest of this step (plan_prefetched_inputs)
// AFTER-NEXT:   tk::stage_rows((__nv_bfloat16*)(smem + (tk_odd ? 64704 : 67776)), ((__nv_bfloat16*)tk_from[1]), 64, 16, 16LL, 24);
// AFTER-NEXT:   tk::stage_rows((__nv_bfloat16*)(smem + (tk_odd ? 0 : 70848)), ((__nv_bfloat16*)tk_from[0]), 64, 128, 128LL, 136);
// AFTER-NEXT: }
// AFTER-NEXT: // ---- phase 2

// MULTICAST:       static constexpr int kCluster = 16;
// MULTICAST:       __shared__ uint64_t tk_inbar;
// MULTICAST:       tk::init_exchange_barriers(tk_xbar, 2);
// MULTICAST-NEXT:  if (tk_first && threadIdx.x == 0) tk::init_stage_barrier(&tk_inbar);
// MULTICAST-NEXT:  if (tk_first) tk::cluster_arrive();
// MULTICAST-NEXT:  tk::stage_wait_bulk(&tk_inbar, !tk_first, !tk_odd);
// MULTICAST-NEXT:  if (tk_first) tk::stage_fence_async();
// MULTICAST-NEXT:  void* tk_from[2];
// MULTICAST-NEXT:  if (tk_more) {
// MULTICAST-NEXT:    tk_from[0] = tk_next[0];
// MULTICAST-NEXT:    tk_from[1] = tk_next[1];
// MULTICAST-NEXT:  }
// MULTICAST-NOT:   tk::stage_rows_multicast
// MULTICAST:       // ---- phase 2
// MULTICAST:       tk::exchange_async_published<kCluster
// MULTICAST-NOT:   // ---- phase
// MULTICAST:       __syncthreads();
// MULTICAST-NEXT:  if (tk_more) {  // the next step's batch, in flight through the rest of this step
// MULTICAST-NEXT:    tk::stage_rows_multicast<kCluster>((__nv_bfloat16*)(smem + (tk_odd ? 64704 : 67776)), ((__nv_bfloat16*)tk_from[1]), 64, 16, 16LL, 24, &tk_inbar, rank);
// MULTICAST-NEXT:    tk::stage_rows_multicast<kCluster>((__nv_bfloat16*)(smem + (tk_odd ? 0 : 70848)), ((__nv_bfloat16*)tk_from[0]), 64, 128, 128LL, 136, &tk_inbar, rank);
// MULTICAST-NEXT:    tk::stage_bulk_arrive(&tk_inbar);
// MULTICAST-NEXT:  }
// MULTICAST-NEXT:  // ---- phase 3
// MULTICAST-NOT:   tk::stage_rows_multicast
// MULTICAST-NOT:   tk::stage_wait();

// INPUBLISH:       tk::init_exchange_barriers(tk_xbar, 2);
// INPUBLISH-NEXT:  if (tk_first && threadIdx.x == 0) tk::init_stage_barrier(&tk_inbar);
// INPUBLISH-NOT:   tk::stage_rows_multicast
// INPUBLISH:       // ---- phase 2
// INPUBLISH:       tk::exchange_async_published<kCluster
// INPUBLISH:       tk::store_async_bytes<8>
// INPUBLISH-NEXT:  }, [&]() {  // during the publish wait: every block has left the step before
// INPUBLISH-NEXT:  if (tk_more) {
// INPUBLISH-NEXT:    tk::stage_rows_multicast<kCluster>({{.*}}tk_from[1]{{.*}}, &tk_inbar, rank);
// INPUBLISH-NEXT:    tk::stage_rows_multicast<kCluster>({{.*}}tk_from[0]{{.*}}, &tk_inbar, rank);
// INPUBLISH-NEXT:    tk::stage_bulk_arrive(&tk_inbar);
// INPUBLISH-NEXT:  }
// INPUBLISH-NEXT:  });
// INPUBLISH-NEXT:  }
// INPUBLISH-NEXT:  __syncthreads();
// INPUBLISH-NEXT:  // ---- phase 3
// INPUBLISH-NOT:   tk::stage_rows_multicast

// MINCOPY:       // during the publish wait
// MINCOPY-NEXT:  if (tk_more) {
// MINCOPY-NEXT:    tk::stage_rows({{.*}}tk_from[1]{{.*}}, 64, 16, 16LL, 24);
// MINCOPY-NEXT:    tk::stage_rows_multicast<kCluster>({{.*}}tk_from[0]{{.*}}, 64, 128, 128LL, 136, &tk_inbar, rank);
// MINCOPY-NEXT:    tk::stage_bulk_arrive(&tk_inbar);
// MINCOPY-NEXT:  }
// MINCOPY-NOT:   tk::stage_rows_multicast
