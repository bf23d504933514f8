"""tile-item-flags and trainkernel.item_deps: grid barriers replaced by
per-item flags (issue 10.5).

The dependencies are checked against the item-level interpreter
(trainkernel.item_interpreter), an independent model of what each item reads
and writes: every order of the items that respects them gives the bits of
the phase interpreter, and dropping one dependency shows in some order. The
kernels are test_item_interpreter's (small, medium, mlp4 and mlp4's AdamW +
cross-entropy twin at a few rows and odd widths, both gemm engines, split-K,
column partials, in-place state)."""

from __future__ import annotations

import random
import re
import shutil
import subprocess

import pytest
from xdsl.dialects.builtin import StringAttr

from trainkernel.backend.cuda_target import emit_cuda
from trainkernel.dialects import tile
from trainkernel.item_deps import flat_boxes, gemm_tile, item_deps
from trainkernel.item_interpreter import gemm_unit, run_items
from trainkernel.passes.tile_item_flags import separate_temporaries, use_item_flags
from trainkernel.sched_interpreter import run_program
from trainkernel.util import numel

from test_item_interpreter import KERNELS, _kernel, _same, _work


def _waits(kernel: tile.KernelOp, drop=frozenset()):
    """The interpreter's waits: an item's producer and consumer lists together."""
    deps = item_deps(kernel)

    def waits(k, i):
        refs = deps.waits.get((k, i), []) + deps.producer_waits.get((k, i), [])
        return [r for r in refs if ((k, i), r) not in drop]

    return waits


def _flagged(name: str, separate: bool = True) -> tuple[tile.KernelOp, list, tuple]:
    """The kernel with every grid barrier an items sync (and, `separate`, its
    temporaries moved off shared bytes), its inputs and the barrier kernel's results."""
    kernel, inputs = _kernel(name)
    want = run_program(kernel, inputs)
    for op in kernel.block.ops:
        if isinstance(op, tile.SyncOp) and op.scope.data == "grid":
            op.scope = StringAttr("items")
    if separate:
        separate_temporaries(kernel)
    return kernel, inputs, want


def test_flat_ranges_as_boxes_cover_exactly_the_range():
    rng = random.Random(0)
    for shape in [(7,), (3, 5), (2, 3, 4), (4, 1, 6), (1,), ()]:
        n = numel(shape)
        for _ in range(20):
            lo = rng.randrange(0, n + 1)
            hi = rng.randrange(lo, n + 1)
            seen = []
            for blo, bhi in flat_boxes(lo, hi, shape):
                idx = [()]
                for l, h in zip(blo, bhi):
                    idx = [i + (x,) for i in idx for x in range(l, h)]
                strides = [numel(shape[d + 1:]) for d in range(len(shape))]
                seen += [sum(a * s for a, s in zip(i, strides)) for i in idx]
            assert sorted(seen) == list(range(lo, hi)), (shape, lo, hi)


