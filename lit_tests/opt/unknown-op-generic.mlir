// An op the tk dialect does not have, in generic form.
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: parse error
// CHECK-NEXT: unknown-op-generic.mlir:[[# @LINE + 5]]:
// CHECK: Operation tk.cosh is not registered
// CHECK-NOT: Traceback

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "tk.cosh"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
