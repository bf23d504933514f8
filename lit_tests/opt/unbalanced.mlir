// A region that is never closed.
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: parse error
// CHECK-NEXT: unbalanced.mlir:
// CHECK-NOT: Traceback
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
