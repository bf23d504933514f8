// -t cuda, stage_loads (target.stage_loads_in_flight) on online's schedule at an
// unseen shape, 33 x 100-300-7 in bf16 (cluster of 16): x's rows are 200 bytes,
// y's 14, the weights' slices 38 and 14, none of them cp.async's 16-byte units,
// so tk::stage_rows copies them through registers. With a count, each such copy
// is tk::stage_rows<count> (a thread's loads issued together, then stored);
// without, the one-at-a-time loop. A home of 16-byte rows is never batched:
// cp.async copies it (prefetch-inputs.mlir's online: no stage_rows<).
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' -t 'cuda{stage_loads=8}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' -t 'cuda{stage_loads=1}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t 'cuda{stage_loads=8}' | filecheck %s --check-prefix=WHOLE
// RUN: not trainkernel-opt %s -t 'cuda{stage_loads=-1}' 2>&1 | filecheck %s --check-prefix=BAD

// ON:       if (!tk_first) {
// ON-NEXT:    tk::stage_rows<8>(s{{[0-9]+}}, b5, 1, 231, 0, 0);
// ON-NEXT:    tk::stage_rows<8>(s{{[0-9]+}}, b4, 33, 100, 100LL, 104);
// ON:       tk::stage_rows<8>(s{{[0-9]+}}, b0 + (long long)19 * rank, 100, max(0, min(19, 300 - 19 * rank)), 300LL, 20);
// ON-NOT:   tk::stage_rows(

// OFF-NOT:  stage_rows<
// OFF:      tk::stage_rows(s{{[0-9]+}}, b4, 33, 100, 100LL, 104);

// WHOLE-NOT: stage_rows<
// WHOLE:     tk::stage_rows(s{{[0-9]+}}, b{{[0-9]+}}, 64, 128, 128LL, 136);

// BAD: -t cuda: stage_loads must be 0 (as the target says) or a count, got -1

