// Without --verify-diagnostics a verifier error exits non-zero with the message
// and the IR around the failing op, that op marked.
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: invalid IR: tk.add: shapes [4, 8] and [7] do not broadcast
// CHECK-NEXT: "builtin.module"() ({
// CHECK:      %r = "tk.add"(%a, %b) : (tensor<4x8xf32>, tensor<7xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^-----
// CHECK-NEXT: | Operation does not verify: tk.add: shapes [4, 8] and [7] do not broadcast
// CHECK-NOT: Traceback
func.func @f(%a: tensor<4x8xf32>, %b: tensor<7xf32>) -> tensor<4x8xf32> {
  %r = tk.add %a, %b : (tensor<4x8xf32>, tensor<7xf32>) -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}
