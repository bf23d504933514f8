// Verifier errors of the broadcasting binary ops (tk.add, tk.sub, tk.mul,
// tk.div, tk.maximum share one verifier; each op is exercised).
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @no_broadcast(%a: tensor<4x8xf32>, %b: tensor<7xf32>) {
  // CHECK: tk.add: shapes [4, 8] and [7] do not broadcast
  %0 = tk.add %a, %b : (tensor<4x8xf32>, tensor<7xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @no_broadcast_inner(%a: tensor<4x8xf32>, %b: tensor<3x8xf32>) {
  // CHECK: tk.maximum: shapes [4, 8] and [3, 8] do not broadcast
  %0 = tk.maximum %a, %b : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @wrong_result_shape(%a: tensor<4x1xf32>, %b: tensor<8xf32>) {
  // CHECK: tk.sub: result shape [4, 1] is not the broadcast shape [4, 8]
  %0 = tk.sub %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

func.func @result_rank(%a: tensor<8xf32>, %b: tensor<8xf32>) {
  // CHECK: tk.mul: result shape [1, 8] is not the broadcast shape [8]
  %0 = tk.mul %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<1x8xf32>
  func.return
}

// -----

// Tensors of rank >= 1 must have the result's element type: no implicit promotion.
func.func @mixed_tensors(%a: tensor<4xbf16>, %b: tensor<4xf32>) {
  // CHECK: tk.div: operand tensor<4xf32> must have the result's element type bf16 (only rank-0 scalars may differ)
  %0 = tk.div %a, %b : (tensor<4xbf16>, tensor<4xf32>) -> tensor<4xbf16>
  func.return
}

// -----

func.func @result_type(%a: tensor<4xbf16>, %b: tensor<4xbf16>) {
  // CHECK: tk.add: operand tensor<4xbf16> must have the result's element type f32 (only rank-0 scalars may differ)
  %0 = tk.add %a, %b : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xf32>
  func.return
}

// -----

// The rank-0 exemption is for floating scalars only.
func.func @integer_scalar(%a: tensor<4xf32>, %s: tensor<i64>) {
  // CHECK: tk.mul: operand tensor<i64> is not floating point
  %0 = tk.mul %a, %s : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  func.return
}

// -----

func.func @integer_result(%a: tensor<4xi64>, %b: tensor<4xi64>) {
  // CHECK: tk.sub computes on floating types only, got tensor<4xi64>
  %0 = tk.sub %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return
}

// -----

func.func @bool_result(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  // CHECK: tk.maximum computes on floating types only, got tensor<4xi1>
  %0 = tk.maximum %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @f64(%a: tensor<4xf64>, %b: tensor<4xf64>) {
  // CHECK: tk tensors hold f32, bf16, f16, i1 or i64, got tensor<4xf64>
  %0 = tk.div %a, %b : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return
}

// -----

func.func @operand_count(%a: tensor<4xf32>) {
  // CHECK: Expected 2 operands, but got 1
  %0 = "tk.add"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}
