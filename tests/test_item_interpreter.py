"""trainkernel.item_interpreter (run_items): a grid kernel run work item by work
item is the phase interpreter's kernel bit for bit in the sequential order,
and in every random order that waits for all earlier items; with waits that
miss a dependency some order gives other bits (the oracle sees it).

The kernels are the suite's small, medium and mlp4 (and mlp4's AdamW +
cross-entropy twin) at a few rows and narrow widths, on both gemm engines,
with a target that splits K wherever a phase leaves blocks idle and gives
every column sum 16-row partials: split-K on mma.sync (8 and 2 slices) and
wgmma (edge tiles, a raster of 3 x 2 tiles), column partials, maps with
broadcasts, column, row and whole reductions, `tile.sync block` regions and
in-place state updates (SGD, AdamW)."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.utils._pytree as pytree
from xdsl.dialects.builtin import IntegerAttr, StringAttr

import trainkernel
import trainkernel.target as T
from trainkernel.dialects import tile
from trainkernel.item_interpreter import ItemInterpreterError, gemm_unit, item_span, run_items
from trainkernel.sched_interpreter import run_program
from trainkernel.util import numel
from trainkernel.workloads import TWINS, WORKLOADS

from _tile_stage import tile_kernel
from _variants import BEFORE_STEP_106

SPLIT = "items_split_partials"
WIDTHS = "items_gemm_widths"  # split-K as SPLIT, and a width per wgmma gemm (32 to 128)
# SPLIT keeps the one-width tiles of 64-256 its cases were written against
# (before perf-log steps 99 and 101); WIDTHS has both. Both price units as before
# step 106 (the tiles and grids the cases were written against).
VARIANTS = {SPLIT: dict(ksplit_min_k=16, column_partials_min_bytes=0, wgmma_tiles_n=(64, 128, 256),
                        wgmma_gemm_widths=False, **BEFORE_STEP_106),
            WIDTHS: dict(ksplit_min_k=16, column_partials_min_bytes=0, wgmma_tiles_n=(32, 64, 128),
                         wgmma_gemm_widths=True, **BEFORE_STEP_106)}
KERNELS = {  # id: (workload, rows, widths, grid, engine, target)
    "small-mma": (WORKLOADS["small"], 40, (32, 48, 16), 4, "mma", None),
    "small-wgmma": (WORKLOADS["small"], 97, (64, 48, 16), 16, "wgmma", SPLIT),
    "medium-mma": (WORKLOADS["medium"], 40, (64, 256, 16), 64, "mma", SPLIT),
    "mlp4-mma": (WORKLOADS["mlp4"], 24, (32, 32, 32, 32, 32), 4, "mma", SPLIT),
    "mlp4-adamw-ce-wgmma": (TWINS["mlp4-adamw-ce"], 300, (32, 136, 72, 32, 256), 8, "wgmma", SPLIT),
    "small-wgmma-widths": (WORKLOADS["small"], 128, (64, 512, 64), 16, "wgmma", WIDTHS),
}


@functools.cache
def _case(name: str) -> tuple[str, list[torch.Tensor]]:
    """The kernel's text (each test parses its own copy) and its inputs."""
    from trainkernel.ir import print_module

    w, rows, widths, grid, engine, target = KERNELS[name]
    w = w.with_sizes(rows, widths)
    x, y = w.make_batches(1, dtype=torch.bfloat16)[0]
    args = (w.init_state(), x, y)
    captured = trainkernel.capture(w.make_step(torch.bfloat16), args)
    if target is not None:
        T.variant(target, **VARIANTS[target])  # registered while the passes run
    try:
        kernel = tile_kernel(captured, target, grid=grid, engine=engine)
    finally:
        T.TARGETS.pop(target, None)
    return print_module(kernel.parent_op()), pytree.tree_leaves(args)


def _kernel(name: str, scope: str | None = None) -> tuple[tile.KernelOp, list[torch.Tensor]]:
    """A fresh kernel (every tile.sync turned into one of `scope`, if given) and its inputs."""
    from trainkernel.ir import parse_module

    text, inputs = _case(name)
    kernel = next(op for op in parse_module(text).walk() if isinstance(op, tile.KernelOp))
    for op in kernel.block.ops:
        if scope is not None and isinstance(op, tile.SyncOp):
            op.scope = StringAttr(scope)  # not a scope the verifier knows yet: never verified
    return kernel, inputs


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).view(torch.uint8) if t.dtype != torch.bool else t.reshape(-1)


def _same(a: tuple[torch.Tensor, ...], b: tuple[torch.Tensor, ...]) -> bool:
    """Bit for bit (NaN equal to the same NaN)."""
    return len(a) == len(b) and all(x.dtype == y.dtype and x.shape == y.shape and torch.equal(_bits(x), _bits(y))
                                    for x, y in zip(a, b))


