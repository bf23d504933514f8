"""target.column_sum_widths (perf-log step 131; off until measured): sched-to-tile
gives each column sum of a grid kernel the columns an item, of those offered, with
the smallest estimate of its phase on the chosen grid (the widest on a tie). The
cost model prices a column sum's item with the fold of its slices' partials
(GridCosts.reduce_fold_cycles a slice past the 8 it was measured at). The lit
test passes/sched-to-tile/column-sums.mlir pins the pass's choice on a small IR."""

from __future__ import annotations

import re

import pytest
import torch
import torch.utils._pytree as pytree

import trainkernel
from trainkernel import target as T
from trainkernel.dialects import tile
from trainkernel.sched_interpreter import run_program
from trainkernel.tools.cli import problem
from trainkernel.workloads import LARGE, WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _tile_stage import tile_kernel
from _variants import stepped

OFFERED = (32, 16, 8)


def _source(w) -> str:
    return trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args("meta", torch.bfloat16),
                                        build=False).cuda_source


def _column_sums(src: str) -> list[tuple[int, int, int]]:
    """(rows, columns, columns an item) of each grid column sum the kernel prints."""
    return [tuple(map(int, m)) for m in re.findall(r"tile.reduce tk.sum: (\d+) rows into (\d+) columns, (\d+) per item", src)]


def test_off_by_default():
    assert T.DEFAULT.column_sum_widths == ()


def test_the_price_at_the_measured_slices_is_the_measured_one():
    """32 columns an item on 256 threads (8 slices): the op timer's 2.9k cycles at 8k
    elements, whatever the fold's price; fewer slices cost less, more cost more."""
    costs = T.DEFAULT.grid_costs
    at = lambda elements, slices: costs.reduce_parts_us(elements, slices) / costs.cycle_us  # noqa: E731
    assert at(8192, 8) == pytest.approx(costs.reduce_item_cycles + 0.25 * 8192)
    assert at(8192, 8) == pytest.approx(costs.reduce_parts_us(8192) / costs.cycle_us)
    assert at(4096, 4) < at(4096, 8) < at(4096, 16)


def test_small_db1_takes_narrower_items_and_nothing_else_moves(target_fields):
    """small: db1 (256 rows into 1024 columns) in front of dW1's units on the same blocks
    takes narrower items; db2 (64 columns, 2 items) keeps 32; the grid stays."""
    off = _source(WORKLOADS["small"])
    target_fields(column_sum_widths=OFFERED)
    on = _source(WORKLOADS["small"])
    assert _column_sums(off) == [(256, 64, 32), (256, 1024, 32)]
    (db2, db1) = _column_sums(on)
    assert db2 == (256, 64, 32) and db1[:2] == (256, 1024) and db1[2] < 32
    grid = lambda src: re.search(r"grid (\d+), (\d+) threads", src).groups()  # noqa: E731
    assert grid(on) == grid(off)


@pytest.mark.parametrize("name", ["mlp4", "medium"])
def test_steps_whose_sums_are_not_on_the_busiest_block_keep_32(target_fields, name):
    off = _source(WORKLOADS[name])
    target_fields(column_sum_widths=OFFERED)
    assert _source(WORKLOADS[name]) == off


def test_offered_only_the_target_width_changes_nothing(target_fields):
    off = _source(WORKLOADS["small"])
    target_fields(column_sum_widths=(T.DEFAULT.reduce_columns,))
    assert _source(WORKLOADS["small"]) == off


def test_widths_that_do_not_divide_the_threads_are_not_offered(target_fields):
    """A target's 256 threads: 48 columns could not split them into whole slices."""
    off = _source(WORKLOADS["small"])
    target_fields(column_sum_widths=(48,))
    assert _source(WORKLOADS["small"]) == off


@pytest.mark.parametrize("rows", [40, 97])
def test_the_tile_interpreter_agrees_with_the_kernel_at_32(variant, rows):
    """small at a few rows, 4 blocks, the wgmma engine, every column sum at 8 columns an
    item against 32: the same results (the interpreter folds a sum's rows in order
    whatever the items; the CUDA kernel's fold order differs, so only the GPU sees that)."""
    narrow = variant("narrow_sums", column_sum_widths=(8,)).name
    w = WORKLOADS["small"].with_sizes(rows, (32, 48, 16))
    params, batches = problem(w, torch.bfloat16, "cpu")
    args = (params, *batches[0])
    captured = trainkernel.capture(w.make_step(torch.bfloat16), args)
    outs, widths = [], []
    for target in (narrow, None):
        kernel = tile_kernel(captured, target, grid=4, engine="wgmma", inplace=False)
        widths.append(sorted({op.rows for op in kernel.walk() if isinstance(op, tile.ReduceOp) and op.rows > 4}))
        outs.append(run_program(kernel, pytree.tree_leaves(args)))
    assert widths == [[8], [32]]
    for a, b in zip(*outs):
        torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-3)


@needs_nvcc
@pytest.mark.parametrize("name", ["small", "large"])
def test_compiles_for_sm90(target_fields, tmp_path, name):
    target_fields(column_sum_widths=OFFERED)
    src = _source(LARGE if name == "large" else WORKLOADS[name])
    assert any(per < 32 for _, _, per in _column_sums(src))
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", "odd"])
def test_matches_the_kernel_at_32_on_gpu(target_fields, name):
    """4 launches of a step: the bias gradients fold their rows in another order, so the
    results agree to bf16's tolerance, not bit for bit."""
    w = WORKLOADS["small"] if name == "small" else WORKLOADS["small"].with_sizes(97, (96, 200, 40))
    runs = []
    for widths in ((), (8,)):
        target_fields(column_sum_widths=widths)
        runs.append(stepped(w, 4, 2))
    (src_off, off), (src_on, on) = runs
    assert [per for _, _, per in _column_sums(src_off)] != [per for _, _, per in _column_sums(src_on)]
    for a, b in zip(off, on):
        torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-3)
