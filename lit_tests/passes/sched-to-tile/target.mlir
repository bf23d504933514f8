// sched-to-tile{target=NAME}: threads, tile shapes, the map chunk and the cost
// model come from the named target (trainkernel.target.TARGETS); h200 is the
// default, so naming it changes nothing. An unknown name is an error that lists
// the targets. (On the mma.sync engine: the wgmma one's tiles are test_wgmma_tiles'.)
// RUN: trainkernel-opt %s -p 'sched-to-tile{engine=mma}' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile{target=h200 engine=mma}' | filecheck %s
// RUN: not trainkernel-opt %s -p 'sched-to-tile{target=b200}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not trainkernel-opt %s -p 'tile-resident{target=b200}' 2>&1 | filecheck %s --check-prefix=UNKNOWN-RESIDENT

// CHECK:       config {grid = 2 : i64, threads = 128 : i64, smem = 30720 : i64}
// CHECK:       tile.gemm {{.*}} config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64}
// CHECK:       tile.map {{.*}} config {items = 1 : i64, offset = 1 : i64, chunk = 512 : i64}
// UNKNOWN: sched-to-tile: unknown target 'b200'; targets are h200
// UNKNOWN-RESIDENT: tile-resident: unknown target 'b200'; targets are h200
sched.program @p(%a: memref<16x32xbf16>, %b: memref<32x8xbf16>, %x: memref<16x8xf32>, %c: memref<16x8xbf16>, %y: memref<16x8xf32>) inputs 3 results [3, 4] arena 0 {
  sched.phase {
    sched.compute ins(%a, %b : memref<16x32xbf16>, memref<32x8xbf16>) outs(%c : memref<16x8xbf16>) {
    ^bb0(%ta: tensor<16x32xbf16>, %tb: tensor<32x8xbf16>):
      %m = tk.matmul %ta, %tb : (tensor<16x32xbf16>, tensor<32x8xbf16>) -> tensor<16x8xbf16>
      tk.yield %m : tensor<16x8xbf16>
    }
    sched.compute ins(%x : memref<16x8xf32>) outs(%y : memref<16x8xf32>) {
    ^bb0(%t: tensor<16x8xf32>):
      %r = tk.relu %t : tensor<16x8xf32>
      tk.yield %r : tensor<16x8xf32>
    }
  }
}
