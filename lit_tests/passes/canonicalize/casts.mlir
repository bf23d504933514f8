// RUN: trainkernel-opt %s -p canonicalize | filecheck %s

// A cast to the same type is the input.
// CHECK-LABEL: func.func @same_type
// CHECK-NEXT:    func.return %x
func.func @same_type(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %r = tk.cast %x : tensor<4xbf16> to tensor<4xbf16>
  func.return %r : tensor<4xbf16>
}

// Widening then narrowing back is the identity: bf16 -> f32 is exact.
// CHECK-LABEL: func.func @widen_then_back
// CHECK-NEXT:    func.return %x, %y
func.func @widen_then_back(%x: tensor<4xbf16>, %y: tensor<4xf16>) -> (tensor<4xbf16>, tensor<4xf16>) {
  %w = tk.cast %x : tensor<4xbf16> to tensor<4xf32>
  %r = tk.cast %w : tensor<4xf32> to tensor<4xbf16>
  %v = tk.cast %y : tensor<4xf16> to tensor<4xf32>
  %s = tk.cast %v : tensor<4xf32> to tensor<4xf16>
  func.return %r, %s : tensor<4xbf16>, tensor<4xf16>
}

// Narrowing then widening rounds: NOT the identity, both casts stay.
// CHECK-LABEL: func.func @narrow_then_widen
// CHECK-NEXT:    %n = tk.cast %x : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT:    %r = tk.cast %n : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT:    func.return %r
func.func @narrow_then_widen(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = tk.cast %x : tensor<4xf32> to tensor<4xbf16>
  %r = tk.cast %n : tensor<4xbf16> to tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// f16 -> f32 -> bf16 is not the identity (the types differ) but, as the first
// cast is exact, it is one cast f16 -> bf16 (the same single rounding).
// CHECK-LABEL: func.func @exact_then_narrow
// CHECK-NEXT:    %r = tk.cast %x : tensor<4xf16> to tensor<4xbf16>
// CHECK-NEXT:    func.return %r
func.func @exact_then_narrow(%x: tensor<4xf16>) -> tensor<4xbf16> {
  %w = tk.cast %x : tensor<4xf16> to tensor<4xf32>
  %r = tk.cast %w : tensor<4xf32> to tensor<4xbf16>
  func.return %r : tensor<4xbf16>
}

// Two roundings in a row (f32 -> f16 -> bf16) are not one rounding: kept.
// CHECK-LABEL: func.func @double_rounding_kept
// CHECK-NEXT:    %h = tk.cast %x : tensor<4xf32> to tensor<4xf16>
// CHECK-NEXT:    %r = tk.cast %h : tensor<4xf16> to tensor<4xbf16>
func.func @double_rounding_kept(%x: tensor<4xf32>) -> tensor<4xbf16> {
  %h = tk.cast %x : tensor<4xf32> to tensor<4xf16>
  %r = tk.cast %h : tensor<4xf16> to tensor<4xbf16>
  func.return %r : tensor<4xbf16>
}

// bf16 -> f16 -> bf16: f16 cannot hold every bf16 value (range, precision).
// CHECK-LABEL: func.func @lossy_round_trip_kept
// CHECK-NEXT:    %h = tk.cast %x : tensor<4xbf16> to tensor<4xf16>
// CHECK-NEXT:    %r = tk.cast %h : tensor<4xf16> to tensor<4xbf16>
func.func @lossy_round_trip_kept(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %h = tk.cast %x : tensor<4xbf16> to tensor<4xf16>
  %r = tk.cast %h : tensor<4xf16> to tensor<4xbf16>
  func.return %r : tensor<4xbf16>
}

// Float -> i1 -> float is a comparison with zero, not the identity.
// CHECK-LABEL: func.func @through_i1_kept
// CHECK-NEXT:    %b = tk.cast %x : tensor<4xf32> to tensor<4xi1>
// CHECK-NEXT:    %r = tk.cast %b : tensor<4xi1> to tensor<4xf32>
func.func @through_i1_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %b = tk.cast %x : tensor<4xf32> to tensor<4xi1>
  %r = tk.cast %b : tensor<4xi1> to tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// i1 -> f32 is exact: i1 -> f32 -> bf16 is i1 -> bf16.
// CHECK-LABEL: func.func @from_i1
// CHECK-NEXT:    %r = tk.cast %b : tensor<4xi1> to tensor<4xbf16>
func.func @from_i1(%b: tensor<4xi1>) -> tensor<4xbf16> {
  %w = tk.cast %b : tensor<4xi1> to tensor<4xf32>
  %r = tk.cast %w : tensor<4xf32> to tensor<4xbf16>
  func.return %r : tensor<4xbf16>
}
