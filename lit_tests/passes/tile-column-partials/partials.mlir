// tile-column-partials: a column sum (tk.sum axes [0]) of a gemm's output
// stored in an earlier phase reads 16-row fp32 partials that the gemm's
// epilogue writes (tk.column_partials yielded to a buffer appended to the
// arena) instead of the output; the sum of the partials is cast to the type
// of the original sum. Only wgmma gemms (the Hopper row walk sums the runs),
// grid kernels, and outputs of more rows than one run and (min_bytes; the
// target's column_partials_min_bytes by default) at least so many bytes.
// RUN: trainkernel-opt %s --split-input-file -p tile-column-partials | filecheck %s --check-prefix=DEFAULT
// RUN: trainkernel-opt %s --split-input-file -p 'tile-column-partials{min_bytes=0}' | filecheck %s
// RUN: trainkernel-opt %s --split-input-file -p 'tile-column-partials{min_bytes=0}' -t cuda | filecheck %s --check-prefix=CUDA

// The CUDA printer wraps the epilogue in tk::hopper::column_partials(functor,
// P, N): the store half stores dh and returns the value stored (already
// rounded to bf16), which the row walk sums.
// CUDA:       tk::hopper::column_partials(
// CUDA-NEXT:    tk::staged_epilogue(
// CUDA:           [&](int i, int j, float acc, const tk::EpilogueLoads<1>& tk_l) {
// CUDA-NEXT:        const __nv_bfloat16 mmv_bits = tk::from_float<__nv_bfloat16>(acc);
// CUDA-NEXT:        const float mmv = tk::to_float(mmv_bits);
// CUDA-NEXT:        const __nv_bfloat16 [[V:v[0-9]+]]_bits = {{.*}};
// CUDA-NEXT:        const float [[V]] = tk::to_float([[V]]_bits);
// CUDA-NEXT:        [[DH:t[0-9]+]][(i)*48 + (j)] = [[V]]_bits;
// CUDA-NEXT:        return [[V]];
// CUDA-NEXT:      },
// CUDA:         , [[P:t[0-9]+]], 48)
// The db1 sum reads P: 3 rows of 48 floats.
// CUDA:       tile.reduce tk.sum: 3 rows into 48 columns

