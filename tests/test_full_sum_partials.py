"""target.full_sum_partials (tile-column-partials, perf-log step 77): a grid
kernel's full sum of a wgmma gemm's output (a mean loss) reads the 16-row
column partials the gemm's row walk writes, and sums all of them, where the
one block that sums it would load more than one batch a thread; the gemm no
longer stores an output that only the sum read. Where it applies and where
not, and the tile interpreter's results against the kernel without it."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree

import trainkernel
from trainkernel import target as T
from trainkernel.dialects import sched, tile, tk
from trainkernel.sched_interpreter import run_program
from trainkernel.tools.cli import problem
from trainkernel.workloads import WORKLOADS

from _tile_stage import tile_kernel

# Each switch against the target before the flips (test_measured_defaults.py: on).
pytestmark = pytest.mark.usefixtures("before_steps_69_83")


@pytest.fixture
def full_sums(variant):
    return variant("full_sums", full_sum_partials=True).name


def _captured(w, args=None):
    return trainkernel.capture(w.make_step(torch.bfloat16),
                               args if args is not None else w.example_args("meta", torch.bfloat16))


def _full_sums(kernel: tile.KernelOp) -> list[tuple[int, ...]]:
    """The shapes that the kernel's full sums (all axes, one output) sum."""
    return [tk.shape_of(op.reduction().input) for op in kernel.block.ops
            if isinstance(op, tile.ReduceOp) and len(op.reduction().axes_list) == len(tk.shape_of(op.reduction().input))
            and len(op.reduction().axes_list) > 1]


@pytest.mark.parametrize("name,before,after", [("small", (256, 64), (16, 64)), ("mlp4", (128, 256), (8, 256))])
def test_the_loss_sums_the_partials(full_sums, name, before, after):
    """small's loss (256 x 64 squared errors, 16384 > 16 x 384) and mlp4's (128 x 256)
    sum the partials; no buffer of the squared errors is left (only the loss read it),
    and the column sums (bias gradients, under column_partials_min_bytes) stay."""
    captured = _captured(WORKLOADS[name])
    old, new = tile_kernel(captured), tile_kernel(captured, target=full_sums)
    assert _full_sums(old) == [before] and _full_sums(new) == [after]
    f32 = tk.elements.F32.ir
    squares = [op for op in old.block.ops if isinstance(op, sched.BufferOp)
               and tuple(op.result.type.get_shape()) == before and op.result.type.get_element_type() == f32]
    assert len(squares) == 2  # y's fp32 cast and the squared errors
    assert len([op for op in new.block.ops if isinstance(op, sched.BufferOp)
                and tuple(op.result.type.get_shape()) == before and op.result.type.get_element_type() == f32]) == 1
    gemms = [op for op in new.block.ops if isinstance(op, tile.GemmOp) and op.column_partials() is not None]
    assert len(gemms) == 1 and tk.shape_of(gemms[0].column_partials().result) == after
    column_sums = lambda k: sorted(tk.shape_of(op.reduction().input) for op in k.block.ops  # noqa: E731
                                   if isinstance(op, tile.ReduceOp) and op.reduction().axes_list == (0,))
    assert column_sums(new) == column_sums(old)
    assert new.arena_bytes.data > old.arena_bytes.data


def test_a_loss_of_one_batch_a_thread_is_left_alone(full_sums):
    """40 x 32-48-16 (640 squared errors) as a grid kernel: one batch of loads a thread."""
    w = WORKLOADS["small"].with_sizes(40, (32, 48, 16))
    kernel = tile_kernel(_captured(w), target=full_sums, grid=4, engine="wgmma")
    assert _full_sums(kernel) == [(40, 16)]


def test_resident_kernels_are_left_alone(full_sums):
    for name in ("tiny", "online", "classification"):
        kernel = tile_kernel(_captured(WORKLOADS[name]), target=full_sums)
        assert not any(isinstance(op, tile.GemmOp) and op.column_partials() is not None for op in kernel.block.ops)


@pytest.mark.parametrize("rows", [400, 409])
def test_the_tile_interpreter_agrees_with_the_kernel_without_it(rows, full_sums):
    """small at 400 and 409 rows (widths 32-48-24; 409 = 25 runs of 16 + 9), 4 blocks,
    the wgmma engine: the loss within fp32 summation-order error, every other result
    bit-identical (the gradients do not read the loss)."""
    w = WORKLOADS["small"].with_sizes(rows, (32, 48, 24))
    params, batches = problem(w, torch.bfloat16, "cpu")
    args = (params, *batches[0])
    captured = _captured(w, args)
    outs = []
    for target in (full_sums, None):
        kernel = tile_kernel(captured, target, grid=4, engine="wgmma", inplace=False)
        outs.append(run_program(kernel, pytree.tree_leaves(args)))
    loss_on, loss_off = outs[0][0], outs[1][0]
    assert loss_on.shape == () and loss_on.dtype == torch.float32
    torch.testing.assert_close(loss_on, loss_off, rtol=1e-5, atol=0)
    for a, b in zip(outs[0][1:], outs[1][1:]):
        assert torch.equal(a, b)


@pytest.mark.cuda
@pytest.mark.parametrize("name,sizes", [("small", None), ("mlp4", None), ("small", (200, 520, 1000, 56))])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_full_sum_partials_match_pytorch_on_gpu(monkeypatch, name, sizes, dtype):
    """small, mlp4 and small at 200 x 520-1000-56 (edge tiles: the guarded row walk, a
    short last run) with the switch: 100 steps against PyTorch by the harness's policy."""
    import dataclasses

    from trainkernel.tools.cli import check_workload, get_workload
    from trainkernel.workloads import parse_dtype

    monkeypatch.setitem(T.TARGETS, T.H200.name, dataclasses.replace(T.H200, full_sum_partials=True))
    w = get_workload(name, sizes)
    compute = parse_dtype(dtype)
    c = trainkernel.compile_training(w.make_step(compute), w.example_args(dtype=compute), resident="off")
    assert "tk::hopper::column_partials(" in c.cuda_source
    report = check_workload(w, dtype, steps=100, compiled=c)
    assert report.passed, report.format(verbose=True)
