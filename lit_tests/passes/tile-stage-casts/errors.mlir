// tile-stage-casts' options: a mode it does not know, a target it does not know.
// RUN: not trainkernel-opt %s -p 'tile-stage-casts{mode=sometimes}' 2>&1 | filecheck %s
// CHECK: tile-stage-casts: mode must be target, on or off, got 'sometimes'
// RUN: not trainkernel-opt %s -p 'tile-stage-casts{target=nowhere}' 2>&1 | filecheck %s --check-prefix=TARGET
// TARGET: tile-stage-casts: unknown target 'nowhere'
builtin.module {}
