// -t cuda: the per-element C of the activations, their backward ops and the
// masks (the `EXPR` table of the printer). Formulas and float constants are
// those of PyTorch's CUDA kernels; masks are 0/1 floats after
// tk-legalize-masks; each value is rounded to bf16 right after its op (and inside
// tanh_grad, whose CUDA kernel computes in bf16 itself). The rounded value keeps
// its bits (`v<n>_bits`, target.store_rounded_bits) and its store writes them.
// RUN: trainkernel-opt %s -p 'tk-legalize-masks,canonicalize,tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile' -t cuda | filecheck %s

// Every map loads its operands first (tk_l<k>[u]), then computes.
// CHECK: tk_l0[u] = tk::to_float(b0_x[(i0)*8 + (i1)]);
// CHECK-NEXT: tk_l1[u] = tk::to_float(b1_g[(i0)*8 + (i1)]);
// CHECK: const __nv_bfloat16 [[T:v[0-9]+]]_bits = tk::from_float<__nv_bfloat16>(tanhf(tk_l0[u]));
// CHECK-NEXT: const float [[T]] = tk::to_float([[T]]_bits);
// CHECK-NEXT: tk::from_float<__nv_bfloat16>(([&]() { const float g = tk_l1[u]; const float y = [[T]]; return g * tk::rounded<__nv_bfloat16>(1.0f - tk::rounded<__nv_bfloat16>(y * y)); }()));
// CHECK: = [[T]]_bits;
// CHECK: tk::from_float<__nv_bfloat16>(1.0f / (1.0f + expf(-(tk_l0[u]))))
// CHECK: return x * 0.5f * (1.0f + erff(x * 0.7071067690849304f)); }()
// CHECK: const float x_cube = x * x * x; const float inner = 0.7978845834732056f * (x + 0.044714998453855515f * x_cube); return 0.5f * x * (1.0f + tanhf(inner)); }()
// CHECK: const float cdf = 0.5f * (1.0f + erff(x * 0.7071067690849304f)); const float pdf = expf(-0.5f * x * x) * 0.3989422917366028f; return dy * (cdf + x * pdf); }()
// CHECK: return (x * 2.0f) > 1.0f ? x : log1pf(expf(x * 2.0f)) / 2.0f; }()
// CHECK: const float z = expf(x * 2.0f); return (x * 2.0f) > 1.0f ? g : g * z / (z + 1.0f); }()
// CHECK: return x > 0.0f ? x : x * 0.10000000149011612f; }()
// SELU's constants: negcoef = alpha * scale rounded to float, as the kernel computes it.
// CHECK: return x > 0.0f ? x * 1.0507010221481323f : expm1f(x * 1.0f) * 1.7580993175506592f; }()
// CHECK: return b <= 0.0f ? g * 1.0f * (b + 1.7580993175506592f) : g * 1.0507010221481323f; }()
// CHECK: tk::from_float<__nv_bfloat16>(fabsf(tk_l0[u]))
// CHECK: return (float)(0.0f < x) - (float)(x < 0.0f); }()
// CHECK: tk::from_float<__nv_bfloat16>(rsqrtf(tk_l0[u]))
// The mask is a float: compare gives 1.0f or 0.0f (no rounding: f32), select tests nonzero.
// CHECK: tk_l0[u] = tk::to_float(b0_x[(i0)*8 + (i1)]);
// CHECK-NEXT: tk_l1[u] = tk::to_float(b1_g[(i0)*8 + (i1)]);
// CHECK: const __nv_bfloat16 [[Z:v[0-9]+]]_bits = tk::from_float<__nv_bfloat16>(0.0f);
// CHECK-NEXT: const float [[Z]] = tk::to_float([[Z]]_bits);
// CHECK-NEXT: const float [[M:v[0-9]+]] = ((tk_l0[u]) > ([[Z]]) ? 1.0f : 0.0f);
// A loaded operand (tk_l1) keeps no bits: the select rounds its float.
// CHECK-NEXT: tk::from_float<__nv_bfloat16>((([[M]]) != 0.0f ? (tk_l1[u]) : ([[Z]])));
// relu backward is aten.threshold_backward, `out <= 0 ? 0 : grad`: a NaN `out` passes the gradient.
// CHECK: tk_l0[u] = tk::to_float(b1_g[(i0)*8 + (i1)]);
// CHECK-NEXT: tk_l1[u] = tk::to_float(b0_x[(i0)*8 + (i1)]);
// CHECK: tk::from_float<__nv_bfloat16>(((tk_l1[u]) <= 0.0f ? 0.0f : (tk_l0[u])))
func.func @acts(%x: tensor<4x8xbf16>, %g: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %t = tk.tanh %x : tensor<4x8xbf16>
  %dt = tk.tanh_grad %g, %t : tensor<4x8xbf16>
  %s = tk.sigmoid %x : tensor<4x8xbf16>
  %ge = tk.gelu %x : tensor<4x8xbf16>
  %gt = tk.gelu %x tanh : tensor<4x8xbf16>
  %dge = tk.gelu_grad %g, %x : tensor<4x8xbf16>
  %sp = tk.softplus %x beta 2.0 threshold 1.0 : tensor<4x8xbf16>
  %dsp = tk.softplus_grad %g, %x beta 2.0 threshold 1.0 : tensor<4x8xbf16>
  %lr = tk.leaky_relu %x negative_slope 0.1 : tensor<4x8xbf16>
  %selu = tk.elu %x alpha 1.6732632423543772 scale 1.0507009873554805 input_scale 1.0 : tensor<4x8xbf16>
  %dselu = tk.elu_grad %g, %x alpha 1.6732632423543772 scale 1.0507009873554805 input_scale 1.0 is_result : tensor<4x8xbf16>
  %abs = tk.abs %x : tensor<4x8xbf16>
  %sign = tk.sign %x : tensor<4x8xbf16>
  %r = tk.rsqrt %x : tensor<4x8xbf16>
  %zero = tk.fill 0.0 : tensor<bf16>
  %m = tk.cmp gt %x, %zero : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xi1>
  %w = tk.select %m, %g, %zero : (tensor<4x8xi1>, tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %rg = tk.relu_grad %g, %x : tensor<4x8xbf16>
  func.return %dt, %s, %ge, %gt, %dge, %sp, %dsp, %lr, %selu, %dselu, %abs, %sign, %r, %w, %t, %rg : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>
}

