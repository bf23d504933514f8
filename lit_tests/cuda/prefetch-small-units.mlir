// -t cuda, prefetch_small (target.prefetch_small_units, perf-log step 92) on the sched
// schedule of online resized to 16 x 40-32-10 (`trainkernel inspect online --sizes
// 16,40,32,10 --stage sched`): its labels y are 16 rows of 10 bf16, 20 bytes, which
// cp.async copies only in 4-byte units. On: both batch homes are prefetched, x (whole
// 16-byte units) by tk::stage_rows as before, y by tk::stage_input_rows (4-byte
// cp.async.ca). Off: the 16-byte rule, so nothing is prefetched and the batch is
// staged at every step's start.
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_small=on prefetch_pointers=off pointer_copies=off}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' -t 'cuda{prefetch_inputs=on prefetch_small=off pointer_copies=off}' | filecheck %s --check-prefix=OFF

// ON:       void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd, void* const* tk_next) {
// ON:       tk::stage_wait();
// ON-NEXT:  if (tk_more) {  // the next step's batch, in flight through this step (plan_prefetched_inputs)
// ON-NEXT:    void* tk_from[2];
// ON-NEXT:    tk_from[0] = tk_next[0];
// ON-NEXT:    tk_from[1] = tk_next[1];
// ON-NEXT:    tk::stage_rows((__nv_bfloat16*)(smem + (tk_odd ? {{[0-9]+ : [0-9]+}})), ((__nv_bfloat16*)tk_from[0]), 1, 640, 0, 0);
// ON-NEXT:    tk::stage_input_rows((__nv_bfloat16*)(smem + (tk_odd ? {{[0-9]+ : [0-9]+}})), ((__nv_bfloat16*)tk_from[1]), 16, 10, 10LL, 24);
// ON-NEXT:  }

// OFF:      void tk_step(void* const* tk_in, bool tk_first, bool tk_more, bool tk_odd) {
// OFF-NOT:  tk_next
// OFF-NOT:  stage_input_rows
// OFF:      if (!tk_first) {
// OFF-NEXT:   tk::stage_rows(s{{[0-9]+}}, b{{[0-9]+}}, 1, 640, 0, 0);
// OFF-NEXT:   tk::stage_rows(s{{[0-9]+}}, b{{[0-9]+}}, 16, 10, 10LL, 24);
// OFF-NEXT: }
// OFF-NOT:  tk_next
// OFF-NOT:  stage_input_rows

