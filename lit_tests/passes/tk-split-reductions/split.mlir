// RUN: trainkernel-opt %s -p tk-split-reductions | filecheck %s
// RUN: trainkernel-opt %s -p 'tk-split-reductions{min_elements=1000000}' | filecheck %s --check-prefix=HIGH

// A loss sum over a 1024x256 batch (262,144 elements into one output): the
// last axis first (1024 row sums, one work item each), then the rest.
// CHECK-LABEL: func.func @loss_f32
// CHECK-NEXT:    %[[ROWS:.*]] = tk.sum %x axes [1] : tensor<1024x256xf32> -> tensor<1024xf32>
// CHECK-NEXT:    %[[ALL:.*]] = tk.sum %[[ROWS]] axes [0] : tensor<1024xf32> -> tensor<f32>
// CHECK-NEXT:    func.return %[[ALL]]
// Above the threshold nothing changes.
// HIGH-LABEL: func.func @loss_f32
// HIGH-NEXT:    tk.sum %x axes [0, 1] : tensor<1024x256xf32> -> tensor<f32>
func.func @loss_f32(%x: tensor<1024x256xf32>) -> tensor<f32> {
  %r = tk.sum %x axes [0, 1] : tensor<1024x256xf32> -> tensor<f32>
  func.return %r : tensor<f32>
}

// bf16: the partials stay f32 (the input is cast exactly), and the result is
// rounded to bf16 once, at the end.
// CHECK-LABEL: func.func @sum_bf16_keepdim
// CHECK-NEXT:    %[[X:.*]] = tk.cast %x : tensor<2x512x256xbf16> to tensor<2x512x256xf32>
// CHECK-NEXT:    %[[P:.*]] = tk.sum %[[X]] axes [2] keepdim : tensor<2x512x256xf32> -> tensor<2x512x1xf32>
// CHECK-NEXT:    %[[S:.*]] = tk.sum %[[P]] axes [0, 1] keepdim : tensor<2x512x1xf32> -> tensor<1x1x1xf32>
// CHECK-NEXT:    %[[R:.*]] = tk.cast %[[S]] : tensor<1x1x1xf32> to tensor<1x1x1xbf16>
// CHECK-NEXT:    func.return %[[R]]
func.func @sum_bf16_keepdim(%x: tensor<2x512x256xbf16>) -> tensor<1x1x1xbf16> {
  %r = tk.sum %x axes [0, 1, 2] keepdim : tensor<2x512x256xbf16> -> tensor<1x1x1xbf16>
  func.return %r : tensor<1x1x1xbf16>
}

// max is exact in any order: no casts, the element type throughout (8 x
// 16384 elements into each of 4 outputs).
// CHECK-LABEL: func.func @max_f16
// CHECK-NEXT:    %[[P:.*]] = tk.max %x axes [2] : tensor<8x4x16384xf16> -> tensor<8x4xf16>
// CHECK-NEXT:    %[[M:.*]] = tk.max %[[P]] axes [0] : tensor<8x4xf16> -> tensor<4xf16>
// CHECK-NEXT:    func.return %[[M]]
func.func @max_f16(%x: tensor<8x4x16384xf16>) -> tensor<4xf16> {
  %r = tk.max %x axes [0, 2] : tensor<8x4x16384xf16> -> tensor<4xf16>
  func.return %r : tensor<4xf16>
}

// Left alone: one reduced axis (nothing to split), too few elements per
// output (16 x 8 = 128 columns of 512), and argmax.
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT:    tk.sum %x axes [1] : tensor<4x100000xf32> -> tensor<4xf32>
// CHECK-NEXT:    tk.sum %y axes [0, 1] : tensor<16x32xf32> -> tensor<f32>
// CHECK-NEXT:    tk.argmax %x axes [1] : tensor<4x100000xf32> -> tensor<4xi64>
func.func @untouched(%x: tensor<4x100000xf32>, %y: tensor<16x32xf32>) -> (tensor<4xf32>, tensor<f32>, tensor<4xi64>) {
  %a = tk.sum %x axes [1] : tensor<4x100000xf32> -> tensor<4xf32>
  %b = tk.sum %y axes [0, 1] : tensor<16x32xf32> -> tensor<f32>
  %c = tk.argmax %x axes [1] : tensor<4x100000xf32> -> tensor<4xi64>
  func.return %a, %b, %c : tensor<4xf32>, tensor<f32>, tensor<4xi64>
}
