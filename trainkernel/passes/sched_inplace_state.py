"""`sched-inplace-state`: write updated parameters in place where that is safe.

`tk-to-sched` stages every in-place state update: the new value goes to an
arena buffer and a `sched.commit` copies it over the parameter after the last
reader of the old value. This pass removes the staging where it can prove the
old value has no reader left when the producer writes:

- every other reader of the parameter runs in an earlier phase (a barrier lies
  between), and
- the producer itself reads the parameter only elementwise at the index it
  writes (an epilogue or pointwise input of exactly the output's shape), never
  as a matmul operand, a broadcast input or through a reduction.

Then the producer writes the parameter directly and the commit disappears.
Otherwise the commit stays where `tk-to-sched` put it. Phases left empty are
removed with their barrier. Never introduces a read-after-write hazard: the
phase verifier re-checks every phase afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from trainkernel.dialects import sched, tk

ELEMENTWISE_READERS = tk.ELEMENTWISE_OPS


def _phase_index(program: sched.ProgramOp) -> dict[Operation, int]:
    return {op: i for i, work in enumerate(sched.phase_groups(program)) for op in work}


def _reads(op: Operation, root: SSAValue) -> bool:
    return any(sched.root_buffer(v) is root for v in sched.buffers_read(op))


def _reads_only_at_own_index(producer: sched.ComputeOp, state: SSAValue, out_shape: tuple[int, ...]) -> bool:
    """Whether every use of `state` inside the producer's body is an elementwise
    read at the element being written."""
    block = producer.body.block
    for buf, arg in zip(producer.ins, block.args):
        if sched.root_buffer(buf) is not state:
            continue
        if buf is not state or tuple(tk.shape_of(arg)) != out_shape:
            return False  # a reshaped view or a broadcast: other indices are read
        # Everything computed from the state must stay elementwise at the output's
        # shape all the way to the yield: a matmul, reduction or view of
        # neg(state) reads other elements just as one of the state itself does.
        pending, seen = [arg], set()
        while pending:
            value = pending.pop()
            for use in value.uses:
                user = use.operation
                if isinstance(user, tk.YieldOp) or user in seen:
                    continue
                if not isinstance(user, ELEMENTWISE_READERS) or tk.shape_of(user.results[0]) != out_shape:
                    return False
                seen.add(user)
                pending.extend(user.results)
    return True


def make_direct(program: sched.ProgramOp, commit: sched.CommitOp, phase_of: dict[Operation, int]) -> bool:
    staged, state = commit.source, commit.target
    if not isinstance(staged.owner, sched.BufferOp):
        return False
    producers = [
        op for op in phase_of if isinstance(op, sched.ComputeOp) and any(o is staged for o in op.outs)
    ]
    if len(producers) != 1:
        return False
    producer = producers[0]
    q = phase_of[producer]
    for op, p in phase_of.items():
        if op is producer or op is commit:
            continue
        if _reads(op, state) and p >= q:
            return False
        if any(sched.root_buffer(v) is state for v in sched.buffers_written(op)):
            return False  # someone else writes the state too
    if not _reads_only_at_own_index(producer, state, tuple(staged.type.get_shape())):
        return False
    Rewriter.erase_op(commit)
    staged.replace_all_uses_with(state)
    Rewriter.erase_op(staged.owner)
    return True


def drop_empty_phases(program: sched.ProgramOp) -> None:
    ops = list(program.block.ops)
    for i, op in enumerate(ops):
        if isinstance(op, sched.PhaseOp) and not list(op.body.block.ops):
            # Remove the phase and one adjacent barrier.
            neighbour = ops[i - 1] if i > 0 and isinstance(ops[i - 1], sched.BarrierOp) else None
            if neighbour is None and i + 1 < len(ops) and isinstance(ops[i + 1], sched.BarrierOp):
                neighbour = ops[i + 1]
            Rewriter.erase_op(op)
            if neighbour is not None and neighbour.parent is not None:
                Rewriter.erase_op(neighbour)
            drop_empty_phases(program)
            return


@dataclass(frozen=True)
class SchedInplaceStatePass(ModulePass):
    """Turn staged state commits into direct in-place writes where provably safe."""

    name = "sched-inplace-state"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for program in op.walk():
            if not isinstance(program, sched.ProgramOp):
                continue
            commits = [c for c in program.walk() if isinstance(c, sched.CommitOp)]
            for commit in commits:
                make_direct(program, commit, _phase_index(program))
            drop_empty_phases(program)
