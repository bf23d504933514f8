"""CPU interpreter of the buffer levels: `sched.program` and `tile.kernel`.

Buffers are real memory: arguments are the caller's tensors, temporaries are
views into ONE byte tensor laid out by the offsets `sched-allocate` chose, so a
wrong offset or an unsafe reuse corrupts results here exactly as it would on
the GPU. Work of one phase is evaluated as if concurrent: every op of the phase
reads memory as it was when the phase began, and all writes land at the phase's
end (the barrier). A schedule that only works in some sequential order gives
different numbers here.

Compute bodies are `tk` ops and run through the tk interpreter, so the three
levels share one definition of every op's numerics.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue

from trainkernel.dialects import sched, tile
from trainkernel.runtime.dtypes import torch_dtype


class SchedInterpreterError(RuntimeError):
    pass


def _program(module: ModuleOp | sched.ProgramLikeOp) -> sched.ProgramLikeOp:
    if isinstance(module, sched.ProgramLikeOp):
        return module
    found = [op for op in module.ops if isinstance(op, sched.ProgramLikeOp)]
    if len(found) != 1:
        raise SchedInterpreterError(f"expected one sched.program or tile.kernel, found {len(found)}")
    return found[0]


def _alloc_arena(program: sched.ProgramLikeOp) -> torch.Tensor:
    size = program.arena_bytes.data
    if size < 0:  # not allocated yet: one region per buffer, laid end to end
        size = 0
        for op in program.block.ops:
            if isinstance(op, sched.BufferOp):
                assert isinstance(op.result.type, MemRefType)
                size += -(-sched.nbytes(op.result.type) // sched.ARENA_ALIGNMENT) * sched.ARENA_ALIGNMENT
    # NaN-filled: a read of bytes nobody wrote shows up in the results.
    return torch.full((max(size, 1),), 0xFF, dtype=torch.uint8)


def _typed(raw: torch.Tensor, t: MemRefType) -> torch.Tensor:
    dtype = torch_dtype(t.get_element_type())
    return raw.view(dtype).view(tuple(t.get_shape()))


def run_program(
    module: ModuleOp | sched.ProgramLikeOp, inputs: Sequence[torch.Tensor]
) -> tuple[torch.Tensor, ...]:
    """Run a sched.program / tile.kernel on flat CPU inputs; returns flat results.

    Inputs are copied first (the program may update state in place); results
    that alias an input are the updated copy.
    """
    from trainkernel.interpreter import run_block
    program = _program(module)
    args = program.block.args
    n_in = program.num_inputs.data
    if len(inputs) != n_in:
        raise SchedInterpreterError(f"{program.sym_name.data} takes {n_in} inputs, got {len(inputs)}")
    mem: dict[SSAValue, torch.Tensor] = {}
    for arg, x in zip(args[:n_in], inputs):
        want = tuple(arg.type.get_shape())
        if tuple(x.shape) != want:
            raise SchedInterpreterError(f"input {arg.index}: shape {tuple(x.shape)} != {want}")
        mem[arg] = x.detach().to("cpu", torch_dtype(arg.type.get_element_type())).contiguous().clone()
    for arg in args[n_in:]:
        mem[arg] = torch.full(tuple(arg.type.get_shape()), float("nan"), dtype=torch_dtype(arg.type.get_element_type()))
    arena = _alloc_arena(program)
    cursor = 0
    pending: list[tuple[torch.Tensor, torch.Tensor]] = []

    def flush() -> None:
        for dst, value in pending:
            dst.copy_(value)
        pending.clear()

    def execute(op: Operation) -> None:
        if isinstance(op, sched.CommitOp):
            pending.append((mem[op.target], mem[op.source].clone()))
        elif isinstance(op, sched.ComputeLikeOp):
            values = [mem[v].clone() for v in op.ins]
            outs = run_block(op.body.block, values)
            for buf, value in zip(op.outs, outs):
                pending.append((mem[buf], value))
        else:
            raise SchedInterpreterError(f"cannot execute {op.name} inside a phase")

    for op in program.block.ops:
        if isinstance(op, sched.BufferOp):
            t = op.result.type
            assert isinstance(t, MemRefType)
            off = op.offset_value
            if off is None:
                off = cursor
                cursor += -(-sched.nbytes(t) // sched.ARENA_ALIGNMENT) * sched.ARENA_ALIGNMENT
            mem[op.result] = _typed(arena[off : off + sched.nbytes(t)], t)
        elif isinstance(op, sched.ViewOp):
            mem[op.result] = mem[op.source].view(tuple(op.result.type.get_shape()))
        elif isinstance(op, tile.SmemOp):
            # A staged home always holds its argument's current value (loaded at the
            # start, written through); a temporary's home is fresh (NaN) memory.
            if op.source is not None:
                mem[op.result] = mem[op.source]
            else:
                t = op.result.type
                mem[op.result] = torch.full(tuple(t.get_shape()), float("nan"), dtype=torch_dtype(t.get_element_type()))
        elif isinstance(op, sched.PhaseOp):
            for inner in op.body.block.ops:
                execute(inner)
            flush()
        elif isinstance(op, sched.BarrierOp | tile.SyncOp):
            flush()
        elif isinstance(op, tile.TileWorkOp):
            execute(op)
        else:
            raise SchedInterpreterError(f"unexpected {op.name} in {program.name}")
    flush()
    return tuple(mem[args[r]].clone() for r in program.result_args)
