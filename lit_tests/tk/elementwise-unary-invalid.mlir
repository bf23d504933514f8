// Verifier errors of tk.neg, tk.relu, tk.exp, tk.log, tk.sqrt, tk.relu_grad, tk.pow.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @neg_integer(%a: tensor<4xi64>) {
  // CHECK: tk.neg computes on floating types only, got tensor<4xi64>
  %0 = tk.neg %a : tensor<4xi64>
  func.return
}

// -----

func.func @relu_bool(%a: tensor<4xi1>) {
  // CHECK: tk.relu computes on floating types only, got tensor<4xi1>
  %0 = tk.relu %a : tensor<4xi1>
  func.return
}

// -----

func.func @exp_integer(%a: tensor<i64>) {
  // CHECK: tk.exp computes on floating types only, got tensor<i64>
  %0 = tk.exp %a : tensor<i64>
  func.return
}

// -----

// The result has the operand's type (generic form, since the custom form
// names one type).
func.func @log_result_type(%a: tensor<4xf32>) {
  // CHECK: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xbf16>
  %0 = "tk.log"(%a) : (tensor<4xf32>) -> tensor<4xbf16>
  func.return
}

// -----

func.func @sqrt_result_shape(%a: tensor<4xf32>) {
  // CHECK: attribute tensor<4xf32> expected from variable 'T', but got tensor<1x4xf32>
  %0 = "tk.sqrt"(%a) : (tensor<4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

func.func @relu_grad_types(%g: tensor<4xbf16>, %y: tensor<4xf32>) {
  // CHECK: attribute tensor<4xbf16> expected from variable 'T', but got tensor<4xf32>
  %0 = "tk.relu_grad"(%g, %y) : (tensor<4xbf16>, tensor<4xf32>) -> tensor<4xbf16>
  func.return
}

// -----

func.func @relu_grad_integer(%g: tensor<4xi64>, %y: tensor<4xi64>) {
  // CHECK: tk.relu_grad computes on floating types only, got tensor<4xi64>
  %0 = tk.relu_grad %g, %y : tensor<4xi64>
  func.return
}

// -----

func.func @pow_integer(%a: tensor<4xi64>) {
  // CHECK: tk.pow computes on floating types only, got tensor<4xi64>
  %0 = tk.pow %a, 2.0 : tensor<4xi64>
  func.return
}

// -----

func.func @pow_result_type(%a: tensor<4xf32>) {
  // CHECK: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xf16>
  %0 = "tk.pow"(%a) <{exponent = 2.0 : f64}> : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----

func.func @pow_exponent_attr(%a: tensor<4xf32>) {
  // CHECK: 2 : i64 should be of base attribute float
  %0 = "tk.pow"(%a) <{exponent = 2 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}
