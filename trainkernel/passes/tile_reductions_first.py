"""`tile-reductions-first`: in each phase of a grid kernel, reductions before gemms.

A block of a grid kernel takes its work items of a phase's ops one op after
another, so the order of the ops is the order in which each block's work
happens. The ops of one phase are independent (each reads memory as the phase
began, `tile.sync` orders phases), so any order computes the same bits; only
the time changes.

A column sum (a bias gradient) reads what the previous phase stored, a row
of its columns at a time, in pieces one row pitch apart. Behind the phase's
gemms it ran after their epilogues had streamed the weights and gradients
through L2, and read its input back from DRAM: large's p4 bias sums ended
~39k cycles after the weight-gradient gemm with one element or 16 bytes a
lane alike (perf-log steps 35 and 36). Ahead of the gemms the reductions read
it while it is still in L2. Only reductions that a block would run after
gemm items move (their items wrap around the grid onto blocks that ran
earlier items of the phase); maps keep their place (an optimizer update reads
the gradient a gemm of an earlier phase stored, not this phase's).

Resident kernels (`cluster`) and one-block kernels are left as they are: their
phases are one block's ordered program, priced by tile-resident's cost model
in that order. `target.reductions_first = False` turns the pass off (the
probe's baseline).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass

from trainkernel.dialects import tile
from trainkernel.passes.sched_to_tile import renumber_offsets
from trainkernel.target import DEFAULT, pass_target


def reductions_first(ops: list[tile.TileWorkOp], grid: int, pairs: bool = False) -> None:
    """Move the phase's tile.reduce ops that a block would run after gemm
    items ahead of its first gemm (every other op keeps its order) and
    renumber the offsets (each op's first item on the block after the previous
    op's last).

    A reduction behind a gemm whose items all land on blocks of their own
    (offset + items <= grid) waits for nothing; moving it only shifts the
    gemm's units onto other blocks: mlp4 +0.6 and mlp4-adamw-ce +1.1 µs when
    those moved too (run 7e11cbf-q). One that wraps onto blocks that ran
    earlier items of the phase ran after them: those move. `pairs`: a paired
    kernel's gemms start on even blocks (renumber_offsets)."""
    first = next((k for k, op in enumerate(ops) if isinstance(op, tile.GemmOp)), None)
    if first is None:
        return
    late = [op for op in ops[first:] if isinstance(op, tile.ReduceOp) and op.offset + op.items > grid]
    if not late:
        return
    anchor = ops[first]
    block = anchor.parent_block()
    assert block is not None
    for op in late:
        op.detach()
        block.insert_op_before(op, anchor)
    moved = {id(op) for op in late}
    ops[first:] = late + [op for op in ops[first:] if id(op) not in moved]
    renumber_offsets(ops, pairs)


@dataclass(frozen=True)
class TileReductionsFirstPass(ModulePass):
    """In every phase of a grid kernel, run the reductions before the gemms."""

    name = "tile-reductions-first"

    target: str = DEFAULT.name  # a name of trainkernel.target.TARGETS

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        target = pass_target(self.name, self.target)
        if not target.reductions_first:
            return
        for kernel in op.walk():
            if isinstance(kernel, tile.KernelOp) and kernel.cluster is None and kernel.grid > 1:
                for ops in kernel.phases():
                    reductions_first(ops, kernel.grid, kernel.gemm_cluster is not None)
