// tile-resident picks the block size of a resident kernel from its element
// ops: IEEE divisions and square roots (a fast path and a branch to a slow
// path, which serialises a thread's elements) are latency-bound, and twice the
// warps hide them; otherwise a wider block only costs (ResidentCosts
// branchy_elem_op_us, wider_block_us; perf-log step 32). @adam: 64 x 64
// elements, a sqrt and a div each, in one block (max_cluster=1: 8192 such
// element ops a block) -> 512 threads; split over the cluster of 8 the model
// picks by itself, 1024 a block -> 256. @momentum: the same map without them
// -> 256. threads=N overrides.
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident{max_cluster=1}' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident' | filecheck %s --check-prefix=CLUSTER
// RUN: trainkernel-opt %s -p 'sched-to-tile,tile-resident{max_cluster=1 threads=256}' | filecheck %s --check-prefix=FIXED

// CHECK:       tile.kernel @adam(
// CHECK-SAME:    config {grid = 1 : i64, threads = 512 : i64, smem = {{[0-9]+}} : i64, cluster = 1 : i64}
// CHECK:       tile.kernel @momentum(
// CHECK-SAME:    config {grid = 1 : i64, threads = 256 : i64, smem = {{[0-9]+}} : i64, cluster = 1 : i64}
// CLUSTER:     tile.kernel @adam(
// CLUSTER-SAME:  config {grid = 8 : i64, threads = 256 : i64, smem = {{[0-9]+}} : i64, cluster = 8 : i64}
// FIXED:       tile.kernel @adam(
// FIXED-SAME:    threads = 256 : i64
// FIXED:       tile.kernel @momentum(
// FIXED-SAME:    threads = 256 : i64

builtin.module {
  sched.program @adam(%0: memref<64x64xf32>, %1: memref<64x64xf32>, %2: memref<64x64xf32>, %out0: memref<64x64xf32>) inputs 3 results [0, 1, 2] arena 0 {
    sched.phase {
      sched.compute ins(%0, %1, %2 : memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) outs(%out0 : memref<64x64xf32>) {
      ^bb0(%p: tensor<64x64xf32>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>):
        %eps = tk.fill 1.0e-08 : tensor<f32>
        %s = tk.sqrt %v : tensor<64x64xf32>
        %d = tk.add %s, %eps : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32>
        %q = tk.div %m, %d : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
        %r = tk.sub %p, %q : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
        tk.yield %r : tensor<64x64xf32>
      }
    }
  }
  sched.program @momentum(%0: memref<64x64xf32>, %1: memref<64x64xf32>, %2: memref<64x64xf32>, %out0: memref<64x64xf32>) inputs 3 results [0, 1, 2] arena 0 {
    sched.phase {
      sched.compute ins(%0, %1, %2 : memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) outs(%out0 : memref<64x64xf32>) {
      ^bb0(%p: tensor<64x64xf32>, %m: tensor<64x64xf32>, %v: tensor<64x64xf32>):
        %eps = tk.fill 1.0e-08 : tensor<f32>
        %s = tk.mul %v, %v : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
        %d = tk.add %s, %eps : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32>
        %q = tk.mul %m, %d : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
        %r = tk.sub %p, %q : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
        tk.yield %r : tensor<64x64xf32>
      }
    }
  }
}