builtin.module {
  sched.program @online_sgd_bf16(%0: memref<40x32xf32>, %1: memref<32xf32>, %2: memref<32x10xf32>, %3: memref<10xf32>, %4: memref<16x40xbf16>, %5: memref<16x10xbf16>, %out0: memref<f32>, %out1: memref<40x32xf32>, %out2: memref<32xf32>, %out3: memref<32x10xf32>, %out4: memref<10xf32>) inputs 6 results [6, 7, 8, 9, 10, 0, 1, 2, 3] arena 4864 {
    %6 = sched.buffer offset 0 : memref<40x32xbf16>
    %7 = sched.buffer offset 4352 : memref<32xbf16>
    %8 = sched.buffer offset 2560 : memref<16x32xbf16>
    %9 = sched.buffer offset 3584 : memref<32x10xbf16>
    %10 = sched.buffer offset 4608 : memref<10xbf16>
    %11 = sched.buffer offset 1024 : memref<16x10xf32>
    %12 = sched.buffer offset 1792 : memref<16x10xbf16>
    %13 = sched.buffer offset 0 : memref<16x32xbf16>
    sched.phase {
      sched.compute ins(%0 : memref<40x32xf32>) outs(%6 : memref<40x32xbf16>) {
      ^bb0(%14: tensor<40x32xf32>):
        %15 = tk.cast %14 : tensor<40x32xf32> to tensor<40x32xbf16>
        tk.yield %15 : tensor<40x32xbf16>
      }
      sched.compute ins(%1 : memref<32xf32>) outs(%7 : memref<32xbf16>) {
      ^bb0(%16: tensor<32xf32>):
        %17 = tk.cast %16 : tensor<32xf32> to tensor<32xbf16>
        tk.yield %17 : tensor<32xbf16>
      }
      sched.compute ins(%2 : memref<32x10xf32>) outs(%9 : memref<32x10xbf16>) {
      ^bb0(%18: tensor<32x10xf32>):
        %19 = tk.cast %18 : tensor<32x10xf32> to tensor<32x10xbf16>
        tk.yield %19 : tensor<32x10xbf16>
      }
      sched.compute ins(%3 : memref<10xf32>) outs(%10 : memref<10xbf16>) {
      ^bb0(%20: tensor<10xf32>):
        %21 = tk.cast %20 : tensor<10xf32> to tensor<10xbf16>
        tk.yield %21 : tensor<10xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %6, %7 : memref<16x40xbf16>, memref<40x32xbf16>, memref<32xbf16>) outs(%8 : memref<16x32xbf16>) {
      ^bb0(%22: tensor<16x40xbf16>, %23: tensor<40x32xbf16>, %24: tensor<32xbf16>):
        %25 = tk.matmul %22, %23 : (tensor<16x40xbf16>, tensor<40x32xbf16>) -> tensor<16x32xbf16>
        %26 = tk.add %25, %24 : (tensor<16x32xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
        %27 = tk.relu %26 : tensor<16x32xbf16>
        tk.yield %27 : tensor<16x32xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%8, %9, %10, %5 : memref<16x32xbf16>, memref<32x10xbf16>, memref<10xbf16>, memref<16x10xbf16>) outs(%11, %12 : memref<16x10xf32>, memref<16x10xbf16>) {
      ^bb0(%28: tensor<16x32xbf16>, %29: tensor<32x10xbf16>, %30: tensor<10xbf16>, %31: tensor<16x10xbf16>):
        %32 = tk.fill 2.0 : tensor<f32>
        %33 = tk.fill 0.0062500000931322575 : tensor<16x10xf32>
        %34 = tk.matmul %28, %29 : (tensor<16x32xbf16>, tensor<32x10xbf16>) -> tensor<16x10xbf16>
        %35 = tk.add %34, %30 : (tensor<16x10xbf16>, tensor<10xbf16>) -> tensor<16x10xbf16>
        %36 = tk.cast %35 : tensor<16x10xbf16> to tensor<16x10xf32>
        %37 = tk.cast %31 : tensor<16x10xbf16> to tensor<16x10xf32>
        %38 = tk.sub %36, %37 : (tensor<16x10xf32>, tensor<16x10xf32>) -> tensor<16x10xf32>
        %39 = tk.mul %38, %38 : (tensor<16x10xf32>, tensor<16x10xf32>) -> tensor<16x10xf32>
        %40 = tk.mul %38, %32 : (tensor<16x10xf32>, tensor<f32>) -> tensor<16x10xf32>
        %41 = tk.mul %33, %40 : (tensor<16x10xf32>, tensor<16x10xf32>) -> tensor<16x10xf32>
        %42 = tk.cast %41 : tensor<16x10xf32> to tensor<16x10xbf16>
        tk.yield %39, %42 : tensor<16x10xf32>, tensor<16x10xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%11 : memref<16x10xf32>) outs(%out0 : memref<f32>) {
      ^bb0(%43: tensor<16x10xf32>):
        %44 = tk.fill 160.0 : tensor<f32>
        %45 = tk.sum %43 axes [0, 1] : tensor<16x10xf32> -> tensor<f32>
        %46 = tk.div %45, %44 : (tensor<f32>, tensor<f32>) -> tensor<f32>
        tk.yield %46 : tensor<f32>
      }
      sched.compute ins(%12, %9, %8 : memref<16x10xbf16>, memref<32x10xbf16>, memref<16x32xbf16>) outs(%13 : memref<16x32xbf16>) {
      ^bb0(%47: tensor<16x10xbf16>, %48: tensor<32x10xbf16>, %49: tensor<16x32xbf16>):
        %50 = tk.matmul %47, %48 transpose_b : (tensor<16x10xbf16>, tensor<32x10xbf16>) -> tensor<16x32xbf16>
        %51 = tk.relu_grad %50, %49 : tensor<16x32xbf16>
        tk.yield %51 : tensor<16x32xbf16>
      }
      sched.compute ins(%8, %12, %2 : memref<16x32xbf16>, memref<16x10xbf16>, memref<32x10xf32>) outs(%out3, %2 : memref<32x10xf32>, memref<32x10xf32>) {
      ^bb0(%52: tensor<16x32xbf16>, %53: tensor<16x10xbf16>, %54: tensor<32x10xf32>):
        %55 = tk.fill 0.001 : tensor<f32>
        %56 = tk.matmul %52, %53 transpose_a : (tensor<16x32xbf16>, tensor<16x10xbf16>) -> tensor<32x10xbf16>
        %57 = tk.cast %56 : tensor<32x10xbf16> to tensor<32x10xf32>
        %58 = tk.mul %57, %55 : (tensor<32x10xf32>, tensor<f32>) -> tensor<32x10xf32>
        %59 = tk.sub %54, %58 : (tensor<32x10xf32>, tensor<32x10xf32>) -> tensor<32x10xf32>
        tk.yield %57, %59 : tensor<32x10xf32>, tensor<32x10xf32>
      }
      sched.compute ins(%12, %3 : memref<16x10xbf16>, memref<10xf32>) outs(%out4, %3 : memref<10xf32>, memref<10xf32>) {
      ^bb0(%60: tensor<16x10xbf16>, %61: tensor<10xf32>):
        %62 = tk.fill 0.001 : tensor<f32>
        %63 = tk.sum %60 axes [0] : tensor<16x10xbf16> -> tensor<10xbf16>
        %64 = tk.cast %63 : tensor<10xbf16> to tensor<10xf32>
        %65 = tk.mul %64, %62 : (tensor<10xf32>, tensor<f32>) -> tensor<10xf32>
        %66 = tk.sub %61, %65 : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
        tk.yield %64, %66 : tensor<10xf32>, tensor<10xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %13, %0 : memref<16x40xbf16>, memref<16x32xbf16>, memref<40x32xf32>) outs(%out1, %0 : memref<40x32xf32>, memref<40x32xf32>) {
      ^bb0(%67: tensor<16x40xbf16>, %68: tensor<16x32xbf16>, %69: tensor<40x32xf32>):
        %70 = tk.fill 0.001 : tensor<f32>
        %71 = tk.matmul %67, %68 transpose_a : (tensor<16x40xbf16>, tensor<16x32xbf16>) -> tensor<40x32xbf16>
        %72 = tk.cast %71 : tensor<40x32xbf16> to tensor<40x32xf32>
        %73 = tk.mul %72, %70 : (tensor<40x32xf32>, tensor<f32>) -> tensor<40x32xf32>
        %74 = tk.sub %69, %73 : (tensor<40x32xf32>, tensor<40x32xf32>) -> tensor<40x32xf32>
        tk.yield %72, %74 : tensor<40x32xf32>, tensor<40x32xf32>
      }
      sched.compute ins(%13, %1 : memref<16x32xbf16>, memref<32xf32>) outs(%out2, %1 : memref<32xf32>, memref<32xf32>) {
      ^bb0(%75: tensor<16x32xbf16>, %76: tensor<32xf32>):
        %77 = tk.fill 0.001 : tensor<f32>
        %78 = tk.sum %75 axes [0] : tensor<16x32xbf16> -> tensor<32xbf16>
        %79 = tk.cast %78 : tensor<32xbf16> to tensor<32xf32>
        %80 = tk.mul %79, %77 : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
        %81 = tk.sub %76, %80 : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
        tk.yield %79, %81 : tensor<32xf32>, tensor<32xf32>
      }
    }
  }
}
