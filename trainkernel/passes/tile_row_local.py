"""`tile-row-local`: consecutive phases that work row by row, ordered by block barriers.

A softmax, a log-softmax cross-entropy or a norm is a chain of row
reductions and maps over the rows of one tensor: mlp4-adamw-ce's loss is
row max, exp, row sum, log, gradient in four grid phases (p5-p8, ~6 µs of
its 51 by the op timer), each ending in a grid barrier although every value
a row needs comes from the same row. If every op of such a run of phases
takes its work items as whole rows, the same rows to an item and the same
item to a block (offset 0), then what a block reads in the next phase it
wrote itself: a block barrier (`__syncthreads`) orders the phases, not a
grid barrier (`tile.sync block` in a grid kernel; the kernel verifier checks
exactly this, `tile.row_local_violation`).

The pass takes each maximal run of at least two phases of a grid kernel whose
ops are row-partitionable over one row count R (tile.map of an iteration
space [R, ...], row reductions of an [R, C] input), sets every op to `rows`
rows an item (the block's warps, fewer where a map's item would exceed its
current size: one row's elements must fit in what the map took an item
before), offset 0, and makes the barriers inside the run block barriers, if
the verifier's conditions hold (else it leaves the run alone). The results
are the same bits (each op computes the same values; only which block runs
them changes).

On by default (`target.row_local`) since the H200 measured it: mlp4-adamw-ce
47.78 -> 43.90 us a step (perf-log step 41); `resident_probe --target
'| row_local=0'` is the probe against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntAttr
from xdsl.passes import ModulePass

from trainkernel.dialects import sched, tile
from trainkernel.target import DEFAULT, pass_switched_on
from trainkernel.util import align_up, ceil_div, numel


def _candidate_rows(op: tile.TileWorkOp) -> int | None:
    """R of an op that can take its items as whole rows of an R-row iteration space."""
    if isinstance(op, tile.MapOp):
        shape = tile.iteration_space(op)
        return shape[0] if shape and numel(shape[1:]) <= op.chunk else None
    part = tile.row_partition(op) if isinstance(op, tile.ReduceOp) else None  # a row reduction: any rows an item
    return part[0] if part is not None else None


def _runs(kernel: tile.KernelOp) -> list[tuple[list[tile.SyncOp], list[tile.TileWorkOp]]]:
    """Maximal runs of two or more phases whose ops all have the same candidate R:
    (the grid barriers between the run's phases, the run's ops)."""
    phases = kernel.phases()
    syncs = [op for op in kernel.block.ops if isinstance(op, tile.SyncOp)]  # syncs[k] ends phases[k]
    rows = []
    for ops in phases:
        rs = {_candidate_rows(op) for op in ops}
        rows.append(next(iter(rs)) if len(rs) == 1 and None not in rs else None)
    runs = []
    k = 0
    while k < len(phases):
        j = k
        while rows[k] is not None and j + 1 < len(phases) and rows[j + 1] == rows[k]:
            j += 1
        if j > k:
            runs.append((syncs[k:j], [op for ops in phases[k : j + 1] for op in ops]))
        k = j + 1
    return runs


def _separate_written_buffers(kernel: tile.KernelOp, ops, accesses) -> dict[sched.BufferOp, int]:
    """Give every arena buffer the run writes that shares bytes with another buffer
    the run touches its own bytes at the arena's end (sched-allocate reuses
    bytes from phase to phase, which a grid barrier orders; a block barrier
    orders only the block's own rows). Returns the moved buffers' old offsets."""
    touched = {a.root for op in ops for a in accesses[op]}
    written = [a.root for op in ops for a in accesses[op] if a.write]
    moved: dict[sched.BufferOp, int] = {}

    def span(v):
        o = v.owner
        return (o.offset_value, o.offset_value + sched.nbytes(v.type)) if isinstance(o, sched.BufferOp) else None

    arena = kernel.arena_bytes.data
    for w in dict.fromkeys(written):
        mine = span(w)
        if mine is None:
            continue
        if any((s := span(o)) is not None and mine[0] < s[1] and s[0] < mine[1] for o in touched if o is not w):
            moved[w.owner] = w.owner.offset_value
            arena = align_up(arena, sched.ARENA_ALIGNMENT)
            w.owner.properties["offset"] = IntAttr(arena)
            arena += sched.nbytes(w.type)
    if moved:
        kernel.properties["arena_bytes"] = IntAttr(max(arena, kernel.arena_bytes.data))
    return moved


def row_local(kernel: tile.KernelOp) -> None:
    """Join every qualifying run of row-partitionable phases of `kernel` with block barriers."""
    warps = kernel.threads // 32
    for syncs, ops in _runs(kernel):
        rows_n = _candidate_rows(ops[0])
        assert rows_n is not None
        per_item = warps
        for op in ops:
            if isinstance(op, tile.MapOp):
                per_item = min(per_item, op.chunk // numel(tile.iteration_space(op)[1:]))
        per_item = max(1, min(per_item, rows_n))
        old = {op: dict(op.properties) for op in ops}
        items = ceil_div(rows_n, per_item)
        for op in ops:
            if isinstance(op, tile.MapOp):
                chunk = per_item * numel(tile.iteration_space(op)[1:])
                op.properties.update(tile.config(items=items, offset=0, chunk=chunk))
            else:
                op.properties.update(tile.config(items=items, offset=0, rows=per_item))
        accesses = {op: tile.op_accesses(kernel, op) for op in ops}
        arena = kernel.arena_bytes.data
        moved = _separate_written_buffers(kernel, ops, accesses)
        if tile.row_local_violation(kernel, ops, accesses) is not None:
            for buf, offset in moved.items():
                buf.properties["offset"] = IntAttr(offset)
            kernel.properties["arena_bytes"] = IntAttr(arena)
            for op in ops:  # leave the run as it was
                op.properties.clear()
                op.properties.update(old[op])
            continue
        for sync in syncs:
            sync.properties["scope"] = builtin.StringAttr("block")


@dataclass(frozen=True)
class TileRowLocalPass(ModulePass):
    """Order runs of row-by-row phases of a grid kernel with block barriers."""

    name = "tile-row-local"

    target: str = DEFAULT.name  # a name of trainkernel.target.TARGETS
    mode: str = "target"  # target (as target.row_local says), on, off

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if not pass_switched_on(self.name, self.target, self.mode, "row_local"):
            return
        for kernel in list(op.walk()):
            if isinstance(kernel, tile.KernelOp) and kernel.cluster is None and kernel.grid > 1:
                row_local(kernel)