@pytest.mark.parametrize("name", KERNELS)
def test_gemm_items_as_the_interpreter_numbers_them(name):
    kernel, _ = _kernel(name)
    for op in _work(kernel):
        if isinstance(op, tile.GemmOp):
            bm, bn, _ = op.tile_shape
            for item in range(op.items):
                u = gemm_unit(op, item)
                assert gemm_tile(op, item) == (u.m0 // bm, u.n0 // bn, u.split), (op.engine, item)


@pytest.mark.parametrize("separate", [True, False], ids=["own-bytes", "shared-bytes"])
@pytest.mark.parametrize("name", KERNELS)
def test_orders_that_respect_the_dependencies_give_the_barrier_kernels_bits(name, separate):
    # Without separate_temporaries the arena's reused bytes are dependencies too.
    kernel, inputs, want = _flagged(name, separate)
    waits = _waits(kernel)
    for seed in range(4):
        assert _same(run_items(kernel, inputs, waits, seed=seed), want), seed


@pytest.mark.parametrize("name", ["small-mma", "mlp4-adamw-ce-wgmma"])
def test_a_dropped_dependency_shows_in_some_order(name):
    kernel, inputs, want = _flagged(name)
    deps = item_deps(kernel)
    lists = sorted({**deps.producer_waits, **deps.waits}.items())
    caught = 0
    for ref, refs in lists[:: max(1, len(lists) // 6)][:6]:
        waits = _waits(kernel, drop={(ref, refs[0])})
        caught += any(not _same(run_items(kernel, inputs, waits, seed=s), want) for s in range(6))
    assert caught >= 2, caught


def test_lists_leave_out_what_another_wait_orders():
    kernel, _, _ = _flagged("medium-mma")
    deps = item_deps(kernel)
    ops = _work(kernel)
    # No list names an item that another item of the same list already waits for.
    for table in (deps.waits, deps.producer_waits):
        for ref, refs in table.items():
            for r in refs:
                assert not set(refs) & set(deps.waits.get(r, []) + deps.producer_waits.get(r, [])), (ref, r)
    assert len(ops) == len(deps.ops)


def test_the_pass_keeps_a_barrier_where_every_item_needs_every_earlier_one():
    # mlp4's forward layers: each tile of a layer reads every tile of the one before.
    kernel, _ = _kernel("mlp4-mma")
    use_item_flags(kernel)
    kernel.verify()
    scopes = [op.scope.data for op in kernel.block.ops if isinstance(op, tile.SyncOp)]
    assert "items" in scopes and "grid" in scopes
    deps = item_deps(kernel)
    assert not any(deps.full_syncs)


@pytest.mark.parametrize("name", KERNELS)
def test_barriers_kept_give_what_analysing_the_changed_kernel_gives(name):
    # keep_barriers derives the analysis after some items syncs become barriers
    # (the pass: the full ones; here random choices too) instead of analysing again.
    from trainkernel.item_deps import _analyse, keep_barriers

    rng = random.Random(name)
    for trial in range(4):
        kernel, _, _ = _flagged(name)
        deps = item_deps(kernel)
        n = len(deps.full_syncs)
        barriers = deps.full_syncs if trial == 0 else [rng.random() < 0.4 for _ in range(n)]
        kept = keep_barriers(kernel, deps, barriers)
        scopes = [op.scope.data for op in kernel.block.ops if isinstance(op, tile.SyncOp)]
        assert scopes.count("items") == n - sum(barriers)
        fresh = _analyse(kernel)
        assert kept.waits == fresh.waits and kept.producer_waits == fresh.producer_waits, (name, barriers)
        assert kept.full_syncs == fresh.full_syncs
        assert item_deps(kernel) is kept  # what the printer reads: no second analysis


def test_a_kernel_changed_after_its_analysis_is_analysed_again():
    kernel, _, _ = _flagged("small-mma")
    deps = item_deps(kernel)
    assert item_deps(kernel) is deps
    next(op for op in kernel.block.ops if isinstance(op, tile.SyncOp)).scope = StringAttr("grid")
    again = item_deps(kernel)
    assert again is not deps and len(again.full_syncs) == len(deps.full_syncs) - 1


def test_barriers_between_long_phases_stay_at_a_share():
    # target.item_flags_min_share: a barrier becomes flags where its modelled cost
    # is at least that share of the modelled phases on its two sides.
    import dataclasses

    from trainkernel.passes.sched_to_tile import phase_us
    from trainkernel.passes.tile_item_flags import sync_shares, worth_flags
    from trainkernel.target import DEFAULT

    kernel, _ = _kernel("medium-mma")
    share = sync_shares(kernel, DEFAULT)
    ops = list(kernel.block.ops)
    syncs = [op for op in ops if isinstance(op, tile.SyncOp)]
    # The first barrier's share by hand: the phases before and after it.
    first, second = ops.index(syncs[0]), ops.index(syncs[1])
    before = [op for op in ops[:first] if isinstance(op, tile.TileWorkOp)]
    after = [op for op in ops[first:second] if isinstance(op, tile.TileWorkOp)]
    want = DEFAULT.grid_costs.sync_us("grid") / (phase_us(before, kernel.grid, DEFAULT) + phase_us(after, kernel.grid, DEFAULT))
    assert share[syncs[0]] == pytest.approx(want)
    assert len(set(share.values())) > 1
    assert worth_flags(kernel, DEFAULT) == list(share)  # share 0: every barrier
    cut = sorted(share.values())[len(share) // 2]
    target = dataclasses.replace(DEFAULT, item_flags_min_share=cut)
    assert worth_flags(kernel, target) == [s for s, v in share.items() if v >= cut]
    use_item_flags(kernel, dataclasses.replace(DEFAULT, item_flags_min_share=2 * max(share.values())))
    assert not any(op.scope.data == "items" for op in kernel.block.ops if isinstance(op, tile.SyncOp))


def test_separate_temporaries_moves_only_shared_bytes_used_in_one_window():
    kernel, _ = _kernel("small-mma")
    assert separate_temporaries(kernel) == 0  # every sync a barrier: each phase its own window
    kernel, inputs, want = _flagged("small-mma", separate=False)
    arena = kernel.arena_bytes.data
    moved = separate_temporaries(kernel)
    assert moved > 0 and kernel.arena_bytes.data > arena
    assert _same(run_items(kernel, inputs, _waits(kernel), seed=0), want)


def test_items_syncs_are_for_grid_kernels_without_cluster_pairs():
    from xdsl.dialects.builtin import IntegerAttr
    from xdsl.utils.exceptions import VerifyException

    kernel, _ = _kernel("small-wgmma")
    use_item_flags(kernel)
    kernel.verify()
    kernel.properties["gemm_cluster"] = IntegerAttr(2, 64)
    with pytest.raises(VerifyException, match="tile.sync items"):
        kernel.verify()


def _ptxas(src: str, tmp_path, defines: tuple[str, ...] = ()) -> str:
    from pathlib import Path

    import trainkernel

    cu = tmp_path / "k.cu"
    cu.write_text(src)
    include = Path(trainkernel.__file__).parent / "backend" / "include"
    out = subprocess.run(["nvcc", "-O3", "-std=c++17", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", *defines,
                          "-I", str(include), "-Xptxas", "-v", str(cu), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", ["small-wgmma", "mlp4-adamw-ce-wgmma", "medium-mma"])
def test_flag_kernels_compile_for_sm90a(name, tmp_path):
    kernel, _ = _kernel(name)
    barrier_log = _ptxas(emit_cuda(kernel.parent_op()), tmp_path)
    use_item_flags(kernel)
    src = emit_cuda(kernel.parent_op())
    assert "tk::item_flags(" in src and "tk::leave_item_flags(" in src and "tk::ItemArrival" in src
    if "tk::hopper::" in src:
        assert "tk::hopper::UnitFlags{" in src
    log = _ptxas(src, tmp_path)
    # No setmaxnreg ignored (C7507) and no spill the barrier kernel has not: per
    # function, no more bytes spilled (the flags' fix-up may spill less than the
    # barrier kernel's tagged one, target.split_k_tagged_partials).
    assert "C75" not in log, log[-2000:]

    def spilled(text: str) -> list[tuple[int, int]]:
        return [tuple(map(int, m)) for m in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)]

    flags, barrier = spilled(log), spilled(barrier_log)
    assert len(flags) == len(barrier), log[-2000:]
    assert all(f[0] <= b[0] and f[1] <= b[1] for f, b in zip(flags, barrier)), log[-2000:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_flag_kernels_build_with_the_probe_knobs(tmp_path):
    # perf-log step 88's knobs: flags a line apart, a poll's back-off, arrivals
    # without each lane's fence.
    kernel, _ = _kernel("small-wgmma")
    use_item_flags(kernel)
    log = _ptxas(emit_cuda(kernel.parent_op()), tmp_path,
                 ("-DTK_FLAG_STRIDE=32", "-DTK_FLAG_BACKOFF_NS=64", "-DTK_FLAG_LEAN_ARRIVAL=1"))
    assert "C75" not in log, log[-2000:]


# On the GPU: chains of launches (one captured program, replayed twice, so the
# launch counter goes on across replays) and separate calls with flags give
# the barrier kernels' bits on the suite's grid steps and unseen shapes.
@pytest.mark.cuda
@pytest.mark.parametrize("name,dtype", [("small", "bfloat16"), ("mlp4", "bfloat16"), ("medium", "bfloat16"),
                                        ("odd", "float16"), ("deep", "bfloat16")])
def test_flag_kernels_give_the_barrier_kernels_bits(target_fields, name, dtype):
    import torch

    from test_grid_carried_casts import DEEP, ODD, _chained, _separate

    w = {"odd": ODD, "deep": DEEP}.get(name, name)
    dt = getattr(torch, dtype)
    target_fields(split_k_cluster_fixup=False)  # kernels launched in clusters keep their barriers
    _, want = _chained(w, 7, 3, dt, replays=2)
    _, want_calls = _separate(w, 5, 4, dt)
    target_fields(item_flags=True, split_k_cluster_fixup=False)
    src, got = _chained(w, 7, 3, dt, replays=2)
    assert "tk::item_flags(" in src
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))
    _, got_calls = _separate(w, 5, 4, dt)
    assert all(torch.equal(a, b) for a, b in zip(got_calls, want_calls))


def test_bytes_without_a_buffer_conflict_by_their_range():
    # A split gemm's workspace is arena bytes of no buffer: two such accesses meet where their bytes do.
    from trainkernel.item_deps import Access, _Rows, conflicts

    spaces: dict = {}
    writer = _Rows([[Access(None, (((0,), (256,)),), True)], [Access(None, (((256,), (512,)),), True)]], spaces)
    reader = _Rows([[Access(None, (((300,), (310,)),), False)]], spaces)
    assert conflicts(reader, writer).tolist() == [[False, True]]


def test_the_printed_tables_hold_every_dependency_once():
    # Decode each table as tk::ItemFlags::wait walks it (entries: first flag | arrivals << 24,
    # the list's flags up to the range's end) and compare with item_deps' lists.
    from trainkernel.backend.cuda_target import CudaPrinter

    kernel, _ = _kernel("mlp4-adamw-ce-wgmma")
    use_item_flags(kernel)
    printer = CudaPrinter(kernel)
    printer.print()
    deps = printer.deps
    first_flag = {deps.ops.index(op): base for op, base in printer.flag_base.items()}
    checked = 0
    for kind, table in (("wait", deps.waits), ("pwait", deps.producer_waits)):
        for i, op in enumerate(deps.ops):
            name = f"tk_{kind}_{i}"
            if name not in printer.flag_tables:
                assert not any((i, t) in table for t in range(op.items))
                continue
            rows, entries = printer.flag_tables[name]
            for t in range(op.items):
                got, start = [], 0
                for e in range(rows[t], rows[t + 1]):
                    head, end = entries[2 * e], entries[2 * e + 1]
                    got += [((head & 0xFFFFFF) + k, head >> 24) for k in range(end - start)]
                    start = end
                want = [(first_flag[j] + q, printer.arrivals(deps.ops[j])) for j, q in table.get((i, t), [])]
                assert sorted(got) == sorted(want), (name, t)
                checked += len(want)
    assert checked > 0
