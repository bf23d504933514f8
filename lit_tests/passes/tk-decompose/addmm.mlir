// RUN: trainkernel-opt %s -p tk-decompose | filecheck %s

// CHECK-LABEL: func.func @addmm_f32
// CHECK-NEXT:    %[[P:.*]] = tk.matmul %a, %b : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    %[[R:.*]] = tk.add %[[P]], %c : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @addmm_f32(%c: tensor<64xf32>, %a: tensor<16x32xf32>, %b: tensor<32x64xf32>) -> tensor<16x64xf32> {
  %r = tk.addmm %c, %a, %b : (tensor<64xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return %r : tensor<16x64xf32>
}

// bf16: the bias is added to the f32 product and the sum rounded once, as
// PyTorch's addmm does (matmul in bf16 then add would round twice).
// CHECK-LABEL: func.func @addmm_bf16
// CHECK-NEXT:    %[[A:.*]] = tk.cast %a : tensor<16x32xbf16> to tensor<16x32xf32>
// CHECK-NEXT:    %[[B:.*]] = tk.cast %b : tensor<32x64xbf16> to tensor<32x64xf32>
// CHECK-NEXT:    %[[C:.*]] = tk.cast %c : tensor<1x64xbf16> to tensor<1x64xf32>
// CHECK-NEXT:    %[[P:.*]] = tk.matmul %[[A]], %[[B]] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    %[[S:.*]] = tk.add %[[P]], %[[C]] : (tensor<16x64xf32>, tensor<1x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    %[[R:.*]] = tk.cast %[[S]] : tensor<16x64xf32> to tensor<16x64xbf16>
// CHECK-NEXT:    func.return %[[R]]
func.func @addmm_bf16(%c: tensor<1x64xbf16>, %a: tensor<16x32xbf16>, %b: tensor<32x64xbf16>) -> tensor<16x64xbf16> {
  %r = tk.addmm %c, %a, %b : (tensor<1x64xbf16>, tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  func.return %r : tensor<16x64xbf16>
}

// Plain matmuls (with transposes) are core: left alone.
// CHECK-LABEL: func.func @matmul_untouched
// CHECK-NEXT:    %r = tk.matmul %a, %b transpose_b : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
// CHECK-NEXT:    func.return %r
func.func @matmul_untouched(%a: tensor<16x32xbf16>, %b: tensor<64x32xbf16>) -> tensor<16x64xbf16> {
  %r = tk.matmul %a, %b transpose_b : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  func.return %r : tensor<16x64xbf16>
}
