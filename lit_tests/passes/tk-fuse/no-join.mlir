// tk-fuse must NOT join: a pointwise op whose result shape differs
// from the group's iteration shape, a join that would make two groups depend
// on each other, a matmul or reduction into a pointwise group (they root
// their own groups), views.
// RUN: trainkernel-opt %s -p tk-fuse | filecheck %s

// exp on 1x8 then an add broadcasting to 4x8: the add has another iteration
// shape, so it starts a new group (and the neg after it joins THAT group).
// CHECK-LABEL: func.func @shape_differs(
// CHECK-NEXT:    %a = tk.fused %x : (tensor<1x8xf32>) -> tensor<1x8xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<1x8xf32>):
// CHECK-NEXT:      tk.exp
// CHECK-NEXT:      tk.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = tk.fused %a, %y : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<1x8xf32>, %{{.*}}: tensor<4x8xf32>):
// CHECK-NEXT:      tk.add
// CHECK-NEXT:      tk.neg
// CHECK-NEXT:      tk.yield
// CHECK-NEXT:    }
func.func @shape_differs(%x: tensor<1x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = tk.exp %x : tensor<1x8xf32>
  %b = tk.add %a, %y : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = tk.neg %b : tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}

// A bias of another shape than the matmul output is read (broadcast) by the
// epilogue, but a pointwise op producing a bigger shape from the matmul result
// is not an epilogue.
// CHECK-LABEL: func.func @bigger_than_matmul(
// CHECK-NEXT:    %m = tk.fused %x, %w : {{.*}} -> tensor<1x8xf32> {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tk.matmul
// CHECK-NEXT:      tk.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %b = tk.fused %m, %y : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
func.func @bigger_than_matmul(%x: tensor<1x4xf32>, %w: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tk.matmul %x, %w : (tensor<1x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
  %b = tk.add %m, %y : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %b : tensor<4x8xf32>
}

// %c = %a + %m: joining %a's group would make it depend on the matmul group,
// which reads %a: a cycle. So %c joins the matmul (its epilogue) instead, and
// relu stays alone.
// CHECK-LABEL: func.func @cycle(
// CHECK-NEXT:    %a = tk.fused %x : (tensor<8x8xf32>) -> tensor<8x8xf32> {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tk.relu
// CHECK-NEXT:      tk.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = tk.fused %a, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<8x8xf32>, %[[W:.*]]: tensor<8x8xf32>):
// CHECK-NEXT:      %m = tk.matmul %[[A]], %[[W]]
// CHECK-NEXT:      tk.add %[[A]], %m
// CHECK-NEXT:      tk.yield
// CHECK-NEXT:    }
func.func @cycle(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = tk.relu %x : tensor<8x8xf32>
  %m = tk.matmul %a, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %c = tk.add %a, %m : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %c : tensor<8x8xf32>
}

// Softmax-like: %c = %a * rowsum(exp(%a @ %w)). Joining %a's group would
// create a cycle (through the matmul and the reduction groups), and the
// reduction's group has another shape: %c gets a group of its own. Four
// groups, in dependency order.
// CHECK-LABEL: func.func @cycle_through_reduction(
// CHECK-NEXT:    %a = tk.fused %x
// CHECK:         tk.relu
// CHECK:         %e = tk.fused %a, %w
// CHECK:         tk.matmul
// CHECK-NEXT:    tk.exp
// CHECK:         %s = tk.fused %e
// CHECK:         tk.sum
// CHECK:         %c = tk.fused %a, %s : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tk.mul
// CHECK-NEXT:      tk.yield
func.func @cycle_through_reduction(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = tk.relu %x : tensor<8x8xf32>
  %m = tk.matmul %a, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %e = tk.exp %m : tensor<8x8xf32>
  %s = tk.sum %e axes [1] keepdim : tensor<8x8xf32> -> tensor<8x1xf32>
  %c = tk.mul %a, %s : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
  func.return %c : tensor<8x8xf32>
}

// A cycle through a view: %v reshapes a value of %a's group, so %a's group may
// not take an op that also reads the matmul of %v.
// CHECK-LABEL: func.func @cycle_through_view(
// CHECK:         %a = tk.fused %x
// CHECK:         %v = tk.reshape %a
// CHECK:         %m = tk.fused %v, %w
// CHECK:         %c = tk.fused %a, %m
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tk.sub
// CHECK-NEXT:      tk.yield
func.func @cycle_through_view(%x: tensor<4x4xf32>, %w: tensor<16x4xf32>) -> tensor<4x4xf32> {
  %a = tk.neg %x : tensor<4x4xf32>
  %v = tk.reshape %a : tensor<4x4xf32> -> tensor<1x16xf32>
  %m = tk.matmul %v, %w : (tensor<1x16xf32>, tensor<16x4xf32>) -> tensor<1x4xf32>
  %c = tk.sub %a, %m : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  func.return %c : tensor<4x4xf32>
}

// A matmul never joins a pointwise group: it roots its own (the relu before
// it is a separate group).
// CHECK-LABEL: func.func @matmul_roots(
// CHECK-NEXT:    %r = tk.fused %x
// CHECK:         tk.relu
// CHECK:         %m = tk.fused %r, %w
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tk.matmul
// CHECK-NEXT:      tk.yield
func.func @matmul_roots(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = tk.relu %x : tensor<4x4xf32>
  %m = tk.matmul %r, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %m : tensor<4x4xf32>
}

// Two matmuls chained: two groups. Two reductions: two groups.
// CHECK-LABEL: func.func @two_roots(
// CHECK-COUNT-4: tk.fused
// CHECK-NOT:     tk.fused
// CHECK:         func.return
func.func @two_roots(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<f32>) {
  %m = tk.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %n = tk.matmul %m, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = tk.sum %n axes [1] : tensor<4x4xf32> -> tensor<4xf32>
  %t = tk.max %s axes [0] : tensor<4xf32> -> tensor<f32>
  func.return %n, %t : tensor<4x4xf32>, tensor<f32>
}

// A reduction's consumer of the INPUT shape is not its epilogue.
// CHECK-LABEL: func.func @after_reduction_other_shape(
// CHECK:         %s = tk.fused %x : (tensor<4x8xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tk.sum
// CHECK-NEXT:      tk.yield
// CHECK:         %d = tk.fused %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
func.func @after_reduction_other_shape(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = tk.sum %x axes [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tk.sub %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %d : tensor<4x8xf32>
}
