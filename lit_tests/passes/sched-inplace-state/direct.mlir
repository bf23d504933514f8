// sched-inplace-state writes an updated parameter in place when that is safe:
// every other reader of the old value runs in an earlier phase, and the
// producer reads it only elementwise at the index it writes. The staging
// buffer and the commit disappear, and so does the commit's phase (with its
// barrier) once it is empty.
// RUN: trainkernel-opt %s -p sched-inplace-state | filecheck %s

// dW2 matmul with the SGD update as its epilogue; the old W2 is read by the
// cast in phase 0 and, elementwise, by the epilogue itself in phase 1.
// CHECK-LABEL: sched.program @sgd(%w: memref<64x8xf32>, %h: memref<16x64xbf16>, %d: memref<16x8xbf16>, %gw: memref<64x8xf32>, %wc: memref<16x8xbf16>) inputs 3 results [3, 0, 4] arena -1 {
// CHECK-NOT:     %staged
// CHECK-NEXT:    %wb = sched.buffer : memref<64x8xbf16>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%w : memref<64x8xf32>) outs(%wb : memref<64x8xbf16>) {
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%h, %d, %w : memref<16x64xbf16>, memref<16x8xbf16>, memref<64x8xf32>) outs(%gw, %w : memref<64x8xf32>, memref<64x8xf32>) {
// CHECK:             tk.matmul
// CHECK:             tk.sub
// CHECK:           }
// CHECK-NEXT:      sched.compute ins(%d, %wb : memref<16x8xbf16>, memref<64x8xbf16>) outs(%wc : memref<16x8xbf16>) {
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NOT:   sched.commit
sched.program @sgd(%w: memref<64x8xf32>, %h: memref<16x64xbf16>, %d: memref<16x8xbf16>, %gw: memref<64x8xf32>, %wc: memref<16x8xbf16>) inputs 3 results [3, 0, 4] arena -1 {
  %staged = sched.buffer : memref<64x8xf32>
  %wb = sched.buffer : memref<64x8xbf16>
  sched.phase {
    sched.compute ins(%w : memref<64x8xf32>) outs(%wb : memref<64x8xbf16>) {
    ^bb0(%a: tensor<64x8xf32>):
      %c = tk.cast %a : tensor<64x8xf32> to tensor<64x8xbf16>
      tk.yield %c : tensor<64x8xbf16>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%h, %d, %w : memref<16x64xbf16>, memref<16x8xbf16>, memref<64x8xf32>) outs(%gw, %staged : memref<64x8xf32>, memref<64x8xf32>) {
    ^bb0(%x: tensor<16x64xbf16>, %y: tensor<16x8xbf16>, %old: tensor<64x8xf32>):
      %lr = tk.fill 0.001 : tensor<f32>
      %g = tk.matmul %x, %y transpose_a : (tensor<16x64xbf16>, tensor<16x8xbf16>) -> tensor<64x8xbf16>
      %gf = tk.cast %g : tensor<64x8xbf16> to tensor<64x8xf32>
      %st = tk.mul %gf, %lr : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
      %new = tk.sub %old, %st : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
      tk.yield %gf, %new : tensor<64x8xf32>, tensor<64x8xf32>
    }
    sched.compute ins(%d, %wb : memref<16x8xbf16>, memref<64x8xbf16>) outs(%wc : memref<16x8xbf16>) {
    ^bb0(%y: tensor<16x8xbf16>, %v: tensor<64x8xbf16>):
      %r = tk.matmul %y, %v transpose_b : (tensor<16x8xbf16>, tensor<64x8xbf16>) -> tensor<16x64xbf16>
      %s = tk.sum %r axes [1] keepdim : tensor<16x64xbf16> -> tensor<16x1xbf16>
      %e = tk.expand %s : tensor<16x1xbf16> -> tensor<16x8xbf16>
      tk.yield %e : tensor<16x8xbf16>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %staged to %w : memref<64x8xf32>
  }
}

// A pointwise update (bias) whose old value is also read by a reduction in an
// earlier phase: direct. Readers of the NEW value (here a copy to an output)
// read the parameter itself afterwards.
// CHECK-LABEL: sched.program @bias(%b: memref<8xf32>, %gb: memref<8xf32>, %o: memref<f32>, %nb: memref<8xf32>) inputs 2 results [2, 0, 3] arena -1 {
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%b : memref<8xf32>) outs(%o : memref<f32>) {
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%b, %gb, %o : memref<8xf32>, memref<8xf32>, memref<f32>) outs(%b : memref<8xf32>) {
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%b : memref<8xf32>) outs(%nb : memref<8xf32>) {
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
sched.program @bias(%b: memref<8xf32>, %gb: memref<8xf32>, %o: memref<f32>, %nb: memref<8xf32>) inputs 2 results [2, 0, 3] arena -1 {
  %s = sched.buffer : memref<8xf32>
  sched.phase {
    sched.compute ins(%b : memref<8xf32>) outs(%o : memref<f32>) {
    ^bb0(%a: tensor<8xf32>):
      %r = tk.sum %a axes [0] : tensor<8xf32> -> tensor<f32>
      tk.yield %r : tensor<f32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%b, %gb, %o : memref<8xf32>, memref<8xf32>, memref<f32>) outs(%s : memref<8xf32>) {
    ^bb0(%a: tensor<8xf32>, %c: tensor<8xf32>, %m: tensor<f32>):
      %t = tk.mul %c, %m : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
      %n = tk.sub %a, %t : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      tk.yield %n : tensor<8xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%s : memref<8xf32>) outs(%nb : memref<8xf32>) {
    ^bb0(%a: tensor<8xf32>):
      tk.yield %a : tensor<8xf32>
    }
    sched.commit %s to %b : memref<8xf32>
  }
}
