// tk-to-sched on fused input: a tk.fused becomes ONE sched.compute with its
// body moved in (one out buffer per result); a lone op gets a body of its own,
// with the fills it reads cloned in.
// RUN: trainkernel-opt %s -p tk-to-sched | filecheck %s

// CHECK-LABEL: sched.program @dw_sgd(%h: memref<16x64xbf16>, %d: memref<16x8xbf16>, %w: memref<64x8xf32>, %out0: memref<64x8xf32>) inputs 3 results [3, 2] arena -1 {
// CHECK-NEXT:    %[[NW:.*]] = sched.buffer : memref<64x8xf32>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%h, %d, %w : memref<16x64xbf16>, memref<16x8xbf16>, memref<64x8xf32>) outs(%out0, %[[NW]] : memref<64x8xf32>, memref<64x8xf32>) {
// CHECK-NEXT:      ^bb0(%{{.*}}: tensor<16x64xbf16>, %{{.*}}: tensor<16x8xbf16>, %{{.*}}: tensor<64x8xf32>):
// CHECK-NEXT:        %lr = tk.fill 0.001 : tensor<f32>
// CHECK-NEXT:        %g = tk.matmul
// CHECK-NEXT:        %gf = tk.cast
// CHECK-NEXT:        %st = tk.mul
// CHECK-NEXT:        %[[NWV:.*]] = tk.sub
// CHECK-NEXT:        tk.yield %gf, %[[NWV]] : tensor<64x8xf32>, tensor<64x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.commit %[[NW]] to %w : memref<64x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @dw_sgd(%h: tensor<16x64xbf16>, %d: tensor<16x8xbf16>, %w: tensor<64x8xf32>) -> (tensor<64x8xf32>, tensor<64x8xf32> {tk.updates = 2 : i64}) {
  %gf, %nw = tk.fused %h, %d, %w : (tensor<16x64xbf16>, tensor<16x8xbf16>, tensor<64x8xf32>) -> (tensor<64x8xf32>, tensor<64x8xf32>) {
  ^bb0(%a: tensor<16x64xbf16>, %b: tensor<16x8xbf16>, %c: tensor<64x8xf32>):
    %lr = tk.fill 0.001 : tensor<f32>
    %g = tk.matmul %a, %b transpose_a : (tensor<16x64xbf16>, tensor<16x8xbf16>) -> tensor<64x8xbf16>
    %gf = tk.cast %g : tensor<64x8xbf16> to tensor<64x8xf32>
    %st = tk.mul %gf, %lr : (tensor<64x8xf32>, tensor<f32>) -> tensor<64x8xf32>
    %nw = tk.sub %c, %st : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
    tk.yield %gf, %nw : tensor<64x8xf32>, tensor<64x8xf32>
  }
  func.return %gf, %nw : tensor<64x8xf32>, tensor<64x8xf32>
}

// A lone op reading a fill: the fill is cloned into its body, not computed.
// CHECK-LABEL: sched.program @lone(
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%x : memref<4xf32>) outs(%{{out0[_0-9]*}} : memref<4xf32>) {
// CHECK-NEXT:      ^bb0(%[[A:.*]]: tensor<4xf32>):
// CHECK-NEXT:        %two = tk.fill 2.0 : tensor<f32>
// CHECK-NEXT:        %{{.*}} = tk.mul %[[A]], %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:        tk.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @lone(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = tk.fill 2.0 : tensor<f32>
  %y = tk.mul %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
