// tile.kernel's contract with the CUDA printer (issue 12, item 3): each case
// below verified before and printed CUDA that races, stores past a buffer or
// pastes text into the C++. Phase rules on byte ranges (grid and resident
// kernels), arena and launch bounds, exact work items, yielded shapes,
// in-place updates, the partition of a resident cluster, and names.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A deleted tile.sync between a producer and its consumer (grid kernel).
// CHECK: tile.kernel: phase 0: tile.map writes arena buffer %t (bytes 0..16) and tile.map reads arena buffer %t (bytes 0..16) in the same phase (a tile.sync must separate them)
tile.kernel @k(%x: memref<4xf32>, %y: memref<4xf32>) inputs 1 results [1] arena 256 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  %t = sched.buffer offset 0 : memref<4xf32>
  tile.map ins(%x : memref<4xf32>) outs(%t : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    %n = tk.neg %a : tensor<4xf32>
    tk.yield %n : tensor<4xf32>
  }
  tile.map ins(%t : memref<4xf32>) outs(%y : memref<4xf32>) config {items = 1 : i64, offset = 1 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    %n = tk.neg %a : tensor<4xf32>
    tk.yield %n : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// The same in a resident kernel, whose phases are ordered by block barriers:
// the consumer reads the producer's shared-memory home in its phase.
// CHECK: tile.kernel: phase 0: tile.map writes shared-memory home %h (bytes 256..512) and tile.map reads shared-memory home %h (bytes 256..512) in the same phase (a tile.sync must separate them)
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 512 : i64, cluster = 1 : i64} {
  %s = tile.smem stage %x offset 0 split -1 : memref<64xf32>
  %h = tile.smem offset 256 split -1 : memref<64xf32>
  tile.map ins(%s : memref<64xf32>) outs(%h : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    %n = tk.neg %a : tensor<64xf32>
    tk.yield %n : tensor<64xf32>
  }
  tile.map ins(%h : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 1 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    %n = tk.neg %a : tensor<64xf32>
    tk.yield %n : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A phase writes an argument another op of it reads (two SSA roots, one memory).
// CHECK: tile.kernel: phase 0: tile.map writes argument %w and tile.map reads argument %w in the same phase (a tile.sync must separate them)
tile.kernel @k(%w: memref<4xf32>, %y: memref<4xf32>) inputs 1 results [1, 0] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%w : memref<4xf32>) outs(%y : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    tk.yield %a : tensor<4xf32>
  }
  tile.map ins(%w : memref<4xf32>) outs(%w : memref<4xf32>) config {items = 1 : i64, offset = 1 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    %n = tk.neg %a : tensor<4xf32>
    tk.yield %n : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Two arena buffers at overlapping bytes, both live in phase 1.
// CHECK: tile.kernel: arena buffers %t1 (bytes 0..512, live in phases 0..1) and %t2 (bytes 256..512, live in phases 1..2) overlap while both are live
tile.kernel @k(%x: memref<128xf32>, %y: memref<128xf32>, %z: memref<64xf32>) inputs 1 results [1, 2] arena 512 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  %t1 = sched.buffer offset 0 : memref<128xf32>
  %t2 = sched.buffer offset 256 : memref<64xf32>
  tile.map ins(%x : memref<128xf32>) outs(%t1 : memref<128xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<128xf32>):
    tk.yield %a : tensor<128xf32>
  }
  tile.sync grid
  tile.map ins(%t1 : memref<128xf32>) outs(%y : memref<128xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<128xf32>):
    tk.yield %a : tensor<128xf32>
  }
  tile.map ins() outs(%t2 : memref<64xf32>) config {items = 1 : i64, offset = 1 : i64, chunk = 512 : i64} {
  ^bb0():
    %f = tk.fill 1.0 : tensor<64xf32>
    tk.yield %f : tensor<64xf32>
  }
  tile.sync grid
  tile.map ins(%t2 : memref<64xf32>) outs(%z : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Two shared-memory homes at overlapping bytes, both live in phase 0: the
// staged input %s is live from the kernel's start (the prologue loads it).
// CHECK: tile.kernel: shared-memory home %s (bytes 0..256), live in phases 0..1, and shared-memory home %h (bytes 128..384), live in phases 0..1, overlap while both are live
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>, %z: memref<64xf32>) inputs 1 results [1, 2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 512 : i64, cluster = 1 : i64} {
  %s = tile.smem stage %x offset 0 split -1 : memref<64xf32>
  %h = tile.smem offset 128 split -1 : memref<64xf32>
  tile.map ins() outs(%h : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0():
    %f = tk.fill 1.0 : tensor<64xf32>
    tk.yield %f : tensor<64xf32>
  }
  tile.sync block
  tile.map ins(%s : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
  tile.map ins(%h : memref<64xf32>) outs(%z : memref<64xf32>) config {items = 1 : i64, offset = 1 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A read of an output buffer no earlier phase wrote.
// CHECK: tile.kernel: phase 0 (tile.map) reads argument %o before any earlier phase writes it
tile.kernel @k(%x: memref<4xf32>, %o: memref<4xf32>, %y: memref<4xf32>) inputs 1 results [1, 2] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%o : memref<4xf32>) outs(%y : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    tk.yield %a : tensor<4xf32>
  }
  tile.sync grid
  tile.map ins(%x : memref<4xf32>) outs(%o : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    tk.yield %a : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// arena -1 (not allocated) on a tile.kernel: the printer would report a -1-byte workspace.
// CHECK: tile.kernel: arena -1: a kernel's arena is allocated, 0 to 9223372036854775807 bytes (run sched-allocate before sched-to-tile)
tile.kernel @k(%x: memref<4xf32>, %y: memref<4xf32>) inputs 1 results [1] arena -1 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    tk.yield %a : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// arena -5: the shared arena rule of sched.program and tile.kernel.
// CHECK: tile.kernel: arena -5 must be -1 (not allocated yet) or a byte count
tile.kernel @k(%x: memref<4xf32>, %y: memref<4xf32>) inputs 1 results [1] arena -5 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4xf32>):
    tk.yield %a : tensor<4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A row reduction with more items than outputs: item k stores output k.
// CHECK: tile.reduce: items = 100000, expected 16 (one item per output element, 16 outputs)
tile.kernel @k(%x: memref<16x8xf32>, %o: memref<16xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<16x8xf32>) outs(%o : memref<16xf32>) config {items = 100000 : i64, offset = 0 : i64, rows = 1 : i64} {
  ^bb0(%a: tensor<16x8xf32>):
    %s = tk.sum %a axes [1] : tensor<16x8xf32> -> tensor<16xf32>
    tk.yield %s : tensor<16xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... or fewer (outputs nobody writes).
// CHECK: tile.reduce: items = 15, expected 16 (one item per output element, 16 outputs)
tile.kernel @k(%x: memref<16x8xf32>, %o: memref<16xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<16x8xf32>) outs(%o : memref<16xf32>) config {items = 15 : i64, offset = 0 : i64, rows = 1 : i64} {
  ^bb0(%a: tensor<16x8xf32>):
    %s = tk.sum %a axes [1] : tensor<16x8xf32> -> tensor<16xf32>
    tk.yield %s : tensor<16xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A gemm yielding an extra, smaller output (stored at the (i, j) of the 4x8 result).
// CHECK: tile.gemm yields a tensor of shape [8], but every output must have the shape of its matmul [4, 8] (it is stored at the iteration index)
tile.kernel @k(%a: memref<4x4xf32>, %b: memref<4x8xf32>, %c: memref<8xf32>, %o: memref<4x8xf32>, %p: memref<8xf32>) inputs 3 results [3, 4] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%a, %b, %c : memref<4x4xf32>, memref<4x8xf32>, memref<8xf32>) outs(%o, %p : memref<4x8xf32>, memref<8xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4x4xf32>, %y: tensor<4x8xf32>, %z: tensor<8xf32>):
    %m = tk.matmul %x, %y : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %s = tk.add %m, %z : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    tk.yield %s, %z : tensor<4x8xf32>, tensor<8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A map yielding an extra, smaller output.
// CHECK: tile.map yields a tensor of shape [8], but every output must have the shape of its iteration space (its first output) [4, 8] (it is stored at the iteration index)
tile.kernel @k(%a: memref<4x8xf32>, %c: memref<8xf32>, %o: memref<4x8xf32>, %p: memref<8xf32>) inputs 2 results [2, 3] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%a, %c : memref<4x8xf32>, memref<8xf32>) outs(%o, %p : memref<4x8xf32>, memref<8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%x: tensor<4x8xf32>, %z: tensor<8xf32>):
    %s = tk.add %x, %z : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    tk.yield %s, %z : tensor<4x8xf32>, tensor<8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// items = 2^40 on a 64-element map: exactly the chunks of its elements.
// CHECK: tile.map: items = 1099511627776, expected 1 (64 elements in chunks of 512)
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1099511627776 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A gemm with more items than output tiles.
// CHECK: tile.gemm: items = 3, expected 1 (a 4x8 output in 64x64 tiles)
tile.kernel @k(%a: memref<4x4xf32>, %b: memref<4x8xf32>, %o: memref<4x8xf32>) inputs 2 results [2] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%a, %b : memref<4x4xf32>, memref<4x8xf32>) outs(%o : memref<4x8xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 3 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<4x4xf32>, %y: tensor<4x8xf32>):
    %m = tk.matmul %x, %y : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    tk.yield %m : tensor<4x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// grid = 10^12: more blocks than a launch may have (and than the launcher's int).
// CHECK: tile.kernel: grid 1000000000000 exceeds the 2147483647 blocks a launch may have
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 1000000000000 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A config value that is not a 64-bit integer.
// CHECK: tile.map: `offset = 36893488147419103232` is not a 64-bit integer (the printer pastes it into C++)
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 36893488147419103232 : i128, chunk = 512 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A chunk no block handles.
// CHECK: tile.map chunk must be 1 to 2147483647, got 4294967296
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 4294967296 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// GEMM extents past the device GEMM's int.
// CHECK: tile.gemm: extents 3000000000x8x8 exceed the device GEMM's int extents (2147483647)
tile.kernel @k(%a: memref<3000000000x8xbf16>, %b: memref<8x8xbf16>, %o: memref<3000000000x8xbf16>) inputs 2 results [2] arena 0 config {grid = 528 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%a, %b : memref<3000000000x8xbf16>, memref<8x8xbf16>) outs(%o : memref<3000000000x8xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 46875000 : i64, offset = 0 : i64} {
  ^bb0(%x: tensor<3000000000x8xbf16>, %y: tensor<8x8xbf16>):
    %m = tk.matmul %x, %y : (tensor<3000000000x8xbf16>, tensor<8x8xbf16>) -> tensor<3000000000x8xbf16>
    tk.yield %m : tensor<3000000000x8xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A row reduction (rows > 1 over trailing axes: a warp an output) with more rows an item than the block has warps.
// CHECK: tile.reduce: rows 128 (one warp an output row) needs 4096 threads, the kernel has 128
tile.kernel @k(%x: memref<16x8xf32>, %o: memref<16xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<16x8xf32>) outs(%o : memref<16xf32>) config {items = 1 : i64, offset = 0 : i64, rows = 128 : i64} {
  ^bb0(%a: tensor<16x8xf32>):
    %s = tk.sum %a axes [1] : tensor<16x8xf32> -> tensor<16xf32>
    tk.yield %s : tensor<16xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// rows > 1 over a middle axis: neither a column sum (axes lead) nor a row reduction (axes trail).
// CHECK: tile.reduce: rows = 4 needs reduced axes that lead (a column sum, not an argmax) or trail the kept ones (a row reduction), got axes [1] of [4, 8, 2]
tile.kernel @k(%x: memref<4x8x2xf32>, %o: memref<4x2xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<4x8x2xf32>) outs(%o : memref<4x2xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 4 : i64} {
  ^bb0(%a: tensor<4x8x2xf32>):
    %s = tk.sum %a axes [1] : tensor<4x8x2xf32> -> tensor<4x2xf32>
    tk.yield %s : tensor<4x2xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A row reduction whose items do not cover its rows: 16 rows, 4 an item, 3 items.
// CHECK: tile.reduce: items = 3, expected 4 (16 output rows, 4 per item)
tile.kernel @k(%x: memref<16x8xf32>, %o: memref<16xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<16x8xf32>) outs(%o : memref<16xf32>) config {items = 3 : i64, offset = 0 : i64, rows = 4 : i64} {
  ^bb0(%a: tensor<16x8xf32>):
    %s = tk.sum %a axes [1] : tensor<16x8xf32> -> tensor<16xf32>
    tk.yield %s : tensor<16xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A column reduction with more columns per item than threads (columns 128..255 of an item: nobody).
// CHECK: tile.reduce: rows 256 must divide the kernel's 128 threads (one thread per column in each group of rows threads, the groups splitting the rows)
tile.kernel @k(%x: memref<16x300xf32>, %o: memref<300xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<16x300xf32>) outs(%o : memref<300xf32>) config {items = 2 : i64, offset = 0 : i64, rows = 256 : i64} {
  ^bb0(%a: tensor<16x300xf32>):
    %s = tk.sum %a axes [0] : tensor<16x300xf32> -> tensor<300xf32>
    tk.yield %s : tensor<300xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Fewer columns per item than threads, but not a divisor: the last group of 128 / 48 would be partial.
// CHECK: tile.reduce: rows 48 must divide the kernel's 128 threads
tile.kernel @k(%x: memref<16x300xf32>, %o: memref<300xf32>) inputs 1 results [1] arena 0 config {grid = 7 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.reduce ins(%x : memref<16x300xf32>) outs(%o : memref<300xf32>) config {items = 7 : i64, offset = 0 : i64, rows = 48 : i64} {
  ^bb0(%a: tensor<16x300xf32>):
    %s = tk.sum %a axes [0] : tensor<16x300xf32> -> tensor<300xf32>
    tk.yield %s : tensor<300xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// An in-place update that reads its buffer transposed: blocks overwrite elements others still read.
// CHECK: tile.kernel: tile.map updates argument %w in place but reads it transposed, not at the elements of its memref<4x4xf32> output: elements not read yet may already be overwritten
tile.kernel @k(%w: memref<4x4xf32>) inputs 1 results [0] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%w : memref<4x4xf32>) outs(%w : memref<4x4xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<4x4xf32>):
    %t = tk.transpose %a perm [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
    tk.yield %t : tensor<4x4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... or as a GEMM operand.
// CHECK: tile.kernel: tile.gemm updates argument %w in place but reads it as a GEMM operand (across k), not at the elements of its memref<4x4xf32> output
tile.kernel @k(%w: memref<4x4xf32>, %x: memref<4x4xf32>) inputs 2 results [0] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%w, %x : memref<4x4xf32>, memref<4x4xf32>) outs(%w : memref<4x4xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
    %m = tk.matmul %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    tk.yield %m : tensor<4x4xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A kernel name that is not a C identifier (pasted into `tk_<name>_kernel`).
// CHECK: tile.kernel name 'a\nstatic int injected = 42;\n//' is not a C identifier
tile.kernel @"a\0Astatic int injected = 42;\0A//"(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 2 : i64, threads = 128 : i64, smem = 0 : i64} {
  tile.map ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A home's name that is not a C identifier (printed as `s2_<name>`).
// CHECK: tile.kernel: home name 'a.b' is not a C identifier
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 256 : i64, cluster = 1 : i64} {
  %a.b = tile.smem stage %x offset 0 split -1 : memref<64xf32>
  tile.map ins(%a.b : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Resident kernels: no global arena ...
// CHECK: tile.kernel: a resident kernel has no global arena (arena 0), got arena 256
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 256 config {grid = 1 : i64, threads = 128 : i64, smem = 256 : i64, cluster = 1 : i64} {
  %s = tile.smem stage %x offset 0 split -1 : memref<64xf32>
  tile.map ins(%s : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... reads from shared memory only (a block barrier orders no other block's global stores) ...
// CHECK: tile.kernel: tile.map of a resident kernel reads argument 0 from global memory; it must read its shared-memory home (tile.smem stage)
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 256 : i64, cluster = 1 : i64} {
  tile.map ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... one home per argument (it is written through to one) ...
// CHECK: tile.kernel: argument 0 has two shared-memory homes (it is written through to one)
tile.kernel @k(%x: memref<64xf32>, %y: memref<64xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 512 : i64, cluster = 1 : i64} {
  %s = tile.smem stage %x offset 0 split -1 : memref<64xf32>
  %t = tile.smem stage %x offset 256 split -1 : memref<64xf32>
  tile.map ins(%s : memref<64xf32>) outs(%y : memref<64xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<64xf32>):
    tk.yield %a : tensor<64xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// ... and 32-bit indices.
// CHECK: tile.kernel: a resident kernel indexes in 32 bits, but one of its buffers or tensors holds 1073741825 elements (at most 1073741824)
tile.kernel @k(%x: memref<f32>, %y: memref<1073741825xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 128 : i64, smem = 16 : i64, cluster = 1 : i64} {
  %s = tile.smem stage %x offset 0 split -1 : memref<f32>
  tile.map ins(%s : memref<f32>) outs(%y : memref<1073741825xf32>) config {items = 2097153 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<f32>):
    %e = tk.expand %a : tensor<f32> -> tensor<1073741825xf32>
    tk.yield %e : tensor<1073741825xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// The partition of a cluster: a split-k gemm whose operand A is split over m
// (block r holds 4 of its 16 rows; the k-split product reads all 16).
// CHECK: tile.kernel: tile.gemm (split 2) reads memref<16x32xf32> split on axis 0 over the cluster, but its axis 0 is indexed by iteration dimension 0: a block would address slices it does not hold
tile.kernel @k(%A: memref<16x32xf32>, %B: memref<32x8xf32>, %o: memref<16x8xf32>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 4096 : i64, cluster = 4 : i64} {
  %a = tile.smem stage %A offset 0 split 0 : memref<16x32xf32>
  %b = tile.smem stage %B offset 512 split 0 : memref<32x8xf32>
  tile.gemm ins(%a, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%o : memref<16x8xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64, split = 2 : i64, scratch = 1024 : i64} {
  ^bb0(%x: tensor<16x32xf32>, %y: tensor<32x8xf32>):
    %m = tk.matmul %x, %y : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
    tk.yield %m : tensor<16x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A map split over rows writing a home every block holds whole: each block makes only its rows.
// CHECK: tile.kernel: tile.map (split 0) writes memref<16x8xf32>, which every block holds whole, but each block makes only its slice of it
tile.kernel @k(%x: memref<16x8xf32>, %y: memref<16x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 1024 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %x offset 0 split 0 : memref<16x8xf32>
  %h = tile.smem offset 128 split -1 : memref<16x8xf32>
  tile.map ins(%s : memref<16x8xf32>) outs(%h : memref<16x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%a: tensor<16x8xf32>):
    %n = tk.neg %a : tensor<16x8xf32>
    tk.yield %n : tensor<16x8xf32>
  }
  tile.sync block
  tile.map ins(%h : memref<16x8xf32>) outs(%y : memref<16x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<16x8xf32>):
    tk.yield %a : tensor<16x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A map that splits nothing reading a split home (every block reads all 16 rows, holds 4).
// CHECK: tile.kernel: tile.map (split -1) reads memref<16x8xf32> split on axis 0 over the cluster, but its axis 0 is indexed by iteration dimension 0: a block would address slices it does not hold
tile.kernel @k(%x: memref<16x8xf32>, %y: memref<16x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 1024 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %x offset 0 split 0 : memref<16x8xf32>
  tile.map ins(%s : memref<16x8xf32>) outs(%y : memref<16x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
  ^bb0(%a: tensor<16x8xf32>):
    tk.yield %a : tensor<16x8xf32>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A view that moves the split axis of a home.
// CHECK: tile.kernel: a view memref<16x8xf32> to memref<128xf32> moves the split axis 0 of a home
tile.kernel @k(%x: memref<16x8xf32>, %y: memref<128xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 1024 : i64, cluster = 4 : i64} {
  %s = tile.smem stage %x offset 0 split 0 : memref<16x8xf32>
  %v = sched.view %s : memref<16x8xf32> to memref<128xf32>
  tile.map ins(%v : memref<128xf32>) outs(%y : memref<128xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = 0 : i64} {
  ^bb0(%a: tensor<128xf32>):
    tk.yield %a : tensor<128xf32>
  }
}
