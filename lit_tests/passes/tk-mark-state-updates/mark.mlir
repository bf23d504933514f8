// tk-mark-state-updates{state=N}: the last N results are the new values of the
// first N arguments (tk.updates = k), other result attributes kept; state=0
// (the default) marks nothing.
// RUN: trainkernel-opt %s -p 'tk-mark-state-updates{state=2}' | filecheck %s
// RUN: trainkernel-opt %s -p tk-mark-state-updates | filecheck %s --check-prefix=NONE
// RUN: not trainkernel-opt %s -p 'tk-mark-state-updates{state=4}' 2>&1 | filecheck %s --check-prefix=TOOMANY

// CHECK-LABEL: func.func @step(
// CHECK-SAME:    -> (tensor<f32> {tk.name = "[0]"}, tensor<4xf32> {tk.name = "[1][0]", tk.updates = 0 : i64}, tensor<2xf32> {tk.updates = 1 : i64})
// NONE-LABEL:  func.func @step(
// NONE-SAME:     -> (tensor<f32> {tk.name = "[0]"}, tensor<4xf32> {tk.name = "[1][0]"}, tensor<2xf32>)
// TOOMANY: tk-mark-state-updates: state=4 but @step has 3 arguments and 3 results
func.func @step(%w: tensor<4xf32>, %b: tensor<2xf32>, %x: tensor<4xf32>) -> (tensor<f32> {tk.name = "[0]"}, tensor<4xf32> {tk.name = "[1][0]"}, tensor<2xf32>) {
  %l = tk.sum %x axes [0] : tensor<4xf32> -> tensor<f32>
  %nw = tk.sub %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %l, %nw, %b : tensor<f32>, tensor<4xf32>, tensor<2xf32>
}