def _work(kernel: tile.KernelOp) -> list[tile.TileWorkOp]:
    return [op for op in kernel.block.ops if isinstance(op, tile.TileWorkOp)]


def _all_earlier(kernel: tile.KernelOp):
    """waits = every item of every earlier op (a barrier in disguise)."""
    items = [op.items for op in _work(kernel)]
    return lambda k, i: [(j, n) for j in range(k) for n in range(items[j])]


def test_the_kernels_have_what_the_oracle_must_cover():
    seen = set()
    for name in KERNELS:
        kernel, _ = _kernel(name)
        for op in _work(kernel):
            if isinstance(op, tile.GemmOp):
                seen.add(f"{op.engine} gemm" + (" split-K" if op.ksplit > 1 else ""))
                if op.column_partials() is not None:
                    seen.add("column partials")
            elif isinstance(op, tile.ReduceOp):
                seen.add("row reduce" if op.is_row_reduction() else "column reduce" if op.rows > 1 else "reduce")
            elif op.items > 1:
                seen.add("map of several items")
        seen |= {f"sync {op.scope.data}" for op in kernel.block.ops if isinstance(op, tile.SyncOp)}
        if len({op.tile_shape for op in _work(kernel) if isinstance(op, tile.GemmOp) and op.engine == "wgmma"}) > 1:
            seen.add("wgmma gemms of several widths")
    assert seen == {"mma gemm", "mma gemm split-K", "wgmma gemm", "wgmma gemm split-K", "column partials",
                    "row reduce", "column reduce", "reduce", "map of several items", "sync grid", "sync block",
                    "wgmma gemms of several widths"}


@pytest.mark.parametrize("name", KERNELS)
def test_item_by_item_in_order_is_the_phase_interpreter(name):
    kernel, inputs = _kernel(name)
    assert _same(run_items(kernel, inputs), run_program(kernel, inputs))


@pytest.mark.parametrize("name", KERNELS)
def test_random_orders_that_wait_for_every_earlier_item_give_the_same_bits(name):
    kernel, inputs = _kernel(name)
    want = run_program(kernel, inputs)
    loose, _ = _kernel(name, scope="items")
    with pytest.raises(ItemInterpreterError, match="needs `waits`"):
        run_items(loose, inputs)
    for seed in range(3):
        assert _same(run_items(loose, inputs, _all_earlier(loose), seed=seed), want), seed


@pytest.mark.parametrize("name", ["small-mma", "medium-mma", "mlp4-adamw-ce-wgmma"])
def test_without_waits_some_order_gives_other_bits(name):
    kernel, inputs = _kernel(name, scope="items")
    want = run_program(_kernel(name)[0], inputs)
    assert any(not _same(run_items(kernel, inputs, lambda k, i: (), seed=s), want) for s in range(4))


def _phase_waits(kernel: tile.KernelOp, only=None, drop=()):
    """waits = every item of every op of an earlier phase (the syncs in disguise);
    for a pair (k, j) in `only`, item i of op k waits for item i of op j alone
    (a row-local pair); but never the (item, earlier item) pairs in `drop`."""
    phase = [p for p, ops in enumerate(kernel.phases()) for _ in ops]
    items = [op.items for op in _work(kernel)]
    only = only or set()

    def waits(k, i):
        out = []
        for j in range(k):
            if phase[j] < phase[k]:
                out += [(j, i)] if (k, j) in only else [(j, n) for n in range(items[j])]
        return [x for x in out if ((k, i), x) not in drop]

    return waits


def test_one_missing_wait_shows_in_some_order():
    # small: the first gemm without the last item of the bf16 cast of W1 (3 items), its B.
    kernel, inputs = _kernel("small-mma")
    want = run_program(kernel, inputs)
    loose, _ = _kernel("small-mma", scope="items")
    gemm = next(k for k, op in enumerate(_work(loose)) if isinstance(op, tile.GemmOp))
    assert _same(run_items(loose, inputs, _phase_waits(loose), seed=0), want)
    missing = _phase_waits(loose, drop={((gemm, 0), (0, _work(loose)[0].items - 1))})
    assert any(not _same(run_items(loose, inputs, missing, seed=s), want) for s in range(16))


