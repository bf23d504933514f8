// sched-allocate: sizes round up to 256 bytes, the largest buffers are placed
// first, each at the lowest free aligned offset among buffers live at the same
// time, and `arena` is the peak end offset (what the runtime allocates).
// RUN: trainkernel-opt %s -p sched-allocate | filecheck %s

// 65 f32 = 260 bytes -> 512; 3 bf16 = 6 bytes -> 256; 1024 f32 = 4096 bytes.
// All three live together in phase 1: 4096 + 512 + 256 = 4864, the big one first.
// CHECK-LABEL: sched.program @sizes({{.*}}) inputs 1 results [1] arena 4864 {
// CHECK-NEXT:    %small = sched.buffer offset 4608 : memref<3xbf16>
// CHECK-NEXT:    %odd = sched.buffer offset 4096 : memref<65xf32>
// CHECK-NEXT:    %big = sched.buffer offset 0 : memref<1024xf32>
sched.program @sizes(%x: memref<f32>, %out: memref<f32>) inputs 1 results [1] arena -1 {
  %small = sched.buffer : memref<3xbf16>
  %odd = sched.buffer : memref<65xf32>
  %big = sched.buffer : memref<1024xf32>
  sched.phase {
    sched.compute ins(%x : memref<f32>) outs(%small, %odd, %big : memref<3xbf16>, memref<65xf32>, memref<1024xf32>) {
    ^bb0(%a: tensor<f32>):
      %s = tk.fill 1.0 : tensor<3xbf16>
      %o = tk.fill 2.0 : tensor<65xf32>
      %b = tk.fill 3.0 : tensor<1024xf32>
      tk.yield %s, %o, %b : tensor<3xbf16>, tensor<65xf32>, tensor<1024xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%small, %odd, %big : memref<3xbf16>, memref<65xf32>, memref<1024xf32>) outs(%out : memref<f32>) {
    ^bb0(%a: tensor<3xbf16>, %b: tensor<65xf32>, %c: tensor<1024xf32>):
      %r = tk.sum %c axes [0] : tensor<1024xf32> -> tensor<f32>
      tk.yield %r : tensor<f32>
    }
  }
}

// Peak, not sum: a 4 KiB buffer in phases 0-1 and another in phases 2-3
// share the same bytes; the small one alive throughout sits after them.
// CHECK-LABEL: sched.program @peak({{.*}}) inputs 1 results [1] arena 4352 {
// CHECK-NEXT:    %a1 = sched.buffer offset 0 : memref<1024xf32>
// CHECK-NEXT:    %a2 = sched.buffer offset 0 : memref<1024xf32>
// CHECK-NEXT:    %keep = sched.buffer offset 4096 : memref<4xf32>
sched.program @peak(%y: memref<1024xf32>, %out2: memref<1024xf32>) inputs 1 results [1] arena -1 {
  %a1 = sched.buffer : memref<1024xf32>
  %a2 = sched.buffer : memref<1024xf32>
  %keep = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%y : memref<1024xf32>) outs(%a1, %keep : memref<1024xf32>, memref<4xf32>) {
    ^bb0(%a: tensor<1024xf32>):
      %k = tk.fill 0.0 : tensor<4xf32>
      tk.yield %a, %k : tensor<1024xf32>, tensor<4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%a1 : memref<1024xf32>) outs(%out2 : memref<1024xf32>) {
    ^bb0(%a: tensor<1024xf32>):
      tk.yield %a : tensor<1024xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%out2 : memref<1024xf32>) outs(%a2 : memref<1024xf32>) {
    ^bb0(%a: tensor<1024xf32>):
      %e = tk.exp %a : tensor<1024xf32>
      tk.yield %e : tensor<1024xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%a2, %keep : memref<1024xf32>, memref<4xf32>) outs(%out2 : memref<1024xf32>) {
    ^bb0(%a: tensor<1024xf32>, %k: tensor<4xf32>):
      tk.yield %a : tensor<1024xf32>
    }
  }
}

// No temporaries: an empty arena.
// CHECK-LABEL: sched.program @none({{.*}}) inputs 1 results [1] arena 0 {
sched.program @none(%z: memref<4xf32>, %out3: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.phase {
    sched.compute ins(%z : memref<4xf32>) outs(%out3 : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      tk.yield %a : tensor<4xf32>
    }
  }
}
