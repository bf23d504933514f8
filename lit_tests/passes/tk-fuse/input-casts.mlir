// tk-fuse{input_casts=true}: a group that only casts function arguments joins
// the one group that reads it: the reader casts the argument where it reads it
// (a bf16 batch's y.float() inside the loss gradient's epilogue) instead of a
// group of its own writing a wider copy. Without the option the cast stays a
// group of its own. Not where a matmul reads the cast as an operand, nor where
// two groups read it, nor for a cast of a computed value.
// RUN: trainkernel-opt %s -p 'tk-fuse{input_casts=true}' | filecheck %s
// RUN: trainkernel-opt %s -p tk-fuse | filecheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @loss_grad(
// CHECK-NEXT:    %d = tk.fused %h, %w, %y : (tensor<4x16xbf16>, tensor<16x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[H:.*]]: tensor<4x16xbf16>, %[[W:.*]]: tensor<16x8xbf16>, %[[Y:.*]]: tensor<4x8xbf16>):
// CHECK-NEXT:      %m = tk.matmul %[[H]], %[[W]]
// CHECK-NEXT:      %yf = tk.cast %[[Y]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT:      %mf = tk.cast %m : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT:      %[[D:.*]] = tk.sub %mf, %yf
// CHECK-NEXT:      tk.yield %[[D]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %d
// OFF-LABEL:   func.func @loss_grad(
// OFF-NEXT:      %yf = tk.fused %y : (tensor<4x8xbf16>) -> tensor<4x8xf32> {
// OFF:           %d = tk.fused %h, %w, %yf :
func.func @loss_grad(%h: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %y: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  %yf = tk.cast %y : tensor<4x8xbf16> to tensor<4x8xf32>
  %m = tk.matmul %h, %w : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %mf = tk.cast %m : tensor<4x8xbf16> to tensor<4x8xf32>
  %d = tk.sub %mf, %yf : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %d : tensor<4x8xf32>
}

// A weight's cast is the matmul's operand: it stays a group of its own.
// CHECK-LABEL: func.func @operand(
// CHECK-NEXT:    %wb = tk.fused %w : (tensor<16x8xf32>) -> tensor<16x8xbf16> {
// CHECK:         %r = tk.fused %h, %wb :
func.func @operand(%h: tensor<4x16xbf16>, %w: tensor<16x8xf32>) -> tensor<4x8xbf16> {
  %wb = tk.cast %w : tensor<16x8xf32> to tensor<16x8xbf16>
  %m = tk.matmul %h, %wb : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %r = tk.relu %m : tensor<4x8xbf16>
  func.return %r : tensor<4x8xbf16>
}

// Two groups read the cast (two matmuls' epilogues): each would read the
// argument and cast it again; the cast stays a group of its own.
// CHECK-LABEL: func.func @two_readers(
// CHECK-NEXT:    %yf = tk.fused %y : (tensor<4x8xbf16>) -> tensor<4x8xf32> {
func.func @two_readers(%h: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %v: tensor<16x8xbf16>, %y: tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %yf = tk.cast %y : tensor<4x8xbf16> to tensor<4x8xf32>
  %m = tk.matmul %h, %w : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %mf = tk.cast %m : tensor<4x8xbf16> to tensor<4x8xf32>
  %d = tk.sub %mf, %yf : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = tk.matmul %h, %v : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %nf = tk.cast %n : tensor<4x8xbf16> to tensor<4x8xf32>
  %e = tk.sub %nf, %yf : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %d, %e : tensor<4x8xf32>, tensor<4x8xf32>
}

// The function returns the cast too: it stays a group of its own.
// CHECK-LABEL: func.func @returned(
// CHECK-NEXT:    %yf = tk.fused %y : (tensor<4x8xbf16>) -> tensor<4x8xf32> {
func.func @returned(%h: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %y: tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %yf = tk.cast %y : tensor<4x8xbf16> to tensor<4x8xf32>
  %m = tk.matmul %h, %w : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %mf = tk.cast %m : tensor<4x8xbf16> to tensor<4x8xf32>
  %d = tk.sub %mf, %yf : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %d, %yf : tensor<4x8xf32>, tensor<4x8xf32>
}
