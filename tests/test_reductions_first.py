"""tile-reductions-first (trainkernel/passes/tile_reductions_first.py): in a
grid kernel's phase the reductions run before the gemms; resident and
one-block kernels keep their order; the results are the same bits (the
sched/tile interpreter runs a phase's ops as if concurrent)."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree

import trainkernel
from trainkernel.dialects import sched, tile
from trainkernel.pipeline import lower, stage_passes
from trainkernel.sched_interpreter import run_program
from trainkernel.tools.cli import problem
from trainkernel.workloads import LARGE, WORKLOADS

from _tile_stage import tile_kernel, tile_module
from _variants import BEFORE_STEPS_99_101


@pytest.fixture
def keep_order(variant):
    """The H200 without the pass (128-row wgmma tiles, as `two_consumers`)."""
    return variant("keep_order", reductions_first=False, wgmma_consumers=(2,), **BEFORE_STEPS_99_101).name


@pytest.fixture
def two_consumers(variant):
    """The H200 with the pass, on 128-row wgmma tiles: the grids these tests name
    (the 64-row kernels' 256-thread maps have other item counts), one width a kernel
    among 64-256 (_variants.BEFORE_STEPS_99_101)."""
    return variant("two_consumers", wgmma_consumers=(2,), **BEFORE_STEPS_99_101).name


def _kernel(w, target=None) -> tile.KernelOp:
    captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta"))
    return tile_kernel(captured, target)


def _kinds(kernel: tile.KernelOp) -> list[list[str]]:
    return [[op.name.split(".")[1] for op in ops] for ops in [p for p in kernel.phases() if p]]


def test_large_sums_its_bias_gradients_before_the_gemms(keep_order):
    new, old = _kinds(_kernel(LARGE)), _kinds(_kernel(LARGE, target=keep_order))
    # p3: the loss-gradient row sums and db2's column sums, then dh and dW2;
    # p4: the loss and db1's column sums, then dW1.
    assert old[3] == ["reduce", "gemm", "gemm", "reduce"] and new[3] == ["reduce", "reduce", "gemm", "gemm"]
    assert old[4] == ["reduce", "gemm", "reduce"] and new[4] == ["reduce", "reduce", "gemm"]
    assert new[:3] == old[:3]  # phases without a reduction after a gemm do not change
    for ops in [p for p in _kernel(LARGE).phases() if p]:  # each op's first item on the block after the previous op's last
        assert [op.offset for op in ops] == [sum(o.items for o in ops[:k]) for k in range(len(ops))]


def test_only_reductions_that_wrap_onto_gemm_blocks_move(keep_order, two_consumers):
    """small on 64 blocks: p4's column sums (32 items after the split gemm's 64) wrap onto the
    gemm's blocks and move ahead of it; p3's (2 items at offset 41) land on blocks of their
    own and stay. At the grid the cost model gives small (121 blocks, its maps' items of 16
    elements a thread) and in mlp4 nothing wraps, so nothing moves."""
    captured = trainkernel.capture(WORKLOADS["small"].make_step(torch.bfloat16), WORKLOADS["small"].example_args("meta"))
    small64 = tile_kernel(captured, two_consumers, grid=64, engine="wgmma")
    assert _kinds(small64)[3] == ["reduce", "gemm", "gemm", "reduce"]
    assert _kinds(small64)[4] == ["reduce", "gemm"]
    assert _kinds(tile_kernel(captured, keep_order, grid=64, engine="wgmma"))[4] == ["gemm", "reduce"]
    small = _kernel(WORKLOADS["small"], two_consumers)
    assert small.grid == 121 and _kinds(small) == _kinds(_kernel(WORKLOADS["small"], keep_order))
    assert _kinds(_kernel(WORKLOADS["mlp4"], two_consumers)) == _kinds(_kernel(WORKLOADS["mlp4"], keep_order))


def test_resident_kernels_keep_their_order(keep_order):
    for name in ("tiny", "online", "classification"):
        w = WORKLOADS[name]
        captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta"))
        a, b = lower(captured), lower(captured, target=keep_order)
        assert "kCluster" in a.cuda_source or a.meta.grid == 1
        assert a.cuda_source.replace("keep_order", "h200") == b.cuda_source.replace("keep_order", "h200")


def test_the_pipeline_names_the_pass():
    assert stage_passes("tile").endswith(",tile-reductions-first,tile-row-local,tile-item-flags")
    assert stage_passes("tile", target="h200").endswith(",tile-reductions-first,tile-row-local,tile-item-flags")


@pytest.mark.parametrize("name", ["small", "mlp4"])
def test_the_grid_kernel_gives_the_same_bits_either_way(name, keep_order):
    """The tile interpreter, grid kernels of 4 blocks at a few rows, with and without the pass:
    identical results."""
    w = WORKLOADS[name].with_sizes(8, tuple(min(d, 48) for d in WORKLOADS[name].widths))
    params, batches = problem(w, torch.bfloat16, "cpu")
    args = (params, *batches[0])
    captured = trainkernel.capture(w.make_step(torch.bfloat16), args)
    outs, orders = [], []
    for target in (None, keep_order):
        module = tile_module(captured, target, inplace=False, grid=4)
        kernel = next(op for op in module.ops if isinstance(op, sched.ProgramLikeOp))
        orders.append(_kinds(kernel))
        outs.append(run_program(kernel, pytree.tree_leaves(args)))
    assert orders[0] != orders[1], "the pass moved nothing: the test compares nothing"
    for a, b in zip(*outs):
        assert a.dtype == b.dtype and torch.equal(a.flatten().view(torch.uint8), b.flatten().view(torch.uint8))
