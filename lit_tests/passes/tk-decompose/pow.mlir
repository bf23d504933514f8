// RUN: trainkernel-opt %s -p tk-decompose | filecheck %s

// CHECK-LABEL: func.func @special_exponents
// CHECK-SAME:    (%x: tensor<4xbf16>)
// CHECK-NEXT:    %[[SQ:.*]] = tk.mul %x, %x : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
// CHECK-NEXT:    %[[ONE:.*]] = tk.fill 1.0 : tensor<4xbf16>
// CHECK-NEXT:    %[[RT:.*]] = tk.sqrt %x : tensor<4xbf16>
// CHECK-NEXT:    %[[C1:.*]] = tk.fill 1.0 : tensor<bf16>
// CHECK-NEXT:    %[[INV:.*]] = tk.div %[[C1]], %x : (tensor<bf16>, tensor<4xbf16>) -> tensor<4xbf16>
// CHECK-NEXT:    func.return %[[SQ]], %x, %[[ONE]], %[[RT]], %[[INV]]
func.func @special_exponents(%x: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>) {
  %p2 = tk.pow %x, 2.0 : tensor<4xbf16>
  %p1 = tk.pow %x, 1.0 : tensor<4xbf16>
  %p0 = tk.pow %x, 0.0 : tensor<4xbf16>
  %ph = tk.pow %x, 0.5 : tensor<4xbf16>
  %pm = tk.pow %x, -1.0 : tensor<4xbf16>
  func.return %p2, %p1, %p0, %ph, %pm : tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>
}

// Other exponents stay pow. For f16, PyTorch computes pow(x, 0.5) with powf,
// which differs from sqrt at -0.0: kept.
// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    %a = tk.pow %x, 3.0 : tensor<4xf32>
// CHECK-NEXT:    %b = tk.pow %x, 1.5 : tensor<4xf32>
// CHECK-NEXT:    %c = tk.pow %h, 0.5 : tensor<4xf16>
func.func @kept(%x: tensor<4xf32>, %h: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>) {
  %a = tk.pow %x, 3.0 : tensor<4xf32>
  %b = tk.pow %x, 1.5 : tensor<4xf32>
  %c = tk.pow %h, 0.5 : tensor<4xf16>
  func.return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf16>
}

// relu_grad is a core op (one select); relu, maximum and the rest stay too.
// CHECK-LABEL: func.func @core_untouched
// CHECK-NEXT:    %r = tk.relu %x
// CHECK-NEXT:    %g = tk.relu_grad %d, %r
// CHECK-NEXT:    %m = tk.maximum %x, %d
// CHECK-NEXT:    %s = tk.sum %m axes [0]
// CHECK-NEXT:    func.return
func.func @core_untouched(%x: tensor<4xf32>, %d: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %r = tk.relu %x : tensor<4xf32>
  %g = tk.relu_grad %d, %r : tensor<4xf32>
  %m = tk.maximum %x, %d : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = tk.sum %m axes [0] : tensor<4xf32> -> tensor<f32>
  func.return %g, %m, %s : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

// Inside a fused region too.
// CHECK-LABEL: func.func @in_fused
// CHECK:         tk.fused
// CHECK:         tk.mul %y, %y
// CHECK-NOT:     tk.pow
func.func @in_fused(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = tk.fused %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%y: tensor<4xf32>):
    %p = tk.pow %y, 2.0 : tensor<4xf32>
    tk.yield %p : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
