// tk.sum, tk.mean, tk.max, tk.argmax verifier errors.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @axis_range(%x: tensor<16x8xf32>) {
  // CHECK: tk.sum: axes [2] must be distinct and in [0, 2)
  %0 = tk.sum %x axes [2] : tensor<16x8xf32> -> tensor<16x8xf32>
  func.return
}

// -----

func.func @negative_axis(%x: tensor<16x8xf32>) {
  // CHECK: tk.mean: axes [-1] must be distinct and in [0, 2)
  %0 = tk.mean %x axes [-1] : tensor<16x8xf32> -> tensor<16xf32>
  func.return
}

// -----

func.func @duplicate_axes(%x: tensor<16x8xf32>) {
  // CHECK: tk.max: axes [1, 1] must be distinct and in [0, 2)
  %0 = tk.max %x axes [1, 1] : tensor<16x8xf32> -> tensor<16xf32>
  func.return
}

// -----

func.func @unsorted_axes(%x: tensor<2x3x4xf32>) {
  // CHECK: tk.sum: axes [2, 0] must be sorted
  %0 = tk.sum %x axes [2, 0] : tensor<2x3x4xf32> -> tensor<3xf32>
  func.return
}

// -----

// Without keepdim the reduced axes disappear ...
func.func @keepdim_missing(%x: tensor<16x8xf32>) {
  // CHECK: tk.sum: result shape [1, 8] should be [8]
  %0 = tk.sum %x axes [0] : tensor<16x8xf32> -> tensor<1x8xf32>
  func.return
}

// -----

// ... with keepdim they stay, with size 1.
func.func @keepdim_present(%x: tensor<16x8xf32>) {
  // CHECK: tk.mean: result shape [16] should be [16, 1]
  %0 = tk.mean %x axes [1] keepdim : tensor<16x8xf32> -> tensor<16xf32>
  func.return
}

// -----

func.func @wrong_axis_kept(%x: tensor<16x8xf32>) {
  // CHECK: tk.max: result shape [8] should be [16]
  %0 = tk.max %x axes [1] : tensor<16x8xf32> -> tensor<8xf32>
  func.return
}

// -----

func.func @element_type(%x: tensor<16x8xbf16>) {
  // CHECK: tk.sum: input tensor<16x8xbf16> and result tensor<16xf32> need one floating element type
  %0 = tk.sum %x axes [1] : tensor<16x8xbf16> -> tensor<16xf32>
  func.return
}

// -----

func.func @integer_sum(%x: tensor<16x8xi64>) {
  // CHECK: tk.sum: input tensor<16x8xi64> and result tensor<16xi64> need one floating element type
  %0 = tk.sum %x axes [1] : tensor<16x8xi64> -> tensor<16xi64>
  func.return
}

// -----

func.func @argmax_result_type(%x: tensor<16x10xf32>) {
  // CHECK: tk.argmax returns i64 indices, got tensor<16xf32>
  %0 = tk.argmax %x axes [1] : tensor<16x10xf32> -> tensor<16xf32>
  func.return
}

// -----

func.func @argmax_i1(%x: tensor<16x10xf32>) {
  // CHECK: tk.argmax returns i64 indices, got tensor<16xi1>
  %0 = tk.argmax %x axes [1] : tensor<16x10xf32> -> tensor<16xi1>
  func.return
}

// -----

func.func @argmax_two_axes(%x: tensor<16x10xf32>) {
  // CHECK: tk.argmax reduces exactly one axis
  %0 = tk.argmax %x axes [0, 1] : tensor<16x10xf32> -> tensor<i64>
  func.return
}

// -----

func.func @argmax_no_axis(%x: tensor<16x10xf32>) {
  // CHECK: tk.argmax reduces exactly one axis
  %0 = tk.argmax %x axes [] : tensor<16x10xf32> -> tensor<16x10xi64>
  func.return
}

// -----

func.func @argmax_integer_input(%x: tensor<16x10xi64>) {
  // CHECK: tk.argmax input must be floating point, got tensor<16x10xi64>
  %0 = tk.argmax %x axes [1] : tensor<16x10xi64> -> tensor<16xi64>
  func.return
}

// -----

func.func @argmax_shape(%x: tensor<16x10xf32>) {
  // CHECK: tk.argmax: result shape [10] should be [16]
  %0 = tk.argmax %x axes [1] : tensor<16x10xf32> -> tensor<10xi64>
  func.return
}

// -----

// Axes are an array<i64: ...>.
func.func @axes_type(%x: tensor<16x8xf32>) {
  // CHECK: Expected attribute i64 but got i32
  %0 = "tk.sum"(%x) <{axes = array<i32: 1>}> : (tensor<16x8xf32>) -> tensor<16xf32>
  func.return
}

// -----

func.func @axes_missing(%x: tensor<16x8xf32>) {
  // CHECK: property 'axes' expected
  %0 = "tk.mean"(%x) : (tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return
}
