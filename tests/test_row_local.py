"""tile-row-local (trainkernel/passes/tile_row_local.py) and the kernel verifier's
row-local rule (tile.row_local_violation): runs of phases of a grid kernel
that work row by row are ordered by block barriers; what the pass changes and
what it leaves; the same bits through the tile interpreter; the verifier
rejecting block barriers that a block's own rows do not justify. On by
default (target.row_local) since the H200 measured it (perf-log step 41)."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree
from xdsl.utils.exceptions import VerifyException

import trainkernel
from trainkernel.dialects import sched, tile
from trainkernel.pipeline import lower, stage_passes
from trainkernel.sched_interpreter import run_program
from trainkernel.tools.cli import problem
from trainkernel.workloads import TWINS, WORKLOADS

from _tile_stage import tile_kernel


@pytest.fixture
def row_local(variant):
    """The H200 with the pass on (its default), on 128-row wgmma tiles (384 threads:
    12 warps, the rows of an item these tests were written for)."""
    return variant("row_local", row_local=True, wgmma_consumers=(2,)).name


@pytest.fixture
def row_local_off(variant):
    """The H200 with the pass off (128-row wgmma tiles, as `row_local`)."""
    return variant("no_row_local", row_local=False, wgmma_consumers=(2,)).name


def _syncs(kernel: tile.KernelOp) -> list[str]:
    return [op.scope.data for op in kernel.block.ops if isinstance(op, tile.SyncOp)]


def test_the_cross_entropy_phases_of_mlp4_adamw_ce_take_block_barriers(row_local, row_local_off):
    """p5-p8 (row max and the target row sum; exp; row sum and log; the gradient): one
    partition, 12 rows an item (the block's warps), offset 0, block barriers between them;
    every other barrier stays a grid barrier. On by default."""
    w = TWINS["mlp4-adamw-ce"]
    captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta"))
    old, new = tile_kernel(captured, target=row_local_off), tile_kernel(captured, target=row_local)
    assert _syncs(tile_kernel(captured)) == _syncs(new)
    assert "block" not in _syncs(old)
    s_old, s_new = _syncs(old), _syncs(new)
    assert len(s_new) == len(s_old) and s_new.count("block") == 3
    assert s_new[5:8] == ["block"] * 3 and set(s_new[:5] + s_new[8:]) == {"grid"}
    region = tile.row_local_regions(new)
    assert len(region) == 1 and len(region[0]) == 4
    ops = [op for phase in region[0] for op in phase]
    assert {tile.row_partition(op) for op in ops} == {(128, 12)} and {op.offset for op in ops} == {0}
    # the arena buffers written in the region that shared bytes with others got their own
    assert new.arena_bytes.data > old.arena_bytes.data


def test_steps_without_a_row_chain_are_unchanged(row_local, row_local_off):
    """Grid kernels whose consecutive phases are not all row-by-row (a gemm in every phase
    but the casts), and the resident kernels (block barriers already), print the same CUDA."""
    for name in ("small", "medium", "mlp4", "classification-adamw-ce"):
        w = {**WORKLOADS, **TWINS}[name]
        captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta"))
        a, b = lower(captured, target=row_local_off), lower(captured, target=row_local)
        assert a.cuda_source.replace("no_row_local", "h200") == b.cuda_source.replace("row_local", "h200"), name


def test_the_pipeline_runs_it_last():
    assert stage_passes("tile").endswith(",tile-reductions-first,tile-row-local,tile-item-flags")


def test_the_tile_interpreter_gives_the_same_bits(row_local, row_local_off):
    """mlp4-adamw-ce at 40 rows, 32-wide hidden layers (its 256 classes), 4 blocks, wgmma: with and
    without the pass, bit-identical results (only which block runs which rows changes)."""
    w = TWINS["mlp4-adamw-ce"].with_sizes(40, (32, 32, 32, 32, 256))
    _, batches = problem(w, torch.bfloat16, "cpu")
    args = (w.init_state(), *batches[0])
    captured = trainkernel.capture(w.make_step(torch.bfloat16), args)
    outs = []
    for target in (row_local, row_local_off):
        kernel = tile_kernel(captured, target, grid=4, engine="wgmma", inplace=False)
        outs.append(run_program(kernel, pytree.tree_leaves(args)))
        assert ("block" in _syncs(kernel)) == (target == row_local)
    for a, b in zip(*outs):
        assert a.dtype == b.dtype and torch.equal(a.flatten().view(torch.uint8), b.flatten().view(torch.uint8))


def _verify_error(kernel: tile.KernelOp) -> str:
    with pytest.raises(VerifyException) as err:
        kernel.verify()
    return str(err.value)


def test_the_verifier_rejects_block_barriers_without_a_shared_partition(row_local, row_local_off):
    """Taking the pass's kernel and breaking one condition at a time: another offset, another
    number of rows an item, a buffer of the region moved back onto bytes another one uses."""
    w = TWINS["mlp4-adamw-ce"]
    captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta"))
    kernel = tile_kernel(captured, target=row_local)
    ops = [op for phase in tile.row_local_regions(kernel)[0] for op in phase]
    kernel.verify()
    ops[1].properties.update(tile.config(offset=1))
    assert "does not share" in _verify_error(kernel)
    ops[1].properties.update(tile.config(offset=0, rows=6, items=22))
    assert "does not share" in _verify_error(kernel)
    ops[1].properties.update(tile.config(rows=12, items=11))
    kernel.verify()
    # A buffer the pass moved, put back where sched-allocate had it: on bytes that a buffer
    # dead by then held (legal between grid barriers, not between block barriers).
    before = [op for op in tile_kernel(captured, target=row_local_off).block.ops if isinstance(op, sched.BufferOp)]
    after = [op for op in kernel.block.ops if isinstance(op, sched.BufferOp)]
    moved = [(a, b) for a, b in zip(after, before) if a.offset_value != b.offset_value]
    assert moved
    moved[0][0].properties["offset"] = moved[0][1].properties["offset"]
    assert "shares bytes" in _verify_error(kernel)


def test_a_block_barrier_between_a_gemm_and_its_reader_is_rejected():
    """A gemm is not row-partitioned: small's first grid barrier (after the casts, before the
    first gemm) turned into a block barrier fails verification, naming the reason."""
    w = WORKLOADS["small"]
    captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta"))
    kernel = tile_kernel(captured)
    syncs = [op for op in kernel.block.ops if isinstance(op, tile.SyncOp)]
    syncs[1].properties["scope"] = syncs[1].properties["scope"].__class__("block")
    assert "not row-partitioned" in _verify_error(kernel)


@pytest.mark.cuda
@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "staged"])
def test_row_local_kernel_gives_the_default_kernels_bits_on_gpu(monkeypatch, inplace):
    """mlp4-adamw-ce with tile-row-local on (its cross-entropy phases behind block barriers)
    and off: 20 steps from the same state on the same batches give the same bits (which
    block runs which rows does not change a value). Agreement with PyTorch is the
    harness's check of the default kernel (row-local on) over its trajectory; the
    SGD-only `check_workload` does not take this step's AdamW state."""
    import dataclasses

    import trainkernel.target as T

    w = TWINS["mlp4-adamw-ce"]
    states = []
    for on in (False, True):
        monkeypatch.setitem(T.TARGETS, T.H200.name, dataclasses.replace(T.H200, row_local=on))
        c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16), inplace=inplace)
        assert ("__syncthreads();\n  // ---- phase" in c.cuda_source) == on
        state = w.init_state(device="cuda")
        batches = w.make_batches(4, seed=0, device="cuda", dtype=torch.bfloat16)
        for t in range(20):
            out = c(state, *batches[t % 4])
            state = out[-1]
        torch.cuda.synchronize()
        states.append([x.clone() for x in pytree.tree_leaves(state)])
    for a, b in zip(*states):
        assert torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))
