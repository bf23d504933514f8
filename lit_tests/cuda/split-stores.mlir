// -t cuda, on the online schedule of resident-exchange.mlir: a resident product's
// store lambdas go through tk::split_on(tk_more, ...) exactly where their stores
// depend on tk_more (the SGD update's: state homes while another step follows, the
// outputs in the last step), taking tk_more as their first argument, so that
// tk::smem_gemm compiles its store loop once for each value (perf-log step 109).
// A product whose stores do not depend on it (h, its ReLU gradient) keeps a plain
// store lambda: two copies of its loop would buy nothing.
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile,tile-resident' -t cuda | filecheck %s

// CHECK:      { // tile.gemm 64x256x128 mma.bf16 NN, split 1
// CHECK:      }, [&](int il, int jl, const float* vals) {
// CHECK-NEXT:   const int i = il + 0, j = jl + 16 * rank;
// CHECK-NEXT:   s{{[0-9]+}}[(i)*24 + ((j) - 16 * rank)] = tk::from_float<__nv_bfloat16>(vals[0]);
// CHECK-NEXT: });
// CHECK:      { // tile.gemm 64x256x16 mma.bf16 NT, split 1
// CHECK:      }, [&](int il, int jl, const float* vals) {
// CHECK:      { // tile.gemm 256x16x64 mma.bf16 TN, split 0
// CHECK:      }, tk::split_on(tk_more, [&](auto tk_more, int il, int jl, const float* vals) {
// CHECK-NEXT:   const int i = il + 16 * rank, j = jl + 0;
// CHECK-NEXT:   if (!tk_more) b{{[0-9]+}}_out3[(i)*16 + (j)] = tk::from_float<float>(vals[0]);
// CHECK-NEXT:   if (!tk_more) b{{[0-9]+}}[(i)*16 + (j)] = tk::from_float<float>(vals[1]);
// CHECK-NEXT:   if (tk_more) s{{[0-9]+}}[((i) - 16 * rank)*20 + (j)] = tk::from_float<float>(vals[1]);
// CHECK-NEXT:   if (tk_more) s{{[0-9]+}}_next[((i) - 16 * rank)*24 + (j)] = tk::from_float<__nv_bfloat16>(vals[1]);
// CHECK-NEXT: }));
// CHECK:      { // tile.gemm 128x256x64 mma.bf16 TN, split 1
// CHECK:      }, tk::split_on(tk_more, [&](auto tk_more, int il, int jl, const float* vals) {
// CHECK-NEXT:   const int i = il + 0, j = jl + 16 * rank;
// CHECK-NEXT:   if (!tk_more) b{{[0-9]+}}_out1[(i)*256 + (j)] = tk::from_float<float>(vals[0]);
// CHECK:      }));
// CHECK-NOT:  tk::split_on
// CHECK:      tk_launch_steps
