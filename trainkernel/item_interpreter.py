"""Item-level CPU interpreter of a grid `tile.kernel`: the oracle of per-item dependencies.

`sched_interpreter.run_program` runs a kernel op by op with phase semantics,
which proves the grid barriers right. A kernel that replaces some barriers with
per-item waits (an item of a later phase starts once the earlier items it
depends on have finished) needs a finer oracle: `run_items` executes ONE WORK
ITEM at a time, in a random order that respects only the barriers and the
waits it is given, and each item reads memory as it is at its own execution
time and writes only its own output region. Waits that miss a dependency give
different bits for some order (NaN where a producer had not run yet, stale
values where an in-place update came first).

The item regions are derived here from what the CUDA printer and the device
library make one work item do, not from any pass's access model, so the
check is independent of the compiler that computes the waits:

- tile.map item i: elements [i * chunk, min((i + 1) * chunk, n)) of its output
  shape, flat (CudaPrinter.map: `end`, `first`).
- tile.reduce item i: outputs [i * rows, min((i + 1) * rows, n_out)) of the
  reduction's result, flat: one output (rows = 1, CudaPrinter.reduce), a
  warp an output (row_reduce) or a thread a column (column_reduce).
- tile.gemm item: one output tile (and K slice, with split-K) as the engine
  numbers them (`gemm_unit`): the tile's rows and columns of every output,
  and of a tk.column_partials output the 16-row runs of the tile's rows
  (tk::hopper::ColumnPartials). A split-K tile is stored by its last slice
  to run, from the A and B slices each slice read when it ran; every slice
  also writes its fp32 partial to the arena bytes at `workspace`.

Memory is `run_program`'s: inputs copied, outputs NaN, arena temporaries at
their byte offsets in one byte tensor, so aliasing temporaries alias here too.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from trainkernel.dialects import sched, tile
from trainkernel.elements import nbytes, torch_dtype
from trainkernel.numerics import DEFAULT, run_block
from trainkernel.sched_interpreter import _alloc_arena, _program, _typed
from trainkernel.util import ceil_div, numel

Waits = Callable[[int, int], Iterable[tuple[int, int]]]

GROUP_M = 16
"""Tile-rows per raster group of the wgmma engine (tk::hopper::kGroupM, hopper_gemm.cuh)."""
COLUMN_PARTIAL_ROWS = 16
"""Rows a column partial sums (tk::hopper::kColumnPartialRows)."""
EAGER = 0.9
"""Chance that a random pick takes an item of the latest op that is ready,
else any ready item. A missing wait lets a consumer (or a later writer) run
before an item of an EARLIER op: preferring the latest op runs every item as
soon as its waits allow, so the missing wait shows in most orders; the rest
of the picks (and the choice within an op) vary the interleaving."""


class ItemInterpreterError(RuntimeError):
    """A kernel or waits the item interpreter cannot run (or a split-K partial
    overwritten before its tile's fix-up read it)."""


@dataclass(frozen=True)
class GemmUnit:
    """Work item `item` of a tile.gemm: K slice `split` of output tile `tile`,
    rows [m0, m1) and columns [n0, n1) of the product, K [k0, k1)."""

    tile: int
    split: int
    m0: int
    m1: int
    n0: int
    n1: int
    k0: int
    k1: int


def gemm_unit(op: tile.GemmOp, item: int) -> GemmUnit:
    """The tile and K slice of a gemm's work item, as its engine numbers them.

    mma.sync (CudaPrinter.gemm): tile = item / ksplit, slice = item % ksplit,
    tiles row-major (tile / tiles_n, tile % tiles_n). wgmma (tk::hopper::
    work_unit): the same tile / slice split, tiles rastered in groups of
    GROUP_M tile-rows, column-major within a group. A slice is K
    [s * ksl, min((s + 1) * ksl, K)), ksl = tile.gemm_k_slice (whole BK steps)."""
    m, n, k = tile.iteration_space(op)
    bm, bn, bk = op.tile_shape
    tiles_m, tiles_n = ceil_div(m, bm), ceil_div(n, bn)
    ks = op.ksplit
    t, s = divmod(item, ks)
    if op.engine == "wgmma":
        g, in_group = divmod(t, GROUP_M * tiles_n)
        rows = min(tiles_m - g * GROUP_M, GROUP_M)
        tm, tn = g * GROUP_M + in_group % rows, in_group // rows
    else:
        tm, tn = divmod(t, tiles_n)
    ksl = tile.gemm_k_slice(k, ks, bk) if ks > 1 else k
    return GemmUnit(t, s, tm * bm, min(m, (tm + 1) * bm), tn * bn, min(n, (tn + 1) * bn), s * ksl, min(k, (s + 1) * ksl))


def item_span(op: tile.MapOp | tile.ReduceOp, item: int) -> tuple[int, int]:
    """The flat output elements [lo, hi) a map or reduce item writes."""
    if isinstance(op, tile.MapOp):
        n, per = numel(tile.iteration_space(op)), op.chunk
    else:
        n, per = numel(tuple(op.reduction().result.type.get_shape())), op.rows
    return min(n, item * per), min(n, (item + 1) * per)


@dataclass
class _Tile:
    """What the slices of one split-K tile that have run left: the operands they
    read (NaN elsewhere) and the partials they stored in the workspace."""

    a: torch.Tensor
    b: torch.Tensor
    done: set[int] = field(default_factory=set)
    stored: dict[int, torch.Tensor] = field(default_factory=dict)


class _Machine:
    def __init__(self, kernel: tile.KernelOp, inputs: Sequence[torch.Tensor]):
        args = kernel.block.args
        n_in = kernel.num_inputs.data
        if len(inputs) != n_in:
            raise ItemInterpreterError(f"{kernel.sym_name.data} takes {n_in} inputs, got {len(inputs)}")
        self.kernel = kernel
        self.mem: dict[SSAValue, torch.Tensor] = {}
        for arg, x in zip(args[:n_in], inputs):
            if tuple(x.shape) != tuple(arg.type.get_shape()):
                raise ItemInterpreterError(f"input {arg.index}: shape {tuple(x.shape)} != {tuple(arg.type.get_shape())}")
            self.mem[arg] = x.detach().to("cpu", torch_dtype(arg.type.get_element_type())).contiguous().clone()
        for arg in args[n_in:]:  # as run_program: NaN, or the most negative integer
            dtype = torch_dtype(arg.type.get_element_type())
            fill = float("nan") if dtype.is_floating_point else (True if dtype == torch.bool else torch.iinfo(dtype).min)
            self.mem[arg] = torch.full(tuple(arg.type.get_shape()), fill, dtype=dtype)
        arena = _alloc_arena(kernel)
        # _alloc_arena stops at the last buffer; split-K workspaces lie past it.
        end = max((op.workspace + op.workspace_bytes() for op in kernel.block.ops
                   if isinstance(op, tile.GemmOp) and op.workspace is not None), default=0)
        if end > arena.numel():
            arena = torch.cat([arena, torch.full((end - arena.numel(),), 0xFF, dtype=torch.uint8)])
        self.arena = arena
        self.ops: list[tile.TileWorkOp] = []
        for op in kernel.block.ops:
            if isinstance(op, sched.BufferOp):
                off = op.offset_value or 0
                self.mem[op.result] = _typed(arena[off : off + nbytes(op.result.type)], op.result.type)
            elif isinstance(op, sched.ViewOp):
                self.mem[op.result] = self.mem[op.source].view(tuple(op.result.type.get_shape()))
            elif isinstance(op, tile.TileWorkOp):
                self.ops.append(op)
        self.tiles: dict[tuple[int, int], _Tile] = {}

    def results(self) -> tuple[torch.Tensor, ...]:
        args = self.kernel.block.args
        return tuple(self.mem[args[r]].clone() for r in self.kernel.result_args)

    def run(self, k: int, item: int) -> list[tuple[int, int]]:
        """Work item `item` of op k: read memory now, write its region now.
        Returns the items that have finished now (what waits on them may run)."""
        op = self.ops[k]
        values = [self.mem[v].clone() for v in op.ins]
        if isinstance(op, tile.GemmOp):
            return self._gemm(k, op, item, values)
        lo, hi = item_span(op, item)
        for buf, value in zip(op.outs, run_block(op.body.block, values)):
            self.mem[buf].view(-1)[lo:hi] = value.reshape(-1)[lo:hi]
        return [(k, item)]

    def _gemm(self, k: int, op: tile.GemmOp, item: int, values: list[torch.Tensor]) -> list[tuple[int, int]]:
        """Record what this K slice reads of A and B (the tile's rows and columns);
        the tile's last slice to run evaluates the body with the recorded
        operands and the epilogue operands as they are now, and stores the tile.

        When a slice finishes: at once under the last-arrival fix-up (mma.sync's
        tk::split_k_last, wgmma's splitk_fixup), having stored only its partial.
        Under wgmma's shared fix-up (splitk_shared_fixup, target.
        split_k_shared_fixup) every slice waits until all have stored theirs,
        then stores the row-walk passes it owns (pass c0 / kRowCols to slice
        c0 / kRowCols % splits): all of the tile's slices finish at its last
        arrival, when the tile is stored whole (the passes' owners are not
        modelled: they all finish at that one moment). A cluster fix-up
        (op.fixup == "cluster", splitk_cluster_fixup) keeps the partials in
        the owners' shared memory, not the arena, and also finishes every
        slice at the tile's last arrival."""
        mm = op.matmul
        u = gemm_unit(op, item)
        a_now, b_now = values[mm.lhs.index], values[mm.rhs.index]
        rec = self.tiles.get((k, u.tile))
        if rec is None:
            rec = self.tiles[(k, u.tile)] = _Tile(torch.full_like(a_now, float("nan")),
                                                  torch.full_like(b_now, float("nan")))
        ta, tb = mm.transpose_a is not None, mm.transpose_b is not None
        eff = lambda t, tr: t.t() if tr else t  # noqa: E731 - (rows, cols) of the product's operand
        rows, cols, depth = slice(u.m0, u.m1), slice(u.n0, u.n1), slice(u.k0, u.k1)
        eff(rec.a, ta)[rows, depth] = eff(a_now, ta)[rows, depth]
        eff(rec.b, tb)[depth, cols] = eff(b_now, tb)[depth, cols]
        rec.done.add(u.split)
        clustered = op.fixup == "cluster"
        shared = op.engine == "wgmma" and op.ksplit > 1 and (_shared_fixup() or clustered)
        if op.ksplit > 1 and not clustered:
            part = eff(a_now, ta)[rows, depth].float() @ eff(b_now, tb)[depth, cols].float()
            self._workspace(op, u)[...] = 0.0
            self._workspace(op, u)[: u.m1 - u.m0, : u.n1 - u.n0] = part
            rec.stored[u.split] = self._workspace(op, u).clone()
        if len(rec.done) < op.ksplit:
            return [] if shared else [(k, item)]
        for s, bits in rec.stored.items():  # the fix-up reads every slice's partial back
            back = self._workspace(op, gemm_unit(op, u.tile * op.ksplit + s))
            if not torch.equal(back.view(torch.int32), bits.view(torch.int32)):
                raise ItemInterpreterError(f"{op.name} #{k}: tile {u.tile}'s split-K partial of slice {s} was "
                                           "overwritten before the fix-up read it")
        del self.tiles[(k, u.tile)]
        block = op.body.block
        env = dict(zip(block.args, values))
        outs: tuple[torch.Tensor, ...] = ()
        for inner in block.ops:
            operands = [rec.a, rec.b] if inner is mm else [env[v] for v in inner.operands]
            outs = DEFAULT.eval_op(inner, operands)
            env.update(zip(inner.results, outs))
        partials = op.column_partials()
        p_rows = slice(u.m0 // COLUMN_PARTIAL_ROWS, ceil_div(u.m1, COLUMN_PARTIAL_ROWS))
        for buf, v, value in zip(op.outs, block.last_op.operands, outs):
            r = p_rows if partials is not None and v.owner is partials else rows
            self.mem[buf].view(tuple(value.shape))[r, cols] = value[r, cols]
        return [(k, u.tile * op.ksplit + s) for s in range(op.ksplit)] if shared else [(k, item)]

    def _workspace(self, op: tile.GemmOp, u: GemmUnit) -> torch.Tensor:
        """The fp32 partial slice `u.split` of tile `u.tile` stores, as a view of the
        arena: mma.sync, its elements of [ksplit][M][N] (CudaPrinter.gemm:
        tk_part); wgmma, the tile's whole BM x BN block of [tile][ksplit][BM][BN]
        fp32 in the first half of its workspace (store_split_partial; fragment
        order there, row-major here; the tagged fix-up's 8-byte words fill the
        whole: which bytes hold which value is not modelled, the sums are)."""
        m, n, _ = tile.iteration_space(op)
        bm, bn, _ = op.tile_shape
        if op.engine == "wgmma":
            tiles = ceil_div(m, bm) * ceil_div(n, bn)
            raw = self.arena[op.workspace : op.workspace + tiles * op.ksplit * bm * bn * 4]
            return raw.view(torch.float32).view(tiles, op.ksplit, bm, bn)[u.tile, u.split]
        raw = self.arena[op.workspace : op.workspace + op.ksplit * m * n * 4]
        return raw.view(torch.float32).view(op.ksplit, m, n)[u.split, u.m0 : u.m1, u.n0 : u.n1]


def _shared_fixup() -> bool:
    """Whether the CUDA printer shares a wgmma split-K tile's fix-up among its
    slices: the default target's target.split_k_shared_fixup, as registered now
    (CudaPrinter.wgmma_gemm reads the same target when it prints)."""
    from trainkernel.target import DEFAULT, TARGETS

    return bool(TARGETS.get(DEFAULT.name, DEFAULT).split_k_shared_fixup)


def _segments(kernel: tile.KernelOp, barrier_scopes: Sequence[str]) -> tuple[list[int], bool]:
    """Each work op's segment (the barriers before it), and whether the kernel
    has a sync that is no barrier (then waits must order what it separates)."""
    seg, out, loose = 0, [], False
    for op in kernel.block.ops:
        if isinstance(op, tile.SyncOp):
            barrier = op.scope.data in barrier_scopes
            seg, loose = seg + barrier, loose or not barrier
        elif isinstance(op, tile.TileWorkOp):
            out.append(seg)
    return out, loose


def run_items(
    kernel: tile.KernelOp | ModuleOp,
    inputs: Sequence[torch.Tensor],
    waits: Waits | None = None,
    seed: int | None = None,
    barrier_scopes: Sequence[str] = ("grid", "block"),
) -> tuple[torch.Tensor, ...]:
    """Run a grid tile.kernel item by item on flat CPU inputs; returns flat results.

    Items of ops that a barrier (a tile.sync of a scope in `barrier_scopes`)
    separates run in that order; otherwise item (op k, i) runs after every
    (op j, item) of `waits(k, i)` (j < k: k counts the kernel's work ops in
    order) and is unordered against all else. `seed=None`: op by op, item by
    item; a seed: a random order of those allowed (random.Random(seed)),
    mostly among the ready items of the latest op (run as early as the waits
    allow, see EAGER), else among all ready items, uniformly."""
    kernel = _program(kernel)
    if not isinstance(kernel, tile.KernelOp) or kernel.cluster is not None:
        raise ItemInterpreterError("run_items runs grid tile.kernels (a resident kernel has no items to order: "
                                   "use sched_interpreter.run_program)")
    machine = _Machine(kernel, inputs)
    ops = machine.ops
    segment, loose = _segments(kernel, tuple(barrier_scopes))
    if loose and waits is None:
        raise ItemInterpreterError("the kernel has a tile.sync that is no barrier: run_items needs `waits`")
    # Dependencies inside a segment; those on earlier segments hold by the barrier.
    needs: dict[tuple[int, int], set[tuple[int, int]]] = {}
    users: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for k, op in enumerate(ops):
        for i in range(op.items):
            mine = needs[(k, i)] = set()
            for j, item in (waits(k, i) if waits is not None else ()):
                if not (0 <= j < k and 0 <= item < ops[j].items):
                    raise ItemInterpreterError(f"waits({k}, {i}) names ({j}, {item}), not an item of an earlier op")
                if segment[j] == segment[k] and (j, item) not in mine:
                    mine.add((j, item))
                    users.setdefault((j, item), []).append((k, i))
    rng = random.Random(seed) if seed is not None else None
    for seg in sorted(set(segment)):
        items = [(k, i) for k, op in enumerate(ops) if segment[k] == seg for i in range(op.items)]
        if rng is None:
            for k, i in items:
                machine.run(k, i)
            continue
        left = {x: len(needs[x]) for x in items}
        ready = [x for x in items if left[x] == 0]
        while ready:
            pool = ready
            if rng.random() < EAGER:
                last = max(k for k, _ in ready)
                pool = [x for x in ready if x[0] == last]
            x = rng.choice(pool)
            ready.remove(x)
            del left[x]
            for done in machine.run(*x):
                for y in users.get(done, ()):
                    left[y] -= 1
                    if left[y] == 0:
                        ready.append(y)
        assert not left, "waits name earlier ops only, and every split-K tile completes: no cycle"
    return machine.results()
