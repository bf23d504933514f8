// --split-input-file with a bad chunk: without diagnostics flags it stops there
// (exit 1) and names the line in the whole file; with --verify-diagnostics every
// chunk is checked and the run succeeds.
// RUN: not trainkernel-opt %s --split-input-file > %t.out 2> %t.err
// RUN: filecheck %s < %t.err
// RUN: filecheck %s --check-prefix=OUT < %t.out
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG

// CHECK-NOT: Traceback
// CHECK: error: invalid IR: tk.sum: axes [3] must be distinct and in [0, 1)
// CHECK-NOT: Traceback
// OUT: func.func @good
// OUT-NOT: func.func @good_again
// DIAG: func.func @good
// DIAG: tk.sum: axes [3] must be distinct and in [0, 1)
// DIAG: split-input-file-errors.mlir:[[# @LINE + 17]]:3
// DIAG: tk tensors have static shapes, got tensor<?xf32>
// DIAG: func.func @good_again
func.func @good(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// -----

func.func @bad(%a: tensor<4xf32>) {
  %0 = tk.sum %a axes [3] : tensor<4xf32> -> tensor<f32>
  func.return
}

// -----

func.func @bad_type(%a: tensor<?xf32>) {
  %0 = tk.neg %a : tensor<?xf32>
  func.return
}

// -----

func.func @good_again(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
