// A resident kernel prints and parses back to the same text, custom and generic.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s

// CHECK:       tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
// CHECK-NEXT:    %s = tile.smem stage %a offset 0 split 0 : memref<64x8xf32>
// CHECK-NEXT:    %t = tile.smem offset 1024 split 0 pitch 12 : memref<64x8xf32>
// CHECK-NEXT:    %c = tile.smem_cast %a : memref<64x8xf32> offset 1792 split 0 : memref<64x8xbf16>
// CHECK-NEXT:    tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 0 split 0 : memref<64x8xf32>
  %t = tile.smem offset 1024 split 0 pitch 12 : memref<64x8xf32>
  %c = tile.smem_cast %a : memref<64x8xf32> offset 1792 split 0 : memref<64x8xbf16>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
