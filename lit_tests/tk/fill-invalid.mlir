// tk.fill verifier errors.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @fractional_integer() {
  // CHECK: tk.fill of integer type i64 needs an integral value, got 1.5
  %0 = tk.fill 1.5 : tensor<4xi64>
  func.return
}

// -----

func.func @infinite_integer() {
  // CHECK: tk.fill of integer type i64 needs an integral value, got -inf
  %0 = tk.fill -inf : tensor<4xi64>
  func.return
}

// -----

func.func @nan_bool() {
  // CHECK: tk.fill of integer type i1 needs an integral value, got nan
  %0 = tk.fill nan : tensor<i1>
  func.return
}

// -----

func.func @bool_range() {
  // CHECK: tk.fill value 2.0 does not fit i1 (range [0, 1])
  %0 = tk.fill 2.0 : tensor<2xi1>
  func.return
}

// -----

func.func @bool_negative() {
  // CHECK: tk.fill value -1.0 does not fit i1 (range [0, 1])
  %0 = tk.fill -1 : tensor<2xi1>
  func.return
}

// -----

func.func @i64_range() {
  // CHECK: tk.fill value 1e+19 does not fit i64 (range [-9223372036854775808, 9223372036854775807])
  %0 = tk.fill 1.0e19 : tensor<i64>
  func.return
}

// -----

// The value is a property holding an f64 FloatAttr.
func.func @integer_attr() {
  // CHECK: 3 : i64 should be of base attribute float
  %0 = "tk.fill"() <{value = 3 : i64}> : () -> tensor<f32>
  func.return
}

// -----

func.func @missing_value() {
  // CHECK: property 'value' expected
  %0 = "tk.fill"() : () -> tensor<f32>
  func.return
}

// -----

func.func @element_type() {
  // CHECK: tk tensors hold f32, bf16, f16, i1 or i64, got tensor<4xi32>
  %0 = tk.fill 1.0 : tensor<4xi32>
  func.return
}
