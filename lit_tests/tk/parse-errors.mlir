// Malformed custom forms of tk ops: parse errors with a location.
// RUN: trainkernel-opt %s --split-input-file --parsing-diagnostics | filecheck %s

func.func @fill_not_tensor() {
  // CHECK: tk.fill result must be a tensor type, got f32
  %0 = tk.fill 1.0 : f32
  func.return
}

// -----

func.func @fill_no_value() {
  // CHECK: integer or float literal expected (or inf, -inf, nan)
  %0 = tk.fill : tensor<f32>
  func.return
}

// -----

func.func @fill_exponent_without_dot() {
  // MLIR float literals need a '.': 1e5 lexes as `1` then `e5`.
  // CHECK: Expected ':'
  %0 = tk.fill 1e5 : tensor<f32>
  func.return
}

// -----

func.func @sum_no_axes(%x: tensor<4x8xf32>) {
  // CHECK: Expected 'axes'
  %0 = tk.sum %x : tensor<4x8xf32> -> tensor<f32>
  func.return
}

// -----

func.func @sum_axes_not_ints(%x: tensor<4x8xf32>) {
  // CHECK: Expected integer literal
  %0 = tk.sum %x axes [0.5] : tensor<4x8xf32> -> tensor<8xf32>
  func.return
}

// -----

func.func @transpose_no_perm(%x: tensor<4x8xf32>) {
  // CHECK: Expected 'perm'
  %0 = tk.transpose %x [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @slice_no_steps(%x: tensor<8xf32>) {
  // CHECK: Expected 'steps'
  %0 = tk.slice %x starts [0] : tensor<8xf32> -> tensor<8xf32>
  func.return
}

// -----

func.func @pow_no_exponent(%x: tensor<8xf32>) {
  // CHECK: Expected ','
  %0 = tk.pow %x : tensor<8xf32>
  func.return
}

// -----

func.func @cast_no_to(%x: tensor<8xf32>) {
  // CHECK: Expected 'to'
  %0 = tk.cast %x : tensor<8xf32>, tensor<8xbf16>
  func.return
}

// -----

func.func @operand_type_mismatch(%x: tensor<8xf32>) {
  // CHECK: operand is used with type tensor<8xbf16>, but has been previously used or defined with type tensor<8xf32>
  %0 = tk.neg %x : tensor<8xbf16>
  func.return
}

// -----

func.func @unknown_op(%x: tensor<8xf32>) {
  // CHECK: Operation tk.cosh is not registered
  %0 = tk.cosh %x : tensor<8xf32>
  func.return
}

// -----

func.func @softplus_missing_param(%a: tensor<4xf32>) {
  // CHECK: Expected 'threshold'
  %0 = tk.softplus %a beta 1.0 : tensor<4xf32>
  func.return
}

// -----

func.func @cmp_predicate(%a: tensor<4xf32>) {
  // CHECK: tk.cmp predicate must be one of eq, ne, lt, le, gt, ge, got 'less'
  %0 = tk.cmp less %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}
