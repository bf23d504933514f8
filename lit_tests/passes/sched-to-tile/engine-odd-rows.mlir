// sched-to-tile: rows of 1020 bf16 (2040 bytes, not whole 16 bytes) cannot be
// TMA's, so the gemm engine is mma.sync whatever the cost model would say, and
// forcing wgmma is an error.
// RUN: trainkernel-opt %s -p 'sched-to-tile' | filecheck %s
// RUN: not trainkernel-opt %s -p 'sched-to-tile{engine=wgmma}' 2>&1 | filecheck %s --check-prefix=FORCED
// RUN: not trainkernel-opt %s -p 'sched-to-tile{engine=tensor}' 2>&1 | filecheck %s --check-prefix=BAD

// CHECK:       tile.kernel @odd({{.*}}) inputs 2 results [2] arena 0 config {grid = {{[0-9]+}} : i64, threads = 128 : i64
// CHECK-NOT:   engine
// FORCED:      engine=wgmma needs bf16/f16 gemms whose operand rows are whole 16 bytes
// BAD:         sched-to-tile: engine 'tensor' is not auto, mma or wgmma

sched.program @odd(%a: memref<1024x1020xbf16>, %b: memref<1020x1024xbf16>, %c: memref<1024x1024xbf16>) inputs 2 results [2] arena 0 {
  sched.phase {
    sched.compute ins(%a, %b : memref<1024x1020xbf16>, memref<1020x1024xbf16>) outs(%c : memref<1024x1024xbf16>) {
    ^bb0(%p: tensor<1024x1020xbf16>, %q: tensor<1020x1024xbf16>):
      %m = tk.matmul %p, %q : (tensor<1024x1020xbf16>, tensor<1020x1024xbf16>) -> tensor<1024x1024xbf16>
      tk.yield %m : tensor<1024x1024xbf16>
    }
  }
}
