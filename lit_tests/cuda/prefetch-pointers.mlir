// -t cuda, prefetch_pointers (target.prefetch_step_pointers) with prefetch_inputs on the
// online schedule of resident-exchange.mlir: the pointers the next step's batch is
// copied from are read a step ahead. tk_step takes step s + 2's row (tk_after), loads
// this thread's pointer of it before the prologue, and leaves it in tk_rows[s % 2]
// after its last phase; the prefetch reads step s + 1's row from tk_rows[(s + 1) % 2],
// or from tk_next in a launch's first step. Off: the prefetch reads tk_next, and
// tk_step has no tk_after. pointer_copies (target.prefetch_pointer_copies): the
// same rows, copied by cp.async right after the next step's batch copies (the
// next staging wait covers them), no register held through the step.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=on cast_copies=off}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_pointers=off pointer_copies=off cast_copies=off}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=off prefetch_pointers=on pointer_copies=off cast_copies=off}' | filecheck %s --check-prefix=NONE
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on pointer_copies=on cast_copies=off}' | filecheck %s --check-prefix=COPIES

// ON:       void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd, void* const* tk_next, void* const* tk_after) {
// ON:       __shared__ void* tk_rows[2][2];
// ON-NEXT:  void* const tk_after_ptr = tk_after && threadIdx.x < 2 ? tk_after[threadIdx.x] : nullptr;
// ON:       // ---- prologue
// ON:       tk::stage_wait();
// ON-NEXT:  if (tk_more) {
// ON-NEXT:    void* const* tk_row = tk_first ? tk_next : tk_rows[tk_odd ? 0 : 1];
// ON-NEXT:    tk::stage_rows({{.*}}, ((__nv_bfloat16*)tk_row[1]), 64, 16, 16LL, 24);
// ON-NEXT:    tk::stage_rows({{.*}}, ((__nv_bfloat16*)tk_row[0]), 64, 128, 128LL, 136);
// ON-NEXT:  }
// ON-NEXT:  // ---- phase 0
// ON:       // ---- phase 4
// ON-NOT:   // ---- phase
// ON:       if (tk_after && threadIdx.x < 2) tk_rows[tk_odd ? 1 : 0][threadIdx.x] = tk_after_ptr;
// ON-NEXT:  }
// ON:       tk_step({{.*}}, tk_more ? p.step_inputs + (size_t)(tk_s + 1) * 2 : nullptr, tk_s + 2 < p.steps ? p.step_inputs + (size_t)(tk_s + 2) * 2 : nullptr);

// OFF:      void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd, void* const* tk_next) {
// OFF-NOT:  tk_rows
// OFF:      tk::stage_rows({{.*}}, ((__nv_bfloat16*)tk_from[1]), 64, 16, 16LL, 24);
// OFF-NOT:  tk_after
// OFF:      tk_step({{.*}}, tk_more ? p.step_inputs + (size_t)(tk_s + 1) * 2 : nullptr);

// NONE:     void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd) {
// NONE-NOT: tk_rows
// NONE-NOT: tk_after

// COPIES:      void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd, void* const* tk_next, void* const* tk_after) {
// COPIES-NOT:  tk_after_ptr
// COPIES:      __shared__ void* tk_rows[2][2];
// COPIES:      tk::stage_wait();
// COPIES-NEXT: if (tk_more) {
// COPIES-NEXT:   void* const* tk_row = tk_first ? tk_next : tk_rows[tk_odd ? 0 : 1];
// COPIES-NEXT:   tk::stage_rows({{.*}}, ((__nv_bfloat16*)tk_row[1]), 64, 16, 16LL, 24);
// COPIES-NEXT:   tk::stage_rows({{.*}}, ((__nv_bfloat16*)tk_row[0]), 64, 128, 128LL, 136);
// COPIES-NEXT:   if (tk_after && threadIdx.x < 2) tk::cp_async_ca<8>(&tk_rows[tk_odd ? 1 : 0][threadIdx.x], &tk_after[threadIdx.x]);
// COPIES-NEXT: }
// COPIES-NOT:  tk_after_ptr
// COPIES:      tk_step({{.*}}, tk_s + 2 < p.steps ? p.step_inputs + (size_t)(tk_s + 2) * 2 : nullptr);
