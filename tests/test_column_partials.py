"""tile-column-partials (trainkernel/passes/tile_column_partials.py) and
tk.column_partials: a column sum of a wgmma gemm's output reads 16-row fp32
partials that the gemm's row walk writes. The op's numerics (row order, a
short last run), where the pass applies and where not, and the tile
interpreter's results against the kernel without the pass and against eager.
The device side (tk::hopper::ColumnPartials through the row walks) is checked
on the CPU by tests/test_epilogue_order.py and on the H200 by the runtime tests
of every grid workload."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block

import trainkernel
from trainkernel.dialects import sched, tile, tk
from trainkernel.elements import BF16
from trainkernel.numerics import Interpreter
from trainkernel.pipeline import stage_passes
from trainkernel.sched_interpreter import run_program
from trainkernel.tools.cli import problem
from trainkernel.workloads import LARGE, WORKLOADS

from _tile_stage import tile_kernel


@pytest.fixture
def no_partials(variant):
    """The H200 without the pass."""
    return variant("no_partials", column_partials=False).name


@pytest.fixture
def every_size(variant):
    """The H200 with partials for outputs of any size."""
    return variant("every_size", column_partials_min_bytes=0).name


def _partials(x: torch.Tensor, rows: int) -> torch.Tensor:
    """tk.column_partials through the interpreter's op table."""
    assert x.dtype == torch.bfloat16
    block = Block(arg_types=[TensorType(BF16.ir, list(x.shape))])
    op = tk.ColumnPartialsOp(block.args[0], rows)
    (out,) = Interpreter().eval_op(op, [x])
    return out


