"""Regression tests from the review of the resident kernels (2026-12-01): the axis analysis of tile-resident must model every way a tile op
reads a buffer. A tile.reduce's epilogue arguments are linked as if read at
the output index (right-aligned broadcast) whatever tk op reads them; a
tk.slice or tk.transpose there (both printed by the CUDA backend and run by
the interpreters) reads other elements, so a plan the pass calls legal makes a
block read a slice it does not hold."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import torch

from trainkernel import sched_interpreter
from trainkernel.dialects import tile
from trainkernel.ir import parse_module
from _helpers import every_plan

SLICE_EPILOGUE = """
builtin.module {
  tile.kernel @k(%x: memref<48x40xf32>, %s: memref<48xf32>, %o: memref<48xf32>) inputs 2 results [2] arena 0 config {grid = 48 : i64, threads = 128 : i64, smem = 30720 : i64} {
    tile.reduce ins(%x, %s : memref<48x40xf32>, memref<48xf32>) outs(%o : memref<48xf32>) config {items = 48 : i64, offset = 0 : i64, rows = 1 : i64} {
    ^bb0(%a: tensor<48x40xf32>, %b: tensor<48xf32>):
      %r = tk.sum %a axes [1] : tensor<48x40xf32> -> tensor<48xf32>
      %b0 = tk.slice %b starts [0] steps [1] : tensor<48xf32> -> tensor<1xf32>
      %m = tk.mul %r, %b0 : (tensor<48xf32>, tensor<1xf32>) -> tensor<48xf32>
      tk.yield %m : tensor<48xf32>
    }
  }
}
"""

TRANSPOSE_EPILOGUE = """
builtin.module {
  tile.kernel @k(%x: memref<16x16x8xf32>, %w: memref<16x16xf32>, %o: memref<16x16xf32>) inputs 2 results [2] arena 0 config {grid = 16 : i64, threads = 128 : i64, smem = 30720 : i64} {
    tile.reduce ins(%x, %w : memref<16x16x8xf32>, memref<16x16xf32>) outs(%o : memref<16x16xf32>) config {items = 256 : i64, offset = 0 : i64, rows = 1 : i64} {
    ^bb0(%a: tensor<16x16x8xf32>, %b: tensor<16x16xf32>):
      %r = tk.sum %a axes [2] : tensor<16x16x8xf32> -> tensor<16x16xf32>
      %bt = tk.transpose %b perm [1, 0] : tensor<16x16xf32> -> tensor<16x16xf32>
      %m = tk.add %r, %bt : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
      tk.yield %m : tensor<16x16xf32>
    }
  }
}
"""


def _check_every_plan(text, inputs):
    whole = sched_interpreter.run_program(parse_module(text), inputs)
    assert not any(torch.isnan(t).any() for t in whole)
    bad = []
    for i, plan, cl, m in every_plan(text, clusters=(4,)):
        out = sched_interpreter.run_program(m, inputs, partitioned=True)
        if any(torch.isnan(t).any() for t in out):
            bad.append((i, cl, [op.split for op in m.ops.first.block.ops if isinstance(op, tile.TileWorkOp)]))
    assert bad == [], f"legal plans whose blocks read slices they do not hold: {bad}"


def test_slice_in_a_reduce_epilogue_is_modelled():
    torch.manual_seed(0)
    _check_every_plan(SLICE_EPILOGUE, [torch.randn(48, 40), torch.randn(48)])


def test_transpose_in_a_reduce_epilogue_is_modelled():
    torch.manual_seed(0)
    _check_every_plan(TRANSPOSE_EPILOGUE, [torch.randn(16, 16, 8), torch.randn(16, 16)])