// small at 40 rows (widths 32-48-16), 4 blocks, wgmma: db2 sums dy (40x16,
// p1's second output), db1 sums dh (40x48, p2's gemm); 3 runs of 16 rows each
// (the last of 8). The arena grows by the two partial buffers (each at a 256-aligned offset).
// With the H200's threshold (12 MB) these outputs stay in L2: nothing changes.
// DEFAULT-NOT: tk.column_partials
// CHECK:       tile.kernel @small_sgd_bf16
// CHECK-SAME:  arena 15936
// CHECK:         %[[P2:.*]] = sched.buffer offset 15104 : memref<3x16xf32>
// CHECK-NEXT:    %[[P1:.*]] = sched.buffer offset 15360 : memref<3x48xf32>
// The loss gemm: dy (its second output) is also summed into P2.
// CHECK:         tile.gemm ins({{.*}}) outs(%{{.*}}, %[[DY:.*]], %[[P2]] : memref<40x16xf32>, memref<40x16xbf16>, memref<3x16xf32>)
// CHECK:           %[[G2:.*]] = tk.column_partials %[[V2:.*]] rows 16 : tensor<40x16xbf16> -> tensor<3x16xf32>
// CHECK-NEXT:      tk.yield %{{.*}}, %[[V2]], %[[G2]] : tensor<40x16xf32>, tensor<40x16xbf16>, tensor<3x16xf32>
// CHECK:         tile.sync grid
// The row sum of the loss is not a column sum: unchanged.
// CHECK:         tile.reduce ins(%{{.*}} : memref<40x16xf32>) outs(%out0 : memref<f32>)
// CHECK:           tk.sum %{{.*}} axes [0, 1] : tensor<40x16xf32> -> tensor<f32>
// The dh gemm: P1.
// CHECK:         tile.gemm ins(%[[DY]], {{.*}}) outs(%[[DH:.*]], %[[P1]] : memref<40x48xbf16>, memref<3x48xf32>)
// CHECK:           %[[G1:.*]] = tk.column_partials %[[V1:.*]] rows 16 : tensor<40x48xbf16> -> tensor<3x48xf32>
// CHECK-NEXT:      tk.yield %[[V1]], %[[G1]] : tensor<40x48xbf16>, tensor<3x48xf32>
// dW2 reads dy, it is not a sum: unchanged.
// CHECK:         tile.gemm ins(%{{.*}}, %[[DY]], %{{.*}}) outs(%out3, %{{.*}} : memref<48x16xf32>, memref<48x16xf32>)
// db2: the partials, summed in f32, cast to the old sum's bf16, then as before.
// CHECK:         tile.reduce ins(%[[P2]], %{{.*}} : memref<3x16xf32>, memref<16xf32>)
// CHECK-NEXT:    ^bb0(%[[A2:.*]]: tensor<3x16xf32>, %{{.*}}: tensor<16xf32>):
// CHECK:           %[[S2:.*]] = tk.sum %[[A2]] axes [0] : tensor<3x16xf32> -> tensor<16xf32>
// CHECK-NEXT:      %[[C2:.*]] = tk.cast %[[S2]] : tensor<16xf32> to tensor<16xbf16>
// CHECK-NEXT:      tk.cast %[[C2]] : tensor<16xbf16> to tensor<16xf32>
// CHECK:         tile.sync grid
// CHECK:         tile.reduce ins(%[[P1]], %{{.*}} : memref<3x48xf32>, memref<48xf32>)
// CHECK:           tk.sum %{{.*}} axes [0] : tensor<3x48xf32> -> tensor<48xf32>
// CHECK-NOT:     tk.column_partials

  tile.kernel @small_sgd_bf16(%0: memref<32x48xf32>, %1: memref<48xf32>, %2: memref<48x16xf32>, %3: memref<16xf32>, %4: memref<40x32xbf16>, %5: memref<40x16xbf16>, %out0: memref<f32>, %out1: memref<32x48xf32>, %out2: memref<48xf32>, %out3: memref<48x16xf32>, %out4: memref<16xf32>) inputs 6 results [6, 7, 8, 9, 10, 0, 1, 2, 3] arena 15104 config {grid = 4 : i64, threads = 384 : i64, smem = 218240 : i64} {
    %6 = sched.buffer offset 3840 : memref<32x48xbf16>
    %7 = sched.buffer offset 9472 : memref<48xbf16>
    %8 = sched.buffer offset 0 : memref<40x48xbf16>
    %9 = sched.buffer offset 12032 : memref<48x16xbf16>
    %10 = sched.buffer offset 14848 : memref<16xbf16>
    %11 = sched.buffer offset 6912 : memref<40x16xf32>
    %12 = sched.buffer offset 9472 : memref<40x16xf32>
    %13 = sched.buffer offset 13568 : memref<40x16xbf16>
    %14 = sched.buffer offset 3840 : memref<40x48xbf16>
    tile.map ins(%0 : memref<32x48xf32>) outs(%6 : memref<32x48xbf16>) config {items = 1 : i64, offset = 0 : i64, chunk = 12288 : i64} {
    ^bb0(%15: tensor<32x48xf32>):
      %16 = tk.cast %15 : tensor<32x48xf32> to tensor<32x48xbf16>
      tk.yield %16 : tensor<32x48xbf16>
    }
    tile.map ins(%1 : memref<48xf32>) outs(%7 : memref<48xbf16>) config {items = 1 : i64, offset = 1 : i64, chunk = 12288 : i64} {
    ^bb0(%17: tensor<48xf32>):
      %18 = tk.cast %17 : tensor<48xf32> to tensor<48xbf16>
      tk.yield %18 : tensor<48xbf16>
    }
    tile.map ins(%2 : memref<48x16xf32>) outs(%9 : memref<48x16xbf16>) config {items = 1 : i64, offset = 2 : i64, chunk = 12288 : i64} {
    ^bb0(%19: tensor<48x16xf32>):
      %20 = tk.cast %19 : tensor<48x16xf32> to tensor<48x16xbf16>
      tk.yield %20 : tensor<48x16xbf16>
    }
    tile.map ins(%3 : memref<16xf32>) outs(%10 : memref<16xbf16>) config {items = 1 : i64, offset = 3 : i64, chunk = 12288 : i64} {
    ^bb0(%21: tensor<16xf32>):
      %22 = tk.cast %21 : tensor<16xf32> to tensor<16xbf16>
      tk.yield %22 : tensor<16xbf16>
    }
    tile.map ins(%5 : memref<40x16xbf16>) outs(%11 : memref<40x16xf32>) config {items = 1 : i64, offset = 4 : i64, chunk = 12288 : i64} {
    ^bb0(%23: tensor<40x16xbf16>):
      %24 = tk.cast %23 : tensor<40x16xbf16> to tensor<40x16xf32>
      tk.yield %24 : tensor<40x16xf32>
    }
    tile.sync grid
    tile.gemm ins(%4, %6, %7 : memref<40x32xbf16>, memref<32x48xbf16>, memref<48xbf16>) outs(%8 : memref<40x48xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64, engine = "wgmma"} {
    ^bb0(%25: tensor<40x32xbf16>, %26: tensor<32x48xbf16>, %27: tensor<48xbf16>):
      %28 = tk.matmul %25, %26 : (tensor<40x32xbf16>, tensor<32x48xbf16>) -> tensor<40x48xbf16>
      %29 = tk.add %28, %27 : (tensor<40x48xbf16>, tensor<48xbf16>) -> tensor<40x48xbf16>
      %30 = tk.relu %29 : tensor<40x48xbf16>
      tk.yield %30 : tensor<40x48xbf16>
    }
    tile.sync grid
    tile.gemm ins(%8, %9, %10, %11 : memref<40x48xbf16>, memref<48x16xbf16>, memref<16xbf16>, memref<40x16xf32>) outs(%12, %13 : memref<40x16xf32>, memref<40x16xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64, engine = "wgmma"} {
    ^bb0(%31: tensor<40x48xbf16>, %32: tensor<48x16xbf16>, %33: tensor<16xbf16>, %34: tensor<40x16xf32>):
      %35 = tk.fill 2.0 : tensor<f32>
      %36 = tk.fill 0.0015625000232830644 : tensor<40x16xf32>
      %37 = tk.matmul %31, %32 : (tensor<40x48xbf16>, tensor<48x16xbf16>) -> tensor<40x16xbf16>
      %38 = tk.add %37, %33 : (tensor<40x16xbf16>, tensor<16xbf16>) -> tensor<40x16xbf16>
      %39 = tk.cast %38 : tensor<40x16xbf16> to tensor<40x16xf32>
      %40 = tk.sub %39, %34 : (tensor<40x16xf32>, tensor<40x16xf32>) -> tensor<40x16xf32>
      %41 = tk.mul %40, %40 : (tensor<40x16xf32>, tensor<40x16xf32>) -> tensor<40x16xf32>
      %42 = tk.mul %40, %35 : (tensor<40x16xf32>, tensor<f32>) -> tensor<40x16xf32>
      %43 = tk.mul %36, %42 : (tensor<40x16xf32>, tensor<40x16xf32>) -> tensor<40x16xf32>
      %44 = tk.cast %43 : tensor<40x16xf32> to tensor<40x16xbf16>
      tk.yield %41, %44 : tensor<40x16xf32>, tensor<40x16xbf16>
    }
    tile.sync grid
    tile.reduce ins(%12 : memref<40x16xf32>) outs(%out0 : memref<f32>) config {items = 1 : i64, offset = 0 : i64, rows = 1 : i64} {
    ^bb0(%45: tensor<40x16xf32>):
      %46 = tk.fill 640.0 : tensor<f32>
      %47 = tk.sum %45 axes [0, 1] : tensor<40x16xf32> -> tensor<f32>
      %48 = tk.div %47, %46 : (tensor<f32>, tensor<f32>) -> tensor<f32>
      tk.yield %48 : tensor<f32>
    }
    tile.gemm ins(%13, %9, %8 : memref<40x16xbf16>, memref<48x16xbf16>, memref<40x48xbf16>) outs(%14 : memref<40x48xbf16>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 1 : i64, offset = 1 : i64, engine = "wgmma"} {
    ^bb0(%49: tensor<40x16xbf16>, %50: tensor<48x16xbf16>, %51: tensor<40x48xbf16>):
      %52 = tk.matmul %49, %50 transpose_b : (tensor<40x16xbf16>, tensor<48x16xbf16>) -> tensor<40x48xbf16>
      %53 = tk.relu_grad %52, %51 : tensor<40x48xbf16>
      tk.yield %53 : tensor<40x48xbf16>
    }
    tile.gemm ins(%8, %13, %2 : memref<40x48xbf16>, memref<40x16xbf16>, memref<48x16xf32>) outs(%out3, %2 : memref<48x16xf32>, memref<48x16xf32>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 1 : i64, offset = 2 : i64, engine = "wgmma"} {
    ^bb0(%54: tensor<40x48xbf16>, %55: tensor<40x16xbf16>, %56: tensor<48x16xf32>):
      %57 = tk.fill 0.001 : tensor<f32>
      %58 = tk.matmul %54, %55 transpose_a : (tensor<40x48xbf16>, tensor<40x16xbf16>) -> tensor<48x16xbf16>
      %59 = tk.cast %58 : tensor<48x16xbf16> to tensor<48x16xf32>
      %60 = tk.mul %59, %57 : (tensor<48x16xf32>, tensor<f32>) -> tensor<48x16xf32>
      %61 = tk.sub %56, %60 : (tensor<48x16xf32>, tensor<48x16xf32>) -> tensor<48x16xf32>
      tk.yield %59, %61 : tensor<48x16xf32>, tensor<48x16xf32>
    }
    tile.reduce ins(%13, %3 : memref<40x16xbf16>, memref<16xf32>) outs(%out4, %3 : memref<16xf32>, memref<16xf32>) config {items = 1 : i64, offset = 3 : i64, rows = 32 : i64} {
    ^bb0(%62: tensor<40x16xbf16>, %63: tensor<16xf32>):
      %64 = tk.fill 0.001 : tensor<f32>
      %65 = tk.sum %62 axes [0] : tensor<40x16xbf16> -> tensor<16xbf16>
      %66 = tk.cast %65 : tensor<16xbf16> to tensor<16xf32>
      %67 = tk.mul %66, %64 : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
      %68 = tk.sub %63, %67 : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
      tk.yield %66, %68 : tensor<16xf32>, tensor<16xf32>
    }
    tile.sync grid
    tile.gemm ins(%4, %14, %0 : memref<40x32xbf16>, memref<40x48xbf16>, memref<32x48xf32>) outs(%out1, %0 : memref<32x48xf32>, memref<32x48xf32>) config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64, engine = "wgmma"} {
    ^bb0(%69: tensor<40x32xbf16>, %70: tensor<40x48xbf16>, %71: tensor<32x48xf32>):
      %72 = tk.fill 0.001 : tensor<f32>
      %73 = tk.matmul %69, %70 transpose_a : (tensor<40x32xbf16>, tensor<40x48xbf16>) -> tensor<32x48xbf16>
      %74 = tk.cast %73 : tensor<32x48xbf16> to tensor<32x48xf32>
      %75 = tk.mul %74, %72 : (tensor<32x48xf32>, tensor<f32>) -> tensor<32x48xf32>
      %76 = tk.sub %71, %75 : (tensor<32x48xf32>, tensor<32x48xf32>) -> tensor<32x48xf32>
      tk.yield %74, %76 : tensor<32x48xf32>, tensor<32x48xf32>
    }
    tile.reduce ins(%14, %1 : memref<40x48xbf16>, memref<48xf32>) outs(%out2, %1 : memref<48xf32>, memref<48xf32>) config {items = 2 : i64, offset = 1 : i64, rows = 32 : i64} {
    ^bb0(%77: tensor<40x48xbf16>, %78: tensor<48xf32>):
      %79 = tk.fill 0.001 : tensor<f32>
      %80 = tk.sum %77 axes [0] : tensor<40x48xbf16> -> tensor<48xbf16>
      %81 = tk.cast %80 : tensor<48xbf16> to tensor<48xf32>
      %82 = tk.mul %81, %79 : (tensor<48xf32>, tensor<f32>) -> tensor<48xf32>
      %83 = tk.sub %78, %82 : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
      tk.yield %81, %83 : tensor<48xf32>, tensor<48xf32>
    }
  }


