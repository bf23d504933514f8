// -t cuda, padded_columns (target.gemm_padded_columns): a product with N = 10 (not a
// whole 16-column pair) whose B is stored k-major in a home whose rows are padded to
// 24 elements reads its last pair whole (tk::smem_gemm's NREAD = 24) and has no
// scalar path (FULL); it stores only the columns before N. Off: the scalar path.
// RUN: trainkernel-opt %s -p 'tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile,tile-resident{mode=force}' -t 'cuda{padded_columns=on}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %s -p 'tk-fuse,tk-to-sched{inplace=false},sched-allocate,sched-to-tile,tile-resident{mode=force}' -t 'cuda{padded_columns=off}' | filecheck %s --check-prefix=OFF

// ON:  tk::smem_gemm<kThreads, 1, __nv_bfloat16, 0, 1, true, 0, 24>(64, 10, 32, {{s[0-9]+}}, 40, 1, {{s[0-9]+}}, 24, 1,
// OFF: tk::smem_gemm<kThreads, 1, __nv_bfloat16, 0, 1, false>(64, 10, 32, {{s[0-9]+}}, 40, 1, {{s[0-9]+}}, 24, 1,

func.func @ten(%x: tensor<64x32xbf16>, %w: tensor<32x10xbf16>) -> (tensor<64x10xbf16>) {
  %y = tk.matmul %x, %w : (tensor<64x32xbf16>, tensor<32x10xbf16>) -> tensor<64x10xbf16>
  func.return %y : tensor<64x10xbf16>
}
