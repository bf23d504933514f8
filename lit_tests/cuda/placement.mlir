// The placement that cat, stack and the backward of slice/select/split lower to
// (aten_to_tk._place: g [4x3] at columns 2..4 of [4x8]): a one-hot select folded
// by a max (NaN-propagating, exact), then the covered columns selected. What it
// costs today, and must keep doing until a placing op replaces it: the selection
// [4x3x8] is stored by a map before the max reads it (tk-fuse does not pull a
// producer into a reduction), the covered mask is a column max of its own.
// RUN: trainkernel-opt %s -p 'tk-legalize-masks,canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile' | filecheck %s
// RUN: trainkernel-opt %s -p 'tk-legalize-masks,canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile' -t cuda | filecheck %s --check-prefix=CUDA

// CHECK:       tile.map ins(%hot, %0 : memref<3x8xf32>, memref<4x3x1xf32>) outs(%picked : memref<4x3x8xf32>)
// CHECK:         tk.select
// CHECK:       tile.reduce ins(%ones : memref<3x8xf32>) outs(%covered : memref<8xf32>)
// CHECK:         tk.max %{{.*}} axes [0]
// CHECK:         tk.cmp gt
// CHECK:       tile.sync grid
// CHECK:       tile.reduce ins(%picked, %covered : memref<4x3x8xf32>, memref<8xf32>) outs(%out0 : memref<4x8xf32>)
// CHECK:         tk.max %{{.*}} axes [1]
// CHECK-NEXT:    tk.select
// CHECK-NOT:   tile.

// CUDA:        tile.reduce tk.max: 3 rows into 8 columns
// CUDA:        accum = tk::max_nan(accum,
// CUDA:        tile.reduce tk.max over 3 elements into 32 outputs
// CUDA:        accum = tk::max_nan(accum,
func.func @place(%g: tensor<4x3xf32>) -> tensor<4x8xf32> {
  %k = tk.iota axis 0 : tensor<3x1xf32>
  %two = tk.fill 2.0 : tensor<f32>
  %pos = tk.add %k, %two : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %col = tk.iota axis 1 : tensor<1x8xf32>
  %hot = tk.cmp eq %pos, %col : (tensor<3x1xf32>, tensor<1x8xf32>) -> tensor<3x8xi1>
  %ninf = tk.fill -inf : tensor<f32>
  %g3 = tk.reshape %g : tensor<4x3xf32> -> tensor<4x3x1xf32>
  %picked = tk.select %hot, %g3, %ninf : (tensor<3x8xi1>, tensor<4x3x1xf32>, tensor<f32>) -> tensor<4x3x8xf32>
  %placed = tk.max %picked axes [1] : tensor<4x3x8xf32> -> tensor<4x8xf32>
  %one = tk.fill 1.0 : tensor<f32>
  %zero = tk.fill 0.0 : tensor<f32>
  %ones = tk.select %hot, %one, %zero : (tensor<3x8xi1>, tensor<f32>, tensor<f32>) -> tensor<3x8xf32>
  %hits = tk.max %ones axes [0] : tensor<3x8xf32> -> tensor<8xf32>
  %half = tk.fill 0.5 : tensor<f32>
  %covered = tk.cmp gt %hits, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xi1>
  %out = tk.select %covered, %placed, %zero : (tensor<8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %out : tensor<4x8xf32>
}
