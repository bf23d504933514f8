// tk-to-sched{sink_sources=true}: a compute without a product that depends on
// nothing but the arguments, and that nothing in phase 1 reads, leaves phase 0
// for the earliest later phase, where that moves no other compute; as soon as
// possible otherwise (the default). Here %c (a relu of the argument %v, read by
// the second product in phase 2), %m -> %s (a mask of %y and its sum, read in
// phase 3) and %q (read by the last compute, in phase 4) would run in phases
// 0, 0, 1 and 0; moved, %c, %m and %q run in phase 1 (%q no further: not in the
// phase before its reader, step 79's first form), %s in phase 2. The products
// and the computes after them never move; the phase count stays.
// RUN: trainkernel-opt %s -p 'tk-to-sched{sink_sources=true}' | filecheck %s
// RUN: trainkernel-opt %s -p tk-to-sched | filecheck %s --check-prefix=ASAP

// CHECK-LABEL: sched.program @step(
// CHECK:         sched.phase {
// CHECK-NEXT:      sched.compute ins(%x, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%a : memref<2x4xf32>) {
// CHECK:             tk.matmul
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%a : memref<2x4xf32>) outs(%b : memref<2x4xf32>) {
// CHECK:           sched.compute ins(%v : memref<4x4xf32>) outs(%c : memref<4x4xf32>) {
// CHECK:           sched.compute ins(%y : memref<2x4xf32>) outs(%m : memref<2x4xf32>) {
// CHECK:           sched.compute ins(%y : memref<2x4xf32>) outs(%q : memref<2x4xf32>) {
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%m : memref<2x4xf32>) outs(%s : memref<f32>) {
// CHECK:           sched.compute ins(%b, %c : memref<2x4xf32>, memref<4x4xf32>) outs(%out0 : memref<2x4xf32>) {
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%out0, %s : memref<2x4xf32>, memref<f32>) outs(%o : memref<2x4xf32>) {
// CHECK-NEXT:      ^bb0
// CHECK-NEXT:        tk.mul
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%o, %q : memref<2x4xf32>, memref<2x4xf32>) outs(%out1 : memref<2x4xf32>) {

// ASAP-LABEL: sched.program @step(
// ASAP:         sched.phase {
// ASAP-NEXT:      sched.compute ins(%x, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%a : memref<2x4xf32>) {
// ASAP:           sched.compute ins(%v : memref<4x4xf32>) outs(%c : memref<4x4xf32>) {
// ASAP:           sched.compute ins(%y : memref<2x4xf32>) outs(%m : memref<2x4xf32>) {
// ASAP:           sched.compute ins(%y : memref<2x4xf32>) outs(%q : memref<2x4xf32>) {
// ASAP:       {{^    [}]$}}
// ASAP-NEXT:    sched.barrier grid
// ASAP-NEXT:    sched.phase {
// ASAP-NEXT:      sched.compute ins(%a : memref<2x4xf32>) outs(%b : memref<2x4xf32>) {
// ASAP:           sched.compute ins(%m : memref<2x4xf32>) outs(%s : memref<f32>) {
func.func @step(%w: tensor<4x4xf32>, %v: tensor<4x4xf32>, %x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %a = tk.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %b = tk.relu %a : tensor<2x4xf32>
  %c = tk.relu %v : tensor<4x4xf32>
  %m = tk.neg %y : tensor<2x4xf32>
  %s = tk.sum %m axes [0, 1] : tensor<2x4xf32> -> tensor<f32>
  %h = tk.matmul %b, %c : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %o = tk.mul %h, %s : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %q = tk.exp %y : tensor<2x4xf32>
  %r = tk.add %o, %q : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %h, %r : tensor<2x4xf32>, tensor<2x4xf32>
}

// A compute that only casts stays where it is (a chain of launches or the step
// loop carries casts; moved, they would be priced every launch): %k, the cast
// of %v read by the second product in phase 2, stays in phase 0 beside %x's.
// CHECK-LABEL: sched.program @casts(
// CHECK:         sched.phase {
// CHECK-NOT:       sched.barrier
// CHECK:           sched.compute ins(%v{{.*}} : memref<4x4xf32>) outs(%k : memref<4x4xbf16>) {
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
func.func @casts(%w: tensor<4x4xbf16>, %v: tensor<4x4xf32>, %x: tensor<2x4xf32>) -> (tensor<2x4xbf16>) {
  %xc = tk.cast %x : tensor<2x4xf32> to tensor<2x4xbf16>
  %a = tk.matmul %xc, %w : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  %b = tk.relu %a : tensor<2x4xbf16>
  %k = tk.cast %v : tensor<4x4xf32> to tensor<4x4xbf16>
  %h = tk.matmul %b, %k : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  func.return %h : tensor<2x4xbf16>
}
