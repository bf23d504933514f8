// Verifiers of resident kernels: tile.smem homes (inside a resident kernel,
// split axis, 16-byte offsets inside the kernel's shared memory, staging only
// arguments), the kernel (one cluster of 1-16 blocks, grid = cluster) and
// every tile op's `split` (present, naming an iteration dimension).
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: tile.smem must be directly inside a resident tile.kernel (one with `cluster`)
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 2048 : i64} {
  %s = tile.smem stage %a offset 0 split 0 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tile.smem split 2 is not an axis of memref<64x8xf32>
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 0 split 2 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tile.smem offset 8 must be a non-negative multiple of 16
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 8 split 0 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tile.smem at offset 1600 overruns the kernel's 2048 bytes of shared memory
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 1600 split 0 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tile.smem stage must name an argument of its tile.kernel
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem offset 0 split 0 : memref<64x8xf32>
  %t = tile.smem stage %s offset 512 split 0 : memref<64x8xf32>
  tile.map ins(%t : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tile.kernel: a resident kernel is one cluster of 1 to 16 blocks and its grid is that cluster (cluster 4, grid 8)
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 8 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 0 split 0 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tile.kernel: a resident kernel is one cluster of 1 to 16 blocks and its grid is that cluster (cluster 32, grid 32)
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 32 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 32 : i64} {
  tile.map ins(%a : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tile.kernel: tile.map of a resident kernel needs a `split`
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 0 split 0 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tile.map: split 2 names none of its 2 iteration dimensions
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 0 split 0 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 2 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// An argmax split over its reduced axis would leave each block the index of a
// partial maximum; the cluster combines sums and maxima only (tile-resident
// never splits an argmax).
// CHECK: tile.kernel: a tk.argmax cannot split its reduced axis over the cluster (the cluster combines partial sums and maxima, not indices)
tile.kernel @k(%a: memref<8x10xf32>, %o: memref<8xi64>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 2 : i64} {
  %s = tile.smem stage %a offset 0 split 1 : memref<8x10xf32>
  tile.reduce ins(%s : memref<8x10xf32>) outs(%o : memref<8xi64>) config {items = 8 : i64, offset = 0 : i64, rows = 1 : i64, split = 1 : i64, scratch = 1024 : i64} {
  ^bb0(%x: tensor<8x10xf32>):
    %r = tk.argmax %x axes [1] : tensor<8x10xf32> -> tensor<8xi64>
    tk.yield %r : tensor<8xi64>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A pitch shorter than the local row (16 rows of 8 floats per block).
// CHECK: tile.smem pitch 4 must be a 2-D home's row stride: at least its local row of 8 elements and a multiple of 16 bytes (memref<64x8xf32>)
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 0 split 0 pitch 4 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Rows must start 16-byte aligned: 10 floats is 40 bytes.
// CHECK: tile.smem pitch 10 must be a 2-D home's row stride
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 0 split 0 pitch 10 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// The padded home's bytes count: 16 rows x 12 floats = 768 bytes at offset 1536 overrun 2048.
// CHECK: tile.smem at offset 1536 overruns the kernel's 2048 bytes of shared memory
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %a offset 1536 split 0 pitch 12 : memref<64x8xf32>
  tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%x: tensor<64x8xf32>):
    tk.yield %x : tensor<64x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A cast home changes the element type, and only that.
// CHECK: tile.smem_cast casts memref<64x8xf32> to a home of its shape and another element type, not memref<64x8xf32>
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem_cast %a : memref<64x8xf32> offset 0 split 0 : memref<64x8xf32>
}
// -----
// CHECK: {{^//}} {{-----$}}

// The prologue fills a cast home from an input, never from an output.
// CHECK: tile.smem_cast must stage an input of its tile.kernel
tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
  %s = tile.smem_cast %o : memref<64x8xf32> offset 0 split 0 : memref<64x8xbf16>
}
