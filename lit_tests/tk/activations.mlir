// tk.tanh, tk.sigmoid, tk.silu, tk.abs, tk.sign, tk.rsqrt, tk.gelu,
// tk.softplus, tk.leaky_relu, tk.elu and their backward ops tk.tanh_grad,
// tk.sigmoid_grad, tk.gelu_grad, tk.softplus_grad, tk.leaky_relu_grad,
// tk.elu_grad: custom and generic round trips.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>, %h: tensor<16xbf16>, %s: tensor<f16>) {
  // CHECK-NEXT: %tanh = tk.tanh %x : tensor<4x8xf32>
  // GENERIC: %tanh = "tk.tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %tanh = tk.tanh %x : tensor<4x8xf32>
  // CHECK-NEXT: %sigmoid = tk.sigmoid %h : tensor<16xbf16>
  // GENERIC: %sigmoid = "tk.sigmoid"(%h) : (tensor<16xbf16>) -> tensor<16xbf16>
  %sigmoid = tk.sigmoid %h : tensor<16xbf16>
  // CHECK-NEXT: %silu = tk.silu %s : tensor<f16>
  // GENERIC: %silu = "tk.silu"(%s) : (tensor<f16>) -> tensor<f16>
  %silu = tk.silu %s : tensor<f16>
  // CHECK-NEXT: %abs = tk.abs %x : tensor<4x8xf32>
  // GENERIC: %abs = "tk.abs"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %abs = tk.abs %x : tensor<4x8xf32>
  // CHECK-NEXT: %sign = tk.sign %h : tensor<16xbf16>
  // GENERIC: %sign = "tk.sign"(%h) : (tensor<16xbf16>) -> tensor<16xbf16>
  %sign = tk.sign %h : tensor<16xbf16>
  // CHECK-NEXT: %rsqrt = tk.rsqrt %x {tag = 1 : i64} : tensor<4x8xf32>
  // GENERIC: %rsqrt = "tk.rsqrt"(%x) {tag = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %rsqrt = tk.rsqrt %x {tag = 1 : i64} : tensor<4x8xf32>
  func.return
}

// CHECK-LABEL: func.func @parametrized
func.func @parametrized(%x: tensor<4x8xf32>, %h: tensor<16xbf16>) {
  // CHECK-NEXT: %gelu = tk.gelu %x : tensor<4x8xf32>
  // GENERIC: %gelu = "tk.gelu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %gelu = tk.gelu %x : tensor<4x8xf32>
  // CHECK-NEXT: %gelu_t = tk.gelu %h tanh : tensor<16xbf16>
  // GENERIC: %gelu_t = "tk.gelu"(%h) <{tanh}> : (tensor<16xbf16>) -> tensor<16xbf16>
  %gelu_t = tk.gelu %h tanh : tensor<16xbf16>
  // CHECK-NEXT: %sp = tk.softplus %x beta 2.0 threshold 1.0e-05 : tensor<4x8xf32>
  // GENERIC: %sp = "tk.softplus"(%x) <{beta = 2.000000e+00 : f64, threshold = 1.000000e-05 : f64}>
  %sp = tk.softplus %x beta 2 threshold 1.0e-5 : tensor<4x8xf32>
  // CHECK-NEXT: %lr = tk.leaky_relu %h negative_slope 0.01 : tensor<16xbf16>
  // GENERIC: %lr = "tk.leaky_relu"(%h) <{negative_slope = 1.000000e-02 : f64}>
  %lr = tk.leaky_relu %h negative_slope 0.01 : tensor<16xbf16>
  // CHECK-NEXT: %elu = tk.elu %x alpha 1.6732632423543772 scale 1.0507009873554805 input_scale 1.0 {tag} : tensor<4x8xf32>
  // GENERIC: %elu = "tk.elu"(%x) <{alpha = 1.6732632423543772 : f64, scale = 1.0507009873554805 : f64, input_scale = 1.000000e+00 : f64}> {tag}
  %elu = tk.elu %x alpha 1.6732632423543772 scale 1.0507009873554805 input_scale 1.0 {tag} : tensor<4x8xf32>
  // Negative and non-finite parameters print as tk.fill prints its value.
  // CHECK-NEXT: %neg = tk.leaky_relu %x negative_slope -0.5 : tensor<4x8xf32>
  %neg = tk.leaky_relu %x negative_slope -0.5 : tensor<4x8xf32>
  // CHECK-NEXT: %inf = tk.softplus %x beta 1.0 threshold inf : tensor<4x8xf32>
  %inf = tk.softplus %x beta 1.0 threshold inf : tensor<4x8xf32>
  func.return
}

