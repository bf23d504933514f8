"""`tile-item-flags`: a grid kernel's grid barriers become per-item flags.

A grid barrier makes every block wait for the slowest item of the phase
before it, whatever it reads: ~1 µs a barrier over 132 blocks
(../shared/GPU.md), plus the skew of the phase's last items. Most items of
the next phase need a few of those: a gemm tile needs the tiles of its rows
of A (and the casts of its B), an optimizer update the gradient tile it
applies. `tile.sync items` orders the phases by flags instead: every item of
an earlier op that a later item depends on (trainkernel.item_deps: read
after write, write after read, write after write, through views and shared
arena bytes) counts its warps' arrivals on its flag when done, and the later
item waits for exactly those flags. The kernel stays cooperative (all blocks
resident), so a wait always ends: every item waits only for items of
earlier phases, which their blocks run before anything of a later phase.

Arena temporaries that sched-allocate gave the same bytes would make later
items wait for every reader of the bytes they overwrite (a gradient written
where the weights' cast was read); inside a run of phases joined by flags,
such temporaries get bytes of their own past the arena (more memory, no
false waits). A barrier stays where every item after it waits (directly or
through others) for every item before it: there flags only add loads; and
where the phases around it are long against its cost
(target.item_flags_min_share): there flags gain little.

Grid kernels launched in clusters (gemm_cluster's pairs, fixup_cluster's
split-K slices: both walk a phase's units as the cluster's, in one round) and
resident kernels keep their barriers. `mode`: on, off, or target (target.item_flags).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntAttr
from xdsl.passes import ModulePass

from trainkernel.dialects import sched, tile
from trainkernel.item_deps import item_accesses, item_deps, keep_barriers
from trainkernel.passes.sched_to_tile import phase_us
from trainkernel.target import DEFAULT, TargetOptions, pass_switched_on, pass_target
from trainkernel.util import align_up


def windows(kernel: tile.KernelOp) -> list[int]:
    """Per work op (kernel order): the run of phases joined by `tile.sync items`
    it belongs to."""
    out, window = [], 0
    for op in kernel.block.ops:
        if isinstance(op, tile.SyncOp) and op.scope.data != "items":
            window += 1
        elif isinstance(op, tile.TileWorkOp):
            out.append(window)
    return out


def separate_temporaries(kernel: tile.KernelOp) -> int:
    """Move arena temporaries that share bytes with another one used in the same
    window to bytes of their own past the arena; returns how many moved."""
    ops = [op for op in kernel.block.ops if isinstance(op, tile.TileWorkOp)]
    used: dict[sched.BufferOp, set[int]] = {}
    for op, window in zip(ops, windows(kernel)):
        for a in item_accesses(op, 0):  # every item of an op touches the same buffers
            root = sched.root_buffer(a.value) if a.value is not None else None
            if root is not None and isinstance(root.owner, sched.BufferOp):
                used.setdefault(root.owner, set()).add(window)
    kept: list[tuple[int, int, set[int]]] = []
    arena = kernel.arena_bytes.data
    moved = 0
    for buf in (op for op in kernel.block.ops if isinstance(op, sched.BufferOp)):
        if buf not in used or buf.offset_value is None:
            continue
        lo, hi = buf.offset_value, buf.offset_value + sched.arena_footprint(buf.result.type)
        if any(lo < h and l < hi and used[buf] & w for l, h, w in kept):
            lo = align_up(arena, sched.ARENA_ALIGNMENT)
            hi = lo + sched.arena_footprint(buf.result.type)
            buf.properties["offset"] = IntAttr(lo)
            arena = hi
            moved += 1
        kept.append((lo, hi, used[buf]))
    kernel.properties["arena_bytes"] = IntAttr(arena)
    return moved


def sync_shares(kernel: tile.KernelOp, target: TargetOptions) -> dict[tile.SyncOp, float]:
    """Per grid barrier of `kernel`: its modelled cost over the modelled time of
    the two phases it separates."""
    phases = kernel.phases()
    syncs = [op for op in kernel.block.ops if isinstance(op, tile.SyncOp)]
    barrier = target.grid_costs.sync_us("grid")
    return {s: barrier / max(phase_us(phases[q], kernel.grid, target) + phase_us(phases[q + 1], kernel.grid, target),
                             1e-9)
            for q, s in enumerate(syncs) if s.scope.data == "grid"}


def worth_flags(kernel: tile.KernelOp, target: TargetOptions) -> list[tile.SyncOp]:
    """The grid barriers of `kernel` whose share (sync_shares) is at least
    `target.item_flags_min_share` (all of them at share 0)."""
    share = target.item_flags_min_share
    return [s for s, v in sync_shares(kernel, target).items() if share <= 0 or v >= share]


def use_item_flags(kernel: tile.KernelOp, target: TargetOptions = DEFAULT) -> None:
    """The grid barriers of `kernel` worth it (worth_flags) become `tile.sync
    items`, but where every item after it needs every item before it."""
    syncs = worth_flags(kernel, target)
    if not syncs:
        return
    for s in syncs:
        s.properties["scope"] = builtin.StringAttr("items")
    separate_temporaries(kernel)
    deps = item_deps(kernel)
    keep_barriers(kernel, deps, deps.full_syncs)  # the printer reads this analysis


@dataclass(frozen=True)
class TileItemFlagsPass(ModulePass):
    """Order a grid kernel's phases by per-item flags instead of grid barriers."""

    name = "tile-item-flags"

    mode: str = "target"  # on | off | target (target.item_flags)
    target: str = DEFAULT.name  # a name of trainkernel.target.TARGETS

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if not pass_switched_on(self.name, self.target, self.mode, "item_flags"):
            return
        target = pass_target(self.name, self.target)
        for kernel in op.walk():
            if (isinstance(kernel, tile.KernelOp) and kernel.cluster is None and kernel.launch_cluster is None
                    and kernel.grid > 1):
                use_item_flags(kernel, target)
