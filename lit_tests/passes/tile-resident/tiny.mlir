// tile-resident on the tiny workload's schedule: its working set (~19 KB) fits
// one block, so the cost model makes it resident in a cluster of one: every
// argument a tile op reads gets a staged home in shared memory, every
// temporary a home of its own (by phase liveness, so homes share bytes), the
// arena is gone and phases are ordered by block barriers. mode=off leaves the
// grid kernel of sched-to-tile as it is (here on the mma.sync engine).
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile{engine=mma},tile-resident{mode=off}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident{threads=64}' | filecheck %s --check-prefix=THREADS
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' | trainkernel-opt | filecheck %s

// Threads per block: 256 unless the option says otherwise (a grid kernel keeps sched-to-tile's).
// THREADS:     tile.kernel @tiny_sgd_bf16(
// The homes of the weights' bf16 casts live to the end (target.carry_casts: the
// step loop carries them to the next step), so fewer homes share bytes: 24752 B,
// 22192 without.
// THREADS-SAME:  config {grid = 1 : i64, threads = 64 : i64, smem = 24752 : i64, cluster = 1 : i64}
// CHECK:       tile.kernel @tiny_sgd_bf16(
// CHECK-SAME:    arena 0 config {grid = 1 : i64, threads = 256 : i64, smem = 24752 : i64, cluster = 1 : i64}
// CHECK-NEXT:    %[[W1:.*]] = tile.smem stage %0 offset {{[0-9]+}} split -1 pitch 68 : memref<32x64xf32>
// CHECK-NOT:     sched.buffer
// CHECK:         tile.smem stage %4 offset {{[0-9]+}} split -1 pitch 40 : memref<16x32xbf16>
// CHECK:         tile.map ins(%[[W1]] : memref<32x64xf32>)
// CHECK-SAME:      split = -1
// CHECK:         tile.sync block
// CHECK-NOT:     tile.sync grid
// The SGD update writes the parameter argument itself (global memory).
// CHECK:         outs(%out1, %0 : memref<32x64xf32>, memref<32x64xf32>)

// OFF:           tile.kernel @tiny_sgd_bf16(
// OFF-SAME:        arena 8192 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
// OFF-NOT:         tile.smem
// OFF:             sched.buffer offset 0 : memref<32x64xbf16>

