// sched-to-tile: the size of a map's work item under the wgmma engine (one
// 384-thread block per SM, 32 elements a thread). A map with fewer items than
// the 132 SMs halves its elements a thread while that gives it more items,
// down to target.map_min_elems_per_thread (16): its time is one item's load
// latency, so more blocks share it (perf-log step 41). Maps with items enough
// (a 2048 x 2048 cast: 342 items) and maps of one item either way keep the
// target's item; the product makes the kernel a wgmma one.
// RUN: trainkernel-opt %s -p 'sched-to-tile' | filecheck %s

// CHECK:       tile.kernel @step({{.*}} config {grid = {{[0-9]+}} : i64, threads = 384 : i64
// CHECK:         tile.gemm {{.*}} engine = "wgmma"}
// 65536 elements: 6 items of 384 x 32 -> 11 of 384 x 16.
// CHECK:         tile.map ins(%w1 : memref<256x256xf32>) {{.*}} config {items = 11 : i64, offset = 128 : i64, chunk = 6144 : i64}
// CHECK:         tile.map ins(%w2 : memref<2048x2048xf32>) {{.*}} config {items = 342 : i64, offset = 139 : i64, chunk = 12288 : i64}
// 100 elements: one item either way, the target's size.
// CHECK:         tile.map ins(%w3 : memref<100xf32>) {{.*}} config {items = 1 : i64, offset = 481 : i64, chunk = 12288 : i64}
// 8192 elements: one item -> two.
// CHECK:         tile.map ins(%w4 : memref<64x128xf32>) {{.*}} config {items = 2 : i64, offset = 482 : i64, chunk = 6144 : i64}

sched.program @step(%a: memref<1024x1024xbf16>, %b: memref<1024x1024xbf16>, %w1: memref<256x256xf32>, %w2: memref<2048x2048xf32>, %w3: memref<100xf32>, %w4: memref<64x128xf32>, %c: memref<1024x1024xbf16>, %o1: memref<256x256xbf16>, %o2: memref<2048x2048xbf16>, %o3: memref<100xbf16>, %o4: memref<64x128xbf16>) inputs 6 results [6, 7, 8, 9, 10] arena 0 {
  sched.phase {
    sched.compute ins(%a, %b : memref<1024x1024xbf16>, memref<1024x1024xbf16>) outs(%c : memref<1024x1024xbf16>) {
    ^bb0(%p: tensor<1024x1024xbf16>, %q: tensor<1024x1024xbf16>):
      %m = tk.matmul %p, %q : (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
      tk.yield %m : tensor<1024x1024xbf16>
    }
    sched.compute ins(%w1 : memref<256x256xf32>) outs(%o1 : memref<256x256xbf16>) {
    ^bb0(%x: tensor<256x256xf32>):
      %t = tk.cast %x : tensor<256x256xf32> to tensor<256x256xbf16>
      tk.yield %t : tensor<256x256xbf16>
    }
    sched.compute ins(%w2 : memref<2048x2048xf32>) outs(%o2 : memref<2048x2048xbf16>) {
    ^bb0(%x: tensor<2048x2048xf32>):
      %t = tk.cast %x : tensor<2048x2048xf32> to tensor<2048x2048xbf16>
      tk.yield %t : tensor<2048x2048xbf16>
    }
    sched.compute ins(%w3 : memref<100xf32>) outs(%o3 : memref<100xbf16>) {
    ^bb0(%x: tensor<100xf32>):
      %t = tk.cast %x : tensor<100xf32> to tensor<100xbf16>
      tk.yield %t : tensor<100xbf16>
    }
    sched.compute ins(%w4 : memref<64x128xf32>) outs(%o4 : memref<64x128xbf16>) {
    ^bb0(%x: tensor<64x128xf32>):
      %t = tk.cast %x : tensor<64x128xf32> to tensor<64x128xbf16>
      tk.yield %t : tensor<64x128xbf16>
    }
  }
}
