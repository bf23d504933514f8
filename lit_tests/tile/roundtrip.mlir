// Every tile op prints in its custom form and parses back to the same IR,
// from the custom form and from the generic form.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: trainkernel-opt %s > %t.custom
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt > %t.generic
// RUN: diff %t.custom %t.generic

// CHECK-LABEL: tile.kernel @step(%w: memref<32x64xbf16>, %x: memref<16x32xbf16>, %b: memref<64xbf16>, %out: memref<16x64xf32>, %loss: memref<f32>) inputs 3 results [3, 4] arena 2048 config {grid = 132 : i64, threads = 128 : i64, smem = 30720 : i64} {
// CHECK-NEXT:    %h = sched.buffer offset 0 : memref<16x64xbf16>
// CHECK-NEXT:    %hv = sched.view %h : memref<16x64xbf16> to memref<1024xbf16>
// CHECK-NEXT:    tile.gemm ins(%x, %w, %b : memref<16x32xbf16>, memref<32x64xbf16>, memref<64xbf16>) outs(%h : memref<16x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
// CHECK-NEXT:    ^bb0(%a0: tensor<16x32xbf16>, %a1: tensor<32x64xbf16>, %a2: tensor<64xbf16>):
// CHECK-NEXT:      %m = tk.matmul %a0, %a1 : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
// CHECK-NEXT:      %s = tk.add %m, %a2 : (tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
// CHECK-NEXT:      %r = tk.relu %s : tensor<16x64xbf16>
// CHECK-NEXT:      tk.yield %r : tensor<16x64xbf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.sync grid
// CHECK-NEXT:    tile.map ins(%h : memref<16x64xbf16>) outs(%out : memref<16x64xf32>) config {items = 2 : i64, offset = 0 : i64, chunk = 512 : i64} attributes {tk.note = "cast"} {
// CHECK-NEXT:    ^bb0(%c0: tensor<16x64xbf16>):
// CHECK-NEXT:      %c = tk.cast %c0 : tensor<16x64xbf16> to tensor<16x64xf32>
// CHECK-NEXT:      tk.yield %c : tensor<16x64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.reduce ins(%hv : memref<1024xbf16>) outs(%loss : memref<f32>) config {items = 1 : i64, offset = 2 : i64, rows = 1 : i64} {
// CHECK-NEXT:    ^bb0(%d0: tensor<1024xbf16>):
// CHECK-NEXT:      %t = tk.sum %d0 axes [0] : tensor<1024xbf16> -> tensor<bf16>
// CHECK-NEXT:      %f = tk.cast %t : tensor<bf16> to tensor<f32>
// CHECK-NEXT:      tk.yield %f : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.sync items {tk.note = "between phases"}
// CHECK-NEXT:  }

// CHECK-LABEL: tile.kernel @small(%p: memref<4x4xf32>, %q: memref<4x4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 32 : i64, smem = 0 : i64} attributes {tk.note = "f32"} {
// CHECK-NEXT:    tile.gemm ins(%p : memref<4x4xf32>) outs(%q : memref<4x4xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64} {
// CHECK-NEXT:    ^bb0(%e0: tensor<4x4xf32>):
// CHECK-NEXT:      %mm = tk.matmul %e0, %e0 transpose_a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:      tk.yield %mm : tensor<4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// GENERIC: "tile.kernel"() <{sym_name = "step", num_inputs = #builtin.int<3>, result_buffers = array<i64: 3, 4>, arena_bytes = #builtin.int<2048>, grid = 132 : i64, threads = 128 : i64, smem = 30720 : i64}>
// GENERIC: "tile.gemm"(%x, %w, %b, %h) <{{{.*}}tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64{{.*}}}>
// GENERIC: "tile.sync"() <{scope = "grid"}> : () -> ()
// GENERIC: "tile.map"(%h, %out) <{{{.*}}items = 2 : i64, offset = 0 : i64, chunk = 512 : i64{{.*}}}> ({
// GENERIC: "tile.reduce"(%hv, %loss) <{{{.*}}items = 1 : i64, offset = 2 : i64, rows = 1 : i64{{.*}}}>
// GENERIC: "tile.sync"() <{scope = "items"}> {tk.note = "between phases"} : () -> ()

tile.kernel @step(%w: memref<32x64xbf16>, %x: memref<16x32xbf16>, %b: memref<64xbf16>, %out: memref<16x64xf32>, %loss: memref<f32>) inputs 3 results [3, 4] arena 2048 config {grid = 132 : i64, threads = 128 : i64, smem = 30720 : i64} {
  %h = sched.buffer offset 0 : memref<16x64xbf16>
  %hv = sched.view %h : memref<16x64xbf16> to memref<1024xbf16>
  tile.gemm ins(%x, %w, %b : memref<16x32xbf16>, memref<32x64xbf16>, memref<64xbf16>) outs(%h : memref<16x64xbf16>) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%a0: tensor<16x32xbf16>, %a1: tensor<32x64xbf16>, %a2: tensor<64xbf16>):
    %m = tk.matmul %a0, %a1 : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
    %s = tk.add %m, %a2 : (tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
    %r = tk.relu %s : tensor<16x64xbf16>
    tk.yield %r : tensor<16x64xbf16>
  }
  tile.sync grid
  tile.map ins(%h : memref<16x64xbf16>) outs(%out : memref<16x64xf32>) config {items = 2 : i64, offset = 0 : i64, chunk = 512 : i64} attributes {tk.note = "cast"} {
  ^bb0(%c0: tensor<16x64xbf16>):
    %c = tk.cast %c0 : tensor<16x64xbf16> to tensor<16x64xf32>
    tk.yield %c : tensor<16x64xf32>
  }
  tile.reduce ins(%hv : memref<1024xbf16>) outs(%loss : memref<f32>) config {items = 1 : i64, offset = 2 : i64, rows = 1 : i64} {
  ^bb0(%d0: tensor<1024xbf16>):
    %t = tk.sum %d0 axes [0] : tensor<1024xbf16> -> tensor<bf16>
    %f = tk.cast %t : tensor<bf16> to tensor<f32>
    tk.yield %f : tensor<f32>
  }
  tile.sync items {tk.note = "between phases"}
}

tile.kernel @small(%p: memref<4x4xf32>, %q: memref<4x4xf32>) inputs 1 results [1] arena 0 config {grid = 1 : i64, threads = 32 : i64, smem = 0 : i64} attributes {tk.note = "f32"} {
  tile.gemm ins(%p : memref<4x4xf32>) outs(%q : memref<4x4xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64} {
  ^bb0(%e0: tensor<4x4xf32>):
    %mm = tk.matmul %e0, %e0 transpose_a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    tk.yield %mm : tensor<4x4xf32>
  }
}
