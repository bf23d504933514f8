builtin.module {
  sched.program @small_sgd_bf16(%0: memref<32x48xf32>, %1: memref<48xf32>, %2: memref<48x24xf32>, %3: memref<24xf32>, %4: memref<400x32xbf16>, %5: memref<400x24xbf16>, %out0: memref<f32>, %out1: memref<32x48xf32>, %out2: memref<48xf32>, %out3: memref<48x24xf32>, %out4: memref<24xf32>) inputs 6 results [6, 7, 8, 9, 10, 0, 1, 2, 3] arena 136960 {
    %6 = sched.buffer offset 76800 : memref<32x48xbf16>
    %7 = sched.buffer offset 79872 : memref<48xbf16>
    %8 = sched.buffer offset 38400 : memref<400x48xbf16>
    %9 = sched.buffer offset 134400 : memref<48x24xbf16>
    %10 = sched.buffer offset 136704 : memref<24xbf16>
    %11 = sched.buffer offset 0 : memref<400x24xf32>
    %12 = sched.buffer offset 76800 : memref<400x24xf32>
    %13 = sched.buffer offset 115200 : memref<400x24xbf16>
    %14 = sched.buffer offset 0 : memref<400x48xbf16>
    sched.phase {
      sched.compute ins(%0 : memref<32x48xf32>) outs(%6 : memref<32x48xbf16>) {
      ^bb0(%15: tensor<32x48xf32>):
        %16 = tk.cast %15 : tensor<32x48xf32> to tensor<32x48xbf16>
        tk.yield %16 : tensor<32x48xbf16>
      }
      sched.compute ins(%1 : memref<48xf32>) outs(%7 : memref<48xbf16>) {
      ^bb0(%17: tensor<48xf32>):
        %18 = tk.cast %17 : tensor<48xf32> to tensor<48xbf16>
        tk.yield %18 : tensor<48xbf16>
      }
      sched.compute ins(%2 : memref<48x24xf32>) outs(%9 : memref<48x24xbf16>) {
      ^bb0(%19: tensor<48x24xf32>):
        %20 = tk.cast %19 : tensor<48x24xf32> to tensor<48x24xbf16>
        tk.yield %20 : tensor<48x24xbf16>
      }
      sched.compute ins(%3 : memref<24xf32>) outs(%10 : memref<24xbf16>) {
      ^bb0(%21: tensor<24xf32>):
        %22 = tk.cast %21 : tensor<24xf32> to tensor<24xbf16>
        tk.yield %22 : tensor<24xbf16>
      }
      sched.compute ins(%5 : memref<400x24xbf16>) outs(%11 : memref<400x24xf32>) {
      ^bb0(%23: tensor<400x24xbf16>):
        %24 = tk.cast %23 : tensor<400x24xbf16> to tensor<400x24xf32>
        tk.yield %24 : tensor<400x24xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %6, %7 : memref<400x32xbf16>, memref<32x48xbf16>, memref<48xbf16>) outs(%8 : memref<400x48xbf16>) {
      ^bb0(%25: tensor<400x32xbf16>, %26: tensor<32x48xbf16>, %27: tensor<48xbf16>):
        %28 = tk.matmul %25, %26 : (tensor<400x32xbf16>, tensor<32x48xbf16>) -> tensor<400x48xbf16>
        %29 = tk.add %28, %27 : (tensor<400x48xbf16>, tensor<48xbf16>) -> tensor<400x48xbf16>
        %30 = tk.relu %29 : tensor<400x48xbf16>
        tk.yield %30 : tensor<400x48xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%8, %9, %10, %11 : memref<400x48xbf16>, memref<48x24xbf16>, memref<24xbf16>, memref<400x24xf32>) outs(%12, %13 : memref<400x24xf32>, memref<400x24xbf16>) {
      ^bb0(%31: tensor<400x48xbf16>, %32: tensor<48x24xbf16>, %33: tensor<24xbf16>, %34: tensor<400x24xf32>):
        %35 = tk.fill 2.0 : tensor<f32>
        %36 = tk.fill 0.00010416666918899864 : tensor<400x24xf32>
        %37 = tk.matmul %31, %32 : (tensor<400x48xbf16>, tensor<48x24xbf16>) -> tensor<400x24xbf16>
        %38 = tk.add %37, %33 : (tensor<400x24xbf16>, tensor<24xbf16>) -> tensor<400x24xbf16>
        %39 = tk.cast %38 : tensor<400x24xbf16> to tensor<400x24xf32>
        %40 = tk.sub %39, %34 : (tensor<400x24xf32>, tensor<400x24xf32>) -> tensor<400x24xf32>
        %41 = tk.mul %40, %40 : (tensor<400x24xf32>, tensor<400x24xf32>) -> tensor<400x24xf32>
        %42 = tk.mul %40, %35 : (tensor<400x24xf32>, tensor<f32>) -> tensor<400x24xf32>
        %43 = tk.mul %36, %42 : (tensor<400x24xf32>, tensor<400x24xf32>) -> tensor<400x24xf32>
        %44 = tk.cast %43 : tensor<400x24xf32> to tensor<400x24xbf16>
        tk.yield %41, %44 : tensor<400x24xf32>, tensor<400x24xbf16>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%12 : memref<400x24xf32>) outs(%out0 : memref<f32>) {
      ^bb0(%45: tensor<400x24xf32>):
        %46 = tk.fill 9600.0 : tensor<f32>
        %47 = tk.sum %45 axes [0, 1] : tensor<400x24xf32> -> tensor<f32>
        %48 = tk.div %47, %46 : (tensor<f32>, tensor<f32>) -> tensor<f32>
        tk.yield %48 : tensor<f32>
      }
      sched.compute ins(%13, %9, %8 : memref<400x24xbf16>, memref<48x24xbf16>, memref<400x48xbf16>) outs(%14 : memref<400x48xbf16>) {
      ^bb0(%49: tensor<400x24xbf16>, %50: tensor<48x24xbf16>, %51: tensor<400x48xbf16>):
        %52 = tk.matmul %49, %50 transpose_b : (tensor<400x24xbf16>, tensor<48x24xbf16>) -> tensor<400x48xbf16>
        %53 = tk.relu_grad %52, %51 : tensor<400x48xbf16>
        tk.yield %53 : tensor<400x48xbf16>
      }
      sched.compute ins(%8, %13, %2 : memref<400x48xbf16>, memref<400x24xbf16>, memref<48x24xf32>) outs(%out3, %2 : memref<48x24xf32>, memref<48x24xf32>) {
      ^bb0(%54: tensor<400x48xbf16>, %55: tensor<400x24xbf16>, %56: tensor<48x24xf32>):
        %57 = tk.fill 0.001 : tensor<f32>
        %58 = tk.matmul %54, %55 transpose_a : (tensor<400x48xbf16>, tensor<400x24xbf16>) -> tensor<48x24xbf16>
        %59 = tk.cast %58 : tensor<48x24xbf16> to tensor<48x24xf32>
        %60 = tk.mul %59, %57 : (tensor<48x24xf32>, tensor<f32>) -> tensor<48x24xf32>
        %61 = tk.sub %56, %60 : (tensor<48x24xf32>, tensor<48x24xf32>) -> tensor<48x24xf32>
        tk.yield %59, %61 : tensor<48x24xf32>, tensor<48x24xf32>
      }
      sched.compute ins(%13, %3 : memref<400x24xbf16>, memref<24xf32>) outs(%out4, %3 : memref<24xf32>, memref<24xf32>) {
      ^bb0(%62: tensor<400x24xbf16>, %63: tensor<24xf32>):
        %64 = tk.fill 0.001 : tensor<f32>
        %65 = tk.sum %62 axes [0] : tensor<400x24xbf16> -> tensor<24xbf16>
        %66 = tk.cast %65 : tensor<24xbf16> to tensor<24xf32>
        %67 = tk.mul %66, %64 : (tensor<24xf32>, tensor<f32>) -> tensor<24xf32>
        %68 = tk.sub %63, %67 : (tensor<24xf32>, tensor<24xf32>) -> tensor<24xf32>
        tk.yield %66, %68 : tensor<24xf32>, tensor<24xf32>
      }
    }
    sched.barrier grid
    sched.phase {
      sched.compute ins(%4, %14, %0 : memref<400x32xbf16>, memref<400x48xbf16>, memref<32x48xf32>) outs(%out1, %0 : memref<32x48xf32>, memref<32x48xf32>) {
      ^bb0(%69: tensor<400x32xbf16>, %70: tensor<400x48xbf16>, %71: tensor<32x48xf32>):
        %72 = tk.fill 0.001 : tensor<f32>
        %73 = tk.matmul %69, %70 transpose_a : (tensor<400x32xbf16>, tensor<400x48xbf16>) -> tensor<32x48xbf16>
        %74 = tk.cast %73 : tensor<32x48xbf16> to tensor<32x48xf32>
        %75 = tk.mul %74, %72 : (tensor<32x48xf32>, tensor<f32>) -> tensor<32x48xf32>
        %76 = tk.sub %71, %75 : (tensor<32x48xf32>, tensor<32x48xf32>) -> tensor<32x48xf32>
        tk.yield %74, %76 : tensor<32x48xf32>, tensor<32x48xf32>
      }
      sched.compute ins(%14, %1 : memref<400x48xbf16>, memref<48xf32>) outs(%out2, %1 : memref<48xf32>, memref<48xf32>) {
      ^bb0(%77: tensor<400x48xbf16>, %78: tensor<48xf32>):
        %79 = tk.fill 0.001 : tensor<f32>
        %80 = tk.sum %77 axes [0] : tensor<400x48xbf16> -> tensor<48xbf16>
        %81 = tk.cast %80 : tensor<48xbf16> to tensor<48xf32>
        %82 = tk.mul %81, %79 : (tensor<48xf32>, tensor<f32>) -> tensor<48xf32>
        %83 = tk.sub %78, %82 : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
        tk.yield %81, %83 : tensor<48xf32>, tensor<48xf32>
      }
    }
  }
}
