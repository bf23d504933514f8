// tile-resident on the online workload's schedule (B=64, widths 128-256-16):
// the working set does not fit one block, so the step is partitioned over a
// cluster the way tensor parallelism splits a layer: the hidden axis (W1's
// columns, b1, W2's rows, h, dh and every gradient of them) is one axis class,
// split over the 16 blocks; the batch, input and output classes stay whole.
// So the first product, dh, dW1, dW2 and db1 are local to each block; the
// second product h @ W2 contracts over the split axis: each block sums its
// slice of k, the partials meet in its `scratch` and every block finishes the
// loss and its gradient on the whole 64x16 output (replicated, split -1).
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' | filecheck %s

// CHECK:       tile.kernel @online_sgd_bf16(
// CHECK-SAME:    arena 0 config {grid = 16 : i64, threads = 256 : i64, smem = {{[0-9]+}} : i64, cluster = 16 : i64}
// 2-D homes get rows padded to an odd number of 16-byte units (W1's 16-float
// slice rows: 64 -> 80 bytes, pitch 20; x's 128 bf16: 256 -> 272 bytes,
// pitch 136); 1-D homes stay dense.
// CHECK-NEXT:    %[[W1:.*]] = tile.smem stage %0 offset {{[0-9]+}} split 1 pitch 20 : memref<128x256xf32>
// CHECK-NEXT:    tile.smem offset {{[0-9]+}} split 1 pitch 24 : memref<128x256xbf16>
// CHECK-NEXT:    tile.smem stage %1 offset {{[0-9]+}} split 0 : memref<256xf32>
// CHECK-NEXT:    %[[W2:.*]] = tile.smem stage %2 offset {{[0-9]+}} split 0 pitch 20 : memref<256x16xf32>
// CHECK-NEXT:    tile.smem stage %3 offset {{[0-9]+}} split -1 : memref<16xf32>
// CHECK-NEXT:    tile.smem stage %5 offset {{[0-9]+}} split -1 pitch 24 : memref<64x16xbf16>
// CHECK-NEXT:    tile.smem stage %4 offset {{[0-9]+}} split -1 pitch 136 : memref<64x128xbf16>
// CHECK:         tile.gemm {{.*}} outs({{.*}} : memref<64x256xbf16>) config {{{.*}}split = 1 : i64} {
// CHECK:         tile.sync block
// CHECK:         tile.gemm {{.*}} : memref<64x256xbf16>, memref<256x16xbf16>, {{.*}} config {{{.*}}split = 2 : i64, scratch = {{[0-9]+}} : i64} {
// CHECK:         tile.reduce {{.*}} outs(%out0 : memref<f32>) config {{{.*}}split = -1 : i64} {
// dW2 and its SGD update: rows of W2 are the split hidden axis.
// CHECK:         outs(%out3, %2 : memref<256x16xf32>, memref<256x16xf32>) config {{{.*}}split = 0 : i64} {
// dW1 and db1: split along the hidden axis.
// CHECK:         outs(%out1, %0 : memref<128x256xf32>, memref<128x256xf32>) config {{{.*}}split = 1 : i64} {
// CHECK:         outs(%out2, %1 : memref<256xf32>, memref<256xf32>) config {{{.*}}split = 1 : i64} {
// CHECK-NOT:     tile.sync grid

// carry_casts=on (target.carry_casts): the homes of casts of state (the bf16
// copies of W1, b1, W2, b2) live to the kernel's end, so that the step loop can
// carry them from step to step: no other home takes their bytes. Off (the
// default target): the loss-square home reuses W1's copy's bytes after phase 1.
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident{carry_casts=on}' | filecheck %s --check-prefix=CARRY
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident{carry_casts=off}' | filecheck %s --check-prefix=NOCARRY
// RUN: not trainkernel-opt %s -p 'sched-to-tile,tile-resident{carry_casts=always}' 2>&1 | filecheck %s --check-prefix=BAD
// CARRY:       tile.smem offset 27648 split 1 pitch 24 : memref<128x256xbf16>
// CARRY-NOT:   offset 27648
// CARRY:       tile.smem offset [[B1:[0-9]+]] split 0 : memref<256xbf16>
// CARRY-NOT:   offset [[B1]] split
// CARRY:       tile.sync block
// NOCARRY:     tile.smem offset 27648 split 1 pitch 24 : memref<128x256xbf16>
// NOCARRY:     tile.smem offset 27648 split -1 pitch 20 : memref<64x16xf32>
// BAD:         tile-resident: mode must be target, on or off, got 'always'

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
