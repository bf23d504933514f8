// tk.column_partials (made by tile-column-partials inside a tile.gemm): custom
// and generic round trips; the last run of rows may be short (100 = 6 x 16 + 4).
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @partials
func.func @partials(%x: tensor<100x8xbf16>, %y: tensor<32x3xf32>) {
  // CHECK-NEXT: %p = tk.column_partials %x rows 16 : tensor<100x8xbf16> -> tensor<7x8xf32>
  // GENERIC: %p = "tk.column_partials"(%x) <{rows = 16 : i64}> : (tensor<100x8xbf16>) -> tensor<7x8xf32>
  %p = tk.column_partials %x rows 16 : tensor<100x8xbf16> -> tensor<7x8xf32>
  // CHECK-NEXT: %q = tk.column_partials %y rows 1 : tensor<32x3xf32> -> tensor<32x3xf32>
  %q = tk.column_partials %y rows 1 : tensor<32x3xf32> -> tensor<32x3xf32>
  func.return
}
