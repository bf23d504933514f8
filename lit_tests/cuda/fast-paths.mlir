// -t cuda, fast_paths (target.fast_paths): a resident map's divisions and square
// roots run tk::div_fast / tk::sqrt_fast, which clear tk_fast where an operand is
// outside their range instead of branching to a slow path; one test an iteration
// then computes every element again with `/` and sqrtf into the same values,
// before any store. A map without either op is printed as before. Off: `/` and
// sqrtf inline.
// RUN: trainkernel-opt %s -p 'tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile,tile-resident{mode=force}' -t 'cuda{fast_paths=on}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %s -p 'tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile,tile-resident{mode=force}' -t 'cuda{fast_paths=off}' | filecheck %s --check-prefix=OFF

func.func @adam_like(%m: tensor<8x32xf32>, %v: tensor<8x32xf32>, %c: tensor<f32>, %w: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %s = tk.sqrt %v : tensor<8x32xf32>
  %cb = tk.expand %c : tensor<f32> -> tensor<8x32xf32>
  %d = tk.div %s, %cb : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %q = tk.div %m, %d : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %w2 = tk.add %w, %w : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  func.return %q, %w2 : tensor<8x32xf32>, tensor<8x32xf32>
}

// A map with neither op (w + w), and the broadcast of c: as before.
// ON-NOT:   tk_fast
// ON:       const float {{v[0-9]+}} = __fadd_rn(
// ON-NOT:   tk_fast
// ON:       { // tile.map split -1: 256 elements per block
// ON:       bool tk_fast = true;
// ON-NEXT:  float [[S:v[0-9]+]] = tk::sqrt_fast({{.*}}, tk_fast);
// ON-NEXT:  float [[D:v[0-9]+]] = tk::div_fast([[S]], {{.*}}, tk_fast);
// ON-NEXT:  float [[Q:v[0-9]+]] = tk::div_fast({{.*}}, [[D]], tk_fast);
// ON-NEXT:  if (!tk_fast) {  // an operand outside the fast paths' range: IEEE `/` and sqrtf
// ON-NEXT:    [[S]] = sqrtf(
// ON-NEXT:    [[D]] = [[S]] /
// ON-NEXT:    [[Q]] = {{.*}} / [[D]];
// ON-NEXT:  }
// ON-NEXT:  if (ok0) {

// OFF-NOT:  tk_fast
// OFF:      const float {{v[0-9]+}} = sqrtf(
// OFF-NOT:  tk_fast
