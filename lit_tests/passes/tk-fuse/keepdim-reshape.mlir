// tk-fuse folds `reshape(sum(x, axes, keepdim))` that only drops
// the kept size-1 axes into a plain `sum(x, axes)`, so the bias gradient's
// cast and SGD update join the reduction as its epilogue (one phase less).
// RUN: trainkernel-opt %s -p tk-fuse | filecheck %s

// The bias gradient and update of the tiny workload.
// CHECK-LABEL: func.func @bias_update(
// CHECK-NEXT:    %gf, %nb = tk.fused %d, %b : (tensor<16x8xbf16>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT:    ^bb0(%[[D:.*]]: tensor<16x8xbf16>, %[[B:.*]]: tensor<8xf32>):
// CHECK-NEXT:      %lr = tk.fill 0.001 : tensor<f32>
// CHECK-NEXT:      %[[S:.*]] = tk.sum %[[D]] axes [0] : tensor<16x8xbf16> -> tensor<8xbf16>
// CHECK-NEXT:      %[[GF:.*]] = tk.cast %[[S]] : tensor<8xbf16> to tensor<8xf32>
// CHECK-NEXT:      %st = tk.mul %[[GF]], %lr
// CHECK-NEXT:      %[[NB:.*]] = tk.sub %[[B]], %st
// CHECK-NEXT:      tk.yield %[[GF]], %[[NB]] : tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT:    }
// CHECK-NOT:     tk.reshape
func.func @bias_update(%d: tensor<16x8xbf16>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = tk.sum %d axes [0] keepdim : tensor<16x8xbf16> -> tensor<1x8xbf16>
  %r = tk.reshape %s : tensor<1x8xbf16> -> tensor<8xbf16>
  %gf = tk.cast %r : tensor<8xbf16> to tensor<8xf32>
  %lr = tk.fill 0.001 : tensor<f32>
  %st = tk.mul %gf, %lr : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %nb = tk.sub %b, %st : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %gf, %nb : tensor<8xf32>, tensor<8xf32>
}

// A keepdim result that is also used elsewhere is not folded: folding would
// compute the reduction twice. The reshape stays a view of the one reduction.
// CHECK-LABEL: func.func @also_used(
// CHECK:         tk.max %{{.*}} axes [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NOT:     tk.max
// CHECK:         tk.reshape %{{.*}} : tensor<4x1xf32> -> tensor<4xf32>
func.func @also_used(%x: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4xf32>) {
  %m = tk.max %x axes [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %r = tk.reshape %m : tensor<4x1xf32> -> tensor<4xf32>
  func.return %m, %r : tensor<4x1xf32>, tensor<4xf32>
}

// A reshape that does more than drop the kept axes stays a reshape.
// CHECK-LABEL: func.func @other_reshape(
// CHECK:         tk.sum %{{.*}} axes [0] keepdim : tensor<4x2x3xf32> -> tensor<1x2x3xf32>
// CHECK:         tk.reshape %{{.*}} : tensor<1x2x3xf32> -> tensor<6xf32>
func.func @other_reshape(%x: tensor<4x2x3xf32>) -> tensor<6xf32> {
  %s = tk.sum %x axes [0] keepdim : tensor<4x2x3xf32> -> tensor<1x2x3xf32>
  %r = tk.reshape %s : tensor<1x2x3xf32> -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}