builtin.module {
  sched.program @tiny_sgd_bf16(%0: memref<32x64xf32>, %1: memref<64xf32>, %2: memref<64x8xf32>, %3: memref<8xf32>, %4: memref<16x32xbf16>, %5: memref<16x8xbf16>, %out0: memref<f32>, %out1: memref<32x64xf32>, %out2: memref<64xf32>, %out3: memref<64x8xf32>, %out4: memref<8xf32>) inputs 6 results [6, 7, 8, 9, 10, 0, 1, 2, 3] arena 8192 {
    %6 = sched.buffer offset 0 : memref<32x64xbf16>
    %7 = sched.buffer offset 7680 : memref<64xbf16>
    %8 = sched.buffer offset 4096 : memref<16x64xbf16>
    %9 = sched.buffer offset 6144 : memref<64x8xbf16>
    %10 = sched.buffer offset 7936 : memref<8xbf16>
    %11 = sched.buffer offset 7168 : memref<16x8xf32>
    %12 = sched.buffer offset 2048 : memref<16x8xf32>
    %13 = sched.buffer offset 2560 : memref<16x8xbf16>
    %14 = sched.buffer offset 0 : memref<16x64xbf16>
    sched.phase {
      sched.compute ins(%0 : memref<32x64xf32>) outs(%6 : memref<32x64xbf16>) {
      ^bb0(%15: tensor<32x64xf32>):
        %16 = tk.cast %15 : tensor<32x64xf32> to tensor<32x64xbf16>
        tk.yield %16 : tensor<32x64xbf16>
      }
      sched.compute ins(%1 : memref<64xf32>) outs(%7 : memref<64xbf16>) {
      ^bb0(%17: tensor<64xf32>):
        %18 = tk.cast %17 : tensor<64xf32> to tensor<64xbf16>
        tk.yield %18 : tensor<64xbf16>
      }
      sched.compute ins(%2 : memref<64x8xf32>) outs(%9 : memref<64x8xbf16>) {
      ^bb0(%19: tensor<64x8xf32>):
        %20 = tk.cast %19 : tensor<64x8xf32> to tensor<64x8xbf16>
        tk.yield %20 : tensor<64x8xbf16>
      }
      sched.compute ins(%3 : memref<8xf32>) outs(%10 : memref<8xbf16>) {
      ^bb0(%21: tensor<8xf32>):
        %22 = tk.cast %21 : tensor<8xf32> to tensor<8xbf16>
        tk.yield %22 : tensor<8xbf16>
      }
      sched.compute ins(%5 : memref<16x8xbf16>) outs(%11 : memref<16x8xf32>) {
      ^bb0(%23: tensor<16x8xbf16>):
        %24 = tk.cast %23 : tensor<16x8xbf16> to tensor<16x8xf32>
        tk.yield %24 : tensor<16x8xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %6, %7 : memref<16x32xbf16>, memref<32x64xbf16>, memref<64xbf16>) outs(%8 : memref<16x64xbf16>) {
      ^bb0(%25: tensor<16x32xbf16>, %26: tensor<32x64xbf16>, %27: tensor<64xbf16>):
        %28 = tk.matmul %25, %26 : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
        %29 = tk.add %28, %27 : (tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
        %30 = tk.relu %29 : tensor<16x64xbf16>
        tk.yield %30 : tensor<16x64xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%8, %9, %10, %11 : memref<16x64xbf16>, memref<64x8xbf16>, memref<8xbf16>, memref<16x8xf32>) outs(%12, %13 : memref<16x8xf32>, memref<16x8xbf16>) {
      ^bb0(%31: tensor<16x64xbf16>, %32: tensor<64x8xbf16>, %33: tensor<8xbf16>, %34: tensor<16x8xf32>):
        %35 = tk.fill 2.0 : tensor<f32>
        %36 = tk.fill 0.0078125 : tensor<16x8xf32>
        %37 = tk.matmul %31, %32 : (tensor<16x64xbf16>, tensor<64x8xbf16>) -> tensor<16x8xbf16>
        %38 = tk.add %37, %33 : (tensor<16x8xbf16>, tensor<8xbf16>) -> tensor<16x8xbf16>
        %39 = tk.cast %38 : tensor<16x8xbf16> to tensor<16x8xf32>
        %40 = tk.sub %39, %34 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
        %41 = tk.mul %40, %40 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
        %42 = tk.mul %40, %35 : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
        %43 = tk.mul %36, %42 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
        %44 = tk.cast %43 : tensor<16x8xf32> to tensor<16x8xbf16>
        tk.yield %41, %44 : tensor<16x8xf32>, tensor<16x8xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%12 : memref<16x8xf32>) outs(%out0 : memref<f32>) {
      ^bb0(%45: tensor<16x8xf32>):
        %46 = tk.fill 128.0 : tensor<f32>
        %47 = tk.sum %45 axes [0, 1] : tensor<16x8xf32> -> tensor<f32>
        %48 = tk.div %47, %46 : (tensor<f32>, tensor<f32>) -> tensor<f32>
        tk.yield %48 : tensor<f32>
      }
      sched.compute ins(%13, %9, %8 : memref<16x8xbf16>, memref<64x8xbf16>, memref<16x64xbf16>) outs(%14 : memref<16x64xbf16>) {
      ^bb0(%49: tensor<16x8xbf16>, %50: tensor<64x8xbf16>, %51: tensor<16x64xbf16>):
        %52 = tk.matmul %49, %50 transpose_b : (tensor<16x8xbf16>, tensor<64x8xbf16>) -> tensor<16x64xbf16>
        %53 = tk.relu_grad %52, %51 : tensor<16x64xbf16>
        tk.yield %53 : tensor<16x64xbf16>
      }
      sched.compute ins(%8, %13, %2 : memref<16x64xbf16>, memref<16x8xbf16>, memref<64x8xf32>) outs(%out3, %2 : memref<64x8xf32>, memref<64x8xf32>) {
      ^bb0(%54: tensor<16x64xbf16>, %55: tensor<16x8xbf16>, %56: tensor<64x8xf32>):
        %57 = tk.fill 0.001 : tensor<f32>
        %58 = tk.matmul %54, %55 transpose_a : (tensor<16x64xbf16>, tensor<16x8xbf16>) -> tensor<64x8xbf16>
        %59 = tk.cast %58 : tensor<64x8xbf16> to tensor<64x8xf32>
        %60 = tk.mul %59, %57 : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
        %61 = tk.sub %56, %60 : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
        tk.yield %59, %61 : tensor<64x8xf32>, tensor<64x8xf32>
      }
      sched.compute ins(%13, %3 : memref<16x8xbf16>, memref<8xf32>) outs(%out4, %3 : memref<8xf32>, memref<8xf32>) {
      ^bb0(%62: tensor<16x8xbf16>, %63: tensor<8xf32>):
        %64 = tk.fill 0.001 : tensor<f32>
        %65 = tk.sum %62 axes [0] : tensor<16x8xbf16> -> tensor<8xbf16>
        %66 = tk.cast %65 : tensor<8xbf16> to tensor<8xf32>
        %67 = tk.mul %66, %64 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
        %68 = tk.sub %63, %67 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
        tk.yield %66, %68 : tensor<8xf32>, tensor<8xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %14, %0 : memref<16x32xbf16>, memref<16x64xbf16>, memref<32x64xf32>) outs(%out1, %0 : memref<32x64xf32>, memref<32x64xf32>) {
      ^bb0(%69: tensor<16x32xbf16>, %70: tensor<16x64xbf16>, %71: tensor<32x64xf32>):
        %72 = tk.fill 0.001 : tensor<f32>
        %73 = tk.matmul %69, %70 transpose_a : (tensor<16x32xbf16>, tensor<16x64xbf16>) -> tensor<32x64xbf16>
        %74 = tk.cast %73 : tensor<32x64xbf16> to tensor<32x64xf32>
        %75 = tk.mul %74, %72 : (tensor<32x64xf32>, tensor<f32>) -> tensor<32x64xf32>
        %76 = tk.sub %71, %75 : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
        tk.yield %74, %76 : tensor<32x64xf32>, tensor<32x64xf32>
      }
      sched.compute ins(%14, %1 : memref<16x64xbf16>, memref<64xf32>) outs(%out2, %1 : memref<64xf32>, memref<64xf32>) {
      ^bb0(%77: tensor<16x64xbf16>, %78: tensor<64xf32>):
        %79 = tk.fill 0.001 : tensor<f32>
        %80 = tk.sum %77 axes [0] : tensor<16x64xbf16> -> tensor<64xbf16>
        %81 = tk.cast %80 : tensor<64xbf16> to tensor<64xf32>
        %82 = tk.mul %81, %79 : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
        %83 = tk.sub %78, %82 : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
        tk.yield %81, %83 : tensor<64xf32>, tensor<64xf32>
      }
    }
  }
}
