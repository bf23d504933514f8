// tk.matmul (with transpose_a / transpose_b) and tk.addmm: custom and generic
// round trips.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<16x32xbf16>, %b: tensor<32x64xbf16>, %bt: tensor<64x32xbf16>, %at: tensor<32x16xbf16>) {
  // CHECK-NEXT: %nn = tk.matmul %a, %b : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  // GENERIC: %nn = "tk.matmul"(%a, %b) : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  %nn = tk.matmul %a, %b : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  // b stored as [n, k]: x @ w.T of a linear layer.
  // CHECK-NEXT: %nt = tk.matmul %a, %bt transpose_b : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  // GENERIC: %nt = "tk.matmul"(%a, %bt) <{transpose_b}> : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  %nt = tk.matmul %a, %bt transpose_b : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  // a stored as [k, m]: the weight gradient x.T @ dy.
  // CHECK-NEXT: %tn = tk.matmul %at, %b transpose_a : (tensor<32x16xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  // GENERIC: %tn = "tk.matmul"(%at, %b) <{transpose_a}> : (tensor<32x16xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  %tn = tk.matmul %at, %b transpose_a : (tensor<32x16xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  // CHECK-NEXT: %tt = tk.matmul %at, %bt transpose_a transpose_b : (tensor<32x16xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  // GENERIC: %tt = "tk.matmul"(%at, %bt) <{transpose_a, transpose_b}> : (tensor<32x16xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  %tt = tk.matmul %at, %bt transpose_a transpose_b : (tensor<32x16xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  // Discardable attributes come after the flags.
  // CHECK-NEXT: %tag = tk.matmul %a, %bt transpose_b {tag} : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  %tag = tk.matmul %a, %bt transpose_b {tag} : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  func.return
}

// CHECK-LABEL: func.func @matmul_f32
func.func @matmul_f32(%x: tensor<1x8xf32>, %w: tensor<8x1xf32>) -> tensor<1x1xf32> {
  // CHECK-NEXT: %d = tk.matmul %x, %w : (tensor<1x8xf32>, tensor<8x1xf32>) -> tensor<1x1xf32>
  %d = tk.matmul %x, %w : (tensor<1x8xf32>, tensor<8x1xf32>) -> tensor<1x1xf32>
  func.return %d : tensor<1x1xf32>
}

// CHECK-LABEL: func.func @addmm
func.func @addmm(%bias: tensor<64xf32>, %x: tensor<16x32xf32>, %w: tensor<32x64xf32>, %b2: tensor<16x64xf32>, %b0: tensor<f32>, %col: tensor<16x1xf32>) {
  // CHECK-NEXT: %y = tk.addmm %bias, %x, %w : (tensor<64xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  // GENERIC: %y = "tk.addmm"(%bias, %x, %w) : (tensor<64xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %y = tk.addmm %bias, %x, %w : (tensor<64xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  // The bias broadcasts to [m, n]: full, scalar or column.
  // CHECK-NEXT: %full = tk.addmm %b2, %x, %w : (tensor<16x64xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %full = tk.addmm %b2, %x, %w : (tensor<16x64xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  // CHECK-NEXT: %scal = tk.addmm %b0, %x, %w {tag} : (tensor<f32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %scal = tk.addmm %b0, %x, %w {tag} : (tensor<f32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  // CHECK-NEXT: %col_1 = tk.addmm %col, %x, %w : (tensor<16x1xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %col_1 = tk.addmm %col, %x, %w : (tensor<16x1xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return
}
