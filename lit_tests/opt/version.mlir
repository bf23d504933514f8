// RUN: trainkernel-opt --version | filecheck %s
// RUN: trainkernel-opt --help | filecheck %s --check-prefix=HELP
// CHECK: trainkernel-opt (xdsl 0.75.0)
// HELP: usage: trainkernel-opt
// HELP: --split-input-file
// HELP: --print-op-generic