def test_row_local_waits_and_one_missing_row():
    """mlp4-adamw-ce's `tile.sync block` region: item i of the map after the first
    block sync writes rows 12i..12i+11 of the logits' exp, which item i of the row
    sum after the next block sync alone reads. Waiting for that item alone gives
    the same bits in any order; without it, item 7's rows show."""
    kernel, inputs = _kernel("mlp4-adamw-ce-wgmma")
    want = run_program(kernel, inputs)
    loose, _ = _kernel("mlp4-adamw-ce-wgmma", scope="items")
    ops, work = list(loose.block.ops), _work(loose)
    # (loose's syncs are all `items` now: the block sync's place is the original's)
    after = next(k for k, op in enumerate(kernel.block.ops) if isinstance(op, tile.SyncOp) and op.scope.data == "block")
    p = work.index(ops[after + 1])
    c = work.index(ops[after + 3])
    assert isinstance(work[p], tile.MapOp) and isinstance(work[c], tile.ReduceOp) and work[c].is_row_reduction()
    assert work[p].items == work[c].items == 25
    for seed in range(3):
        assert _same(run_items(loose, inputs, _phase_waits(loose, only={(c, p)}), seed=seed), want), seed
    missing = _phase_waits(loose, only={(c, p)}, drop={((c, 7), (p, 7))})
    assert any(not _same(run_items(loose, inputs, missing, seed=s), want) for s in range(4))


def test_barrier_scopes_decide_which_syncs_order():
    # mlp4-adamw-ce's `tile.sync block`s stop ordering when only grid syncs are barriers.
    kernel, inputs = _kernel("mlp4-adamw-ce-wgmma")
    with pytest.raises(ItemInterpreterError, match="needs `waits`"):
        run_items(kernel, inputs, barrier_scopes=("grid",))
    assert _same(run_items(kernel, inputs, _all_earlier(kernel), seed=1, barrier_scopes=("grid",)),
                 run_program(kernel, inputs))


def test_bad_waits_and_resident_kernels_are_refused():
    kernel, inputs = _kernel("small-mma", scope="items")
    with pytest.raises(ItemInterpreterError, match=r"waits\(0, 0\) names \(0, 0\)"):
        run_items(kernel, inputs, lambda k, i: [(k, i)], seed=0)
    kernel.properties["cluster"] = IntegerAttr(1, 64)
    with pytest.raises(ItemInterpreterError, match="grid tile.kernels"):
        run_items(kernel, inputs)


def test_gemm_units_as_each_engine_numbers_them():
    # wgmma (tk::hopper::work_unit): 300 x 136 in 128 x 128 tiles is 3 x 2 tiles in one
    # raster group, column-major: units 0, 1, 2 go down the first tile column.
    kernel, _ = _kernel("mlp4-adamw-ce-wgmma")
    gemms = [op for op in _work(kernel) if isinstance(op, tile.GemmOp)]
    g = gemms[0]
    assert tile.iteration_space(g) == (300, 136, 32) and g.ksplit == 1
    got = [(u.m0, u.m1, u.n0, u.n1) for u in map(functools.partial(gemm_unit, g), range(g.items))]
    assert got == [(0, 128, 0, 128), (128, 256, 0, 128), (256, 300, 0, 128),
                   (0, 128, 128, 136), (128, 256, 128, 136), (256, 300, 128, 136)]
    # Split: unit = tile * 2 + slice, K = 136 in slices of whole 64-steps: 128, then 8.
    s = gemms[1]
    assert tile.iteration_space(s) == (300, 72, 136) and s.ksplit == 2
    assert gemm_unit(s, 3) == gemm_unit(s, 3).__class__(1, 1, 128, 256, 0, 72, 128, 136)
    # mma.sync (CudaPrinter.gemm): tile = item / ksplit, row-major over 64 x 64 tiles.
    kernel, _ = _kernel("medium-mma")
    m = next(op for op in _work(kernel) if isinstance(op, tile.GemmOp))
    assert tile.iteration_space(m) == (40, 256, 64) and m.ksplit == 2
    assert gemm_unit(m, 5) == gemm_unit(m, 5).__class__(2, 1, 0, 40, 128, 192, 32, 64)


