// An op of a dialect trainkernel-opt does not register, in generic form; and
// --allow-unregistered-dialect, which lets it through.
// RUN: not trainkernel-opt %s 2>&1 | filecheck %s
// RUN: trainkernel-opt %s --allow-unregistered-dialect | filecheck %s --check-prefix=ALLOW

// CHECK-NOT: Traceback
// CHECK: error: parse error
// CHECK: Operation arith.addf is not registered
// CHECK-NOT: Traceback
// ALLOW: "arith.addf"(%a, %a) : (f32, f32) -> f32
func.func @f(%a: f32) -> f32 {
  %0 = "arith.addf"(%a, %a) : (f32, f32) -> f32
  func.return %0 : f32
}
