// --split-input-file: each chunk is its own module, and the outputs are
// separated by the same marker line as the input.
// RUN: trainkernel-opt %s --split-input-file | filecheck %s
// RUN: trainkernel-opt %s --split-input-file --print-op-generic | trainkernel-opt --split-input-file | filecheck %s
// RUN: trainkernel-opt %s --split-input-file -p canonicalize | filecheck %s --check-prefix=PASS
// Without the flag the separators are comments and the file is one module.
// RUN: trainkernel-opt %s | filecheck %s --check-prefix=WHOLE

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    func.func @first
// CHECK:       }
// CHECK:       {{//}} -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @second
// CHECK:       {{//}} -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:  }
// CHECK-NOT:   builtin.module
// PASS-COUNT-3: builtin.module {
// WHOLE:       builtin.module {
// WHOLE-NEXT:    func.func @first
// WHOLE:         func.func @second
// WHOLE-NOT:   builtin.module
func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tk.neg %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tk.relu %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// An empty chunk is an empty module.
