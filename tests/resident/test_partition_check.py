"""Regression tests from the review of the resident kernels (2026-12-01): does `run_program(..., partitioned=True)` show a block reading
what it does not hold in a *split contraction*? `_Partition._partial` takes
the matmul operands and a block-argument reduction input from the full
buffers (`full`), never from the block's view, so a partition whose blocks
hold the wrong slice of a split-k operand passes.

Both kernels below are wrong partitions: block r holds rows r*4..r*4+3 of A
(split 0) but the k-split product needs every row of its k columns (and the
CUDA printer addresses the 4-row home with rows 0..15). A negative control
like tests/test_resident.py's must then show NaN.

Since issue 12's tile-level rules the kernel verifier rejects both
(`tile.verify_partition`: a split home is accessed only by an op split on the
dimension that indexes its split axis), so they no longer reach the printer;
the interpreter, run on the unverified modules, must still show them."""
from __future__ import annotations

import torch

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from trainkernel import sched_interpreter
from trainkernel.dialects import make_context


def parse_unverified(text: str):
    return Parser(make_context(), text).parse_module()

GEMM = """
builtin.module {
  tile.kernel @k(%A: memref<16x32xf32>, %B: memref<32x8xf32>, %o: memref<16x8xf32>) inputs 2 results [2] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 4096 : i64, cluster = 4 : i64} {
    %a = tile.smem stage %A offset 0 split 0 : memref<16x32xf32>
    %b = tile.smem stage %B offset 512 split 0 : memref<32x8xf32>
    tile.gemm ins(%a, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%o : memref<16x8xf32>) config {tile = array<i64: 64, 64, 16>, mma = "simt.f32", items = 1 : i64, offset = 0 : i64, split = 2 : i64, scratch = 1024 : i64} {
    ^bb0(%x: tensor<16x32xf32>, %y: tensor<32x8xf32>):
      %m = tk.matmul %x, %y : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
      tk.yield %m : tensor<16x8xf32>
    }
  }
}
"""

REDUCE = """
builtin.module {
  tile.kernel @k(%A: memref<16x32xf32>, %o: memref<32xf32>) inputs 1 results [1] arena 0 config {grid = 4 : i64, threads = 128 : i64, smem = 4096 : i64, cluster = 4 : i64} {
    %a = tile.smem stage %A offset 0 split 1 : memref<16x32xf32>
    tile.reduce ins(%a : memref<16x32xf32>) outs(%o : memref<32xf32>) config {items = 1 : i64, offset = 0 : i64, rows = 128 : i64, split = 0 : i64, scratch = 1024 : i64} {
    ^bb0(%x: tensor<16x32xf32>):
      %s = tk.sum %x axes [0] : tensor<16x32xf32> -> tensor<32xf32>
      tk.yield %s : tensor<32xf32>
    }
  }
}
"""


def test_a_wrong_split_k_operand_shows_as_nan():
    torch.manual_seed(0)
    m = parse_unverified(GEMM)
    out = sched_interpreter.run_program(m, [torch.randn(16, 32), torch.randn(32, 8)], partitioned=True)
    assert any(torch.isnan(t).any() for t in out), "blocks read rows of A they do not hold, yet no NaN"


def test_a_wrong_split_reduction_input_shows_as_nan():
    torch.manual_seed(0)
    m = parse_unverified(REDUCE)
    out = sched_interpreter.run_program(m, [torch.randn(16, 32)], partitioned=True)
    assert any(torch.isnan(t).any() for t in out), "blocks read columns of A they do not hold, yet no NaN"


@pytest.mark.parametrize("text", [GEMM, REDUCE], ids=["split-k gemm", "split reduction"])
def test_the_verifier_rejects_the_wrong_partitions(text):
    with pytest.raises(VerifyException, match=r"split on axis \d over the cluster, but its axis \d is indexed by "
                                              r"iteration dimension \d: a block would address slices it does not hold"):
        parse_unverified(text).verify()
