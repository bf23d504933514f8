// tk-fuse{merge=epilogues}: a pointwise op that reads two groups of its shape
// merges them, so an Adam-style update (each moment and the parameter starting
// from its own state tensor) joins the gradient's gemm epilogue. With
// merge=maps only groups rooted at pointwise ops merge: the update is one
// fused op apart from the gemm's. Without the option the groups stay apart.
// RUN: trainkernel-opt %s -p 'tk-fuse{merge=epilogues}' | filecheck %s
// RUN: trainkernel-opt %s -p 'tk-fuse{merge=maps}' | filecheck %s --check-prefix=MAPS
// RUN: trainkernel-opt %s -p tk-fuse | filecheck %s --check-prefix=PLAIN
// RUN: not trainkernel-opt %s -p 'tk-fuse{merge=yes}' 2>&1 | filecheck %s --check-prefix=BAD
// BAD: tk-fuse: merge must be one of none, maps, epilogues, got 'yes'

// One fused op: the dW matmul, both moments and the parameter, three results.
// CHECK-LABEL: func.func @adam_like(
// CHECK-NEXT:    %v2, %m2, %p2 = tk.fused %h, %d, %v, %m, %p : {{.*}} -> (tensor<64x8xf32>, tensor<64x8xf32>, tensor<64x8xf32>) {
// CHECK-NEXT:    ^bb0(
// CHECK:           tk.matmul
// CHECK:           tk.yield {{.*}} : tensor<64x8xf32>, tensor<64x8xf32>, tensor<64x8xf32>
// CHECK-NEXT:    }
// CHECK-NOT:     tk.fused
// CHECK:         func.return
// MAPS-LABEL: func.func @adam_like(
// The gemm with its epilogue (the cast, the squared gradient) ...
// MAPS:         %g, %gg = tk.fused %h, %d : {{.*}} {
// MAPS:           tk.matmul
// MAPS:         }
// ... then one map: both moments and the parameter.
// MAPS-NEXT:    %v2, %m2, %p2 = tk.fused %v, %gg, %m, %g, %p : {{.*}} -> (tensor<64x8xf32>, tensor<64x8xf32>, tensor<64x8xf32>) {
// MAPS-NOT:       tk.matmul
// MAPS:         }
// MAPS-NOT:     tk.fused
// MAPS:         func.return
// PLAIN-LABEL: func.func @adam_like(
// PLAIN-COUNT-3: tk.fused
func.func @adam_like(%h: tensor<16x64xbf16>, %d: tensor<16x8xbf16>, %m: tensor<64x8xf32>, %v: tensor<64x8xf32>, %p: tensor<64x8xf32>) -> (tensor<64x8xf32>, tensor<64x8xf32>, tensor<64x8xf32>) {
  %b1 = tk.fill 0.9 : tensor<f32>
  %b2 = tk.fill 0.999 : tensor<f32>
  %lr = tk.fill 0.001 : tensor<f32>
  %g16 = tk.matmul %h, %d transpose_a : (tensor<16x64xbf16>, tensor<16x8xbf16>) -> tensor<64x8xbf16>
  %g = tk.cast %g16 : tensor<64x8xbf16> to tensor<64x8xf32>
  %gg = tk.mul %g, %g : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
  %vs = tk.mul %v, %b2 : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
  %v2 = tk.add %vs, %gg : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
  %den = tk.sqrt %v2 : tensor<64x8xf32>
  %ms = tk.mul %m, %b1 : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
  %m2 = tk.add %ms, %g : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
  %q = tk.div %m2, %den : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
  %u = tk.mul %q, %lr : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
  %p2 = tk.sub %p, %u : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
  func.return %m2, %v2, %p2 : tensor<64x8xf32>, tensor<64x8xf32>, tensor<64x8xf32>
}

// Must not merge: the matmul reads a value of the other group (a gemm cannot
// compute its operand in its own epilogue). %s feeds the matmul and is used
// again beside its result: two groups.
// CHECK-LABEL: func.func @operand_in_group(
// CHECK-COUNT-2: tk.fused
// CHECK-NOT:     tk.fused
// CHECK:         func.return
// MAPS-LABEL: func.func @operand_in_group(
// MAPS-COUNT-2: tk.fused
// MAPS-NOT:     tk.fused
// MAPS:         func.return
func.func @operand_in_group(%a: tensor<8x8xbf16>, %b: tensor<8x8xbf16>) -> tensor<8x8xbf16> {
  %s = tk.neg %a : tensor<8x8xbf16>
  %mm = tk.matmul %s, %b : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %r = tk.add %mm, %s : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xbf16>
  func.return %r : tensor<8x8xbf16>
}

// Must not merge two gemms' groups: one root a group.
// CHECK-LABEL: func.func @two_gemms(
// CHECK:         tk.fused
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tk.matmul
// CHECK:         tk.fused
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      tk.matmul
// CHECK-NOT:       tk.matmul
// CHECK:         func.return
func.func @two_gemms(%a: tensor<8x8xbf16>, %b: tensor<8x8xbf16>) -> tensor<8x8xbf16> {
  %x = tk.matmul %a, %b : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %y = tk.matmul %b, %a : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %r = tk.add %x, %y : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xbf16>
  func.return %r : tensor<8x8xbf16>
}