// CHECK-LABEL: func.func @backward
func.func @backward(%g: tensor<4x8xf32>, %x: tensor<4x8xf32>, %gh: tensor<16xbf16>, %xh: tensor<16xbf16>) {
  // CHECK-NEXT: %t = tk.tanh_grad %g, %x : tensor<4x8xf32>
  // GENERIC: %t = "tk.tanh_grad"(%g, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = tk.tanh_grad %g, %x : tensor<4x8xf32>
  // CHECK-NEXT: %s = tk.sigmoid_grad %gh, %xh : tensor<16xbf16>
  // GENERIC: %s = "tk.sigmoid_grad"(%gh, %xh) : (tensor<16xbf16>, tensor<16xbf16>) -> tensor<16xbf16>
  %s = tk.sigmoid_grad %gh, %xh : tensor<16xbf16>
  // CHECK-NEXT: %ge = tk.gelu_grad %g, %x : tensor<4x8xf32>
  // GENERIC: %ge = "tk.gelu_grad"(%g, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ge = tk.gelu_grad %g, %x : tensor<4x8xf32>
  // CHECK-NEXT: %gt = tk.gelu_grad %gh, %xh tanh : tensor<16xbf16>
  // GENERIC: %gt = "tk.gelu_grad"(%gh, %xh) <{tanh}>
  %gt = tk.gelu_grad %gh, %xh tanh : tensor<16xbf16>
  // CHECK-NEXT: %sp = tk.softplus_grad %g, %x beta 1.0 threshold 20.0 : tensor<4x8xf32>
  // GENERIC: %sp = "tk.softplus_grad"(%g, %x) <{beta = 1.000000e+00 : f64, threshold = 2.000000e+01 : f64}>
  %sp = tk.softplus_grad %g, %x beta 1.0 threshold 20.0 : tensor<4x8xf32>
  // CHECK-NEXT: %lr = tk.leaky_relu_grad %g, %x negative_slope 0.2 : tensor<4x8xf32>
  // GENERIC: %lr = "tk.leaky_relu_grad"(%g, %x) <{negative_slope = 2.000000e-01 : f64}>
  %lr = tk.leaky_relu_grad %g, %x negative_slope 0.2 : tensor<4x8xf32>
  // CHECK-NEXT: %ei = tk.elu_grad %g, %x alpha 1.0 scale 1.0 input_scale 1.0 : tensor<4x8xf32>
  // GENERIC: %ei = "tk.elu_grad"(%g, %x) <{alpha = 1.000000e+00 : f64, scale = 1.000000e+00 : f64, input_scale = 1.000000e+00 : f64}>
  %ei = tk.elu_grad %g, %x alpha 1.0 scale 1.0 input_scale 1.0 : tensor<4x8xf32>
  // CHECK-NEXT: %eo = tk.elu_grad %g, %x alpha 2.0 scale 1.0 input_scale 0.5 is_result : tensor<4x8xf32>
  // GENERIC: %eo = "tk.elu_grad"(%g, %x) <{alpha = 2.000000e+00 : f64, scale = 1.000000e+00 : f64, input_scale = 5.000000e-01 : f64, is_result}>
  %eo = tk.elu_grad %g, %x alpha 2.0 scale 1.0 input_scale 0.5 is_result : tensor<4x8xf32>
  func.return
}