@pytest.mark.parametrize("name", KERNELS)
def test_items_write_every_output_element_once(name):
    """The regions partition each op's outputs: gemm tiles cover M x N once and a
    tile's slices cover K once; map and reduce items cover their outputs once."""
    kernel, _ = _kernel(name)
    for op in _work(kernel):
        if isinstance(op, tile.GemmOp):
            m, n, k = tile.iteration_space(op)
            out = torch.zeros(m, n, dtype=torch.int32)
            ks = torch.zeros(op.items // op.ksplit, k, dtype=torch.int32)
            for i in range(op.items):
                u = gemm_unit(op, i)
                ks[u.tile, u.k0 : u.k1] += 1
                if u.split == 0:
                    out[u.m0 : u.m1, u.n0 : u.n1] += 1
            assert bool((out == 1).all()) and bool((ks == 1).all()), op
        else:
            n = numel(tuple(tile.iteration_space(op) if isinstance(op, tile.MapOp)
                            else op.reduction().result.type.get_shape()))
            spans = [item_span(op, i) for i in range(op.items)]
            assert spans[0][0] == 0 and spans[-1][1] == n and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
            assert all(lo < hi for lo, hi in spans), op


def test_a_split_k_slice_reads_its_operands_when_it_runs():
    """medium's h @ W2 (40 x 16, K = 256 in 8 slices of 32) after h = relu(x @ W1 + b1)
    (40 x 256 in 4 tiles of 64 columns, 2 K slices each: items 2t, 2t + 1). Slice s
    reads h's columns 32s..32s+31, which tile s // 2 stores when both its slices have
    run: waiting for those two items alone gives the same bits in any order. Slice 0
    waiting for one of them only reads h before it is stored, even where the tile's
    last slice runs after h is complete."""
    kernel, inputs = _kernel("medium-mma")
    want = run_program(kernel, inputs)
    loose, _ = _kernel("medium-mma", scope="items")
    work = _work(loose)
    p, c = [k for k, op in enumerate(work) if isinstance(op, tile.GemmOp)][:2]
    assert tile.iteration_space(work[p]) == (40, 256, 64) and (work[p].ksplit, work[p].items) == (2, 8)
    assert tile.iteration_space(work[c]) == (40, 16, 256) and (work[c].ksplit, work[c].items) == (8, 8)
    base = _phase_waits(loose)

    def precise(k, i, drop=()):
        if k != c:
            return base(k, i)
        return [(j, n) for j, n in base(k, i) if j != p] + [(p, n) for n in (2 * (i // 2), 2 * (i // 2) + 1)
                                                             if ((k, i), (p, n)) not in drop]

    for seed in range(3):
        assert _same(run_items(loose, inputs, precise, seed=seed), want), seed
    missing = functools.partial(precise, drop={((c, 0), (p, 1))})
    assert any(not _same(run_items(loose, inputs, missing, seed=s), want) for s in range(4))


def test_a_split_k_partial_overwritten_before_the_fix_up_is_an_error(monkeypatch):
    """The slices' fp32 partials are arena bytes at the gemm's `workspace`: bytes
    that change between a slice's store and the fix-up are reported."""
    from trainkernel import item_interpreter

    kernel, inputs = _kernel("medium-mma")
    work = _work(kernel)
    c = [k for k, op in enumerate(work) if isinstance(op, tile.GemmOp)][1]
    run = item_interpreter._Machine.run

    def clobber(self, k, i):
        run(self, k, i)
        if (k, i) == (c, 0):  # another op's store on slice 0's partial
            self.arena[work[c].workspace : work[c].workspace + 4] = 0

    monkeypatch.setattr(item_interpreter._Machine, "run", clobber)
    with pytest.raises(ItemInterpreterError, match="partial of slice 0 was overwritten"):
        run_items(kernel, inputs)


@pytest.mark.parametrize("shared", [True, False], ids=["shared-fixup", "last-arrival"])
def test_when_a_wgmma_split_k_slice_finishes(target_fields, shared):
    """mlp4-adamw-ce's second layer (300 x 72, K = 136: 3 tiles, 2 slices each, items
    2t, 2t + 1) feeds the third (300 x 32, K = 72: tile t reads the rows of tile t).
    Under the shared fix-up (target.split_k_shared_fixup) a slice finishes only once
    its tile is stored whole, so waiting for slice 0 alone is enough; under the
    last-arrival fix-up slice 0 may finish first, having stored only its partial."""
    target_fields(split_k_shared_fixup=shared)
    kernel, inputs = _kernel("mlp4-adamw-ce-wgmma")
    want = run_program(kernel, inputs)
    loose, _ = _kernel("mlp4-adamw-ce-wgmma", scope="items")
    work = _work(loose)
    gemms = [k for k, op in enumerate(work) if isinstance(op, tile.GemmOp)]
    p, c = gemms[1], gemms[2]
    assert tile.iteration_space(work[p]) == (300, 72, 136) and (work[p].ksplit, work[p].items) == (2, 6)
    assert tile.iteration_space(work[c]) == (300, 32, 72) and work[c].items == 3
    base = _phase_waits(loose)

    def first_slice_only(k, i):
        return base(k, i) if k != c else [(j, n) for j, n in base(k, i) if j != p] + [(p, 2 * i)]

    same = [_same(run_items(loose, inputs, first_slice_only, seed=s), want) for s in range(4)]
    assert all(same) if shared else not all(same)
