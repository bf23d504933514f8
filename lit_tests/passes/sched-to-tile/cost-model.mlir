// sched-to-tile sizes the grid with a cost model when `grid` is not forced:
// small steps run on ONE block (every barrier then is a block barrier,
// __syncthreads(), instead of a grid barrier); a phase with many expensive
// work items gets a block per item, up to `max_grid`.
// RUN: trainkernel-opt %s -p 'sched-to-tile{engine=mma}' | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile{max_grid=64 engine=mma}' | filecheck %s --check-prefix=CAP

// Two tiny phases: one block, and the grid barrier becomes a block barrier.
// CHECK-LABEL: tile.kernel @tiny(
// CHECK-SAME:    config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
// CHECK:         tile.sync block
// CHECK-NOT:     tile.sync grid
// CHECK-LABEL: tile.kernel @big(
// CAP-LABEL:   tile.kernel @tiny(
// CAP-SAME:      config {grid = 1 : i64
sched.program @tiny(%x: memref<64xf32>, %o: memref<64xf32>) inputs 1 results [1] arena 256 {
  %t = sched.buffer offset 0 : memref<64xf32>
  sched.phase {
    sched.compute ins(%x : memref<64xf32>) outs(%t : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %e = tk.exp %a : tensor<64xf32>
      tk.yield %e : tensor<64xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%t : memref<64xf32>) outs(%o : memref<64xf32>) {
    ^bb0(%a: tensor<64xf32>):
      %e = tk.neg %a : tensor<64xf32>
      tk.yield %e : tensor<64xf32>
    }
  }
}

// Two dependent 1024^3 bf16 GEMMs: 16 x 16 = 256 output tiles of 64x64
// each, every tile worth a block of its own (a grid barrier between them is
// cheap next to 256 serialized tiles); capped at max_grid.
// CHECK-SAME:    config {grid = 256 : i64, threads = 128 : i64, smem = 30720 : i64} {
// CHECK:         tile.gemm {{.*}} config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 256 : i64, offset = 0 : i64}
// CHECK:         tile.sync grid
// CHECK:         tile.gemm {{.*}} items = 256 : i64, offset = 0 : i64}
// CAP-LABEL:   tile.kernel @big(
// CAP-SAME:      config {grid = 64 : i64, threads = 128 : i64, smem = 30720 : i64} {
sched.program @big(%a: memref<1024x1024xbf16>, %b: memref<1024x1024xbf16>, %c: memref<1024x1024xbf16>, %d: memref<1024x1024xbf16>) inputs 2 results [2, 3] arena 0 {
  sched.phase {
    sched.compute ins(%a, %b : memref<1024x1024xbf16>, memref<1024x1024xbf16>) outs(%c : memref<1024x1024xbf16>) {
    ^bb0(%p: tensor<1024x1024xbf16>, %q: tensor<1024x1024xbf16>):
      %m = tk.matmul %p, %q : (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
      tk.yield %m : tensor<1024x1024xbf16>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%c, %b : memref<1024x1024xbf16>, memref<1024x1024xbf16>) outs(%d : memref<1024x1024xbf16>) {
    ^bb0(%p: tensor<1024x1024xbf16>, %q: tensor<1024x1024xbf16>):
      %m = tk.matmul %p, %q : (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
      tk.yield %m : tensor<1024x1024xbf16>
    }
  }
}
