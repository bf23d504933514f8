// tk.column_partials verifier errors.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @short_result(%x: tensor<100x8xbf16>) {
  // CHECK: tk.column_partials: result must be tensor<7x8xf32> (runs of 16 rows of 100), got tensor<6x8xf32>
  %p = tk.column_partials %x rows 16 : tensor<100x8xbf16> -> tensor<6x8xf32>
  func.return
}

// -----

func.func @not_f32(%x: tensor<32x8xbf16>) {
  // CHECK: tk.column_partials: result must be tensor<2x8xf32> (runs of 16 rows of 32), got tensor<2x8xbf16>
  %p = tk.column_partials %x rows 16 : tensor<32x8xbf16> -> tensor<2x8xbf16>
  func.return
}

// -----

func.func @rank_one(%x: tensor<32xf32>) {
  // CHECK: tk.column_partials: input must be a rank-2 floating tensor, got tensor<32xf32>
  %p = tk.column_partials %x rows 16 : tensor<32xf32> -> tensor<2xf32>
  func.return
}

// -----

func.func @no_rows(%x: tensor<32x8xf32>) {
  // CHECK: tk.column_partials: rows must be positive, got 0
  %p = tk.column_partials %x rows 0 : tensor<32x8xf32> -> tensor<32x8xf32>
  func.return
}
