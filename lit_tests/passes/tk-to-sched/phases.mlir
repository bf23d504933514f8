// tk-to-sched schedules as soon as possible: independent computes share a
// phase, a compute goes one phase after the latest producer of its inputs,
// and exactly one `sched.barrier grid` separates consecutive phases.
// RUN: trainkernel-opt %s -p tk-to-sched | filecheck %s
// RUN: trainkernel-opt %s -p tk-to-sched | filecheck %s --check-prefix=BARRIERS

// Phase 0: the matmul and the relu (both read only arguments).
// Phase 1: the add (reads both).  Phase 2: the dW matmul.  Phase 3: the update.
// CHECK-LABEL: sched.program @step(%w: memref<4x4xf32>, %x: memref<2x4xf32>, %out0: memref<2x4xf32>) inputs 2 results [2, 0] arena -1 {
// CHECK-NEXT:    %n = sched.buffer : memref<4x4xf32>
// CHECK-NEXT:    %a = sched.buffer : memref<2x4xf32>
// CHECK-NEXT:    %b = sched.buffer : memref<2x4xf32>
// CHECK-NEXT:    %g = sched.buffer : memref<4x4xf32>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%x, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%a : memref<2x4xf32>) {
// CHECK:             tk.matmul
// CHECK:           sched.compute ins(%x : memref<2x4xf32>) outs(%b : memref<2x4xf32>) {
// CHECK:             tk.relu
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%a, %b : memref<2x4xf32>, memref<2x4xf32>) outs(%out0 : memref<2x4xf32>) {
// CHECK:             tk.add
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%out0, %a : memref<2x4xf32>, memref<2x4xf32>) outs(%g : memref<4x4xf32>) {
// CHECK:             tk.matmul %{{.*}}, %{{.*}} transpose_a
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%w, %g : memref<4x4xf32>, memref<4x4xf32>) outs(%n : memref<4x4xf32>) {
// CHECK:             tk.sub
// CHECK:       {{^    [}]$}}
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.commit %n to %w : memref<4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// Five phases, four barriers, never two barriers in a row.
// BARRIERS-LABEL:   sched.program @step
// BARRIERS-COUNT-4: sched.barrier grid
// BARRIERS-NOT:     sched.barrier
// BARRIERS-LABEL:   sched.program @independent
// BARRIERS-NOT:     sched.barrier
func.func @step(%w: tensor<4x4xf32>, %x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32> {tk.updates = 0 : i64}) {
  %a = tk.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %b = tk.relu %x : tensor<2x4xf32>
  %c = tk.add %a, %b : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = tk.matmul %c, %a transpose_a : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %n = tk.sub %w, %g : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %c, %n : tensor<2x4xf32>, tensor<4x4xf32>
}

// Three independent computes: one phase, no barrier at all.
// CHECK-LABEL: sched.program @independent(
// CHECK:         sched.phase {
// CHECK-COUNT-3:   sched.compute
// CHECK-NOT:     sched.barrier
// CHECK-NOT:     sched.phase
func.func @independent(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %a = tk.exp %x : tensor<4xf32>
  %b = tk.neg %y : tensor<4xf32>
  %c = tk.sum %x axes [0] : tensor<4xf32> -> tensor<f32>
  func.return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

