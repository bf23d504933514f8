// tk.neg, tk.relu, tk.exp, tk.log, tk.sqrt, tk.relu_grad, tk.pow: custom and
// generic round trips.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>, %h: tensor<16xbf16>, %s: tensor<f16>) {
  // CHECK-NEXT: %neg = tk.neg %x : tensor<4x8xf32>
  // GENERIC: %neg = "tk.neg"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %neg = tk.neg %x : tensor<4x8xf32>
  // CHECK-NEXT: %relu = tk.relu %h : tensor<16xbf16>
  // GENERIC: %relu = "tk.relu"(%h) : (tensor<16xbf16>) -> tensor<16xbf16>
  %relu = tk.relu %h : tensor<16xbf16>
  // CHECK-NEXT: %exp = tk.exp %s : tensor<f16>
  // GENERIC: %exp = "tk.exp"(%s) : (tensor<f16>) -> tensor<f16>
  %exp = tk.exp %s : tensor<f16>
  // CHECK-NEXT: %log = tk.log %x : tensor<4x8xf32>
  // GENERIC: %log = "tk.log"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %log = tk.log %x : tensor<4x8xf32>
  // CHECK-NEXT: %sqrt = tk.sqrt %x {tag = 1 : i64} : tensor<4x8xf32>
  // GENERIC: %sqrt = "tk.sqrt"(%x) {tag = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sqrt = tk.sqrt %x {tag = 1 : i64} : tensor<4x8xf32>
  func.return
}

// CHECK-LABEL: func.func @relu_backward
func.func @relu_backward(%grad: tensor<4x8xbf16>, %x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // CHECK-NEXT: %out = tk.relu %x : tensor<4x8xbf16>
  %out = tk.relu %x : tensor<4x8xbf16>
  // CHECK-NEXT: %dx = tk.relu_grad %grad, %out : tensor<4x8xbf16>
  // GENERIC: %dx = "tk.relu_grad"(%grad, %out) : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %dx = tk.relu_grad %grad, %out : tensor<4x8xbf16>
  // CHECK-NEXT: func.return %dx : tensor<4x8xbf16>
  func.return %dx : tensor<4x8xbf16>
}

// CHECK-LABEL: func.func @pow
func.func @pow(%x: tensor<4x8xf32>, %s: tensor<bf16>) {
  // CHECK-NEXT: %sq = tk.pow %x, 2.0 : tensor<4x8xf32>
  // GENERIC: %sq = "tk.pow"(%x) <{exponent = 2.000000e+00 : f64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sq = tk.pow %x, 2.0 : tensor<4x8xf32>
  // An integer exponent is read as a float.
  // CHECK-NEXT: %cube = tk.pow %x, 3.0 : tensor<4x8xf32>
  %cube = tk.pow %x, 3 : tensor<4x8xf32>
  // CHECK-NEXT: %rsqrt = tk.pow %x, -0.5 : tensor<4x8xf32>
  // GENERIC: <{exponent = -5.000000e-01 : f64}>
  %rsqrt = tk.pow %x, -0.5 : tensor<4x8xf32>
  // CHECK-NEXT: %third = tk.pow %s, 0.3333333333333333 {tag} : tensor<bf16>
  %third = tk.pow %s, 0.3333333333333333 {tag} : tensor<bf16>
  // CHECK-NEXT: %e = tk.pow %s, 1.0e-05 : tensor<bf16>
  %e = tk.pow %s, 1.0e-5 : tensor<bf16>
  func.return
}
