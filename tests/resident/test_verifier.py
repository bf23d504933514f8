"""The resident-kernel verifiers reject kernels the CUDA printer could not
print correctly: a k-split gemm of a cluster without `scratch` (it would
print `smem + None`), and a `tile.sync grid` inside a resident kernel (it
would print a block barrier)."""
from __future__ import annotations

import pytest

from trainkernel.ir import parse_module

NO_SCRATCH = """
builtin.module {
  tile.kernel @k(%A: memref<16x32xf32>, %B: memref<32x8xf32>, %o: memref<16x8xf32>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 4096 : i64, cluster = 4 : i64} {
    %a = tile.smem stage %A offset 0 split 1 : memref<16x32xf32>
    %b = tile.smem stage %B offset 512 split 0 : memref<32x8xf32>
    tile.gemm ins(%a, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%o : memref<16x8xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64, split = 2 : i64} {
    ^bb0(%x: tensor<16x32xf32>, %y: tensor<32x8xf32>):
      %m = tk.matmul %x, %y : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
      tk.yield %m : tensor<16x8xf32>
    }
  }
}
"""

GRID_SYNC = """
builtin.module {
  tile.kernel @k(%a: memref<64x8xf32>, %o: memref<64x8xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 2048 : i64, cluster = 4 : i64} {
    %s = tile.smem stage %a offset 0 split -1 : memref<64x8xf32>
    tile.sync grid
    tile.map ins(%s : memref<64x8xf32>) outs(%o : memref<64x8xf32>) config {items = 1 : i64, offset = 0 : i64, chunk = 512 : i64, split = -1 : i64} {
    ^bb0(%x: tensor<64x8xf32>):
      tk.yield %x : tensor<64x8xf32>
    }
  }
}
"""


@pytest.mark.parametrize(
    "text,message",
    [
        (NO_SCRATCH, "tile.gemm splits a sum over the cluster and needs `scratch` for its partials"),
        (GRID_SYNC, "phases of a resident kernel are ordered by `tile.sync block`"),
    ],
    ids=["k-split without scratch", "grid sync"],
)
def test_verifier_rejects_what_the_printer_cannot_honour(text, message):
    with pytest.raises(Exception, match=message):
        parse_module(text).verify()
