// -o writes the result to a file (and nothing to stdout); an unwritable path is
// a diagnostic.
// RUN: rm -f %t.out.mlir
// RUN: trainkernel-opt %s -o %t.out.mlir > %t.stdout
// RUN: %PYTHON -c "import os, sys; sys.exit(os.path.getsize(sys.argv[1]))" %t.stdout
// RUN: filecheck %s < %t.out.mlir
// RUN: trainkernel-opt %s --print-op-generic -o %t.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC < %t.generic.mlir
// RUN: trainkernel-opt %t.generic.mlir | filecheck %s
// RUN: not trainkernel-opt %s -o %t.no-such-dir/out.mlir 2>&1 | filecheck %s --check-prefix=BADPATH

// CHECK: func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: %0 = tk.neg %a : tensor<4xf32>
// GENERIC: %0 = "tk.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// BADPATH-NOT: Traceback
// BADPATH: error: No such file or directory: {{.*}}no-such-dir/out.mlir
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tk.neg %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
