// sched-to-tile: the wgmma tile width. The H200's three widths are priced
// (target.wgmma_tiles_n = 64, 128, 256). A 2048x2048 @ 2048x8192 product has 1024
// tiles of 128 x 128: the 256-wide tile's rate (GridCosts.wgmma_wide_speedup)
// pays for its longer fixed part, so the kernel takes it, and, because its
// gemms hand the producer's registers to the consumers, it ends with a grid
// barrier (sched_to_tile.ends_with_grid_sync, target.final_grid_sync "wide").
// A 1024x1024 @ 1024x1024 product (64 tiles of 128 x 128 on 132 SMs) takes
// 64-wide tiles (128 units) and gets no final barrier.
// RUN: trainkernel-opt %s -p 'sched-to-tile' | filecheck %s

// CHECK:       tile.kernel @wide(
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 128, 256, 64>, mma = "mma.bf16", items = 512 : i64, offset = 0 : i64, engine = "wgmma"} {
// CHECK:         }
// CHECK-NEXT:    tile.sync grid
// CHECK-NEXT:  }
// CHECK:       tile.kernel @narrow(
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 128, 64, 64>, mma = "mma.bf16", items = 128 : i64, offset = 0 : i64, engine = "wgmma"} {
// CHECK:         }
// CHECK-NEXT:  }

sched.program @wide(%a: memref<2048x2048xbf16>, %b: memref<2048x8192xbf16>, %c: memref<2048x8192xbf16>) inputs 2 results [2] arena 0 {
  sched.phase {
    sched.compute ins(%a, %b : memref<2048x2048xbf16>, memref<2048x8192xbf16>) outs(%c : memref<2048x8192xbf16>) {
    ^bb0(%p: tensor<2048x2048xbf16>, %q: tensor<2048x8192xbf16>):
      %m = tk.matmul %p, %q : (tensor<2048x2048xbf16>, tensor<2048x8192xbf16>) -> tensor<2048x8192xbf16>
      tk.yield %m : tensor<2048x8192xbf16>
    }
  }
}

sched.program @narrow(%a: memref<1024x1024xbf16>, %b: memref<1024x1024xbf16>, %c: memref<1024x1024xbf16>) inputs 2 results [2] arena 0 {
  sched.phase {
    sched.compute ins(%a, %b : memref<1024x1024xbf16>, memref<1024x1024xbf16>) outs(%c : memref<1024x1024xbf16>) {
    ^bb0(%p: tensor<1024x1024xbf16>, %q: tensor<1024x1024xbf16>):
      %m = tk.matmul %p, %q : (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
      tk.yield %m : tensor<1024x1024xbf16>
    }
  }
}