// -----

// The mma.sync gemm has no row walk: its output's column sum reads it (one
// output a block of 4).
// CHECK-LABEL: tile.kernel @mma
// CHECK-SAME:  arena 8192
// CHECK-NOT:   tk.column_partials
// CHECK:       tile.reduce ins(%o : memref<64x64xbf16>)
tile.kernel @mma(%x: memref<64x64xbf16>, %w: memref<64x64xbf16>, %o: memref<64x64xbf16>, %s: memref<64xf32>) inputs 2 results [2, 3] arena 8192 config {grid = 4 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%x, %w : memref<64x64xbf16>, memref<64x64xbf16>) outs(%o : memref<64x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%a0: tensor<64x64xbf16>, %a1: tensor<64x64xbf16>):
    %p = tk.matmul %a0, %a1 : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
    tk.yield %p : tensor<64x64xbf16>
  }
  tile.sync grid
  tile.reduce ins(%o : memref<64x64xbf16>) outs(%s : memref<64xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 32 : i64} {
  ^bb0(%a: tensor<64x64xbf16>):
    %r = tk.sum %a axes [0] : tensor<64x64xbf16> -> tensor<64xbf16>
    %c = tk.cast %r : tensor<64xbf16> to tensor<64xf32>
    tk.yield %c : tensor<64xf32>
  }
}
