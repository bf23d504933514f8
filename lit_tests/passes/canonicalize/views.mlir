// RUN: trainkernel-opt %s -p canonicalize | filecheck %s

// CHECK-LABEL: func.func @identity_views
// CHECK-SAME:    (%x: tensor<2x3xf32>)
// CHECK-NEXT:    func.return %x, %x, %x, %x
func.func @identity_views(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = tk.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %b = tk.transpose %x perm [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  %c = tk.expand %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %d = tk.slice %x starts [0, 0] steps [1, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %a, %b, %c, %d : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// Views that move data stay.
// CHECK-LABEL: func.func @real_views_kept
// CHECK-NEXT:    %a = tk.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    %b = tk.transpose %x perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    %c = tk.slice %x starts [0, 1] steps [1, 1] : tensor<2x3xf32> -> tensor<2x2xf32>
// CHECK-NEXT:    %d = tk.expand %x : tensor<2x3xf32> -> tensor<4x2x3xf32>
func.func @real_views_kept(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2xf32>, tensor<4x2x3xf32>) {
  %a = tk.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %b = tk.transpose %x perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %c = tk.slice %x starts [0, 1] steps [1, 1] : tensor<2x3xf32> -> tensor<2x2xf32>
  %d = tk.expand %x : tensor<2x3xf32> -> tensor<4x2x3xf32>
  func.return %a, %b, %c, %d : tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2xf32>, tensor<4x2x3xf32>
}

// transpose of transpose: perms compose (result axis i = x axis p1[p2[i]]).
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-NEXT:    %[[T:.*]] = tk.transpose %x perm [2, 1, 0] : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT:    func.return %x, %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x3x2xf32>) {
  %t1 = tk.transpose %x perm [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %back = tk.transpose %t1 perm [1, 0, 2] : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  %t2 = tk.transpose %x perm [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %t3 = tk.transpose %t2 perm [1, 0, 2] : tensor<3x4x2xf32> -> tensor<4x3x2xf32>
  func.return %back, %t3 : tensor<2x3x4xf32>, tensor<4x3x2xf32>
}

// A transpose that feeds something else besides the outer transpose stays.
// CHECK-LABEL: func.func @transpose_with_other_use
// CHECK-NEXT:    %t = tk.transpose %x perm [1, 0]
// CHECK-NEXT:    func.return %x, %t
func.func @transpose_with_other_use(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %t = tk.transpose %x perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %b = tk.transpose %t perm [1, 0] : tensor<3x2xf32> -> tensor<2x3xf32>
  func.return %b, %t : tensor<2x3xf32>, tensor<3x2xf32>
}

// CHECK-LABEL: func.func @reshape_and_expand_chains
// CHECK-NEXT:    %[[R:.*]] = tk.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT:    %[[E:.*]] = tk.expand %y : tensor<3xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %[[R]], %x, %[[E]]
func.func @reshape_and_expand_chains(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<6xf32>, tensor<2x3xf32>, tensor<4x2x3xf32>) {
  %a = tk.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %b = tk.reshape %a : tensor<3x2xf32> -> tensor<6xf32>
  %c = tk.reshape %x : tensor<2x3xf32> -> tensor<6x1xf32>
  %d = tk.reshape %c : tensor<6x1xf32> -> tensor<2x3xf32>
  %e = tk.expand %y : tensor<3xf32> -> tensor<2x3xf32>
  %f = tk.expand %e : tensor<2x3xf32> -> tensor<4x2x3xf32>
  func.return %b, %d, %f : tensor<6xf32>, tensor<2x3xf32>, tensor<4x2x3xf32>
}

// A reshape of a transpose is not a reshape: kept.
// CHECK-LABEL: func.func @reshape_of_transpose_kept
// CHECK-NEXT:    %t = tk.transpose
// CHECK-NEXT:    %r = tk.reshape %t
func.func @reshape_of_transpose_kept(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %t = tk.transpose %x perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %r = tk.reshape %t : tensor<3x2xf32> -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}

// A 2-D transpose feeding a matmul becomes the matmul's transpose flag
// (toggled: a transposed operand read transposed is the operand itself).
// CHECK-LABEL: func.func @matmul_absorbs_transpose
// CHECK-NEXT:    %[[M:.*]] = tk.matmul %a, %b transpose_a : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[N:.*]] = tk.matmul %a, %c : (tensor<3x2xf32>, tensor<2x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    func.return %[[M]], %[[N]]
func.func @matmul_absorbs_transpose(%a: tensor<3x2xf32>, %b: tensor<3x4xf32>, %c: tensor<2x5xf32>) -> (tensor<2x4xf32>, tensor<3x5xf32>) {
  %t = tk.transpose %a perm [1, 0] : tensor<3x2xf32> -> tensor<2x3xf32>
  %m = tk.matmul %t, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %ct = tk.transpose %c perm [1, 0] : tensor<2x5xf32> -> tensor<5x2xf32>
  %n = tk.matmul %a, %ct transpose_b : (tensor<3x2xf32>, tensor<5x2xf32>) -> tensor<3x5xf32>
  func.return %m, %n : tensor<2x4xf32>, tensor<3x5xf32>
}
