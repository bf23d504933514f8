// tile-resident's options.
// RUN: not trainkernel-opt %s -p 'tile-resident{mode=sometimes}' 2>&1 | filecheck %s
// CHECK: tile-resident: mode must be auto, force or off, got 'sometimes'
// RUN: not trainkernel-opt %s -p 'tile-resident{threads=100}' 2>&1 | filecheck %s --check-prefix=THREADS
// THREADS: tile-resident: threads must be 0 (the pass decides) or a multiple of 32 in [32, 512], got 100
// RUN: not trainkernel-opt %s -p 'tile-resident{threads=1024}' 2>&1 | filecheck %s --check-prefix=TOOMANY
// TOOMANY: got 1024
builtin.module {}
