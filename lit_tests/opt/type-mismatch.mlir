// A value used at a type other than its definition's.
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: parse error
// CHECK-NEXT: type-mismatch.mlir:[[# @LINE + 4]]:15
// CHECK: operand is used with type tensor<4xbf16>, but has been previously used or defined with type tensor<4xf32>
// CHECK-NOT: Traceback
func.func @f(%a: tensor<4xf32>) {
  %0 = tk.neg %a : tensor<4xbf16>
  func.return
}
