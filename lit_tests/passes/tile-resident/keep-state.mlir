// tile-resident keep_state (target.keep_state_homes): every state home lives to the
// kernel's end. Here the state scalar bp (a power of beta1, say) is read by a
// first-phase map alone; without keep_state its home's bytes go to a later
// temporary (bce, at the same offset), so the step loop stages it again from
// global memory every step, which rank 0's store of it makes a cluster-wide
// hazard. With keep_state its home is its own: the step loop keeps it, writes
// it through, stores it to global memory in the last step alone, and
// -t 'cuda{step_block_barrier=on prefetch_inputs=off async_pushes=off async_publish=off}' then ends each step with a block barrier and
// waits for the cluster after staging only in a launch of one step.
// RUN: trainkernel-opt %s -p 'tk-mark-state-updates{state=2},tk-fuse,tk-to-sched,sched-inplace-state,sched-allocate,sched-to-tile,tile-resident{mode=force keep_state=on}' | filecheck %s --check-prefix=KEEP
// RUN: trainkernel-opt %s -p 'tk-mark-state-updates{state=2},tk-fuse,tk-to-sched,sched-inplace-state,sched-allocate,sched-to-tile,tile-resident{mode=force keep_state=off}' | filecheck %s --check-prefix=REUSE
// RUN: trainkernel-opt %s -p 'tk-mark-state-updates{state=2},tk-fuse,tk-to-sched,sched-inplace-state,sched-allocate,sched-to-tile,tile-resident{mode=force keep_state=on}' -t 'cuda{step_block_barrier=on prefetch_inputs=off async_pushes=off async_publish=off}' | filecheck %s --check-prefix=CUDA
// RUN: trainkernel-opt %s -p 'tk-mark-state-updates{state=2},tk-fuse,tk-to-sched,sched-inplace-state,sched-allocate,sched-to-tile,tile-resident{mode=force keep_state=off}' -t 'cuda{step_block_barrier=on prefetch_inputs=off async_pushes=off async_publish=off}' | filecheck %s --check-prefix=RESTAGED

// KEEP:       tile.smem stage %bp offset [[BP:[0-9]+]] split -1 : memref<f32>
// KEEP-NOT:   offset [[BP]] split
// REUSE:      tile.smem stage %bp offset [[BP:[0-9]+]] split -1 : memref<f32>
// REUSE:      %bce = tile.smem offset [[BP]] split 1

// CUDA:       if (!tk_first) {
// CUDA-NOT:     b0_bp
// CUDA:       } else {
// CUDA:         tk::stage_rows({{s[0-9]+}}, b0_bp, 1, 1, 0, 0);
// CUDA:       tk::cluster_arrive_release();
// CUDA-NEXT:  tk::stage_wait();
// CUDA-NEXT:  if (tk_first && !tk_more) tk::cluster_wait();  // one step: rank 0 stores what the others stage
// CUDA:         if (rank == 0 && !tk_more) b0_bp[0] =
// CUDA-NEXT:    if (tk_more) [[H:s[0-9]+]][0] =
// CUDA:         if (!(tk_first && !tk_more)) tk::cluster_wait();
// CUDA:         if (tk_more) __syncthreads();

// RESTAGED:   if (!tk_first) {
// RESTAGED:     tk::stage_rows({{s[0-9]+}}, b0_bp, 1, 1, 0, 0);
// RESTAGED:   tk::stage_wait();
// RESTAGED-NEXT: tk::cluster_sync();
// RESTAGED:     if (tk_more) tk::cluster_sync();

func.func @step(%bp: tensor<f32>, %w: tensor<64x512xf32>, %x: tensor<32x64xf32>) -> (tensor<f32>, tensor<f32>, tensor<64x512xf32>) {
  %c = tk.fill 0.9 : tensor<f32>
  %one = tk.fill 1.0 : tensor<f32>
  %bp2 = tk.mul %bp, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %bc = tk.sub %one, %bp2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %h = tk.matmul %x, %w : (tensor<32x64xf32>, tensor<64x512xf32>) -> tensor<32x512xf32>
  %s = tk.sum %h axes [0, 1] : tensor<32x512xf32> -> tensor<f32>
  %g = tk.matmul %x, %h transpose_a : (tensor<32x64xf32>, tensor<32x512xf32>) -> tensor<64x512xf32>
  %bce = tk.expand %bc : tensor<f32> -> tensor<64x512xf32>
  %u = tk.mul %g, %bce : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
  %w2 = tk.sub %w, %u : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
  func.return %s, %bp2, %w2 : tensor<f32>, tensor<f32>, tensor<64x512xf32>
}
