// canonicalize: activations, comparisons and selects of constants fold (with the
// interpreter's own value); select with equal operands or a constant condition
// picks its operand.
// RUN: trainkernel-opt %s -p canonicalize | filecheck %s

// CHECK-LABEL: func.func @fold
// CHECK-DAG:     %[[T:.*]] = tk.fill 0.7615941762924194 : tensor<4xf32>
// CHECK-DAG:     %[[G:.*]] = tk.fill 0.841344{{[0-9]*}} : tensor<4xf32>
// CHECK-DAG:     %[[M:.*]] = tk.fill 1.0 : tensor<4xi1>
// CHECK-DAG:     %[[S:.*]] = tk.fill 2.0 : tensor<4xf32>
// CHECK:         func.return %[[T]], %[[G]], %[[M]], %[[S]]
func.func @fold() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>) {
  %one = tk.fill 1.0 : tensor<4xf32>
  %two = tk.fill 2.0 : tensor<4xf32>
  %t = tk.tanh %one : tensor<4xf32>
  %g = tk.gelu %one : tensor<4xf32>
  %m = tk.cmp lt %one, %two : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %s = tk.select %m, %two, %one : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %t, %g, %m, %s : tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>
}

// CHECK-LABEL: func.func @select
// CHECK-NEXT:    %zero = tk.fill 0.0 : tensor<f32>
// CHECK-NEXT:    %b = tk.select %m, %x, %zero : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %x, %x, %y, %b
func.func @select(%m: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %same = tk.select %m, %x, %x : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %true = tk.fill 1.0 : tensor<i1>
  %false = tk.fill 0.0 : tensor<4xf32>
  %a = tk.select %true, %x, %y : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = tk.select %false, %x, %y : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // A broadcast scalar is not the result's type: kept.
  %zero = tk.fill 0.0 : tensor<f32>
  %b = tk.select %m, %x, %zero : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %same, %a, %c, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
