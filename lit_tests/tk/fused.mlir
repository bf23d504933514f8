// tk.fused and tk.yield: custom and generic round trips.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// A pointwise chain with two results.
// CHECK-LABEL: func.func @pointwise
func.func @pointwise(%a: tensor<4x8xf32>, %lr: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  // CHECK-NEXT: %r, %r_1 = tk.fused %a, %lr : (tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  // CHECK-NEXT: ^bb0(%x: tensor<4x8xf32>, %s: tensor<f32>):
  // CHECK-NEXT:   %t = tk.mul %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK-NEXT:   %u = tk.relu %t : tensor<4x8xf32>
  // CHECK-NEXT:   %c = tk.cast %u : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK-NEXT:   tk.yield %u, %c : tensor<4x8xf32>, tensor<4x8xbf16>
  // CHECK-NEXT: }
  // GENERIC:      %r, %r_1 = "tk.fused"(%a, %lr) ({
  // GENERIC-NEXT: ^bb0(%x: tensor<4x8xf32>, %s: tensor<f32>):
  // GENERIC:        "tk.yield"(%u, %c) : (tensor<4x8xf32>, tensor<4x8xbf16>) -> ()
  // GENERIC-NEXT: }) : (tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>)
  %r:2 = tk.fused %a, %lr : (tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  ^bb0(%x: tensor<4x8xf32>, %s: tensor<f32>):
    %t = tk.mul %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %u = tk.relu %t : tensor<4x8xf32>
    %c = tk.cast %u : tensor<4x8xf32> to tensor<4x8xbf16>
    tk.yield %u, %c : tensor<4x8xf32>, tensor<4x8xbf16>
  }
  // CHECK-NEXT: func.return %r, %r_1 : tensor<4x8xf32>, tensor<4x8xbf16>
  func.return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xbf16>
}

// A matmul with its epilogue; constants live inside the region.
// CHECK-LABEL: func.func @epilogue
func.func @epilogue(%x: tensor<16x32xbf16>, %w: tensor<64x32xbf16>, %b: tensor<64xbf16>) -> tensor<16x64xbf16> {
  // CHECK-NEXT: %y = tk.fused %x, %w, %b {tag} : (tensor<16x32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16> {
  // CHECK-NEXT: ^bb0(%xa: tensor<16x32xbf16>, %wa: tensor<64x32xbf16>, %ba: tensor<64xbf16>):
  // CHECK-NEXT:   %mm = tk.matmul %xa, %wa transpose_b : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  // CHECK-NEXT:   %h = tk.fill 0.5 : tensor<f32>
  // CHECK-NEXT:   %sb = tk.expand %ba : tensor<64xbf16> -> tensor<16x64xbf16>
  // CHECK-NEXT:   %z = tk.add %mm, %sb : (tensor<16x64xbf16>, tensor<16x64xbf16>) -> tensor<16x64xbf16>
  // CHECK-NEXT:   %zh = tk.mul %z, %h : (tensor<16x64xbf16>, tensor<f32>) -> tensor<16x64xbf16>
  // CHECK-NEXT:   tk.yield %zh : tensor<16x64xbf16>
  // CHECK-NEXT: }
  // GENERIC: "tk.fused"(%x, %w, %b) ({
  // GENERIC: }) {tag} : (tensor<16x32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %y = tk.fused %x, %w, %b {tag} : (tensor<16x32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16> {
  ^bb0(%xa: tensor<16x32xbf16>, %wa: tensor<64x32xbf16>, %ba: tensor<64xbf16>):
    %mm = tk.matmul %xa, %wa transpose_b : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
    %h = tk.fill 0.5 : tensor<f32>
    %sb = tk.expand %ba : tensor<64xbf16> -> tensor<16x64xbf16>
    %z = tk.add %mm, %sb : (tensor<16x64xbf16>, tensor<16x64xbf16>) -> tensor<16x64xbf16>
    %zh = tk.mul %z, %h : (tensor<16x64xbf16>, tensor<f32>) -> tensor<16x64xbf16>
    tk.yield %zh : tensor<16x64xbf16>
  }
  func.return %y : tensor<16x64xbf16>
}

// Degenerate but valid: no operands, a constant result; and nothing at all.
// CHECK-LABEL: func.func @degenerate
func.func @degenerate() -> tensor<4xf32> {
  // CHECK-NEXT: %k = tk.fused : () -> tensor<4xf32> {
  // CHECK-NEXT:   %one = tk.fill 1.0 : tensor<4xf32>
  // CHECK-NEXT:   tk.yield %one : tensor<4xf32>
  // CHECK-NEXT: }
  %k = tk.fused : () -> tensor<4xf32> {
    %one = tk.fill 1.0 : tensor<4xf32>
    tk.yield %one : tensor<4xf32>
  }
  // CHECK-NEXT: tk.fused : () -> () {
  // CHECK-NEXT:   tk.yield
  // CHECK-NEXT: }
  // GENERIC: "tk.yield"() : () -> ()
  tk.fused : () -> () {
    tk.yield
  }
  func.return %k : tensor<4xf32>
}

// A row reduction with its epilogue (softmax-style max, then shift).
// CHECK-LABEL: func.func @reduction_epilogue
func.func @reduction_epilogue(%x: tensor<16x10xf32>) -> (tensor<16x10xf32>, tensor<16xi64>) {
  // CHECK-NEXT: %r, %r_1 = tk.fused %x : (tensor<16x10xf32>) -> (tensor<16x10xf32>, tensor<16xi64>) {
  // CHECK-NEXT: ^bb0(%a: tensor<16x10xf32>):
  // CHECK-NEXT:   %m = tk.max %a axes [1] keepdim : tensor<16x10xf32> -> tensor<16x1xf32>
  // CHECK-NEXT:   %i = tk.argmax %a axes [1] : tensor<16x10xf32> -> tensor<16xi64>
  // CHECK-NEXT:   %d = tk.sub %a, %m : (tensor<16x10xf32>, tensor<16x1xf32>) -> tensor<16x10xf32>
  // CHECK-NEXT:   tk.yield %d, %i : tensor<16x10xf32>, tensor<16xi64>
  // CHECK-NEXT: }
  %r:2 = tk.fused %x : (tensor<16x10xf32>) -> (tensor<16x10xf32>, tensor<16xi64>) {
  ^bb0(%a: tensor<16x10xf32>):
    %m = tk.max %a axes [1] keepdim : tensor<16x10xf32> -> tensor<16x1xf32>
    %i = tk.argmax %a axes [1] : tensor<16x10xf32> -> tensor<16xi64>
    %d = tk.sub %a, %m : (tensor<16x10xf32>, tensor<16x1xf32>) -> tensor<16x10xf32>
    tk.yield %d, %i : tensor<16x10xf32>, tensor<16xi64>
  }
  func.return %r#0, %r#1 : tensor<16x10xf32>, tensor<16xi64>
}
