// sched-to-tile{cols=N}: the wgmma tiles' width forced (target.wgmma_tiles_n;
// the cost model's choice without it, wide.mlir). 32-wide tiles are the tile
// table's narrowest (tk::hopper::TileById<3>: B of an N-contiguous product
// in 32 x 64 boxes with the 64-byte swizzle): online's 64 x 256 products
// then have 16 units at 64 rows, and the kernel's smaller stages take
// 109696 bytes of shared memory (TargetOptions.wgmma_smem_bytes).
// RUN: trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{cols=32}' | filecheck %s
// RUN: trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{cols=32 rows=128}' | filecheck %s --check-prefix=TWO
// RUN: trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{cols=32}' -t cuda | filecheck %s --check-prefix=CUDA
// RUN: not trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{cols=48}' 2>&1 | filecheck %s --check-prefix=BAD

// CHECK:         tile.kernel @online_sgd_bf16({{.*}} config {grid = 24 : i64, threads = 256 : i64, smem = 109696 : i64}
// CHECK-COUNT-5: tile = array<i64: 64, 32, 64>, mma = "mma.bf16"
// CHECK-NOT:     tile = array<i64: {{[0-9]+}}, {{(64|128|256)}}, 64>

// TWO:           config {{{.*}}threads = 384 : i64, smem = 185472 : i64}
// TWO-COUNT-5:   tile = array<i64: 128, 32, 64>, mma = "mma.bf16"

// CUDA:          #define TK_WGMMA_CONSUMERS 1
// CUDA-NEXT:     #include "tk/hopper_gemm.cuh"
// CUDA:          using TkShape = tk::hopper::TileById<3>::type;
// CUDA:          wgmma 64x32x64

// BAD: sched-to-tile: cols must be 0 (the cost model's) or one of 32, 64, 128, 256, got 48
