// Unknown passes, unknown pass options, malformed pipelines and unknown targets.
// RUN: not trainkernel-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not trainkernel-opt %s -p canonicalize,no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not trainkernel-opt %s -p "canonicalize{no-such-option=1}" 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not trainkernel-opt %s -p "canonicalize{" 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not trainkernel-opt %s -p "cse,,dce" 2>&1 | filecheck %s --check-prefix=SYNTAX2
// RUN: not trainkernel-opt %s -t no-such-target 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not trainkernel-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG

// PASS-NOT: Traceback
// PASS: error: invalid pass pipeline or target
// PASS-NEXT: Unrecognized passes: ['no-such-pass']
// PASS-NEXT: available passes: {{.*}}canonicalize, cse, dce
// PASS-NOT: Traceback

// OPTION-NOT: Traceback
// OPTION: error: invalid pass pipeline or target
// OPTION-NEXT: Provided arguments ["no_such_option"] not found in expected arguments
// OPTION-NOT: Traceback

// SYNTAX-NOT: Traceback
// SYNTAX: error: invalid pass pipeline or target
// SYNTAX: canonicalize{
// SYNTAX: Expected argument name here
// SYNTAX-NOT: Traceback

// SYNTAX2-NOT: Traceback
// SYNTAX2: error: invalid pass pipeline or target
// SYNTAX2-NOT: Traceback

// TARGET-NOT: Traceback
// TARGET: trainkernel-opt: error: argument -t/--target: invalid choice: 'no-such-target' (choose from mlir, cuda)
// TARGET-NOT: Traceback

// FLAG-NOT: Traceback
// FLAG: trainkernel-opt: error: unrecognized arguments: --no-such-flag
// FLAG-NOT: Traceback

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
