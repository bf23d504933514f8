// sched-to-tile: the wgmma tiles' rows (target.wgmma_consumers, perf-log step 97).
// online's step as a grid kernel (resident-exchange.mlir's schedule, without
// tile-resident) has products of 64 x {256, 16} outputs: 128-row tiles leave
// most SMs idle, so the cost model takes 64-row tiles (one consumer warpgroup:
// twice the units, each loading half the A rows), and with them the 256-thread
// block (a producer warpgroup and one consumer) and the smaller pipeline.
// The width is pinned (cols=64; its own choice: wgmma-cols.mlir).
// rows=128 forces the two-consumer tiles; engine.mlir's 1024 x 1024 products
// keep 128 rows under the cost model (its units already fill the SMs).
// RUN: trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{cols=64}' | filecheck %s
// RUN: trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{rows=64 cols=64}' | filecheck %s
// RUN: trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{rows=128 cols=64}' | filecheck %s --check-prefix=TWO
// RUN: trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{cols=64}' -t cuda | filecheck %s --check-prefix=CUDA
// RUN: trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{rows=128 cols=64}' -t cuda | filecheck %s --check-prefix=CUDA-TWO
// RUN: not trainkernel-opt %S/../../cuda/resident-exchange.mlir -p 'sched-to-tile{rows=32 cols=64}' 2>&1 | filecheck %s --check-prefix=BAD

// CHECK:       tile.kernel @online_sgd_bf16({{.*}} config {grid = 16 : i64, threads = 256 : i64, smem = 142464 : i64}
// CHECK-COUNT-5: tile = array<i64: 64, 64, 64>, mma = "mma.bf16"
// CHECK-NOT:   tile = array<i64: 128

// TWO:         tile.kernel @online_sgd_bf16({{.*}} config {grid = 12 : i64, threads = 384 : i64, smem = 218240 : i64}
// TWO-COUNT-5: tile = array<i64: 128, 64, 64>, mma = "mma.bf16"
// TWO-NOT:     tile = array<i64: 64,

// The printer tells the device library the tile height before including it
// (tk::hopper::kConsumers); two consumers are the library's default.
// CUDA:        #include "tk/tk.cuh"
// CUDA-NEXT:   #define TK_WGMMA_CONSUMERS 1
// CUDA-NEXT:   #include "tk/hopper_gemm.cuh"
// CUDA:        grid 16, 256 threads
// CUDA:        static constexpr int kThreads = 256;

// CUDA-TWO-NOT: TK_WGMMA_CONSUMERS
// CUDA-TWO:     #include "tk/hopper_gemm.cuh"
// CUDA-TWO:     static constexpr int kThreads = 384;

// BAD: sched-to-tile: rows must be 0 (the cost model's), 64 or 128, got 32
