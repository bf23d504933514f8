// sched-to-tile{cluster_fixup=on} (target.split_k_cluster_fixup, perf-log step
// 124): in each phase the wgmma gemm with the most K steps a unit splits K into
// slices that meet in a thread block cluster (fixup = "cluster", no workspace;
// the kernel's fixup_cluster). Phase 0's 256 x 64 x 1024 product (8 tiles of
// 64 x 32 on a grid of 120) splits 4 ways, as many as its tile's 4 consumer
// warps (a slice owns whole warps); phase 1's 1024 x 64 x 512 product (32 tiles)
// beside a map of 31 items splits 2 ways (4 would take 162 blocks), its first
// unit moved from block 31 to 32 (a tile's slices on one cluster); phase 2's
// 1024 x 64 x 256 product stays whole (slices of 128 are under
// target.cluster_ksplit_min_k, and split_k's 512). The arena stays 0: no
// workspace. On a grid of 128 phase 0 splits 2 ways (GRID128): an
// H100 or H200 holds 120 blocks at once in clusters of 4 (target.cluster_blocks);
// the target as it is (on: perf-log step 126) splits so too.
// What does not split so: off, the mma.sync engine, one block. -t cuda: the slots after the pipeline (8224 bytes: 4 warps'
// barriers, a 64 x 32 fp32 tile), their barriers initialised and published to
// the cluster before any unit, GemmParams naming them, the launch in clusters
// of 4 refusing a grid under 64 blocks (phase 1's units). An unknown value is
// an error.
// RUN: trainkernel-opt %s -p 'sched-to-tile{cluster_fixup=on grid=120 engine=wgmma rows=64}' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile{cluster_fixup=on grid=128 engine=wgmma rows=64}' | filecheck %s --check-prefix=GRID128
// RUN: trainkernel-opt %s -p 'sched-to-tile{grid=128 engine=wgmma rows=64}' | filecheck %s --check-prefix=GRID128
// RUN: trainkernel-opt %s -p 'sched-to-tile{cluster_fixup=off grid=128 engine=wgmma rows=64}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %s -p 'sched-to-tile{cluster_fixup=on grid=128 engine=mma}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %s -p 'sched-to-tile{cluster_fixup=on grid=1 engine=wgmma rows=64}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %s -p 'sched-to-tile{cluster_fixup=on grid=120 engine=wgmma rows=64}' -t cuda | filecheck %s --check-prefix=CUDA
// RUN: not trainkernel-opt %s -p 'sched-to-tile{cluster_fixup=yes}' 2>&1 | filecheck %s --check-prefix=BAD

// CHECK:       tile.kernel @step({{.*}}) inputs 5 results [5, 6, 7, 8] arena 0 config {grid = 120 : i64, threads = 256 : i64, smem = {{[0-9]+}} : i64, fixup_cluster = 4 : i64}
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 4 : i64, fixup = "cluster"} {
// CHECK:         tile.sync grid
// CHECK:         tile.map {{.*}} config {items = 31 : i64, offset = 0 : i64
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 64 : i64, offset = 32 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"} {
// CHECK:         tile.sync grid
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 0 : i64, engine = "wgmma"} {

// GRID128:     config {grid = 128 : i64, threads = 256 : i64, smem = {{[0-9]+}} : i64, fixup_cluster = 2 : i64}
// GRID128:     items = 16 : i64, offset = 0 : i64, engine = "wgmma", ksplit = 2 : i64, fixup = "cluster"}

// OFF-NOT:     fixup

// CUDA:       #define TK_CLUSTER_FIXUP 1
// CUDA:       static constexpr int kFixSmem = (TkShape::SMEM_BYTES + 15) / 16 * 16;
// CUDA-NEXT:  static constexpr int kSmem = kFixSmem + 8224;
// CUDA:       const uint32_t tk_fix = (uint32_t)__cvta_generic_to_shared(smem + kFixSmem);
// CUDA-NEXT:  if (threadIdx.x == 0) {
// CUDA-NEXT:    tk::hopper::pipeline_init<TkShape>(tk_hbase);
// CUDA-NEXT:    tk::hopper::cluster_fixup_init(tk_fix);
// CUDA-NEXT:  }
// CUDA-NEXT:  tk::cluster_sync();
// CUDA:       const tk::hopper::GemmParams tk_gp{256, 64, 1024, 4, 2, 4, 16, 4, nullptr, nullptr, tk_fix};
// CUDA:       const tk::hopper::GemmParams tk_gp{1024, 64, 512, 16, 2, 2, 8, 4, nullptr, nullptr, tk_fix};
// CUDA:       const tk::hopper::GemmParams tk_gp{1024, 64, 256, 16, 2, 1, 4, 4, nullptr, nullptr};
// CUDA:       extern "C" int tk_gemm_cluster() { return 4; }
// CUDA:       extern "C" int tk_launch(
// CUDA-NEXT:    int err = tk_configure();
// CUDA-NEXT:    if (err) return err;
// CUDA-NEXT:    if (grid < 64 || grid % 4) return (int)cudaErrorInvalidConfiguration;
// CUDA:         attr[0].id = cudaLaunchAttributeCooperative;
// CUDA:         attr[1].id = cudaLaunchAttributeClusterDimension;
// CUDA-NEXT:    attr[1].val.clusterDim.x = 4; attr[1].val.clusterDim.y = 1; attr[1].val.clusterDim.z = 1;

// BAD: sched-to-tile: cluster_fixup must be target, on or off, got 'yes'

sched.program @step(%h: memref<256x1024xbf16>, %w: memref<1024x64xbf16>, %x: memref<3000x41xf32>, %g: memref<512x1024xbf16>, %e: memref<512x64xbf16>, %c: memref<256x64xbf16>, %y: memref<3000x41xf32>, %f: memref<1024x64xbf16>, %d: memref<1024x64xbf16>) inputs 5 results [5, 6, 7, 8] arena 0 {
  sched.phase {
    sched.compute ins(%h, %w : memref<256x1024xbf16>, memref<1024x64xbf16>) outs(%c : memref<256x64xbf16>) {
    ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x64xbf16>):
      %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x64xbf16>) -> tensor<256x64xbf16>
      tk.yield %m : tensor<256x64xbf16>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%x : memref<3000x41xf32>) outs(%y : memref<3000x41xf32>) {
    ^bb0(%t: tensor<3000x41xf32>):
      %r = tk.relu %t : tensor<3000x41xf32>
      tk.yield %r : tensor<3000x41xf32>
    }
    sched.compute ins(%g, %e : memref<512x1024xbf16>, memref<512x64xbf16>) outs(%f : memref<1024x64xbf16>) {
    ^bb0(%p: tensor<512x1024xbf16>, %q: tensor<512x64xbf16>):
      %m = tk.matmul %p, %q transpose_a : (tensor<512x1024xbf16>, tensor<512x64xbf16>) -> tensor<1024x64xbf16>
      tk.yield %m : tensor<1024x64xbf16>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%h, %c : memref<256x1024xbf16>, memref<256x64xbf16>) outs(%d : memref<1024x64xbf16>) {
    ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<256x64xbf16>):
      %m = tk.matmul %p, %q transpose_a : (tensor<256x1024xbf16>, tensor<256x64xbf16>) -> tensor<1024x64xbf16>
      tk.yield %m : tensor<1024x64xbf16>
    }
  }
}
