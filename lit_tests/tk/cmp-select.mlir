// tk.cmp (every predicate; float or i64 operands; i1 or 0/1 float result),
// tk.select (i1 or float condition; float, i1 or i64 values) and tk.iota:
// custom and generic round trips.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @cmp
func.func @cmp(%x: tensor<4x8xf32>, %y: tensor<8xf32>, %s: tensor<f32>, %h: tensor<4xbf16>) {
  // CHECK-NEXT: %eq = tk.cmp eq %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // GENERIC: %eq = "tk.cmp"(%x, %y) <{predicate = "eq"}> : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %eq = tk.cmp eq %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK-NEXT: %ne = tk.cmp ne %s, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %ne = tk.cmp ne %s, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  // CHECK-NEXT: %lt = tk.cmp lt %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  %lt = tk.cmp lt %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  // CHECK-NEXT: %le = tk.cmp le %h, %h : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xi1>
  %le = tk.cmp le %h, %h : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xi1>
  // CHECK-NEXT: %gt = tk.cmp gt %x, %x {tag} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  // GENERIC: %gt = "tk.cmp"(%x, %x) <{predicate = "gt"}> {tag}
  %gt = tk.cmp gt %x, %x {tag} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  // A 0/1 float mask (what tk-legalize-masks makes).
  // CHECK-NEXT: %ge = tk.cmp ge %y, %s : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %ge = tk.cmp ge %y, %s : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return
}

// CHECK-LABEL: func.func @select
func.func @select(%m: tensor<4x8xi1>, %x: tensor<4x8xf32>, %s: tensor<f32>, %fm: tensor<8xf32>, %b: tensor<i1>) {
  // CHECK-NEXT: %a = tk.select %m, %x, %s : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // GENERIC: %a = "tk.select"(%m, %x, %s) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %a = tk.select %m, %x, %s : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // A float condition; broadcast of the condition.
  // CHECK-NEXT: %f = tk.select %fm, %s, %x : (tensor<8xf32>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %f = tk.select %fm, %s, %x : (tensor<8xf32>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // Logical ops on masks: a select of i1 values.
  // CHECK-NEXT: %and = tk.select %m, %m, %b : (tensor<4x8xi1>, tensor<4x8xi1>, tensor<i1>) -> tensor<4x8xi1>
  %and = tk.select %m, %m, %b : (tensor<4x8xi1>, tensor<4x8xi1>, tensor<i1>) -> tensor<4x8xi1>
  func.return
}

// CHECK-LABEL: func.func @labels
func.func @labels(%t: tensor<8x1xi64>, %x: tensor<8x10xf32>, %zero: tensor<f32>) {
  // CHECK-NEXT: %c = tk.iota axis 1 : tensor<1x10xi64>
  // GENERIC: %c = "tk.iota"() <{axis = 1 : i64}> : () -> tensor<1x10xi64>
  %c = tk.iota axis 1 : tensor<1x10xi64>
  // CHECK-NEXT: %hot = tk.cmp eq %t, %c : (tensor<8x1xi64>, tensor<1x10xi64>) -> tensor<8x10xi1>
  %hot = tk.cmp eq %t, %c : (tensor<8x1xi64>, tensor<1x10xi64>) -> tensor<8x10xi1>
  // CHECK-NEXT: %g = tk.select %hot, %x, %zero : (tensor<8x10xi1>, tensor<8x10xf32>, tensor<f32>) -> tensor<8x10xf32>
  %g = tk.select %hot, %x, %zero : (tensor<8x10xi1>, tensor<8x10xf32>, tensor<f32>) -> tensor<8x10xf32>
  // CHECK-NEXT: %w = tk.select %hot, %t, %c {tag} : (tensor<8x10xi1>, tensor<8x1xi64>, tensor<1x10xi64>) -> tensor<8x10xi64>
  %w = tk.select %hot, %t, %c {tag} : (tensor<8x10xi1>, tensor<8x1xi64>, tensor<1x10xi64>) -> tensor<8x10xi64>
  // CHECK-NEXT: %f = tk.iota axis 0 : tensor<4x3xbf16>
  %f = tk.iota axis 0 : tensor<4x3xbf16>
  func.return
}
