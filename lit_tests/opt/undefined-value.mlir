// A use of a value nobody defines.
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: parse error
// CHECK: values used but not defined: [%b]
// CHECK-NOT: Traceback
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tk.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
