// tk.fill: custom form round-trips, and so does the generic form.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @fills()
func.func @fills() {
  // A rank-0 fill is a scalar constant.
  // CHECK-NEXT: %s = tk.fill 0.001 : tensor<f32>
  // GENERIC: %s = "tk.fill"() <{value = 1.000000e-03 : f64}> : () -> tensor<f32>
  %s = tk.fill 0.001 : tensor<f32>
  // Integers literals are read as floats and printed with a '.'.
  // CHECK-NEXT: %z = tk.fill 0.0 : tensor<4x8xbf16>
  %z = tk.fill 0 : tensor<4x8xbf16>
  // CHECK-NEXT: %n = tk.fill -3.0 : tensor<16xf16>
  %n = tk.fill -3 : tensor<16xf16>
  // Every bit of the double survives printing.
  // CHECK-NEXT: %p = tk.fill 0.1234567891234567 : tensor<2x2xf32>
  // GENERIC: <{value = 0.1234567891234567 : f64}>
  %p = tk.fill 0.1234567891234567 : tensor<2x2xf32>
  // Exponents keep a '.' in the mantissa, or they would not parse back.
  // CHECK-NEXT: %tiny = tk.fill 1.0e-07 : tensor<f32>
  %tiny = tk.fill 1.0e-7 : tensor<f32>
  // CHECK-NEXT: %huge = tk.fill -1.0e+300 : tensor<f32>
  %huge = tk.fill -1.0e300 : tensor<f32>
  // CHECK-NEXT: %nz = tk.fill -0.0 : tensor<f32>
  %nz = tk.fill -0.0 : tensor<f32>
  // Non-finite constants (a max reduction's identity, masks).
  // CHECK-NEXT: %ninf = tk.fill -inf : tensor<8xf32>
  // GENERIC: %ninf = "tk.fill"() <{value = 0xfff0000000000000 : f64}> : () -> tensor<8xf32>
  %ninf = tk.fill -inf : tensor<8xf32>
  // CHECK-NEXT: %pinf = tk.fill inf : tensor<8xbf16>
  %pinf = tk.fill inf : tensor<8xbf16>
  // CHECK-NEXT: %nan = tk.fill nan : tensor<f16>
  %nan = tk.fill nan : tensor<f16>
  // Integer and boolean fills.
  // CHECK-NEXT: %i = tk.fill 7.0 : tensor<3xi64>
  %i = tk.fill 7 : tensor<3xi64>
  // CHECK-NEXT: %b = tk.fill 1.0 : tensor<2x2xi1>
  %b = tk.fill 1.0 : tensor<2x2xi1>
  // Zero-sized tensors are allowed.
  // CHECK-NEXT: %e = tk.fill 2.5 : tensor<0x4xf32>
  %e = tk.fill 2.5 : tensor<0x4xf32>
  // Discardable attributes print after the value.
  // CHECK-NEXT: %a = tk.fill 1.5 {tag = "lr"} : tensor<f32>
  // GENERIC: %a = "tk.fill"() <{value = 1.500000e+00 : f64}> {tag = "lr"} : () -> tensor<f32>
  %a = tk.fill 1.5 {tag = "lr"} : tensor<f32>
  // CHECK-NEXT: func.return
  func.return
}
