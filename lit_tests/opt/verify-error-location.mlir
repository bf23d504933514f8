// Constraint errors that the custom format finds while parsing name the op's
// file:line:col (with and without --verify-diagnostics).
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s
// RUN: trainkernel-opt %s --verify-diagnostics | filecheck %s --check-prefix=DIAG

// CHECK-NOT: Traceback
// CHECK: error: invalid IR: {{.*}}verify-error-location.mlir:[[# @LINE + 8]]:3
// CHECK-NEXT: %0 = tk.neg %a : tensor<4xi32>
// CHECK-NEXT: ^^^^^
// CHECK-NEXT: tk tensors hold f32, bf16, f16, i1 or i64, got tensor<4xi32>
// CHECK-NOT: Traceback
// DIAG: verify-error-location.mlir:[[# @LINE + 3]]:3
// DIAG: tk tensors hold f32, bf16, f16, i1 or i64, got tensor<4xi32>
func.func @f(%a: tensor<4xi32>) {
  %0 = tk.neg %a : tensor<4xi32>
  func.return
}
