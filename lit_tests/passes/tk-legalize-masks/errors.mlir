// tk-legalize-masks refuses an op it does not know reading an i1 value, naming it.
// RUN: not trainkernel-opt %s -p tk-legalize-masks 2>&1 | filecheck %s

// CHECK: tk-legalize-masks: tk.fused reads or writes an i1 or i64 value
func.func @bad(%m: tensor<4xi1>) -> tensor<4xi1> {
  %r = tk.fused %m : (tensor<4xi1>) -> tensor<4xi1> {
  ^bb0(%a: tensor<4xi1>):
    tk.yield %a : tensor<4xi1>
  }
  func.return %r : tensor<4xi1>
}
