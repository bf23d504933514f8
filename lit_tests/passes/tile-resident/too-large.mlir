// What must NOT be resident: the small workload (B=256, widths 512-1024-64)
// holds 2 MB of fp32 W1 and a replicated 256x512 input; no split plan fits
// the shared memory of a cluster of 16, so tile-resident leaves sched-to-tile's
// grid kernel unchanged (on the wgmma engine, 64 x 32 and 64 x 64 tiles: 256 threads, their
// pipeline's shared memory and the logits' split-K slots: clusters of 2 for the
// fix-up, target.split_k_cluster_fixup, not a resident cluster), even when forced.
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident{mode=force}' | filecheck %s

// CHECK:       tile.kernel @small_sgd_bf16(
// CHECK-NOT:     {{[{ ]}}cluster =
// CHECK-SAME:    arena {{[1-9][0-9]*}} config {grid = {{[0-9]+}} : i64, threads = 256 : i64, smem = 150688 : i64, fixup_cluster = 2 : i64} {
// CHECK-NOT:     tile.smem
// CHECK:         sched.buffer offset
// CHECK:         tile.sync grid

builtin.module {
  sched.program @small_sgd_bf16(%0: memref<512x1024xf32>, %1: memref<1024xf32>, %2: memref<1024x64xf32>, %3: memref<64xf32>, %4: memref<256x512xbf16>, %5: memref<256x64xbf16>, %out0: memref<f32>, %out1: memref<512x1024xf32>, %out2: memref<1024xf32>, %out3: memref<1024x64xf32>, %out4: memref<64xf32>) inputs 6 results [6, 7, 8, 9, 10, 0, 1, 2, 3] arena 1771776 {
    %6 = sched.buffer offset 0 : memref<512x1024xbf16>
    %7 = sched.buffer offset 1769472 : memref<1024xbf16>
    %8 = sched.buffer offset 1048576 : memref<256x1024xbf16>
    %9 = sched.buffer offset 1572864 : memref<1024x64xbf16>
    %10 = sched.buffer offset 1771520 : memref<64xbf16>
    %11 = sched.buffer offset 1703936 : memref<256x64xf32>
    %12 = sched.buffer offset 524288 : memref<256x64xf32>
    %13 = sched.buffer offset 589824 : memref<256x64xbf16>
    %14 = sched.buffer offset 0 : memref<256x1024xbf16>
    sched.phase {
      sched.compute ins(%0 : memref<512x1024xf32>) outs(%6 : memref<512x1024xbf16>) {
      ^bb0(%15: tensor<512x1024xf32>):
        %16 = tk.cast %15 : tensor<512x1024xf32> to tensor<512x1024xbf16>
        tk.yield %16 : tensor<512x1024xbf16>
      }
      sched.compute ins(%1 : memref<1024xf32>) outs(%7 : memref<1024xbf16>) {
      ^bb0(%17: tensor<1024xf32>):
        %18 = tk.cast %17 : tensor<1024xf32> to tensor<1024xbf16>
        tk.yield %18 : tensor<1024xbf16>
      }
      sched.compute ins(%2 : memref<1024x64xf32>) outs(%9 : memref<1024x64xbf16>) {
      ^bb0(%19: tensor<1024x64xf32>):
        %20 = tk.cast %19 : tensor<1024x64xf32> to tensor<1024x64xbf16>
        tk.yield %20 : tensor<1024x64xbf16>
      }
      sched.compute ins(%3 : memref<64xf32>) outs(%10 : memref<64xbf16>) {
      ^bb0(%21: tensor<64xf32>):
        %22 = tk.cast %21 : tensor<64xf32> to tensor<64xbf16>
        tk.yield %22 : tensor<64xbf16>
      }
      sched.compute ins(%5 : memref<256x64xbf16>) outs(%11 : memref<256x64xf32>) {
      ^bb0(%23: tensor<256x64xbf16>):
        %24 = tk.cast %23 : tensor<256x64xbf16> to tensor<256x64xf32>
        tk.yield %24 : tensor<256x64xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %6, %7 : memref<256x512xbf16>, memref<512x1024xbf16>, memref<1024xbf16>) outs(%8 : memref<256x1024xbf16>) {
      ^bb0(%25: tensor<256x512xbf16>, %26: tensor<512x1024xbf16>, %27: tensor<1024xbf16>):
        %28 = tk.matmul %25, %26 : (tensor<256x512xbf16>, tensor<512x1024xbf16>) -> tensor<256x1024xbf16>
        %29 = tk.add %28, %27 : (tensor<256x1024xbf16>, tensor<1024xbf16>) -> tensor<256x1024xbf16>
        %30 = tk.relu %29 : tensor<256x1024xbf16>
        tk.yield %30 : tensor<256x1024xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%8, %9, %10, %11 : memref<256x1024xbf16>, memref<1024x64xbf16>, memref<64xbf16>, memref<256x64xf32>) outs(%12, %13 : memref<256x64xf32>, memref<256x64xbf16>) {
      ^bb0(%31: tensor<256x1024xbf16>, %32: tensor<1024x64xbf16>, %33: tensor<64xbf16>, %34: tensor<256x64xf32>):
        %35 = tk.fill 2.0 : tensor<f32>
        %36 = tk.fill 6.103515625e-05 : tensor<256x64xf32>
        %37 = tk.matmul %31, %32 : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
        %38 = tk.add %37, %33 : (tensor<256x64xbf16>, tensor<64xbf16>) -> tensor<256x64xbf16>
        %39 = tk.cast %38 : tensor<256x64xbf16> to tensor<256x64xf32>
        %40 = tk.sub %39, %34 : (tensor<256x64xf32>, tensor<256x64xf32>) -> tensor<256x64xf32>
        %41 = tk.mul %40, %40 : (tensor<256x64xf32>, tensor<256x64xf32>) -> tensor<256x64xf32>
        %42 = tk.mul %40, %35 : (tensor<256x64xf32>, tensor<f32>) -> tensor<256x64xf32>
        %43 = tk.mul %36, %42 : (tensor<256x64xf32>, tensor<256x64xf32>) -> tensor<256x64xf32>
        %44 = tk.cast %43 : tensor<256x64xf32> to tensor<256x64xbf16>
        tk.yield %41, %44 : tensor<256x64xf32>, tensor<256x64xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%12 : memref<256x64xf32>) outs(%out0 : memref<f32>) {
      ^bb0(%45: tensor<256x64xf32>):
        %46 = tk.fill 16384.0 : tensor<f32>
        %47 = tk.sum %45 axes [0, 1] : tensor<256x64xf32> -> tensor<f32>
        %48 = tk.div %47, %46 : (tensor<f32>, tensor<f32>) -> tensor<f32>
        tk.yield %48 : tensor<f32>
      }
      sched.compute ins(%13, %9, %8 : memref<256x64xbf16>, memref<1024x64xbf16>, memref<256x1024xbf16>) outs(%14 : memref<256x1024xbf16>) {
      ^bb0(%49: tensor<256x64xbf16>, %50: tensor<1024x64xbf16>, %51: tensor<256x1024xbf16>):
        %52 = tk.matmul %49, %50 transpose_b : (tensor<256x64xbf16>, tensor<1024x64xbf16>) -> tensor<256x1024xbf16>
        %53 = tk.relu_grad %52, %51 : tensor<256x1024xbf16>
        tk.yield %53 : tensor<256x1024xbf16>
      }
      sched.compute ins(%8, %13, %2 : memref<256x1024xbf16>, memref<256x64xbf16>, memref<1024x64xf32>) outs(%out3, %2 : memref<1024x64xf32>, memref<1024x64xf32>) {
      ^bb0(%54: tensor<256x1024xbf16>, %55: tensor<256x64xbf16>, %56: tensor<1024x64xf32>):
        %57 = tk.fill 0.001 : tensor<f32>
        %58 = tk.matmul %54, %55 transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
        %59 = tk.cast %58 : tensor<1024x64xbf16> to tensor<1024x64xf32>
        %60 = tk.mul %59, %57 : (tensor<1024x64xf32>, tensor<f32>) -> tensor<1024x64xf32>
        %61 = tk.sub %56, %60 : (tensor<1024x64xf32>, tensor<1024x64xf32>) -> tensor<1024x64xf32>
        tk.yield %59, %61 : tensor<1024x64xf32>, tensor<1024x64xf32>
      }
      sched.compute ins(%13, %3 : memref<256x64xbf16>, memref<64xf32>) outs(%out4, %3 : memref<64xf32>, memref<64xf32>) {
      ^bb0(%62: tensor<256x64xbf16>, %63: tensor<64xf32>):
        %64 = tk.fill 0.001 : tensor<f32>
        %65 = tk.sum %62 axes [0] : tensor<256x64xbf16> -> tensor<64xbf16>
        %66 = tk.cast %65 : tensor<64xbf16> to tensor<64xf32>
        %67 = tk.mul %66, %64 : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
        %68 = tk.sub %63, %67 : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
        tk.yield %66, %68 : tensor<64xf32>, tensor<64xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %14, %0 : memref<256x512xbf16>, memref<256x1024xbf16>, memref<512x1024xf32>) outs(%out1, %0 : memref<512x1024xf32>, memref<512x1024xf32>) {
      ^bb0(%69: tensor<256x512xbf16>, %70: tensor<256x1024xbf16>, %71: tensor<512x1024xf32>):
        %72 = tk.fill 0.001 : tensor<f32>
        %73 = tk.matmul %69, %70 transpose_a : (tensor<256x512xbf16>, tensor<256x1024xbf16>) -> tensor<512x1024xbf16>
        %74 = tk.cast %73 : tensor<512x1024xbf16> to tensor<512x1024xf32>
        %75 = tk.mul %74, %72 : (tensor<512x1024xf32>, tensor<f32>) -> tensor<512x1024xf32>
        %76 = tk.sub %71, %75 : (tensor<512x1024xf32>, tensor<512x1024xf32>) -> tensor<512x1024xf32>
        tk.yield %74, %76 : tensor<512x1024xf32>, tensor<512x1024xf32>
      }
      sched.compute ins(%14, %1 : memref<256x1024xbf16>, memref<1024xf32>) outs(%out2, %1 : memref<1024xf32>, memref<1024xf32>) {
      ^bb0(%77: tensor<256x1024xbf16>, %78: tensor<1024xf32>):
        %79 = tk.fill 0.001 : tensor<f32>
        %80 = tk.sum %77 axes [0] : tensor<256x1024xbf16> -> tensor<1024xbf16>
        %81 = tk.cast %80 : tensor<1024xbf16> to tensor<1024xf32>
        %82 = tk.mul %81, %79 : (tensor<1024xf32>, tensor<f32>) -> tensor<1024xf32>
        %83 = tk.sub %78, %82 : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
        tk.yield %81, %83 : tensor<1024xf32>, tensor<1024xf32>
      }
    }
  }
}