builtin.module {
  sched.program @online_sgd_bf16(%0: memref<100x300xf32>, %1: memref<300xf32>, %2: memref<300x7xf32>, %3: memref<7xf32>, %4: memref<33x100xbf16>, %5: memref<33x7xbf16>, %out0: memref<f32>, %out1: memref<100x300xf32>, %out2: memref<300xf32>, %out3: memref<300x7xf32>, %out4: memref<7xf32>) inputs 6 results [6, 7, 8, 9, 10, 0, 1, 2, 3] arena 86528 {
    %6 = sched.buffer offset 0 : memref<100x300xbf16>
    %7 = sched.buffer offset 85504 : memref<300xbf16>
    %8 = sched.buffer offset 60160 : memref<33x300xbf16>
    %9 = sched.buffer offset 80128 : memref<300x7xbf16>
    %10 = sched.buffer offset 86272 : memref<7xbf16>
    %11 = sched.buffer offset 84480 : memref<33x7xf32>
    %12 = sched.buffer offset 19968 : memref<33x7xf32>
    %13 = sched.buffer offset 20992 : memref<33x7xbf16>
    %14 = sched.buffer offset 0 : memref<33x300xbf16>
    sched.phase {
      sched.compute ins(%0 : memref<100x300xf32>) outs(%6 : memref<100x300xbf16>) {
      ^bb0(%15: tensor<100x300xf32>):
        %16 = tk.cast %15 : tensor<100x300xf32> to tensor<100x300xbf16>
        tk.yield %16 : tensor<100x300xbf16>
      }
      sched.compute ins(%1 : memref<300xf32>) outs(%7 : memref<300xbf16>) {
      ^bb0(%17: tensor<300xf32>):
        %18 = tk.cast %17 : tensor<300xf32> to tensor<300xbf16>
        tk.yield %18 : tensor<300xbf16>
      }
      sched.compute ins(%2 : memref<300x7xf32>) outs(%9 : memref<300x7xbf16>) {
      ^bb0(%19: tensor<300x7xf32>):
        %20 = tk.cast %19 : tensor<300x7xf32> to tensor<300x7xbf16>
        tk.yield %20 : tensor<300x7xbf16>
      }
      sched.compute ins(%3 : memref<7xf32>) outs(%10 : memref<7xbf16>) {
      ^bb0(%21: tensor<7xf32>):
        %22 = tk.cast %21 : tensor<7xf32> to tensor<7xbf16>
        tk.yield %22 : tensor<7xbf16>
      }
      sched.compute ins(%5 : memref<33x7xbf16>) outs(%11 : memref<33x7xf32>) {
      ^bb0(%23: tensor<33x7xbf16>):
        %24 = tk.cast %23 : tensor<33x7xbf16> to tensor<33x7xf32>
        tk.yield %24 : tensor<33x7xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %6, %7 : memref<33x100xbf16>, memref<100x300xbf16>, memref<300xbf16>) outs(%8 : memref<33x300xbf16>) {
      ^bb0(%25: tensor<33x100xbf16>, %26: tensor<100x300xbf16>, %27: tensor<300xbf16>):
        %28 = tk.matmul %25, %26 : (tensor<33x100xbf16>, tensor<100x300xbf16>) -> tensor<33x300xbf16>
        %29 = tk.add %28, %27 : (tensor<33x300xbf16>, tensor<300xbf16>) -> tensor<33x300xbf16>
        %30 = tk.relu %29 : tensor<33x300xbf16>
        tk.yield %30 : tensor<33x300xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%8, %9, %10, %11 : memref<33x300xbf16>, memref<300x7xbf16>, memref<7xbf16>, memref<33x7xf32>) outs(%12, %13 : memref<33x7xf32>, memref<33x7xbf16>) {
      ^bb0(%31: tensor<33x300xbf16>, %32: tensor<300x7xbf16>, %33: tensor<7xbf16>, %34: tensor<33x7xf32>):
        %35 = tk.fill 2.0 : tensor<f32>
        %36 = tk.fill 0.0043290043249726295 : tensor<33x7xf32>
        %37 = tk.matmul %31, %32 : (tensor<33x300xbf16>, tensor<300x7xbf16>) -> tensor<33x7xbf16>
        %38 = tk.add %37, %33 : (tensor<33x7xbf16>, tensor<7xbf16>) -> tensor<33x7xbf16>
        %39 = tk.cast %38 : tensor<33x7xbf16> to tensor<33x7xf32>
        %40 = tk.sub %39, %34 : (tensor<33x7xf32>, tensor<33x7xf32>) -> tensor<33x7xf32>
        %41 = tk.mul %40, %40 : (tensor<33x7xf32>, tensor<33x7xf32>) -> tensor<33x7xf32>
        %42 = tk.mul %40, %35 : (tensor<33x7xf32>, tensor<f32>) -> tensor<33x7xf32>
        %43 = tk.mul %36, %42 : (tensor<33x7xf32>, tensor<33x7xf32>) -> tensor<33x7xf32>
        %44 = tk.cast %43 : tensor<33x7xf32> to tensor<33x7xbf16>
        tk.yield %41, %44 : tensor<33x7xf32>, tensor<33x7xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%12 : memref<33x7xf32>) outs(%out0 : memref<f32>) {
      ^bb0(%45: tensor<33x7xf32>):
        %46 = tk.fill 231.0 : tensor<f32>
        %47 = tk.sum %45 axes [0, 1] : tensor<33x7xf32> -> tensor<f32>
        %48 = tk.div %47, %46 : (tensor<f32>, tensor<f32>) -> tensor<f32>
        tk.yield %48 : tensor<f32>
      }
      sched.compute ins(%13, %9, %8 : memref<33x7xbf16>, memref<300x7xbf16>, memref<33x300xbf16>) outs(%14 : memref<33x300xbf16>) {
      ^bb0(%49: tensor<33x7xbf16>, %50: tensor<300x7xbf16>, %51: tensor<33x300xbf16>):
        %52 = tk.matmul %49, %50 transpose_b : (tensor<33x7xbf16>, tensor<300x7xbf16>) -> tensor<33x300xbf16>
        %53 = tk.relu_grad %52, %51 : tensor<33x300xbf16>
        tk.yield %53 : tensor<33x300xbf16>
      }
      sched.compute ins(%8, %13, %2 : memref<33x300xbf16>, memref<33x7xbf16>, memref<300x7xf32>) outs(%out3, %2 : memref<300x7xf32>, memref<300x7xf32>) {
      ^bb0(%54: tensor<33x300xbf16>, %55: tensor<33x7xbf16>, %56: tensor<300x7xf32>):
        %57 = tk.fill 0.001 : tensor<f32>
        %58 = tk.matmul %54, %55 transpose_a : (tensor<33x300xbf16>, tensor<33x7xbf16>) -> tensor<300x7xbf16>
        %59 = tk.cast %58 : tensor<300x7xbf16> to tensor<300x7xf32>
        %60 = tk.mul %59, %57 : (tensor<300x7xf32>, tensor<f32>) -> tensor<300x7xf32>
        %61 = tk.sub %56, %60 : (tensor<300x7xf32>, tensor<300x7xf32>) -> tensor<300x7xf32>
        tk.yield %59, %61 : tensor<300x7xf32>, tensor<300x7xf32>
      }
      sched.compute ins(%13, %3 : memref<33x7xbf16>, memref<7xf32>) outs(%out4, %3 : memref<7xf32>, memref<7xf32>) {
      ^bb0(%62: tensor<33x7xbf16>, %63: tensor<7xf32>):
        %64 = tk.fill 0.001 : tensor<f32>
        %65 = tk.sum %62 axes [0] : tensor<33x7xbf16> -> tensor<7xbf16>
        %66 = tk.cast %65 : tensor<7xbf16> to tensor<7xf32>
        %67 = tk.mul %66, %64 : (tensor<7xf32>, tensor<f32>) -> tensor<7xf32>
        %68 = tk.sub %63, %67 : (tensor<7xf32>, tensor<7xf32>) -> tensor<7xf32>
        tk.yield %66, %68 : tensor<7xf32>, tensor<7xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %14, %0 : memref<33x100xbf16>, memref<33x300xbf16>, memref<100x300xf32>) outs(%out1, %0 : memref<100x300xf32>, memref<100x300xf32>) {
      ^bb0(%69: tensor<33x100xbf16>, %70: tensor<33x300xbf16>, %71: tensor<100x300xf32>):
        %72 = tk.fill 0.001 : tensor<f32>
        %73 = tk.matmul %69, %70 transpose_a : (tensor<33x100xbf16>, tensor<33x300xbf16>) -> tensor<100x300xbf16>
        %74 = tk.cast %73 : tensor<100x300xbf16> to tensor<100x300xf32>
        %75 = tk.mul %74, %72 : (tensor<100x300xf32>, tensor<f32>) -> tensor<100x300xf32>
        %76 = tk.sub %71, %75 : (tensor<100x300xf32>, tensor<100x300xf32>) -> tensor<100x300xf32>
        tk.yield %74, %76 : tensor<100x300xf32>, tensor<100x300xf32>
      }
      sched.compute ins(%14, %1 : memref<33x300xbf16>, memref<300xf32>) outs(%out2, %1 : memref<300xf32>, memref<300xf32>) {
      ^bb0(%77: tensor<33x300xbf16>, %78: tensor<300xf32>):
        %79 = tk.fill 0.001 : tensor<f32>
        %80 = tk.sum %77 axes [0] : tensor<33x300xbf16> -> tensor<300xbf16>
        %81 = tk.cast %80 : tensor<300xbf16> to tensor<300xf32>
        %82 = tk.mul %81, %79 : (tensor<300xf32>, tensor<f32>) -> tensor<300xf32>
        %83 = tk.sub %78, %82 : (tensor<300xf32>, tensor<300xf32>) -> tensor<300xf32>
        tk.yield %81, %83 : tensor<300xf32>, tensor<300xf32>
      }
    }
  }
}
