// A syntax error: a diagnostic with file:line:col and a non-zero exit, no traceback.
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: parse error
// CHECK-NEXT: syntax-error.mlir:[[# @LINE + 6]]:18
// CHECK-NEXT: %0 = tk.add %a %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: {{^ *}}^^
// CHECK-NEXT: Expected ','
// CHECK-NOT: Traceback
func.func @f(%a: tensor<4xf32>) {
  %0 = tk.add %a %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}
