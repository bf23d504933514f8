// tk-to-sched diagnostics.
// RUN: trainkernel-opt %s -p tk-to-sched --split-input-file --verify-diagnostics | filecheck %s

// Ops outside the core set must be decomposed first.
// CHECK: tk-to-sched: run tk-decompose first (tk.addmm is not in the core set)
func.func @f(%b: tensor<4xf32>, %x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %r = tk.addmm %b, %x, %w : (tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: tk-to-sched: run tk-decompose first (tk.mean is not in the core set)
func.func @f(%x: tensor<2x3xf32>) -> tensor<f32> {
  %r = tk.mean %x axes [0, 1] : tensor<2x3xf32> -> tensor<f32>
  func.return %r : tensor<f32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// tk.updates names an argument.
// CHECK: result 0: tk.updates = 5 is not an argument index
func.func @f(%w: tensor<4xf32>) -> (tensor<4xf32> {tk.updates = 5 : i64}) {
  %n = tk.neg %w : tensor<4xf32>
  func.return %n : tensor<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// The new value has the parameter's type.
// CHECK: result 0 updates argument 0 but has type tensor<4xbf16>, not tensor<4xf32>
func.func @f(%w: tensor<4xf32>) -> (tensor<4xbf16> {tk.updates = 0 : i64}) {
  %n = tk.cast %w : tensor<4xf32> to tensor<4xbf16>
  func.return %n : tensor<4xbf16>
}
