// tile-column-partials{full_sums=on} (target.full_sum_partials): a full sum
// (a mean loss: tk.sum axes [0, 1]) of a wgmma gemm's rank-2 output, stored in
// an earlier phase, reads the gemm's 16-row column partials and sums all of
// them, where the one block that sums it would load more than one batch a
// thread (target.full_reduce_loads x threads: 16 x 384 = 6144 elements).
// small at 400 rows (widths 32-48-24), 4 blocks, wgmma: the loss sums the
// squared errors (400 x 24 = 9600 f32) that the second product's epilogue
// stored only for it; with the switch the epilogue sums their 25 runs of 16
// rows into P (25 x 24 f32, appended to the arena), stores the squared errors
// no more, and the loss sums P's 600 floats. The bias gradients' column sums
// (outputs under the 12 MB threshold) stay as they are.
// RUN: trainkernel-opt %S/Inputs/small-400.mlir -p 'sched-to-tile{grid=4 engine=wgmma},tile-column-partials{full_sums=on}' | filecheck %s
// RUN: trainkernel-opt %S/Inputs/small-400.mlir -p 'sched-to-tile{grid=4 engine=wgmma},tile-column-partials{full_sums=off}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %S/Inputs/small-400.mlir -p 'sched-to-tile{grid=4 engine=wgmma},tile-column-partials' | filecheck %s --check-prefix=CHECK
// RUN: not trainkernel-opt %S/Inputs/small-400.mlir -p 'sched-to-tile{grid=4 engine=wgmma},tile-column-partials{full_sums=maybe}' 2>&1 | filecheck %s --check-prefix=ERR

// CHECK:      tile.kernel @small_sgd_bf16({{.*}}) inputs 6 results [6, 7, 8, 9, 10, 0, 1, 2, 3] arena 139360 config
// CHECK:      [[Y:%[0-9]+]] = sched.buffer offset 0 : memref<400x24xf32>
// CHECK-NOT:  sched.buffer offset {{[0-9]+}} : memref<400x24xf32>
// CHECK:      [[P:%[0-9]+]] = sched.buffer offset 136960 : memref<25x24xf32>
// CHECK:      tile.gemm ins({{.*}}, [[Y]] : {{.*}}) outs([[DY:%[0-9]+]], [[P]] : memref<400x24xbf16>, memref<25x24xf32>)
// CHECK:        [[SQ:%[0-9]+]] = tk.mul [[D:%[0-9]+]], [[D]] : (tensor<400x24xf32>, tensor<400x24xf32>) -> tensor<400x24xf32>
// CHECK:        [[CP:%[0-9]+]] = tk.column_partials [[SQ]] rows 16 : tensor<400x24xf32> -> tensor<25x24xf32>
// CHECK-NEXT:   tk.yield {{%[0-9]+}}, [[CP]] : tensor<400x24xbf16>, tensor<25x24xf32>
// CHECK:      tile.sync grid
// CHECK-NEXT: tile.reduce ins([[P]] : memref<25x24xf32>) outs(%out0 : memref<f32>)
// CHECK:        tk.sum {{%[0-9]+}} axes [0, 1] : tensor<25x24xf32> -> tensor<f32>
// CHECK:      tk.sum {{%[0-9]+}} axes [0] : tensor<400x24xbf16> -> tensor<24xbf16>
// CHECK:      tk.sum {{%[0-9]+}} axes [0] : tensor<400x48xbf16> -> tensor<48xbf16>

// OFF-NOT:    tk.column_partials
// OFF:        tile.reduce ins({{%[0-9]+}} : memref<400x24xf32>) outs(%out0 : memref<f32>)
// OFF:          tk.sum {{%[0-9]+}} axes [0, 1] : tensor<400x24xf32> -> tensor<f32>

// ERR: tile-column-partials: full_sums must be target, on or off, got 'maybe'
