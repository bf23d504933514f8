"""`sched-allocate`: give every arena buffer an offset, reusing space.

A buffer is live from the first phase that writes it to the last phase that
reads or writes it (through any `sched.view` of it). Two buffers may share bytes
only when their live ranges do not overlap: a barrier then lies between the last
access of one and the first write of the other. Placement is greedy best-known
practice for interval allocation: largest first, each at the lowest
256-byte-aligned offset that no overlapping-lifetime buffer already occupies.
The program's `arena` is set to the peak (the bytes the runtime allocates).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntAttr, MemRefType
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from trainkernel.dialects import sched


def live_ranges(program: sched.ProgramLikeOp) -> dict[SSAValue, tuple[int, int]]:
    """Arena buffer -> (first phase that touches it, last phase that touches it)."""
    ranges: dict[SSAValue, tuple[int, int]] = {}
    for i, work in enumerate(sched.phase_groups(program)):
        for op in work:
            for v in sched.buffers_read(op) + sched.buffers_written(op):
                if isinstance(v.owner, sched.BufferOp):
                    lo, hi = ranges.get(v, (i, i))
                    ranges[v] = (min(lo, i), max(hi, i))
    return ranges


def allocate(program: sched.ProgramLikeOp) -> int:
    ranges = live_ranges(program)
    buffers: list[sched.BufferOp] = [op for op in program.block.ops if isinstance(op, sched.BufferOp)]
    for b in buffers:
        if b.result not in ranges:
            raise DiagnosticException("sched-allocate: an arena buffer is never read or written")

    def size(b: sched.BufferOp) -> int:
        assert isinstance(b.result.type, MemRefType)
        return sched.arena_footprint(b.result.type)

    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    order = sorted(buffers, key=lambda b: (-size(b), ranges[b.result][0]))
    peak = 0
    for b in order:
        first, last = ranges[b.result]
        busy = sorted((o, e) for o, e, f, l in placed if not (l < first or last < f))
        offset = 0
        for o, e in busy:
            if offset + size(b) <= o:
                break
            offset = max(offset, e)
        b.properties["offset"] = IntAttr(offset)
        placed.append((offset, offset + size(b), first, last))
        peak = max(peak, offset + size(b))
    program.properties["arena_bytes"] = IntAttr(peak)
    return peak


@dataclass(frozen=True)
class SchedAllocatePass(ModulePass):
    """Assign arena offsets by liveness and set the program's arena size."""

    name = "sched-allocate"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for program in op.walk():
            if isinstance(program, sched.ProgramLikeOp):
                allocate(program)


__all__ = ["SchedAllocatePass", "allocate", "live_ranges"]
