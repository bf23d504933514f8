// Verifier and parser errors of tk.cmp and tk.select.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @cmp_predicate_generic(%a: tensor<4xf32>) {
  // CHECK: tk.cmp: predicate 'olt' is not one of eq, ne, lt, le, gt, ge
  %0 = "tk.cmp"(%a, %a) <{predicate = "olt"}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @cmp_dtypes(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // CHECK: tk.cmp compares two operands of one floating (or i64) element type, got tensor<4xf32> and tensor<4xbf16>
  %0 = tk.cmp lt %a, %b : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xi1>
  func.return
}

// -----

func.func @cmp_bool(%a: tensor<4xi1>) {
  // CHECK: tk.cmp compares two operands of one floating (or i64) element type, got tensor<4xi1> and tensor<4xi1>
  %0 = tk.cmp eq %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @cmp_result(%a: tensor<4xf32>) {
  // CHECK: tk.cmp returns i1 (or a 0/1 float mask), got tensor<4xi64>
  %0 = tk.cmp gt %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi64>
  func.return
}

// -----

func.func @cmp_shape(%a: tensor<4x1xf32>, %b: tensor<3xf32>) {
  // CHECK: tk.cmp: result shape [4] is not the broadcast shape [4, 3]
  %0 = tk.cmp ge %a, %b : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @cmp_broadcast(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // CHECK: tk.cmp: shapes [4] and [3] do not broadcast
  %0 = tk.cmp ge %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @select_cond(%c: tensor<4xi64>, %a: tensor<4xf32>) {
  // CHECK: tk.select: condition tensor<4xi64> must be i1 (or a 0/1 float mask)
  %0 = tk.select %c, %a, %a : (tensor<4xi64>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @select_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // CHECK: tk.select: tensor<4xbf16> must have the result's element type f32
  %0 = tk.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  func.return
}

// -----

func.func @select_integer(%c: tensor<4xi1>, %a: tensor<4xi64>) {
  // CHECK: tk.select: tensor<4xi64> must have the result's element type f32
  %0 = tk.select %c, %a, %a : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xf32>
  func.return
}

// -----

func.func @select_shape(%c: tensor<4x1xi1>, %a: tensor<3xf32>) {
  // CHECK: tk.select: result shape [3] is not the broadcast shape [4, 3]
  %0 = tk.select %c, %a, %a : (tensor<4x1xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @select_broadcast(%c: tensor<2xi1>, %a: tensor<3xf32>) {
  // CHECK: tk.select: shapes [2], [3] and [3] do not broadcast
  %0 = tk.select %c, %a, %a : (tensor<2xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @iota_axis(%a: tensor<4xf32>) {
  // CHECK: tk.iota: axis 1 is not an axis of tensor<4xf32>
  %0 = tk.iota axis 1 : tensor<4xf32>
  func.return
}

// -----

func.func @iota_type(%a: tensor<4xf32>) {
  // CHECK: tk.iota counts in a floating type or i64, got tensor<4xi1>
  %0 = tk.iota axis 0 : tensor<4xi1>
  func.return
}

// -----

func.func @iota_inexact(%a: tensor<4xf32>) {
  // CHECK: tk.iota: 300 values along axis 1 are not all exact in bf16
  %0 = tk.iota axis 1 : tensor<2x300xbf16>
  func.return
}
