// tk.matmul and tk.addmm verifier errors.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @contraction(%a: tensor<16x32xf32>, %b: tensor<16x64xf32>) {
  // CHECK: tk.matmul: contraction sizes differ (32 vs 16)
  %0 = tk.matmul %a, %b : (tensor<16x32xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  func.return
}

// -----

// transpose_b reads b as [n, k]: a [16, 32] times b [32, 64] stored untransposed is wrong.
func.func @contraction_transpose_b(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>) {
  // CHECK: tk.matmul: contraction sizes differ (32 vs 64)
  %0 = tk.matmul %a, %b transpose_b : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x32xf32>
  func.return
}

// -----

func.func @contraction_transpose_a(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>) {
  // CHECK: tk.matmul: contraction sizes differ (16 vs 32)
  %0 = tk.matmul %a, %b transpose_a : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  func.return
}

// -----

func.func @result_shape(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>) {
  // CHECK: tk.matmul: result shape [64, 16] should be [16, 64]
  %0 = tk.matmul %a, %b : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<64x16xf32>
  func.return
}

// -----

func.func @result_shape_transposed(%a: tensor<32x16xf32>, %b: tensor<64x32xf32>) {
  // CHECK: tk.matmul: result shape [32, 32] should be [16, 64]
  %0 = tk.matmul %a, %b transpose_a transpose_b : (tensor<32x16xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
  func.return
}

// -----

func.func @rank(%a: tensor<2x16x32xf32>, %b: tensor<32x64xf32>) {
  // CHECK: tk.matmul takes and returns rank-2 tensors, got [2, 16, 32] x [32, 64] -> [2, 16, 64]
  %0 = tk.matmul %a, %b : (tensor<2x16x32xf32>, tensor<32x64xf32>) -> tensor<2x16x64xf32>
  func.return
}

// -----

func.func @vector(%a: tensor<32xf32>, %b: tensor<32x64xf32>) {
  // CHECK: tk.matmul takes and returns rank-2 tensors, got [32] x [32, 64] -> [64]
  %0 = tk.matmul %a, %b : (tensor<32xf32>, tensor<32x64xf32>) -> tensor<64xf32>
  func.return
}

// -----

// Both operands and the result share one element type (accumulation is f32 inside).
func.func @mixed_types(%a: tensor<16x32xbf16>, %b: tensor<32x64xbf16>) {
  // CHECK: tk.matmul needs one floating element type for both operands and the result, got tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xf32>
  %0 = tk.matmul %a, %b : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xf32>
  func.return
}

// -----

func.func @integer(%a: tensor<16x32xi64>, %b: tensor<32x64xi64>) {
  // CHECK: tk.matmul needs one floating element type for both operands and the result, got tensor<16x32xi64>, tensor<32x64xi64> -> tensor<16x64xi64>
  %0 = tk.matmul %a, %b : (tensor<16x32xi64>, tensor<32x64xi64>) -> tensor<16x64xi64>
  func.return
}

// -----

func.func @addmm_bias_shape(%bias: tensor<16xf32>, %a: tensor<16x32xf32>, %b: tensor<32x64xf32>) {
  // CHECK: tk.addmm: bias shape [16] does not broadcast to [16, 64]
  %0 = tk.addmm %bias, %a, %b : (tensor<16xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return
}

// -----

// The bias broadcasts *to* [m, n]; it may not widen the result.
func.func @addmm_bias_rank(%bias: tensor<2x16x64xf32>, %a: tensor<16x32xf32>, %b: tensor<32x64xf32>) {
  // CHECK: tk.addmm: bias shape [2, 16, 64] does not broadcast to [16, 64]
  %0 = tk.addmm %bias, %a, %b : (tensor<2x16x64xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return
}

// -----

func.func @addmm_bias_type(%bias: tensor<64xbf16>, %a: tensor<16x32xf32>, %b: tensor<32x64xf32>) {
  // CHECK: tk.addmm: bias tensor<64xbf16> must have the result's element type
  %0 = tk.addmm %bias, %a, %b : (tensor<64xbf16>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return
}

// -----

func.func @addmm_contraction(%bias: tensor<64xf32>, %a: tensor<16x32xf32>, %b: tensor<31x64xf32>) {
  // CHECK: tk.addmm: contraction sizes differ (32 vs 31)
  %0 = tk.addmm %bias, %a, %b : (tensor<64xf32>, tensor<16x32xf32>, tensor<31x64xf32>) -> tensor<16x64xf32>
  func.return
}

// -----

func.func @addmm_result(%bias: tensor<64xf32>, %a: tensor<16x32xf32>, %b: tensor<32x64xf32>) {
  // CHECK: tk.addmm: result shape [16, 32] should be [16, 64]
  %0 = tk.addmm %bias, %a, %b : (tensor<64xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x32xf32>
  func.return
}

// -----

// addmm has no transpose flags.
func.func @addmm_transpose(%bias: tensor<64xf32>, %a: tensor<16x32xf32>, %b: tensor<64x32xf32>) {
  // CHECK: property 'transpose_b' is not defined by the operation 'tk.addmm'
  %0 = "tk.addmm"(%bias, %a, %b) <{transpose_b}> : (tensor<64xf32>, tensor<16x32xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  func.return
}
