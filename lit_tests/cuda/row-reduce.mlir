// -t cuda: a reduction over trailing axes in a grid kernel. sched-to-tile's
// row_warps folds one output per warp where that needs fewer dependent load
// rounds on the busiest block (4 warps of 128 threads, 132 SMs): 1000 rows of
// 300 (block: 8 rows one after another, a round and a combine each, 16;
// warp: 2 items of a round each, 2) become rows = 4; 3 rows of 100000 stay one
// output a block (block: 49 + 1; warp: 196). Lane l folds l, l + 32, ... 16
// loads at a time, in order; the warp's shuffles combine; no block barrier.
// RUN: trainkernel-opt %s -p 'canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile' | filecheck %s --check-prefix=TILE
// RUN: trainkernel-opt %s -p 'canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile' -t cuda | filecheck %s

// TILE: tile.reduce ins(%{{.*}} : memref<1000x300xf32>) outs(%{{.*}} : memref<1000xf32>) config {items = 250 : i64, offset = {{[0-9]+}} : i64, rows = 4 : i64}
// TILE: tile.reduce ins(%{{.*}} : memref<3x100000xf32>) outs(%{{.*}} : memref<3xf32>) config {items = 3 : i64, offset = {{[0-9]+}} : i64, rows = 1 : i64}

// CHECK:      { // tile.reduce tk.sum over 300 elements into 1000 outputs, 4 an item (a warp each)
// CHECK-NEXT:   const int tk_warp = threadIdx.x / 32, tk_lane = threadIdx.x % 32;
// CHECK-NEXT:   for (int item = {{.*}}; item < 250; item += G) {
// CHECK-NEXT:     const int o = (int)item * 4 + tk_warp;
// CHECK-NEXT:     if (tk_warp >= 4 || o >= 1000) continue;  // warp-uniform
// CHECK-NEXT:     const int o0 = (o);
// CHECK-NEXT:     float accum = 0.0f;
// CHECK-NEXT:     int r = tk_lane;
// CHECK-NEXT:     for (; r + 256 < 300; r += 288) {
// CHECK-NEXT:       float tk_v[9];
// CHECK:          for (; r < 300; r += 32) {
// CHECK:          accum = tk::warp_reduce_sum(accum);
// CHECK-NEXT:     if (tk_lane == 0) {
// CHECK-NOT:      __syncthreads
// CHECK:        }
// CHECK:      { // tile.reduce tk.sum over 100000 elements into 3 outputs
// CHECK-NOT:  a warp each
// CHECK:        accum = tk::block_reduce_sum(accum, scratch);
func.func @rows(%x: tensor<1000x300xf32>, %y: tensor<3x100000xf32>) -> (tensor<1000xf32>, tensor<3xf32>) {
  %s = tk.sum %x axes [1] : tensor<1000x300xf32> -> tensor<1000xf32>
  %t = tk.sum %y axes [1] : tensor<3x100000xf32> -> tensor<3xf32>
  func.return %s, %t : tensor<1000xf32>, tensor<3xf32>
}
