// --print-op-generic prints every op, tk's included, in the generic form, which
// parses back to the same custom form.
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt --print-op-generic | filecheck %s --check-prefix=GENERIC

// GENERIC: "builtin.module"() ({
// GENERIC-NEXT: "func.func"() <{sym_name = "step", function_type = (tensor<4x8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>}> ({
// GENERIC-NEXT: ^bb0(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %lr: tensor<f32>):
// GENERIC-NEXT: %y = "tk.mul"(%x, %w) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// GENERIC-NEXT: %g = "tk.sum"(%y) <{axes = array<i64: 0>}> : (tensor<4x8xf32>) -> tensor<8xf32>
// GENERIC-NEXT: %s = "tk.mul"(%g, %lr) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
// GENERIC-NEXT: %n = "tk.sub"(%w, %s) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// GENERIC-NEXT: "func.return"(%n) : (tensor<8xf32>) -> ()
// GENERIC-NEXT: }) : () -> ()
// GENERIC-NEXT: }) : () -> ()

// CHECK:      func.func @step(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
// CHECK-NEXT:   %y = tk.mul %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:   %g = tk.sum %y axes [0] : tensor<4x8xf32> -> tensor<8xf32>
// CHECK-NEXT:   %s = tk.mul %g, %lr : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
// CHECK-NEXT:   %n = tk.sub %w, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:   func.return %n : tensor<8xf32>
func.func @step(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
  %y = tk.mul %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %g = tk.sum %y axes [0] : tensor<4x8xf32> -> tensor<8xf32>
  %s = tk.mul %g, %lr : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %n = tk.sub %w, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %n : tensor<8xf32>
}
