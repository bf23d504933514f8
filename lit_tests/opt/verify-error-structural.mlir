// A structural verifier error (a region without its terminator) also marks the op.
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: invalid IR: Operation tk.neg terminates block in single-block region but is not a terminator
// CHECK:      %n = "tk.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^-----
// CHECK-NOT: Traceback
func.func @f(%a: tensor<4xf32>) {
  %0 = tk.fused %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %n = tk.neg %x : tensor<4xf32>
  }
  func.return
}