@pytest.mark.parametrize("m", [1, 15, 16, 17, 40, 100])
def test_each_run_of_rows_is_summed_in_row_order(m):
    g = torch.Generator().manual_seed(m)
    x = (torch.randn(m, 5, generator=g) * 100).to(torch.bfloat16)
    got = _partials(x, 16)
    assert got.dtype == torch.float32 and tuple(got.shape) == (-(-m // 16), 5)
    for r in range(got.shape[0]):
        for j in range(5):
            want = torch.tensor(0.0, dtype=torch.float32)
            for i in range(16 * r, min(16 * r + 16, m)):
                want = want + x[i, j].float()  # one fp32 add at a time, as a thread of the row walk
            assert torch.equal(got[r, j], want), (r, j)


def _captured(w, args=None):
    return trainkernel.capture(w.make_step(torch.bfloat16), args if args is not None else w.example_args("meta"))


def _summary(kernel: tile.KernelOp) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(partials shape, summed output shape) of every gemm with column partials."""
    out = []
    for op in kernel.block.ops:
        if isinstance(op, tile.GemmOp) and op.column_partials() is not None:
            cp = op.column_partials()
            out.append((tk.shape_of(cp.result), tk.shape_of(cp.input)))
    return out


def test_only_sums_of_outputs_past_the_threshold_get_partials(every_size):
    """By default (column_partials_min_bytes, 12 MB): large's db1 sums dh (2048 x 8192 bf16,
    32 MB) from 128 runs; its db2's dy (8 MB) and all of medium's outputs (8 MB, 0.5 MB)
    stay in L2 and are summed as they are. With no threshold both sums of each step get them."""
    assert _summary(tile_kernel(_captured(LARGE))) == [((128, 8192), (2048, 8192))]
    assert _summary(tile_kernel(_captured(WORKLOADS["medium"]))) == []
    assert _summary(tile_kernel(_captured(WORKLOADS["medium"]), target=every_size)) == [((64, 256), (1024, 256)),
                                                                                     ((64, 4096), (1024, 4096))]


def test_the_partials_are_new_arena_buffers_read_by_one_sum(no_partials, every_size):
    """large and medium with every sum given partials: db2 from dy, db1 from dh, each
    partials buffer a new arena buffer past the old arena, read by exactly one reduction,
    whose sum is over the runs."""
    for w, (m, h, o) in ((LARGE, (2048, 8192, 2048)), (WORKLOADS["medium"], (1024, 4096, 256))):
        captured = _captured(w)
        new, old = tile_kernel(captured, target=every_size), tile_kernel(captured, target=no_partials)
        assert sorted(_summary(new)) == sorted([((m // 16, o), (m, o)), ((m // 16, h), (m, h))])
        assert _summary(old) == []
        partials = [op for op in new.block.ops if isinstance(op, sched.BufferOp)
                    and op.result.type.get_element_type() == tk.elements.F32.ir and op.offset_value >= old.arena_bytes.data]
        assert len(partials) == 2
        assert new.arena_bytes.data == max(p.offset_value + sched.nbytes(p.result.type) for p in partials)
        for p in partials:
            readers = [op for op in new.block.ops if isinstance(op, tile.ReduceOp) and p.result in op.ins]
            assert len(readers) == 1
            assert tk.shape_of(readers[0].reduction().input) == tuple(p.result.type.get_shape())


def test_resident_and_mma_kernels_are_left_alone(every_size):
    """The resident kernels (tiny, online, classification) have no grid; a grid kernel on the
    mma.sync engine has no row walk."""
    for name in ("tiny", "online", "classification"):
        assert _summary(tile_kernel(_captured(WORKLOADS[name]), target=every_size)) == []
    assert _summary(tile_kernel(_captured(WORKLOADS["medium"]), target=every_size, engine="mma")) == []


def test_the_pipeline_runs_it_before_reductions_first():
    assert ",tile-column-partials,tile-reductions-first," in stage_passes("tile")


@pytest.mark.parametrize("rows", [40, 97])
def test_the_tile_interpreter_agrees_with_the_kernel_without_it(rows, no_partials, every_size):
    """small at a few rows (widths 32-48-16; 97 = 6 runs of 16 + 1), 4 blocks, the wgmma engine:
    the same results as without the pass up to the bias gradients' rounding order (bf16's
    tolerance); every other result bit-identical."""
    w = WORKLOADS["small"].with_sizes(rows, (32, 48, 16))
    params, batches = problem(w, torch.bfloat16, "cpu")
    args = (params, *batches[0])
    captured = _captured(w, args)
    outs = []
    for target in (every_size, no_partials):
        kernel = tile_kernel(captured, target, grid=4, engine="wgmma", inplace=False)
        outs.append(run_program(kernel, pytree.tree_leaves(args)))
        assert len(_summary(kernel)) == (2 if target == every_size else 0)
    changed = 0
    for a, b in zip(*outs):
        assert a.dtype == b.dtype and a.shape == b.shape
        if not torch.equal(a, b):
            changed += 1
            torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-3)
    assert changed <= 4  # the two bias gradients and the two biases they update


def _on_h200(monkeypatch, **changes):
    """compile_training's target (the registered "h200") with `changes`, for one test."""
    import dataclasses

    import trainkernel.target as T

    monkeypatch.setitem(T.TARGETS, T.H200.name, dataclasses.replace(T.H200, **changes))


@pytest.mark.cuda
@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "staged"])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_partials_on_every_sum_match_pytorch_on_gpu(monkeypatch, dtype, inplace):
    """Partials on every bias gradient (no size threshold) of small at 200 rows and widths
    520-1000-56 (the wgmma engine with edge tiles: whole tiles take the unguarded row walk,
    edge tiles the guarded one, the last run of rows is 8 long): 100 steps against PyTorch
    by the harness's policy. At the default threshold only large's db1 has partials; this
    keeps the guarded paths under test."""
    from trainkernel.tools.cli import check_workload, get_workload
    from trainkernel.workloads import parse_dtype

    _on_h200(monkeypatch, column_partials_min_bytes=0)
    w = get_workload("small", (200, 520, 1000, 56))
    compute = parse_dtype(dtype)
    c = trainkernel.compile_training(w.make_step(compute), w.example_args(dtype=compute), inplace=inplace)
    assert "tk::hopper::column_partials(" in c.cuda_source
    report = check_workload(w, dtype, steps=100, compiled=c, inplace=inplace)
    assert report.passed, report.format(verbose=True)
