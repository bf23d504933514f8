// -t cuda: the NVVM optimizer level a wgmma kernel asks the build for
// (target.nvvm_o1_tile_width, perf-log step 95). A kernel whose tiles are at
// least 128 wide (here a 1024x1024 @ 1024x4096 product: the cost model picks
// 128 x 128 tiles) carries the line `// build: -Xcicc -O1` after its sm_90a
// line, which `build.device_flags` turns into nvcc's -Xcicc -O1: cicc -O3's
// time on the kernel function's inlined wide gemms is superlinear, and their
// run time is the products'. 64-wide tiles (engine.mlir: the small steps'
// latency regime, where the epilogues' code is the time) print no such line,
// nor does a 128-wide kernel when the threshold is raised (nvvm_o1_width).
// RUN: trainkernel-opt %s -p 'sched-to-tile' -t cuda | filecheck %s
// RUN: trainkernel-opt %s -p 'sched-to-tile' -t 'cuda{nvvm_o1_width=256}' | filecheck %s --check-prefix=RAISED
// RUN: trainkernel-opt %S/../passes/sched-to-tile/engine.mlir -p 'sched-to-tile' -t cuda | filecheck %s --check-prefix=NARROW

// CHECK:       #include "tk/hopper_gemm.cuh"
// CHECK-NEXT:  // requires: sm_90a
// CHECK-NEXT:  // build: -Xcicc -O1
// CHECK:       using TkShape = tk::hopper::TileById<1>::type;

// RAISED:      // requires: sm_90a
// RAISED-NOT:  // build:
// RAISED:      using TkShape = tk::hopper::TileById<1>::type;

// NARROW:      // requires: sm_90a
// NARROW-NOT:  // build:
// NARROW:      using TkShape = tk::hopper::TileById<2>::type;

sched.program @step(%a: memref<1024x1024xbf16>, %b: memref<1024x4096xbf16>, %c: memref<1024x4096xbf16>) inputs 2 results [2] arena 0 {
  sched.phase {
    sched.compute ins(%a, %b : memref<1024x1024xbf16>, memref<1024x4096xbf16>) outs(%c : memref<1024x4096xbf16>) {
    ^bb0(%p: tensor<1024x1024xbf16>, %q: tensor<1024x4096xbf16>):
      %m = tk.matmul %p, %q : (tensor<1024x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<1024x4096xbf16>
      tk.yield %m : tensor<1024x4096xbf16>
    }
  }
}
