// An empty file, or one with only comments (like this one), is an empty module.
// RUN: trainkernel-opt %S/Inputs/empty.mlir | filecheck %s
// RUN: trainkernel-opt %S/Inputs/comments-only.mlir | filecheck %s
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt < %S/Inputs/empty.mlir | filecheck %s
// RUN: trainkernel-opt %S/Inputs/empty.mlir --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: trainkernel-opt %S/Inputs/empty.mlir --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %S/Inputs/empty.mlir -p canonicalize,cse,dce | filecheck %s

// CHECK:      builtin.module {
// CHECK-NEXT: }
// GENERIC: "builtin.module"() ({
// GENERIC: }) : () -> ()
