// A wgmma kernel whose gemms differ in width (target.wgmma_gemm_widths):
// they share one pipeline, so the kernel's shape (TkShape: its stages, its
// stage stride, kSmem) is its widest gemm's, and a narrower gemm's tile is
// tk::hopper::TileShape<width, TkShape::STAGES, TkShape::STAGE_BYTES>: its
// boxes and descriptors its own, its stages where the widest's are. Each
// gemm's tensor maps are of its own tile.
// RUN: trainkernel-opt %s -t cuda | filecheck %s

// CHECK:      #define TK_WGMMA_CONSUMERS 1
// CHECK:      using TkShape = tk::hopper::TileById<2>::type;
// CHECK-NEXT: static constexpr int kSmem = TkShape::SMEM_BYTES;
// CHECK:      pipeline_init<TkShape>(tk_hbase);
// CHECK:      tile.gemm 256x256x1024 mma.bf16 NN, wgmma 64x64x64
// CHECK:      grid_gemm_units<__nv_bfloat16, TkShape, false, false, true>(&p.maps[0], &p.maps[1],
// CHECK:      tile.gemm 256x256x1024 mma.bf16 NN, wgmma 64x32x64
// CHECK:      grid_gemm_units<__nv_bfloat16, tk::hopper::TileShape<32, TkShape::STAGES, TkShape::STAGE_BYTES>, false, false, true>(&p.maps[2], &p.maps[3],
// CHECK:      operand_maps<__nv_bfloat16, TkShape, false, false>(&p.maps[0], &p.maps[1],
// CHECK:      operand_maps<__nv_bfloat16, tk::hopper::TileShape<32, TkShape::STAGES, TkShape::STAGE_BYTES>, false, false>(&p.maps[2], &p.maps[3],
tile.kernel @k(%a: memref<256x1024xbf16>, %b: memref<1024x256xbf16>, %c: memref<256x256xbf16>, %d: memref<256x256xbf16>) inputs 2 results [2, 3] arena 0 config {grid = 8 : i64, threads = 256 : i64, smem = 218208 : i64} {
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%c : memref<256x256xbf16>) config {tile = array<i64: 64, 64, 64>, mma = "mma.bf16", items = 16 : i64, offset = 0 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
  tile.gemm ins(%a, %b : memref<256x1024xbf16>, memref<1024x256xbf16>) outs(%d : memref<256x256xbf16>) config {tile = array<i64: 64, 32, 64>, mma = "mma.bf16", items = 32 : i64, offset = 16 : i64, engine = "wgmma"} {
  ^bb0(%p: tensor<256x1024xbf16>, %q: tensor<1024x256xbf16>):
    %m = tk.matmul %p, %q : (tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<256x256xbf16>
    tk.yield %m : tensor<256x256xbf16>
  }
}
