// tk-fuse: pointwise consumers of a matmul become its epilogue;
// pointwise consumers of a reduction on the reduced shape become its epilogue;
// a pointwise chain over one shape becomes one group.
// RUN: trainkernel-opt %s -p tk-fuse | filecheck %s

// Bias add and relu join the matmul: one tk.fused, one result.
// CHECK-LABEL: func.func @linear_relu(
// CHECK-NEXT:    %r = tk.fused %x, %w, %b : (tensor<16x32xbf16>, tensor<32x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<16x32xbf16>, %[[W:.*]]: tensor<32x64xbf16>, %[[B:.*]]: tensor<64xbf16>):
// CHECK-NEXT:      %m = tk.matmul %[[X]], %[[W]] : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
// CHECK-NEXT:      %s = tk.add %m, %[[B]] : (tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
// CHECK-NEXT:      %[[R:.*]] = tk.relu %s : tensor<16x64xbf16>
// CHECK-NEXT:      tk.yield %[[R]] : tensor<16x64xbf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r : tensor<16x64xbf16>
func.func @linear_relu(%x: tensor<16x32xbf16>, %w: tensor<32x64xbf16>, %b: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %m = tk.matmul %x, %w : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  %s = tk.add %m, %b : (tensor<16x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %r = tk.relu %s : tensor<16x64xbf16>
  func.return %r : tensor<16x64xbf16>
}

// The dW matmul of the backward pass with the SGD update as its epilogue: the
// gradient (cast to f32) and the new weight are both results of ONE group
// (a multi-output tk.fused); the learning-rate fill is cloned inside.
// CHECK-LABEL: func.func @dw_sgd(
// CHECK-NEXT:    %gf, %nw = tk.fused %h, %d, %w : (tensor<16x64xbf16>, tensor<16x8xbf16>, tensor<64x8xf32>) -> (tensor<64x8xf32>, tensor<64x8xf32>) {
// CHECK-NEXT:    ^bb0(%[[H:.*]]: tensor<16x64xbf16>, %[[D:.*]]: tensor<16x8xbf16>, %[[W:.*]]: tensor<64x8xf32>):
// CHECK-NEXT:      %lr = tk.fill 0.001 : tensor<f32>
// CHECK-NEXT:      %g = tk.matmul %[[H]], %[[D]] transpose_a : (tensor<16x64xbf16>, tensor<16x8xbf16>) -> tensor<64x8xbf16>
// CHECK-NEXT:      %[[GF:.*]] = tk.cast %g : tensor<64x8xbf16> to tensor<64x8xf32>
// CHECK-NEXT:      %st = tk.mul %[[GF]], %lr : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
// CHECK-NEXT:      %[[NW:.*]] = tk.sub %[[W]], %st : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
// CHECK-NEXT:      tk.yield %[[GF]], %[[NW]] : tensor<64x8xf32>, tensor<64x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %gf, %nw : tensor<64x8xf32>, tensor<64x8xf32>
func.func @dw_sgd(%h: tensor<16x64xbf16>, %d: tensor<16x8xbf16>, %w: tensor<64x8xf32>) -> (tensor<64x8xf32>, tensor<64x8xf32>) {
  %g = tk.matmul %h, %d transpose_a : (tensor<16x64xbf16>, tensor<16x8xbf16>) -> tensor<64x8xbf16>
  %gf = tk.cast %g : tensor<64x8xbf16> to tensor<64x8xf32>
  %lr = tk.fill 0.001 : tensor<f32>
  %st = tk.mul %gf, %lr : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
  %nw = tk.sub %w, %st : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
  func.return %gf, %nw : tensor<64x8xf32>, tensor<64x8xf32>
}

// Loss gradient as the epilogue of the last forward matmul: bias, cast, sub,
// square (the loss term) and scale (its gradient) in one group with two
// results. Intermediates used only inside stay inside.
// CHECK-LABEL: func.func @loss_grad(
// CHECK-NEXT:    %sq, %dl = tk.fused %h, %w, %b, %y : {{.*}} -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
// CHECK:           tk.matmul
// CHECK-NEXT:      tk.add
// CHECK-NEXT:      tk.cast
// CHECK-NEXT:      tk.sub
// CHECK-NEXT:      tk.mul
// CHECK-NEXT:      tk.mul
// CHECK-NEXT:      tk.cast
// CHECK-NEXT:      tk.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %sq, %dl
func.func @loss_grad(%h: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %b: tensor<8xbf16>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %m = tk.matmul %h, %w : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %o = tk.add %m, %b : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %of = tk.cast %o : tensor<4x8xbf16> to tensor<4x8xf32>
  %e = tk.sub %of, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sq = tk.mul %e, %e : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %two = tk.fill 0.0625 : tensor<f32>
  %g = tk.mul %e, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %dl = tk.cast %g : tensor<4x8xf32> to tensor<4x8xbf16>
  func.return %sq, %dl : tensor<4x8xf32>, tensor<4x8xbf16>
}

// A reduction's pointwise consumers on the reduced shape (the 1/n of a mean)
// join it; the fill is cloned in.
// CHECK-LABEL: func.func @mean(
// CHECK-NEXT:    %m = tk.fused %x : (tensor<16x8xf32>) -> tensor<f32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<16x8xf32>):
// CHECK-NEXT:      %n = tk.fill 128.0 : tensor<f32>
// CHECK-NEXT:      %s = tk.sum %[[A]] axes [0, 1] : tensor<16x8xf32> -> tensor<f32>
// CHECK-NEXT:      %[[M:.*]] = tk.div %s, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:      tk.yield %[[M]] : tensor<f32>
// CHECK-NEXT:    }
func.func @mean(%x: tensor<16x8xf32>) -> tensor<f32> {
  %s = tk.sum %x axes [0, 1] : tensor<16x8xf32> -> tensor<f32>
  %n = tk.fill 128.0 : tensor<f32>
  %m = tk.div %s, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return %m : tensor<f32>
}

// A pointwise chain over one shape is one group; the value used outside the
// chain (%e, returned) becomes a second result.
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %e, %r = tk.fused %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x8xf32>):
// CHECK-NEXT:      tk.sub
// CHECK-NEXT:      tk.exp
// CHECK-NEXT:      tk.neg
// CHECK-NEXT:      tk.relu
// CHECK-NEXT:      tk.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %e, %r
func.func @chain(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %d = tk.sub %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = tk.exp %d : tensor<4x8xf32>
  %n = tk.neg %e : tensor<4x8xf32>
  %r = tk.relu %n : tensor<4x8xf32>
  func.return %e, %r : tensor<4x8xf32>, tensor<4x8xf32>
}
