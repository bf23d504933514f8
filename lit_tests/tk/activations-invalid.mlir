// Verifier and parser errors of tk.tanh, tk.sigmoid, tk.silu, tk.abs, tk.sign,
// tk.rsqrt, tk.gelu, tk.softplus, tk.leaky_relu, tk.elu, tk.tanh_grad,
// tk.sigmoid_grad, tk.gelu_grad, tk.softplus_grad, tk.leaky_relu_grad,
// tk.elu_grad.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @tanh_integer(%a: tensor<4xi64>) {
  // CHECK: tk.tanh computes on floating types only, got tensor<4xi64>
  %0 = tk.tanh %a : tensor<4xi64>
  func.return
}

// -----

func.func @sigmoid_bool(%a: tensor<4xi1>) {
  // CHECK: tk.sigmoid computes on floating types only, got tensor<4xi1>
  %0 = tk.sigmoid %a : tensor<4xi1>
  func.return
}

// -----

func.func @silu_result_type(%a: tensor<4xf32>) {
  // CHECK: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xbf16>
  %0 = "tk.silu"(%a) : (tensor<4xf32>) -> tensor<4xbf16>
  func.return
}

// -----

func.func @abs_integer(%a: tensor<i64>) {
  // CHECK: tk.abs computes on floating types only, got tensor<i64>
  %0 = tk.abs %a : tensor<i64>
  func.return
}

// -----

func.func @sign_shape(%a: tensor<4xf32>) {
  // CHECK: attribute tensor<4xf32> expected from variable 'T', but got tensor<1x4xf32>
  %0 = "tk.sign"(%a) : (tensor<4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

func.func @rsqrt_integer(%a: tensor<4xi64>) {
  // CHECK: tk.rsqrt computes on floating types only, got tensor<4xi64>
  %0 = tk.rsqrt %a : tensor<4xi64>
  func.return
}

// -----

func.func @gelu_integer(%a: tensor<4xi64>) {
  // CHECK: tk.gelu computes on floating types only, got tensor<4xi64>
  %0 = tk.gelu %a tanh : tensor<4xi64>
  func.return
}

// -----

func.func @softplus_param_attr(%a: tensor<4xf32>) {
  // CHECK: 1 : i64 should be of base attribute float
  %0 = "tk.softplus"(%a) <{beta = 1 : i64, threshold = 20.0 : f64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @leaky_relu_missing_prop(%a: tensor<4xf32>) {
  // CHECK: property 'negative_slope' expected
  %0 = "tk.leaky_relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @elu_integer(%a: tensor<4xi64>) {
  // CHECK: tk.elu computes on floating types only, got tensor<4xi64>
  %0 = tk.elu %a alpha 1.0 scale 1.0 input_scale 1.0 : tensor<4xi64>
  func.return
}

// -----

func.func @tanh_grad_types(%g: tensor<4xbf16>, %y: tensor<4xf32>) {
  // CHECK: attribute tensor<4xbf16> expected from variable 'T', but got tensor<4xf32>
  %0 = "tk.tanh_grad"(%g, %y) : (tensor<4xbf16>, tensor<4xf32>) -> tensor<4xbf16>
  func.return
}

// -----

func.func @sigmoid_grad_integer(%g: tensor<4xi64>, %y: tensor<4xi64>) {
  // CHECK: tk.sigmoid_grad computes on floating types only, got tensor<4xi64>
  %0 = tk.sigmoid_grad %g, %y : tensor<4xi64>
  func.return
}

// -----

func.func @gelu_grad_shapes(%g: tensor<4xf32>, %x: tensor<1x4xf32>) {
  // CHECK: attribute tensor<4xf32> expected from variable 'T', but got tensor<1x4xf32>
  %0 = "tk.gelu_grad"(%g, %x) : (tensor<4xf32>, tensor<1x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @softplus_grad_integer(%g: tensor<4xi64>, %x: tensor<4xi64>) {
  // CHECK: tk.softplus_grad computes on floating types only, got tensor<4xi64>
  %0 = tk.softplus_grad %g, %x beta 1.0 threshold 20.0 : tensor<4xi64>
  func.return
}

// -----

func.func @leaky_relu_grad_operands(%g: tensor<4xf32>) {
  // CHECK: Expected 2 operands, but got 1
  %0 = "tk.leaky_relu_grad"(%g) <{negative_slope = 0.1 : f64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @elu_grad_integer(%g: tensor<4xi64>, %x: tensor<4xi64>) {
  // CHECK: tk.elu_grad computes on floating types only, got tensor<4xi64>
  %0 = tk.elu_grad %g, %x alpha 1.0 scale 1.0 input_scale 1.0 is_result : tensor<4xi64>
  func.return
}
