// tile-resident's options.
// RUN: not trainkernel-opt %s -p 'tile-resident{mode=sometimes}' 2>&1 | filecheck %s
// CHECK: tile-resident: mode must be auto, force or off, got 'sometimes'
builtin.module {}
