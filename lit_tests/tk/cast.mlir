// tk.cast: custom and generic round trips.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @casts
func.func @casts(%x: tensor<4x8xf32>, %s: tensor<f16>, %b: tensor<8xi1>) {
  // CHECK-NEXT: %lo = tk.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  // GENERIC: %lo = "tk.cast"(%x) : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %lo = tk.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK-NEXT: %hi = tk.cast %lo : tensor<4x8xbf16> to tensor<4x8xf32>
  %hi = tk.cast %lo : tensor<4x8xbf16> to tensor<4x8xf32>
  // CHECK-NEXT: %h = tk.cast %lo : tensor<4x8xbf16> to tensor<4x8xf16>
  %h = tk.cast %lo : tensor<4x8xbf16> to tensor<4x8xf16>
  // CHECK-NEXT: %s32 = tk.cast %s {tag} : tensor<f16> to tensor<f32>
  // GENERIC: %s32 = "tk.cast"(%s) {tag} : (tensor<f16>) -> tensor<f32>
  %s32 = tk.cast %s {tag} : tensor<f16> to tensor<f32>
  // Same type: an identity (canonicalize removes it).
  // CHECK-NEXT: %same = tk.cast %x : tensor<4x8xf32> to tensor<4x8xf32>
  %same = tk.cast %x : tensor<4x8xf32> to tensor<4x8xf32>
  // Booleans and indices convert too.
  // CHECK-NEXT: %bf = tk.cast %b : tensor<8xi1> to tensor<8xf32>
  %bf = tk.cast %b : tensor<8xi1> to tensor<8xf32>
  // CHECK-NEXT: %bi = tk.cast %b : tensor<8xi1> to tensor<8xi64>
  %bi = tk.cast %b : tensor<8xi1> to tensor<8xi64>
  func.return
}
