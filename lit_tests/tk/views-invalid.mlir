// tk.reshape, tk.expand, tk.transpose, tk.slice verifier errors.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @reshape_count(%x: tensor<4x8xf32>) {
  // CHECK: tk.reshape: [4, 8] and [4, 4] have different element counts
  %0 = tk.reshape %x : tensor<4x8xf32> -> tensor<4x4xf32>
  func.return
}

// -----

func.func @reshape_type(%x: tensor<4x8xf32>) {
  // CHECK: tk.reshape keeps the element type: tensor<4x8xf32> -> tensor<32xbf16>
  %0 = tk.reshape %x : tensor<4x8xf32> -> tensor<32xbf16>
  func.return
}

// -----

func.func @expand_not_broadcast(%x: tensor<2x8xf32>) {
  // CHECK: tk.expand: [2, 8] does not broadcast to [16, 8]
  %0 = tk.expand %x : tensor<2x8xf32> -> tensor<16x8xf32>
  func.return
}

// -----

// expand only adds axes; it never drops them, even size-1 ones.
func.func @expand_rank(%x: tensor<1x8xf32>) {
  // CHECK: tk.expand: [1, 8] does not broadcast to [8]
  %0 = tk.expand %x : tensor<1x8xf32> -> tensor<8xf32>
  func.return
}

// -----

// Size-1 target axes do not shrink the source.
func.func @expand_shrink(%x: tensor<4x8xf32>) {
  // CHECK: tk.expand: [4, 8] does not broadcast to [1, 8]
  %0 = tk.expand %x : tensor<4x8xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @expand_type(%x: tensor<8xf32>) {
  // CHECK: tk.expand keeps the element type: tensor<8xf32> -> tensor<4x8xf16>
  %0 = tk.expand %x : tensor<8xf32> -> tensor<4x8xf16>
  func.return
}

// -----

func.func @transpose_perm(%x: tensor<16x8xf32>) {
  // CHECK: tk.transpose: perm [0, 0] is not a permutation of 2 axes
  %0 = tk.transpose %x perm [0, 0] : tensor<16x8xf32> -> tensor<16x16xf32>
  func.return
}

// -----

func.func @transpose_perm_rank(%x: tensor<16x8xf32>) {
  // CHECK: tk.transpose: perm [1, 0, 2] is not a permutation of 2 axes
  %0 = tk.transpose %x perm [1, 0, 2] : tensor<16x8xf32> -> tensor<8x16xf32>
  func.return
}

// -----

func.func @transpose_shape(%x: tensor<2x3x4xf32>) {
  // CHECK: tk.transpose: result shape [4, 3, 2] should be [3, 4, 2]
  %0 = tk.transpose %x perm [1, 2, 0] : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  func.return
}

// -----

func.func @transpose_type(%x: tensor<16x8xf32>) {
  // CHECK: tk.transpose keeps the element type: tensor<16x8xf32> -> tensor<8x16xbf16>
  %0 = tk.transpose %x perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xbf16>
  func.return
}

// -----

func.func @slice_bounds(%x: tensor<16x8xf32>) {
  // CHECK: tk.slice: axis 1 reads [2 : 10 : 2] outside size 8
  %0 = tk.slice %x starts [0, 2] steps [1, 2] : tensor<16x8xf32> -> tensor<16x4xf32>
  func.return
}

// -----

func.func @slice_too_long(%v: tensor<10xf32>) {
  // CHECK: tk.slice: axis 0 reads [0 : 11 : 1] outside size 10
  %0 = tk.slice %v starts [0] steps [1] : tensor<10xf32> -> tensor<11xf32>
  func.return
}

// -----

func.func @slice_negative_start(%v: tensor<10xf32>) {
  // CHECK: tk.slice: axis 0 reads [-1 : 0 : 1] outside size 10
  %0 = tk.slice %v starts [-1] steps [1] : tensor<10xf32> -> tensor<1xf32>
  func.return
}

// -----

func.func @slice_zero_step(%v: tensor<10xf32>) {
  // CHECK: tk.slice: axis 0 reads [0 : 0 : 0] outside size 10
  %0 = tk.slice %v starts [0] steps [0] : tensor<10xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @slice_negative_step(%v: tensor<10xf32>) {
  // CHECK: tk.slice: axis 0 reads [9 : 5 : -1] outside size 10
  %0 = tk.slice %v starts [9] steps [-1] : tensor<10xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @slice_ranks(%x: tensor<16x8xf32>) {
  // CHECK: tk.slice: input rank 2, result rank 2, 1 starts and 2 steps must agree
  %0 = tk.slice %x starts [0] steps [1, 1] : tensor<16x8xf32> -> tensor<16x8xf32>
  func.return
}

// -----

func.func @slice_result_rank(%x: tensor<16x8xf32>) {
  // CHECK: tk.slice: input rank 2, result rank 1, 2 starts and 2 steps must agree
  %0 = tk.slice %x starts [0, 0] steps [1, 1] : tensor<16x8xf32> -> tensor<16xf32>
  func.return
}

// -----

func.func @slice_type(%v: tensor<10xf32>) {
  // CHECK: tk.slice keeps the element type: tensor<10xf32> -> tensor<5xf16>
  %0 = tk.slice %v starts [0] steps [2] : tensor<10xf32> -> tensor<5xf16>
  func.return
}
