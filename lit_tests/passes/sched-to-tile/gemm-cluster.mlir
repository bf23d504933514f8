// sched-to-tile{gemm_cluster=on} (target.gemm_cluster_pairs): a grid kernel on
// the wgmma engine in clusters of two whose gemms walk as pairs
// (tk::hopper::pair_step). The chosen grid is made even (whole clusters),
// tile.kernel says gemm_cluster = 2, and each gemm's first unit sits on an even
// block, so that a cluster's blocks hold units 2q and 2q + 1 (tiles (m, n) and
// (m + 1, n), which share B): phase 1's map takes 21 items (blocks 0-20), so
// its gemm starts at block 22, not 21. What does not pair: off (the default), the
// mma.sync engine (no TMA pipeline), a forced odd grid (the caller's; it runs
// unpaired). -t cuda: the pair's barriers, a cluster barrier after their init
// and before the kernel ends, kPair (the eighth argument) on every gemm, the
// cluster attribute beside the cooperative one, and the launcher's
// co-residency in clusters. An unknown value is an error.
// RUN: trainkernel-opt %s -p 'sched-to-tile{gemm_cluster=on}' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %s -p 'sched-to-tile{gemm_cluster=on engine=mma}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %s -p 'sched-to-tile{gemm_cluster=on grid=127}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %s -p 'sched-to-tile{gemm_cluster=on grid=131 engine=wgmma}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %s -p 'sched-to-tile{gemm_cluster=on}' -t cuda | filecheck %s --check-prefix=CUDA
// RUN: not trainkernel-opt %s -p 'sched-to-tile{gemm_cluster=yes}' 2>&1 | filecheck %s --check-prefix=BAD

// CHECK:       tile.kernel @step({{.*}}) inputs 3 results [3, 4] arena 2097152 config {grid = 128 : i64, threads = 384 : i64, smem = {{[0-9]+}} : i64, gemm_cluster = 2 : i64}
// CHECK:         tile.gemm {{.*}} items = 128 : i64, offset = 0 : i64, engine = "wgmma"} {
// CHECK:         tile.sync grid
// CHECK:         tile.map {{.*}} config {items = 21 : i64, offset = 0 : i64
// CHECK:         tile.gemm {{.*}} items = 128 : i64, offset = 22 : i64, engine = "wgmma"} {

// OFF-NOT:     gemm_cluster

// CUDA:       if (threadIdx.x == 0) tk::hopper::pipeline_init<TkShape, true>(tk_hbase);
// CUDA-NEXT:  tk::cluster_sync();
// CUDA:       tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, false, true, false, false, true>(
// CUDA:       tk::hopper::grid_gemm_units<__nv_bfloat16, TkShape, false, true, true, false, false, true>(
// CUDA:       tk::cluster_sync();  // the peer's last arrivals on this block's barriers land before it exits
// CUDA-NEXT:  }
// CUDA:       extern "C" int tk_gemm_cluster() { return 2; }
// CUDA:       cudaOccupancyMaxActiveClusters(&clusters, tk_kernel, &cfg)
// CUDA:       extern "C" int tk_launch(
// CUDA:         attr[0].id = cudaLaunchAttributeCooperative;
// CUDA:         attr[1].id = cudaLaunchAttributeClusterDimension;
// CUDA-NEXT:    attr[1].val.clusterDim.x = 2; attr[1].val.clusterDim.y = 1; attr[1].val.clusterDim.z = 1;
// CUDA:         return (int)cudaLaunchKernelExC(&cfg, tk_kernel, args);

// BAD: sched-to-tile: gemm_cluster must be target, on or off, got 'yes'

sched.program @step(%a: memref<1024x1024xbf16>, %b: memref<1024x1024xbf16>, %x: memref<3000x41xf32>, %c: memref<1024x1024xbf16>, %y: memref<3000x41xf32>) inputs 3 results [3, 4] arena 2097152 {
  %h = sched.buffer offset 0 : memref<1024x1024xbf16>
  sched.phase {
    sched.compute ins(%a, %b : memref<1024x1024xbf16>, memref<1024x1024xbf16>) outs(%h : memref<1024x1024xbf16>) {
    ^bb0(%p: tensor<1024x1024xbf16>, %q: tensor<1024x1024xbf16>):
      %m = tk.matmul %p, %q : (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
      tk.yield %m : tensor<1024x1024xbf16>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) {
    ^bb0(%t: tensor<3000x41xf32>):
      %r = tk.relu %t : tensor<3000x41xf32>
      tk.yield %r : tensor<3000x41xf32>
    }
    sched.compute ins(%h, %b : memref<1024x1024xbf16>, memref<1024x1024xbf16>) outs(%c : memref<1024x1024xbf16>) {
    ^bb0(%p: tensor<1024x1024xbf16>, %q: tensor<1024x1024xbf16>):
      %m = tk.matmul %p, %q transpose_b : (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
      tk.yield %m : tensor<1024x1024xbf16>
    }
  }
}
