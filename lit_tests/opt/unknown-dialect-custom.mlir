// A custom-form op of an unknown dialect.
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: parse error
// CHECK: Operation mystery.op is not registered
// CHECK-NOT: Traceback
func.func @f(%a: tensor<4xf32>) {
  %0 = mystery.op %a : tensor<4xf32>
  func.return
}
