// tk-legalize-masks: i1 values computed by tk ops become 0/1 f32 masks; function
// boundaries keep i1 (an argument is converted once, a returned mask is
// compared back).
// RUN: trainkernel-opt %s -p tk-legalize-masks --split-input-file | filecheck %s

// clamp's backward: two compares, a logical and (a select of masks), a select of values.
// CHECK-LABEL: func.func @clamp_backward
// CHECK-NEXT:    %ge = tk.cmp ge %x, %lo : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xf32>
// CHECK-NEXT:    %le = tk.cmp le %x, %hi : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xf32>
// CHECK-NEXT:    %false = tk.fill 0.0 : tensor<f32>
// CHECK-NEXT:    %and = tk.select %ge, %le, %false : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %zero = tk.fill 0.0 : tensor<bf16>
// CHECK-NEXT:    %dx = tk.select %and, %g, %zero : (tensor<4x8xf32>, tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
// CHECK-NEXT:    func.return %dx : tensor<4x8xbf16>
// CHECK-NOT:     i1
func.func @clamp_backward(%x: tensor<4x8xbf16>, %g: tensor<4x8xbf16>, %lo: tensor<bf16>, %hi: tensor<bf16>) -> tensor<4x8xbf16> {
  %ge = tk.cmp ge %x, %lo : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xi1>
  %le = tk.cmp le %x, %hi : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xi1>
  %false = tk.fill 0.0 : tensor<i1>
  %and = tk.select %ge, %le, %false : (tensor<4x8xi1>, tensor<4x8xi1>, tensor<i1>) -> tensor<4x8xi1>
  %zero = tk.fill 0.0 : tensor<bf16>
  %dx = tk.select %and, %g, %zero : (tensor<4x8xi1>, tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  func.return %dx : tensor<4x8xbf16>
}

// -----

// A mask in arithmetic (amax's backward counts the maxima): the cast to f32
// disappears, a cast to bf16 converts the 0/1 values; views of a mask are
// views of the f32 mask.
// CHECK-LABEL: func.func @casts_and_views
// CHECK-NEXT:    %eq = tk.cmp eq %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %tm = tk.transpose %eq perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %h = tk.cast %eq : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT:    %n = tk.sum %eq axes [1] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %tm, %h, %n : tensor<8x4xf32>, tensor<4x8xbf16>, tensor<4xf32>
func.func @casts_and_views(%x: tensor<4x8xf32>, %m: tensor<4x1xf32>) -> (tensor<8x4xf32>, tensor<4x8xbf16>, tensor<4xf32>) {
  %eq = tk.cmp eq %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xi1>
  %tm = tk.transpose %eq perm [1, 0] : tensor<4x8xi1> -> tensor<8x4xi1>
  %t = tk.cast %tm : tensor<8x4xi1> to tensor<8x4xf32>
  %h = tk.cast %eq : tensor<4x8xi1> to tensor<4x8xbf16>
  %f = tk.cast %eq : tensor<4x8xi1> to tensor<4x8xf32>
  %n = tk.sum %f axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %t, %h, %n : tensor<8x4xf32>, tensor<4x8xbf16>, tensor<4xf32>
}

// -----

// Boundaries: an i1 argument is converted once; a returned mask is i1 again;
// a float -> i1 cast is `x != 0`.
// CHECK-LABEL: func.func @boundaries
// CHECK-NEXT:    %0 = tk.cast %done : tensor<4xi1> to tensor<4xf32>
// CHECK-NEXT:    %r = tk.select %0, %zero, %x : (tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %1 = tk.fill 0.0 : tensor<f32>
// CHECK-NEXT:    %nz = tk.cmp ne %x, %1 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    %false = tk.fill 0.0 : tensor<f32>
// CHECK-NEXT:    %both = tk.select %nz, %0, %false : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    %2 = tk.fill 0.0 : tensor<f32>
// CHECK-NEXT:    %3 = tk.cmp ne %both, %2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
// CHECK-NEXT:    func.return %r, %3 : tensor<4xf32>, tensor<4xi1>
func.func @boundaries(%done: tensor<4xi1>, %x: tensor<4xf32>, %zero: tensor<f32>) -> (tensor<4xf32>, tensor<4xi1>) {
  %r = tk.select %done, %zero, %x : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %nz = tk.cast %x : tensor<4xf32> to tensor<4xi1>
  %false = tk.fill 0.0 : tensor<i1>
  %both = tk.select %nz, %done, %false : (tensor<4xi1>, tensor<4xi1>, tensor<i1>) -> tensor<4xi1>
  func.return %r, %both : tensor<4xf32>, tensor<4xi1>
}

// -----

// Integer labels: the i64 argument is converted once; iota, the comparison and
// a select of i64 values run on f32 (exact below 2**24); a returned label is
// cast back to i64.
// CHECK-LABEL: func.func @labels
// CHECK-NEXT:    %c = tk.iota axis 1 : tensor<1x10xf32>
// CHECK-NEXT:    %0 = tk.cast %t : tensor<8x1xi64> to tensor<8x1xf32>
// CHECK-NEXT:    %hot = tk.cmp eq %0, %c : (tensor<8x1xf32>, tensor<1x10xf32>) -> tensor<8x10xf32>
// CHECK-NEXT:    %g = tk.select %hot, %x, %ninf : (tensor<8x10xf32>, tensor<8x10xf32>, tensor<f32>) -> tensor<8x10xf32>
// CHECK-NEXT:    %zero = tk.fill 0.0 : tensor<f32>
// CHECK-NEXT:    %w = tk.select %hot, %0, %zero : (tensor<8x10xf32>, tensor<8x1xf32>, tensor<f32>) -> tensor<8x10xf32>
// CHECK-NEXT:    %1 = tk.cast %w : tensor<8x10xf32> to tensor<8x10xi64>
// CHECK-NEXT:    func.return %g, %1 : tensor<8x10xf32>, tensor<8x10xi64>
func.func @labels(%t: tensor<8x1xi64>, %x: tensor<8x10xf32>, %ninf: tensor<f32>) -> (tensor<8x10xf32>, tensor<8x10xi64>) {
  %c = tk.iota axis 1 : tensor<1x10xi64>
  %hot = tk.cmp eq %t, %c : (tensor<8x1xi64>, tensor<1x10xi64>) -> tensor<8x10xi1>
  %g = tk.select %hot, %x, %ninf : (tensor<8x10xi1>, tensor<8x10xf32>, tensor<f32>) -> tensor<8x10xf32>
  %zero = tk.fill 0.0 : tensor<i64>
  %w = tk.select %hot, %t, %zero : (tensor<8x10xi1>, tensor<8x1xi64>, tensor<i64>) -> tensor<8x10xi64>
  func.return %g, %w : tensor<8x10xf32>, tensor<8x10xi64>
}
