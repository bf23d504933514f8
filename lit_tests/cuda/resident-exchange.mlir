// -t cuda on the online schedule of lit_tests/passes/tile-resident/online.mlir
// (cluster of 16, hidden axis split): the split contraction h @ W2 exchanges
// its 64x16 partials by pushing them to their owners (DSMEM stores, never
// remote loads); each owner sums its 64 elements over the 16 ranks and runs
// the loss-gradient epilogue once, storing into every block's replicated home.
// The step loop's barriers as they were before perf-log steps 63 and 65 (one
// receive buffer, a cluster barrier between steps); double-receive.mlir checks
// the default's.
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' -t 'cuda{double_receive=off step_block_barrier=off prefetch_inputs=off async_pushes=off async_publish=off cast_copies=off wide_stores=off}' | filecheck %s

// Every block must be running before another stores into its shared memory:
// arrive at kernel start (after the prologue copies are issued), wait before
// the first push; no full cluster barrier in the prologue.
// One step is a function the kernel's step loop calls (tk_launch_steps); the
// batch comes from the step's row of the step table. The state homes stay on
// chip from step to step (each block updates its slices, and every block the
// replicated b2 whole): a step after the first stages the batch (y, x) alone.
// The step reads its buffers' pointers from a table in shared memory.
// CHECK:       static __shared__ void* tk_buf[11];
// CHECK:       static __device__ __noinline__ void tk_step(void* const* tk_in, bool tk_first, bool tk_more) {
// CHECK:         = ({{.*}})(tk_in ? tk_in[0] : tk_buf[4]);
// CHECK:       if (!tk_first) {
// CHECK-NEXT:    tk::stage_rows({{s[0-9]+}}, b5,
// CHECK-NEXT:    tk::stage_rows({{s[0-9]+}}, b4,
// CHECK-NEXT:  } else {
// CHECK-NEXT:  // ---- prologue
// CHECK-NEXT:    tk::stage_rows(
// CHECK-NOT:   this_cluster().sync()
// CHECK:       tk::cluster_arrive();
// CHECK-NEXT:  tk::stage_wait();
// CHECK:       // ---- phase 2
// CHECK-NEXT:  { // tile.gemm 64x16x256 mma.bf16 NN, split 2
// CHECK-NEXT:    float* part = (float*)(smem + [[RECV:[0-9]+]]);  // receive buffer of the exchange
// CHECK-NEXT:    tk::cluster_wait();
// The product's partials go to their owners, not to a local buffer.
// CHECK:         [&](int i, int j, const float* vals) { tk::push_partial<kCluster>(part, 1024, i * 16 + j, vals[0], rank); });
// CHECK-NEXT:    tk::exchange<kCluster, tk::SumOp>(part, 1024, rank, [&](int e, float acc) {
// The epilogue runs once per element (by its owner), storing the replicated
// homes in the owner's copy (at the homes' padded row strides: 64x16 f32 rows
// of 80 bytes, bf16 rows of 48); no rank-0 guard. Then every thread of the
// owner publishes them into the other ranks' copies (tk::publish: its copy
// lambda, element e into rank r).
// CHECK-NOT:     if (rank == 0)
// CHECK:         [[LOSS:s[0-9]+]][(i)*20 + (j)] = tk::from_float<float>(
// CHECK-NEXT:    [[DY:s[0-9]+]][(i)*24 + (j)] = v{{[0-9]+}}_bits;
// CHECK-NEXT:  }, [&](int r, int e) {  // tk::publish: into the other ranks' copies
// CHECK-NEXT:    const int i = e / 16, j = e % 16;
// CHECK-NEXT:    tk::at_rank([[LOSS]], r)[(i)*20 + (j)] = [[LOSS]][(i)*20 + (j)];
// CHECK-NEXT:    tk::at_rank([[DY]], r)[(i)*24 + (j)] = [[DY]][(i)*24 + (j)];
// CHECK-NEXT:  });
// Only one exchange: no other cluster wait, no remote loads anywhere.
// CHECK-NOT:   tk::cluster_wait
// CHECK-NOT:   map_shared_rank
// The outputs and the updated state go to global memory on the last step alone;
// on the others the update writes its home (one store an element either way).
// The replicated b2 is updated by every block, stored by rank 0.
// CHECK:       if (!tk_more) b9_out3[(i)*16 + (j)] = tk::from_float<float>(vals[0]);
// CHECK-NEXT:  if (!tk_more) b2[(i)*16 + (j)] = tk::from_float<float>(vals[1]);
// CHECK-NEXT:  if (tk_more) [[W2:s[0-9]+]][((i) - 16 * rank)*20 + (j)] = tk::from_float<float>(vals[1]);
// CHECK:       if (rank == 0 && !tk_more) b3[(ol0)] = tk::from_float<float>(v4);
// CHECK-NEXT:  if (tk_more) {{s[0-9]+}}[(ol0)] = tk::from_float<float>(v4);
// CHECK:       if (!tk_more) b0[(i)*256 + (j)] = tk::from_float<float>(vals[1]);
// CHECK-NEXT:  if (tk_more) {{s[0-9]+}}[(i)*20 + ((j) - 16 * rank)] = tk::from_float<float>(vals[1]);
// CHECK-NOT:   map_shared_rank
// The launch may overlap the previous step (programmatic dependent launch):
// the kernel fills the pointer table from its parameters, then waits for it
// before its first global access, the first step. Each step ends with a
// cluster barrier before the next one restages anything.
// CHECK:       tk::launch_dependents();
// CHECK-NEXT:  if (threadIdx.x == 0) {
// CHECK-NEXT:  #pragma unroll
// CHECK-NEXT:    for (int i = 0; i < 11; ++i) tk_buf[i] = p.buf[i];
// CHECK-NEXT:  }
// CHECK-NEXT:  __syncthreads();
// CHECK-NEXT:  tk::wait_prior_grid();
// CHECK-NEXT:  for (int tk_s = 0; tk_s < p.steps; ++tk_s) {
// CHECK-NEXT:    const bool tk_more = tk_s + 1 < p.steps;
// CHECK-NEXT:    tk_step(tk_s > 0 ? p.step_inputs + (size_t)tk_s * 2 : nullptr, tk_s == 0, tk_more);
// CHECK-NEXT:    if (tk_more) tk::cluster_sync();
// CHECK:       attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
// CHECK:       tk_config(stream, kProgrammatic)
builtin.module {
  sched.program @online_sgd_bf16(%0: memref<128x256xf32>, %1: memref<256xf32>, %2: memref<256x16xf32>, %3: memref<16xf32>, %4: memref<64x128xbf16>, %5: memref<64x16xbf16>, %out0: memref<f32>, %out1: memref<128x256xf32>, %out2: memref<256xf32>, %out3: memref<256x16xf32>, %out4: memref<16xf32>) inputs 6 results [6, 7, 8, 9, 10, 0, 1, 2, 3] arena 111360 {
    %6 = sched.buffer offset 0 : memref<128x256xbf16>
    %7 = sched.buffer offset 110592 : memref<256xbf16>
    %8 = sched.buffer offset 65536 : memref<64x256xbf16>
    %9 = sched.buffer offset 98304 : memref<256x16xbf16>
    %10 = sched.buffer offset 111104 : memref<16xbf16>
    %11 = sched.buffer offset 106496 : memref<64x16xf32>
    %12 = sched.buffer offset 32768 : memref<64x16xf32>
    %13 = sched.buffer offset 36864 : memref<64x16xbf16>
    %14 = sched.buffer offset 0 : memref<64x256xbf16>
    sched.phase {
      sched.compute ins(%0 : memref<128x256xf32>) outs(%6 : memref<128x256xbf16>) {
      ^bb0(%15: tensor<128x256xf32>):
        %16 = tk.cast %15 : tensor<128x256xf32> to tensor<128x256xbf16>
        tk.yield %16 : tensor<128x256xbf16>
      }
      sched.compute ins(%1 : memref<256xf32>) outs(%7 : memref<256xbf16>) {
      ^bb0(%17: tensor<256xf32>):
        %18 = tk.cast %17 : tensor<256xf32> to tensor<256xbf16>
        tk.yield %18 : tensor<256xbf16>
      }
      sched.compute ins(%2 : memref<256x16xf32>) outs(%9 : memref<256x16xbf16>) {
      ^bb0(%19: tensor<256x16xf32>):
        %20 = tk.cast %19 : tensor<256x16xf32> to tensor<256x16xbf16>
        tk.yield %20 : tensor<256x16xbf16>
      }
      sched.compute ins(%3 : memref<16xf32>) outs(%10 : memref<16xbf16>) {
      ^bb0(%21: tensor<16xf32>):
        %22 = tk.cast %21 : tensor<16xf32> to tensor<16xbf16>
        tk.yield %22 : tensor<16xbf16>
      }
      sched.compute ins(%5 : memref<64x16xbf16>) outs(%11 : memref<64x16xf32>) {
      ^bb0(%23: tensor<64x16xbf16>):
        %24 = tk.cast %23 : tensor<64x16xbf16> to tensor<64x16xf32>
        tk.yield %24 : tensor<64x16xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %6, %7 : memref<64x128xbf16>, memref<128x256xbf16>, memref<256xbf16>) outs(%8 : memref<64x256xbf16>) {
      ^bb0(%25: tensor<64x128xbf16>, %26: tensor<128x256xbf16>, %27: tensor<256xbf16>):
        %28 = tk.matmul %25, %26 : (tensor<64x128xbf16>, tensor<128x256xbf16>) -> tensor<64x256xbf16>
        %29 = tk.add %28, %27 : (tensor<64x256xbf16>, tensor<256xbf16>) -> tensor<64x256xbf16>
        %30 = tk.relu %29 : tensor<64x256xbf16>
        tk.yield %30 : tensor<64x256xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%8, %9, %10, %11 : memref<64x256xbf16>, memref<256x16xbf16>, memref<16xbf16>, memref<64x16xf32>) outs(%12, %13 : memref<64x16xf32>, memref<64x16xbf16>) {
      ^bb0(%31: tensor<64x256xbf16>, %32: tensor<256x16xbf16>, %33: tensor<16xbf16>, %34: tensor<64x16xf32>):
        %35 = tk.fill 2.0 : tensor<f32>
        %36 = tk.fill 0.0009765625 : tensor<64x16xf32>
        %37 = tk.matmul %31, %32 : (tensor<64x256xbf16>, tensor<256x16xbf16>) -> tensor<64x16xbf16>
        %38 = tk.add %37, %33 : (tensor<64x16xbf16>, tensor<16xbf16>) -> tensor<64x16xbf16>
        %39 = tk.cast %38 : tensor<64x16xbf16> to tensor<64x16xf32>
        %40 = tk.sub %39, %34 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
        %41 = tk.mul %40, %40 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
        %42 = tk.mul %40, %35 : (tensor<64x16xf32>, tensor<f32>) -> tensor<64x16xf32>
        %43 = tk.mul %36, %42 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
        %44 = tk.cast %43 : tensor<64x16xf32> to tensor<64x16xbf16>
        tk.yield %41, %44 : tensor<64x16xf32>, tensor<64x16xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%12 : memref<64x16xf32>) outs(%out0 : memref<f32>) {
      ^bb0(%45: tensor<64x16xf32>):
        %46 = tk.fill 1024.0 : tensor<f32>
        %47 = tk.sum %45 axes [0, 1] : tensor<64x16xf32> -> tensor<f32>
        %48 = tk.div %47, %46 : (tensor<f32>, tensor<f32>) -> tensor<f32>
        tk.yield %48 : tensor<f32>
      }
      sched.compute ins(%13, %9, %8 : memref<64x16xbf16>, memref<256x16xbf16>, memref<64x256xbf16>) outs(%14 : memref<64x256xbf16>) {
      ^bb0(%49: tensor<64x16xbf16>, %50: tensor<256x16xbf16>, %51: tensor<64x256xbf16>):
        %52 = tk.matmul %49, %50 transpose_b : (tensor<64x16xbf16>, tensor<256x16xbf16>) -> tensor<64x256xbf16>
        %53 = tk.relu_grad %52, %51 : tensor<64x256xbf16>
        tk.yield %53 : tensor<64x256xbf16>
      }
      sched.compute ins(%8, %13, %2 : memref<64x256xbf16>, memref<64x16xbf16>, memref<256x16xf32>) outs(%out3, %2 : memref<256x16xf32>, memref<256x16xf32>) {
      ^bb0(%54: tensor<64x256xbf16>, %55: tensor<64x16xbf16>, %56: tensor<256x16xf32>):
        %57 = tk.fill 0.001 : tensor<f32>
        %58 = tk.matmul %54, %55 transpose_a : (tensor<64x256xbf16>, tensor<64x16xbf16>) -> tensor<256x16xbf16>
        %59 = tk.cast %58 : tensor<256x16xbf16> to tensor<256x16xf32>
        %60 = tk.mul %59, %57 : (tensor<256x16xf32>, tensor<f32>) -> tensor<256x16xf32>
        %61 = tk.sub %56, %60 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
        tk.yield %59, %61 : tensor<256x16xf32>, tensor<256x16xf32>
      }
      sched.compute ins(%13, %3 : memref<64x16xbf16>, memref<16xf32>) outs(%out4, %3 : memref<16xf32>, memref<16xf32>) {
      ^bb0(%62: tensor<64x16xbf16>, %63: tensor<16xf32>):
        %64 = tk.fill 0.001 : tensor<f32>
        %65 = tk.sum %62 axes [0] : tensor<64x16xbf16> -> tensor<16xbf16>
        %66 = tk.cast %65 : tensor<16xbf16> to tensor<16xf32>
        %67 = tk.mul %66, %64 : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
        %68 = tk.sub %63, %67 : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
        tk.yield %66, %68 : tensor<16xf32>, tensor<16xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %14, %0 : memref<64x128xbf16>, memref<64x256xbf16>, memref<128x256xf32>) outs(%out1, %0 : memref<128x256xf32>, memref<128x256xf32>) {
      ^bb0(%69: tensor<64x128xbf16>, %70: tensor<64x256xbf16>, %71: tensor<128x256xf32>):
        %72 = tk.fill 0.001 : tensor<f32>
        %73 = tk.matmul %69, %70 transpose_a : (tensor<64x128xbf16>, tensor<64x256xbf16>) -> tensor<128x256xbf16>
        %74 = tk.cast %73 : tensor<128x256xbf16> to tensor<128x256xf32>
        %75 = tk.mul %74, %72 : (tensor<128x256xf32>, tensor<f32>) -> tensor<128x256xf32>
        %76 = tk.sub %71, %75 : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
        tk.yield %74, %76 : tensor<128x256xf32>, tensor<128x256xf32>
      }
      sched.compute ins(%14, %1 : memref<64x256xbf16>, memref<256xf32>) outs(%out2, %1 : memref<256xf32>, memref<256xf32>) {
      ^bb0(%77: tensor<64x256xbf16>, %78: tensor<256xf32>):
        %79 = tk.fill 0.001 : tensor<f32>
        %80 = tk.sum %77 axes [0] : tensor<64x256xbf16> -> tensor<256xbf16>
        %81 = tk.cast %80 : tensor<256xbf16> to tensor<256xf32>
        %82 = tk.mul %81, %79 : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
        %83 = tk.sub %78, %82 : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
        tk.yield %81, %83 : tensor<256xf32>, tensor<256xf32>
      }
    }
  }
}
