// A nonexistent input file.
// RUN: not trainkernel-opt %t.does-not-exist.mlir 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: No such file or directory: {{.*}}does-not-exist.mlir
// CHECK-NOT: Traceback
