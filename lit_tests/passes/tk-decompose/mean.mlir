// RUN: trainkernel-opt %s -p tk-decompose | filecheck %s

// f32 mean: sum, then divide by the count (PyTorch's CPU mean divides; a
// multiplication by 1/n would round 1/n first).
// CHECK-LABEL: func.func @mean_f32
// CHECK-NEXT:    %[[S:.*]] = tk.sum %x axes [0, 2] keepdim : tensor<3x4x5xf32> -> tensor<1x4x1xf32>
// CHECK-NEXT:    %[[N:.*]] = tk.fill 15.0 : tensor<f32>
// CHECK-NEXT:    %[[M:.*]] = tk.div %[[S]], %[[N]] : (tensor<1x4x1xf32>, tensor<f32>) -> tensor<1x4x1xf32>
// CHECK-NEXT:    func.return %[[M]]
// CHECK-NOT:     tk.mean
func.func @mean_f32(%x: tensor<3x4x5xf32>) -> tensor<1x4x1xf32> {
  %m = tk.mean %x axes [0, 2] keepdim : tensor<3x4x5xf32> -> tensor<1x4x1xf32>
  func.return %m : tensor<1x4x1xf32>
}

// bf16 mean: PyTorch sums into f32, divides in f32 and rounds once.
// CHECK-LABEL: func.func @mean_bf16
// CHECK-NEXT:    %[[W:.*]] = tk.cast %x : tensor<8x16xbf16> to tensor<8x16xf32>
// CHECK-NEXT:    %[[S:.*]] = tk.sum %[[W]] axes [1] : tensor<8x16xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[N:.*]] = tk.fill 16.0 : tensor<f32>
// CHECK-NEXT:    %[[M:.*]] = tk.div %[[S]], %[[N]] : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
// CHECK-NEXT:    %[[R:.*]] = tk.cast %[[M]] : tensor<8xf32> to tensor<8xbf16>
// CHECK-NEXT:    func.return %[[R]]
func.func @mean_bf16(%x: tensor<8x16xbf16>) -> tensor<8xbf16> {
  %m = tk.mean %x axes [1] : tensor<8x16xbf16> -> tensor<8xbf16>
  func.return %m : tensor<8xbf16>
}

// CHECK-LABEL: func.func @mean_f16_all
// CHECK-NEXT:    tk.cast %x : tensor<2x3xf16> to tensor<2x3xf32>
// CHECK-NEXT:    tk.sum {{.*}} axes [0, 1] : tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT:    tk.fill 6.0 : tensor<f32>
// CHECK-NEXT:    tk.div
// CHECK-NEXT:    tk.cast {{.*}} : tensor<f32> to tensor<f16>
func.func @mean_f16_all(%x: tensor<2x3xf16>) -> tensor<f16> {
  %m = tk.mean %x axes [0, 1] : tensor<2x3xf16> -> tensor<f16>
  func.return %m : tensor<f16>
}
