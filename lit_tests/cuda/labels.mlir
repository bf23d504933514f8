// -t cuda on integer labels (tk-legalize-masks makes them f32): an int64
// argument is read as a float, tk.iota is its own index, the one-hot a compare.
// RUN: trainkernel-opt %s -p 'tk-legalize-masks,canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile' -t cuda | filecheck %s

// CHECK-LABEL: tk_labels_kernel
// CHECK:       long long* b0_t = (long long*)p.buf[0];
// The cast of the labels is a map of its own; the iota is cloned into its
// reader (a constant, like a fill: no buffer, no phase).
// CHECK:       tk_l0[u] = tk::to_float(b0_t[(i0)]);
// CHECK:       const float v1 = tk_l0[u];
// CHECK:       { // tile.map: 80 elements
// CHECK:         tk_l0[u] = tk::to_float({{t[0-9]+}}[(i0)]);
// CHECK:         const float [[C:v[0-9]+]] = (float)(i1);
// CHECK:         ((tk_l0[u]) == ([[C]]) ? 1.0f : 0.0f)
func.func @labels(%t: tensor<8x1xi64>, %x: tensor<8x10xf32>) -> tensor<8x10xf32> {
  %c = tk.iota axis 1 : tensor<1x10xi64>
  %hot = tk.cmp eq %t, %c : (tensor<8x1xi64>, tensor<1x10xi64>) -> tensor<8x10xi1>
  %zero = tk.fill 0.0 : tensor<f32>
  %g = tk.select %hot, %x, %zero : (tensor<8x10xi1>, tensor<8x10xf32>, tensor<f32>) -> tensor<8x10xf32>
  func.return %g : tensor<8x10xf32>
}
