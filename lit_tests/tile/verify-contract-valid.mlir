// The valid forms next to verify-contract.mlir's rejected ones: the same
// kernels with the tile.sync kept, an in-place update read at the elements it
// writes, and a cluster partition that keeps every access in the block's
// slices. They verify and print back.
// RUN: trainkernel-opt %s --split-input-file | filecheck %s

// CHECK: tile.kernel @producer_sync_consumer
// CHECK:   tile.sync grid
tile.kernel @producer_sync_consumer(%x: memref<4xf32>, %y: memref<4xf32>) inputs 1 results [1] arena 256 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  %t = sched.buffer offset 0 : memref<4xf32>
  tile.map ins(%x : memref<4xf32>) outs(%t : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    %n = tk.neg %a : tensor<4xf32>
    tk.yield %n : tensor<4xf32>
  }
  tile.sync grid
  tile.map ins(%t : memref<4xf32>) outs(%y : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    %n = tk.neg %a : tensor<4xf32>
    tk.yield %n : tensor<4xf32>
  }
}

// -----

// CHECK: tile.kernel @resident_block_sync
// CHECK:   tile.sync block
tile.kernel @resident_block_sync(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 512 : i64, cluster = 1 : i64} {
  %s = tile.smem stage %x offset 0 split -1 : memref<64xf32>
  %h = tile.smem offset 256 split -1 : memref<64xf32>
  tile.map ins(%s : memref<64xf32>) outs(%h : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    %n = tk.neg %a : tensor<64xf32>
    tk.yield %n : tensor<64xf32>
  }
  tile.sync block
  tile.map ins(%h : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    %n = tk.neg %a : tensor<64xf32>
    tk.yield %n : tensor<64xf32>
  }
}

// -----

// An SGD update in place, in a gemm epilogue and in a map, with a broadcast
// operand of another buffer.
// CHECK: tile.kernel @in_place
tile.kernel @in_place(%w: memref<4x8xf32>, %x: memref<4x4xf32>, %g: memref<4x8xf32>, %b: memref<8xf32>) inputs 4 results [0, 3] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%x, %g, %w : memref<4x4xf32>, memref<4x8xf32>, memref<4x8xf32>) outs(%w : memref<4x8xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%a: tensor<4x4xf32>, %c: tensor<4x8xf32>, %p: tensor<4x8xf32>):
    %m = tk.matmul %a, %c : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %u = tk.sub %p, %m : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    tk.yield %u : tensor<4x8xf32>
  }
  tile.map ins(%b, %g : memref<8xf32>, memref<4x8xf32>) outs(%b : memref<8xf32>) config {items = 1 : i64, offset = 1 : i64, chunk = 512 : i64} {
  ^bb0(%p: tensor<8xf32>, %c: tensor<4x8xf32>):
    %half = tk.fill 0.5 : tensor<8xf32>
    %u = tk.mul %p, %half : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    tk.yield %u : tensor<8xf32>
  }
}

// -----

// A cluster of 4: rows split everywhere, a split-k gemm over a replicated
// operand into a home every block holds whole.
// CHECK: tile.kernel @partition
tile.kernel @partition(%x: memref<16x8xf32>, %w: memref<8x8xf32>, %y: memref<8x8xf32>, %z: memref<16x8xf32>) inputs 2 results [2, 3] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %x offset 0 split 0 : memref<16x8xf32>
  %h = tile.smem offset 128 split 0 : memref<16x8xf32>
  %r = tile.smem offset 512 split -1 : memref<8x8xf32>
  tile.map ins(%s : memref<16x8xf32>) outs(%h : memref<16x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%a: tensor<16x8xf32>):
    %n = tk.neg %a : tensor<16x8xf32>
    tk.yield %n : tensor<16x8xf32>
  }
  tile.sync block
  tile.gemm ins(%h, %s : memref<16x8xf32>, memref<16x8xf32>) outs(%r : memref<8x8xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64, split = 2 : i64, scratch = 768 : i64} {
  ^bb0(%a: tensor<16x8xf32>, %c: tensor<16x8xf32>):
    %m = tk.matmul %a, %c transpose_a : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    tk.yield %m : tensor<8x8xf32>
  }
  tile.map ins(%h : memref<16x8xf32>) outs(%z : memref<16x8xf32>) config {items = 1 : i64, offset = 1 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%a: tensor<16x8xf32>):
    tk.yield %a : tensor<16x8xf32>
  }
  tile.sync block
  tile.map ins(%r : memref<8x8xf32>) outs(%y : memref<8x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<8x8xf32>):
    tk.yield %a : tensor<8x8xf32>
  }
}
