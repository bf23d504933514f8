// What tile-stage-casts must leave alone: a phase-0 map that does more than
// one cast (b2 here goes through f16: two roundings, not what staging does)
// stays a map, its phase and barrier with it; the other casts still fold.
// RUN: trainkernel-opt %s -p 'tile-stage-casts{mode=on}' | filecheck %s

// CHECK:       tile.smem stage %3 offset 22144 split -1 : memref<8xf32>
// CHECK-NOT:   tile.smem_cast %3
// CHECK:       tile.smem_cast %2 : memref<64x8xf32>
// CHECK:       tile.smem offset 22176 split -1 : memref<8xbf16>
// CHECK:       tile.map ins(%{{.*}} : memref<8xf32>) outs(%{{.*}} : memref<8xbf16>)
// CHECK:         tk.cast {{.*}} to tensor<8xf16>
// CHECK:       tile.sync block
// CHECK-NEXT:  tile.gemm
builtin.module {
  tile.kernel @tiny_sgd_bf16(%0: memref<32x64xf32>, %1: memref<64xf32>, %2: memref<64x8xf32>, %3: memref<8xf32>, %4: memref<16x32xf32>, %5: memref<16x8xf32>, %out0: memref<f32>, %out1: memref<32x64xf32>, %out2: memref<64xf32>, %out3: memref<64x8xf32>, %out4: memref<8xf32>) inputs 6 results [6, 7, 8, 9, 10, 0, 1, 2, 3] arena 0 config {grid = 1 : i64, threads = 256 : i64, smem = 22192 : i64, cluster = 1 : i64} {
    %6 = tile.smem stage %4 offset 16384 split -1 pitch 36 : memref<16x32xf32>
    %7 = tile.smem offset 18688 split -1 pitch 40 : memref<16x32xbf16>
    %8 = tile.smem stage %0 offset 0 split -1 pitch 68 : memref<32x64xf32>
    %9 = tile.smem stage %1 offset 21760 split -1 : memref<64xf32>
    %10 = tile.smem stage %2 offset 13312 split -1 pitch 12 : memref<64x8xf32>
    %11 = tile.smem stage %3 offset 22144 split -1 : memref<8xf32>
    %12 = tile.smem stage %5 offset 20992 split -1 pitch 12 : memref<16x8xf32>
    %13 = tile.smem offset 8704 split -1 pitch 72 : memref<32x64xbf16>
    %14 = tile.smem offset 22016 split -1 : memref<64xbf16>
    %15 = tile.smem offset 16384 split -1 pitch 72 : memref<16x64xbf16>
    %16 = tile.smem offset 19968 split -1 : memref<64x8xbf16>
    %17 = tile.smem offset 22176 split -1 : memref<8xbf16>
    %18 = tile.smem offset 11008 split -1 pitch 12 : memref<16x8xf32>
    %19 = tile.smem offset 11776 split -1 : memref<16x8xbf16>
    %20 = tile.smem offset 8704 split -1 pitch 72 : memref<16x64xbf16>
    tile.map ins(%6 : memref<16x32xf32>) outs(%7 : memref<16x32xbf16>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
    ^bb0(%21: tensor<16x32xf32>):
      %22 = tk.cast %21 : tensor<16x32xf32> to tensor<16x32xbf16>
      tk.yield %22 : tensor<16x32xbf16>
    }
    tile.map ins(%8 : memref<32x64xf32>) outs(%13 : memref<32x64xbf16>) config {items = 4 : i64, offset = 1 : i64, chunk = 512 : i64, split = -1 : i64} {
    ^bb0(%23: tensor<32x64xf32>):
      %24 = tk.cast %23 : tensor<32x64xf32> to tensor<32x64xbf16>
      tk.yield %24 : tensor<32x64xbf16>
    }
    tile.map ins(%9 : memref<64xf32>) outs(%14 : memref<64xbf16>) config {items = 1 : i64, offset = 5 : i64, chunk = 512 : i64, split = -1 : i64} {
    ^bb0(%25: tensor<64xf32>):
      %26 = tk.cast %25 : tensor<64xf32> to tensor<64xbf16>
      tk.yield %26 : tensor<64xbf16>
    }
    tile.map ins(%10 : memref<64x8xf32>) outs(%16 : memref<64x8xbf16>) config {items = 1 : i64, offset = 6 : i64, chunk = 512 : i64, split = -1 : i64} {
    ^bb0(%27: tensor<64x8xf32>):
      %28 = tk.cast %27 : tensor<64x8xf32> to tensor<64x8xbf16>
      tk.yield %28 : tensor<64x8xbf16>
    }
    tile.map ins(%11 : memref<8xf32>) outs(%17 : memref<8xbf16>) config {items = 1 : i64, offset = 7 : i64, chunk = 512 : i64, split = -1 : i64} {
    ^bb0(%29: tensor<8xf32>):
      %h = tk.cast %29 : tensor<8xf32> to tensor<8xf16>
      %30 = tk.cast %h : tensor<8xf16> to tensor<8xbf16>
      tk.yield %30 : tensor<8xbf16>
    }
    tile.sync block
    tile.gemm ins(%7, %13, %14 : memref<16x32xbf16>, memref<32x64xbf16>, memref<64xbf16>) outs(%15 : memref<16x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64, split = -1 : i64} {
    ^bb0(%31: tensor<16x32xbf16>, %32: tensor<32x64xbf16>, %33: tensor<64xbf16>):
      %34 = tk.matmul %31, %32 : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
      %35 = tk.add %34, %33 : (tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
      %36 = tk.relu %35 : tensor<16x64xbf16>
      tk.yield %36 : tensor<16x64xbf16>
    }
    tile.sync block
    tile.gemm ins(%15, %16, %17, %12 : memref<16x64xbf16>, memref<64x8xbf16>, memref<8xbf16>, memref<16x8xf32>) outs(%18, %19 : memref<16x8xf32>, memref<16x8xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64, split = -1 : i64} {
    ^bb0(%37: tensor<16x64xbf16>, %38: tensor<64x8xbf16>, %39: tensor<8xbf16>, %40: tensor<16x8xf32>):
      %41 = tk.fill 2.0 : tensor<f32>
      %42 = tk.fill 0.0078125 : tensor<16x8xf32>
      %43 = tk.matmul %37, %38 : (tensor<16x64xbf16>, tensor<64x8xbf16>) -> tensor<16x8xbf16>
      %44 = tk.add %43, %39 : (tensor<16x8xbf16>, tensor<8xbf16>) -> tensor<16x8xbf16>
      %45 = tk.cast %44 : tensor<16x8xbf16> to tensor<16x8xf32>
      %46 = tk.sub %45, %40 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
      %47 = tk.mul %46, %46 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
      %48 = tk.mul %46, %41 : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
      %49 = tk.mul %42, %48 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
      %50 = tk.cast %49 : tensor<16x8xf32> to tensor<16x8xbf16>
      tk.yield %47, %50 : tensor<16x8xf32>, tensor<16x8xbf16>
    }
    tile.sync block
    tile.reduce ins(%18 : memref<16x8xf32>) outs(%out0 : memref<f32>) config {items = 1 : i64, offset = 0 : i64, rows = 1 : i64, split = -1 : i64} {
    ^bb0(%51: tensor<16x8xf32>):
      %52 = tk.fill 128.0 : tensor<f32>
      %53 = tk.sum %51 axes [0, 1] : tensor<16x8xf32> -> tensor<f32>
      %54 = tk.div %53, %52 : (tensor<f32>, tensor<f32>) -> tensor<f32>
      tk.yield %54 : tensor<f32>
    }
    tile.gemm ins(%19, %16, %15 : memref<16x8xbf16>, memref<64x8xbf16>, memref<16x64xbf16>) outs(%20 : memref<16x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 1 : i64, split = -1 : i64} {
    ^bb0(%55: tensor<16x8xbf16>, %56: tensor<64x8xbf16>, %57: tensor<16x64xbf16>):
      %58 = tk.matmul %55, %56 transpose_b : (tensor<16x8xbf16>, tensor<64x8xbf16>) -> tensor<16x64xbf16>
      %59 = tk.relu_grad %58, %57 : tensor<16x64xbf16>
      tk.yield %59 : tensor<16x64xbf16>
    }
    tile.gemm ins(%15, %19, %10 : memref<16x64xbf16>, memref<16x8xbf16>, memref<64x8xf32>) outs(%out3, %2 : memref<64x8xf32>, memref<64x8xf32>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 2 : i64, split = -1 : i64} {
    ^bb0(%60: tensor<16x64xbf16>, %61: tensor<16x8xbf16>, %62: tensor<64x8xf32>):
      %63 = tk.fill 0.001 : tensor<f32>
      %64 = tk.matmul %60, %61 transpose_a : (tensor<16x64xbf16>, tensor<16x8xbf16>) -> tensor<64x8xbf16>
      %65 = tk.cast %64 : tensor<64x8xbf16> to tensor<64x8xf32>
      %66 = tk.mul %65, %63 : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
      %67 = tk.sub %62, %66 : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
      tk.yield %65, %67 : tensor<64x8xf32>, tensor<64x8xf32>
    }
    tile.reduce ins(%19, %11 : memref<16x8xbf16>, memref<8xf32>) outs(%out4, %3 : memref<8xf32>, memref<8xf32>) config {items = 1 : i64, offset = 3 : i64, rows = 32 : i64, split = -1 : i64} {
    ^bb0(%68: tensor<16x8xbf16>, %69: tensor<8xf32>):
      %70 = tk.fill 0.001 : tensor<f32>
      %71 = tk.sum %68 axes [0] : tensor<16x8xbf16> -> tensor<8xbf16>
      %72 = tk.cast %71 : tensor<8xbf16> to tensor<8xf32>
      %73 = tk.mul %72, %70 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
      %74 = tk.sub %69, %73 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      tk.yield %72, %74 : tensor<8xf32>, tensor<8xf32>
    }
    tile.sync block
    tile.gemm ins(%7, %20, %8 : memref<16x32xbf16>, memref<16x64xbf16>, memref<32x64xf32>) outs(%out1, %0 : memref<32x64xf32>, memref<32x64xf32>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64, split = -1 : i64} {
    ^bb0(%75: tensor<16x32xbf16>, %76: tensor<16x64xbf16>, %77: tensor<32x64xf32>):
      %78 = tk.fill 0.001 : tensor<f32>
      %79 = tk.matmul %75, %76 transpose_a : (tensor<16x32xbf16>, tensor<16x64xbf16>) -> tensor<32x64xbf16>
      %80 = tk.cast %79 : tensor<32x64xbf16> to tensor<32x64xf32>
      %81 = tk.mul %80, %78 : (tensor<32x64xf32>, tensor<f32>) -> tensor<32x64xf32>
      %82 = tk.sub %77, %81 : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
      tk.yield %80, %82 : tensor<32x64xf32>, tensor<32x64xf32>
    }
    tile.reduce ins(%20, %9 : memref<16x64xbf16>, memref<64xf32>) outs(%out2, %1 : memref<64xf32>, memref<64xf32>) config {items = 2 : i64, offset = 1 : i64, rows = 32 : i64, split = -1 : i64} {
    ^bb0(%83: tensor<16x64xbf16>, %84: tensor<64xf32>):
      %85 = tk.fill 0.001 : tensor<f32>
      %86 = tk.sum %83 axes [0] : tensor<16x64xbf16> -> tensor<64xbf16>
      %87 = tk.cast %86 : tensor<64xbf16> to tensor<64xf32>
      %88 = tk.mul %87, %85 : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
      %89 = tk.sub %84, %88 : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      tk.yield %87, %89 : tensor<64xf32>, tensor<64xf32>
    }
  }
}

