// RUN: trainkernel-opt %s -p cse | filecheck %s --check-prefix=CSE
// RUN: trainkernel-opt %s -p dce | filecheck %s --check-prefix=DCE
// RUN: trainkernel-opt %s -p canonicalize,cse,dce | filecheck %s --check-prefix=ALL

// CSE merges identical pure tk ops (same operands, properties and types);
// DCE removes unused ones. Ops that differ in any property are kept apart.

// CSE-LABEL: func.func @dedupe
// CSE-NEXT:    %c = tk.fill 2.0 : tensor<f32>
// CSE-NEXT:    %a = tk.mul %x, %c
// CSE-NEXT:    %t = tk.transpose %a perm [1, 0]
// CSE-NEXT:    %s0 = tk.sum %a axes [0] : tensor<4x8xf32> -> tensor<8xf32>
// CSE-NEXT:    %s1 = tk.sum %a axes [0] keepdim
// CSE-NEXT:    %m = tk.matmul %a, %a transpose_b
// CSE-NEXT:    %m2 = tk.matmul %a, %a transpose_a
// CSE-NEXT:    func.return %a, %a, %t, %t, %s0, %s1, %m, %m2
func.func @dedupe(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<1x8xf32>, tensor<4x4xf32>, tensor<8x8xf32>) {
  %c = tk.fill 2.0 : tensor<f32>
  %c2 = tk.fill 2.0 : tensor<f32>
  %a = tk.mul %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %b = tk.mul %x, %c2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %t = tk.transpose %a perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %u = tk.transpose %b perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %s0 = tk.sum %a axes [0] : tensor<4x8xf32> -> tensor<8xf32>
  %s1 = tk.sum %b axes [0] keepdim : tensor<4x8xf32> -> tensor<1x8xf32>
  %m = tk.matmul %a, %b transpose_b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %m2 = tk.matmul %a, %b transpose_a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  func.return %a, %b, %t, %u, %s0, %s1, %m, %m2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<1x8xf32>, tensor<4x4xf32>, tensor<8x8xf32>
}

// Fills of different values or types are different constants.
// CSE-LABEL: func.func @distinct_fills
// CSE-NEXT:    tk.fill 0.0 : tensor<f32>
// CSE-NEXT:    tk.fill -0.0 : tensor<f32>
// CSE-NEXT:    tk.fill 0.0 : tensor<bf16>
// CSE-NEXT:    tk.fill 0.0 : tensor<2xf32>
// CSE-NEXT:    func.return
func.func @distinct_fills() -> (tensor<f32>, tensor<f32>, tensor<bf16>, tensor<2xf32>) {
  %a = tk.fill 0.0 : tensor<f32>
  %b = tk.fill -0.0 : tensor<f32>
  %c = tk.fill 0.0 : tensor<bf16>
  %d = tk.fill 0.0 : tensor<2xf32>
  func.return %a, %b, %c, %d : tensor<f32>, tensor<f32>, tensor<bf16>, tensor<2xf32>
}

// DCE-LABEL: func.func @dead
// DCE-NEXT:    %live = tk.relu %x
// DCE-NEXT:    func.return %live
// ALL-LABEL: func.func @dead
// ALL-NEXT:    %live = tk.relu %x
// ALL-NEXT:    func.return %live
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %d1 = tk.exp %x : tensor<4xf32>
  %d2 = tk.mul %d1, %d1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d3 = tk.fused %d2 : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%y: tensor<4xf32>):
    %n = tk.neg %y : tensor<4xf32>
    tk.yield %n : tensor<4xf32>
  }
  %live = tk.relu %x : tensor<4xf32>
  func.return %live : tensor<4xf32>
}

// Identical fused regions are one computation.
// CSE-LABEL: func.func @fused_twice
// CSE-NEXT:    %a = tk.fused %x
// CSE:         func.return %a, %a
func.func @fused_twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = tk.fused %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%y: tensor<4xf32>):
    %n = tk.neg %y : tensor<4xf32>
    tk.yield %n : tensor<4xf32>
  }
  %b = tk.fused %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%y: tensor<4xf32>):
    %n = tk.neg %y : tensor<4xf32>
    tk.yield %n : tensor<4xf32>
  }
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}
