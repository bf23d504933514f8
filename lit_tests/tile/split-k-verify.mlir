// tile.gemm split-K (ksplit, workspace): what the verifier refuses; the
// valid form is made and printed by lit_tests/passes/sched-to-tile/split-k.mlir.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A split gemm without its workspace.
// CHECK: tile.gemm: ksplit 2 must be >= 1, and a workspace is given exactly when ksplit > 1
tile.kernel @k(%a: memref<128x4096xbf16>, %b: memref<4096x128xbf16>, %c: memref<128x128xbf16>) inputs 2 results [2] arena 196624 config {grid = 8 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%a, %b : memref<128x4096xbf16>, memref<4096x128xbf16>) outs(%c : memref<128x128xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, ksplit = 2 : i64} {
  ^bb0(%p: tensor<128x4096xbf16>, %q: tensor<4096x128xbf16>):
    %m = tk.matmul %p, %q : (tensor<128x4096xbf16>, tensor<4096x128xbf16>) -> tensor<128x128xbf16>
    tk.yield %m : tensor<128x128xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Slices that leave the last one empty: 100 slices of K = 4096 in whole 32-steps are 64 long, and 64 of them cover it.
// CHECK: tile.gemm: ksplit 100 leaves a K slice empty (K = 4096, slices of whole 32-steps)
tile.kernel @k(%a: memref<128x4096xbf16>, %b: memref<4096x128xbf16>, %c: memref<128x128xbf16>) inputs 2 results [2] arena 6553616 config {grid = 8 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%a, %b : memref<128x4096xbf16>, memref<4096x128xbf16>) outs(%c : memref<128x128xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 400 : i64, offset = 0 : i64, ksplit = 100 : i64, workspace = 0 : i64} {
  ^bb0(%p: tensor<128x4096xbf16>, %q: tensor<4096x128xbf16>):
    %m = tk.matmul %p, %q : (tensor<128x4096xbf16>, tensor<4096x128xbf16>) -> tensor<128x128xbf16>
    tk.yield %m : tensor<128x128xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// Work items that are not tiles x slices.
// CHECK: tile.gemm: items = 4, expected 8 (a 128x128 output in 64x64 tiles, 2 K slices each)
tile.kernel @k(%a: memref<128x4096xbf16>, %b: memref<4096x128xbf16>, %c: memref<128x128xbf16>) inputs 2 results [2] arena 196624 config {grid = 8 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%a, %b : memref<128x4096xbf16>, memref<4096x128xbf16>) outs(%c : memref<128x128xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 4 : i64, offset = 0 : i64, ksplit = 2 : i64, workspace = 65536 : i64} {
  ^bb0(%p: tensor<128x4096xbf16>, %q: tensor<4096x128xbf16>):
    %m = tk.matmul %p, %q : (tensor<128x4096xbf16>, tensor<4096x128xbf16>) -> tensor<128x128xbf16>
    tk.yield %m : tensor<128x128xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A workspace past the arena (2 x 128 x 128 fp32 partials and 4 counters: 131088 bytes).
// CHECK: tile.gemm: workspace 65536 (131088 bytes: partials and tile counters) must be a multiple of 16 inside the kernel's 131072-byte arena
tile.kernel @k(%a: memref<128x4096xbf16>, %b: memref<4096x128xbf16>, %c: memref<128x128xbf16>) inputs 2 results [2] arena 131072 config {grid = 8 : i64, threads = 128 : i64, smem = 30720 : i64} {
  tile.gemm ins(%a, %b : memref<128x4096xbf16>, memref<4096x128xbf16>) outs(%c : memref<128x128xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, ksplit = 2 : i64, workspace = 65536 : i64} {
  ^bb0(%p: tensor<128x4096xbf16>, %q: tensor<4096x128xbf16>):
    %m = tk.matmul %p, %q : (tensor<128x4096xbf16>, tensor<4096x128xbf16>) -> tensor<128x128xbf16>
    tk.yield %m : tensor<128x128xbf16>
  }
}
// -----
// CHECK: {{^//}} {{-----$}}

// A workspace over an arena buffer: the counters would not stay zero, the buffer would be overwritten.
// CHECK: tile.gemm: workspace bytes 0..131088 overlap arena buffer bytes 0..32768
tile.kernel @k(%a: memref<128x4096xbf16>, %b: memref<4096x128xbf16>, %c: memref<128x128xbf16>) inputs 2 results [2] arena 196624 config {grid = 8 : i64, threads = 128 : i64, smem = 30720 : i64} {
  %t = sched.buffer offset 0 : memref<128x128xbf16>
  tile.gemm ins(%a, %b : memref<128x4096xbf16>, memref<4096x128xbf16>) outs(%c : memref<128x128xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 8 : i64, offset = 0 : i64, ksplit = 2 : i64, workspace = 0 : i64} {
  ^bb0(%p: tensor<128x4096xbf16>, %q: tensor<4096x128xbf16>):
    %m = tk.matmul %p, %q : (tensor<128x4096xbf16>, tensor<4096x128xbf16>) -> tensor<128x128xbf16>
    tk.yield %m : tensor<128x128xbf16>
  }
}
