"""CPU interpreter of the buffer levels: `sched.program` and `tile.kernel`.

Buffers are real memory: arguments are the caller's tensors, temporaries are
views into ONE byte tensor laid out by the offsets `sched-allocate` chose, so a
wrong offset or an unsafe reuse corrupts results here exactly as it would on
the GPU. Work of one phase is evaluated as if concurrent: every op of the phase
reads memory as it was when the phase began, and all writes land at the phase's
end (the barrier). A schedule that only works in some sequential order gives
different numbers here.

Compute bodies are `tk` ops and run through `trainkernel.numerics`, so the three
levels share one definition of every op's numerics.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from trainkernel.dialects import sched, tile
from trainkernel.elements import nbytes, torch_dtype
from trainkernel.numerics import run_block
from trainkernel.util import ceil_div


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
                size += sched.arena_footprint(op.result.type)
    else:  # bytes past the last buffer are never touched: do not allocate them
        ends = [op.offset_value + sched.nbytes(op.result.type) for op in program.block.ops
                if isinstance(op, sched.BufferOp) and op.offset_value is not None]
        size = min(size, max(ends, default=0))
    # NaN-filled: a read of bytes nobody wrote shows up in the results.
    return torch.full((max(size, 1),), 0xFF, dtype=torch.uint8)


def _typed(raw: torch.Tensor, t: MemRefType) -> torch.Tensor:
    dtype = torch_dtype(t.get_element_type())
    return raw.view(dtype).view(tuple(t.get_shape()))


def run_program(
    module: ModuleOp | sched.ProgramLikeOp, inputs: Sequence[torch.Tensor], partitioned: bool = False
) -> tuple[torch.Tensor, ...]:
    """Run a sched.program / tile.kernel on flat CPU inputs; returns flat results.

    Inputs are copied first (the program may update state in place); results
    that alias an input are the updated copy.

    `partitioned=True` runs a resident kernel of several blocks block by block
    (see `_Partition`): each block sees only the slices of the shared-memory
    homes it holds (the rest is NaN), does only its slice of every op, and
    split contractions and reductions sum per-block fp32 partials in rank
    order, as the kernel does. A partition that lets a block read what it
    does not hold shows up as NaN in the results.

    A resident kernel of one block keeps its homes in ONE byte array of the
    kernel's `smem` bytes at their offsets, as the GPU does (0xFF bytes at
    the start): staged inputs are copied in before the first phase, a write
    of an argument also writes its home (write-through), so homes placed on
    bytes another live home holds corrupt the results here too. (Of several
    blocks, each home is a tensor of its own.)
    """
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
    for arg in args[n_in:]:  # outputs start as garbage that shows: NaN, or the most negative integer
        dtype = torch_dtype(arg.type.get_element_type())
        fill = float("nan") if dtype.is_floating_point else (True if dtype == torch.bool else torch.iinfo(dtype).min)
        mem[arg] = torch.full(tuple(arg.type.get_shape()), fill, dtype=dtype)
    arena = _alloc_arena(program)
    cursor = 0
    pending: list[tuple[torch.Tensor, torch.Tensor]] = []

    def flush() -> None:
        for dst, value in pending:
            dst.copy_(value)
        pending.clear()

    part = _Partition(program) if partitioned and isinstance(program, tile.KernelOp) and (program.cluster or 1) > 1 else None
    through: dict[SSAValue, torch.Tensor] = {}  # argument (or view of one) -> its home's bytes
    homes_in_bytes = isinstance(program, tile.KernelOp) and program.cluster == 1
    if homes_in_bytes:
        # One block's shared memory: every home at its offset (the printer declares
        # them all, then stages every input home before phase 0).
        smem = torch.full((max(program.smem, 1),), 0xFF, dtype=torch.uint8)
        for op in program.block.ops:
            if isinstance(op, tile.Home):
                t = op.result.type
                assert isinstance(t, MemRefType)
                raw = smem[op.offset_value : op.offset_value + op.local_bytes(1)]
                if op.pitch_value is None:
                    mem[op.result] = _typed(raw, t)
                else:  # rows `pitch` elements apart, as the kernel lays them out
                    rows, cols = t.get_shape()
                    mem[op.result] = raw.view(torch_dtype(t.get_element_type())).as_strided((rows, cols), (op.pitch_value, 1))
                if isinstance(op, tile.SmemOp) and op.source is not None:
                    through[op.source] = mem[op.result]
        for op in program.block.ops:
            # copy_ rounds to the home's type as tk.cast does (a tile.smem_cast home).
            if isinstance(op, tile.Home) and op.source is not None and op.source.index < n_in:
                mem[op.result].copy_(mem[op.source])

    def execute(op: Operation) -> None:
        if part is not None and isinstance(op, tile.TileWorkOp):
            pending.extend(part.run(op, mem))
            return
        if isinstance(op, sched.CommitOp):
            pending.append((mem[op.target], mem[op.source].clone()))
        elif isinstance(op, sched.ComputeLikeOp):
            values = [mem[v].clone() for v in op.ins]
            outs = run_block(op.body.block, values)
            for buf, value in zip(op.outs, outs):
                pending.append((mem[buf], value))
                if buf in through:
                    pending.append((through[buf], value))
        else:
            raise SchedInterpreterError(f"cannot execute {op.name} inside a phase")

    for op in program.block.ops:
        if isinstance(op, sched.BufferOp):
            t = op.result.type
            assert isinstance(t, MemRefType)
            off = op.offset_value
            if off is None:
                off = cursor
                cursor += sched.arena_footprint(t)
            mem[op.result] = _typed(arena[off : off + nbytes(t)], t)
        elif isinstance(op, sched.ViewOp):
            mem[op.result] = mem[op.source].view(tuple(op.result.type.get_shape()))
            if op.source in through:
                through[op.result] = through[op.source].view(tuple(op.result.type.get_shape()))
        elif isinstance(op, tile.Home) and homes_in_bytes:
            pass  # placed above
        elif isinstance(op, tile.SmemCastOp):  # the argument as the prologue loads it, cast
            mem[op.result] = mem[op.source].to(torch_dtype(op.result.type.get_element_type()))
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


class _Partition:
    """Block-by-block execution of a resident kernel (cluster of P blocks)."""

    def __init__(self, kernel: tile.KernelOp):
        self.P = kernel.cluster or 1
        self.split_of: dict[SSAValue, int] = {}
        for op in kernel.block.ops:
            if isinstance(op, tile.Home):
                self.split_of[op.result] = op.split_axis
            elif isinstance(op, sched.ViewOp) and op.source in self.split_of:
                src = self.split_of[op.source]
                m = tile.squeeze_map(tuple(op.source.type.get_shape()), tuple(op.result.type.get_shape()))
                inverse = {v: k for k, v in (m or {}).items()}
                self.split_of[op.result] = inverse.get(src, -1) if src >= 0 else -1

    def _slice(self, size: int, rank: int) -> slice:
        c = ceil_div(size, self.P)
        return slice(min(size, rank * c), min(size, (rank + 1) * c))

    def _keep(self, t: torch.Tensor, axis: int, rank: int, fill: float) -> torch.Tensor:
        """t with everything outside block `rank`'s slice of `axis` replaced by `fill`."""
        out = torch.full_like(t, fill)
        idx = [slice(None)] * t.dim()
        idx[axis] = self._slice(t.shape[axis], rank)
        out[tuple(idx)] = t[tuple(idx)]
        return out

    def view(self, op: tile.TileWorkOp, mem, rank: int) -> list[torch.Tensor]:
        """The inputs of `op` as block `rank` holds them (NaN where it holds nothing)."""
        vals = []
        for v in op.ins:
            t = mem[v].clone()
            axis = self.split_of.get(v, -1)
            if axis >= 0 and t.is_floating_point():
                t = self._keep(t, axis, rank, float("nan"))
            vals.append(t)
        return vals

    def run(self, op: tile.TileWorkOp, mem) -> list[tuple[torch.Tensor, torch.Tensor]]:
        from trainkernel.passes.tile_resident import is_partial

        split = op.split if op.split is not None else -1
        if split >= 0 and is_partial(op, split):
            outs = self._partial(op, mem, split)
            return [(mem[b], v) for b, v in zip(op.outs, outs)]
        if split < 0:  # every block computes all of it: rank 0's view must suffice
            outs = run_block(op.body.block, self.view(op, mem, 0))
            return [(mem[b], v) for b, v in zip(op.outs, outs)]
        axis = self._out_axis(op, split)
        writes = []
        for rank in range(self.P):
            outs = run_block(op.body.block, self.view(op, mem, rank))
            for b, v in zip(op.outs, outs):
                idx = [slice(None)] * v.dim()
                idx[axis] = self._slice(v.shape[axis], rank)
                writes.append((mem[b][tuple(idx)], v[tuple(idx)]))
        return writes

    @staticmethod
    def _out_axis(op: tile.TileWorkOp, split: int) -> int:
        if isinstance(op, tile.ReduceOp):
            red = op.reduction()
            if red.keepdim is not None:
                return split
            kept = [d for d in range(len(red.input.type.get_shape())) if d not in red.axes_list]
            return kept.index(split)
        return split  # map: output axes; gemm: m = 0, n = 1

    def _partial(self, op: tile.TileWorkOp, mem, split: int) -> tuple[torch.Tensor, ...]:
        """Per-block fp32 partials over the block's slice of the contraction or
        reduced axis, summed (or maxed) in rank order, rounded once, then the
        epilogue on the whole result (rank 0's view of its other operands)."""
        from trainkernel.dialects import tk
        from trainkernel.numerics import DEFAULT

        block = op.body.block
        args = self.view(op, mem, 0)
        views = [self.view(op, mem, rank) for rank in range(self.P)]  # what each block holds
        env: dict[SSAValue, torch.Tensor] = dict(zip(block.args, args))
        for inner in block.ops:
            if isinstance(inner, tk.YieldOp):
                return tuple(env[v] for v in inner.values)
            if isinstance(inner, tk.MatmulOp):
                total = None
                for rank in range(self.P):
                    # Block `rank`'s operands (NaN where it holds nothing), zero outside its k slice.
                    a = views[rank][inner.lhs.index].float()
                    b = views[rank][inner.rhs.index].float()
                    a = a.t() if inner.transpose_a is not None else a
                    b = b.t() if inner.transpose_b is not None else b
                    ak = self._keep(a, 1, rank, 0.0)
                    bk = self._keep(b, 0, rank, 0.0)
                    p = torch.mm(ak, bk)
                    total = p if total is None else total + p
                env[inner.result] = total.to(torch_dtype(inner.result.type.get_element_type()))
            elif isinstance(inner, tk.SumOp | tk.MaxOp) and inner is op.reduction():
                if not isinstance(inner.input, BlockArgument):
                    raise SchedInterpreterError(f"{op.name}: a split reduction reads a region argument")
                ident = 0.0 if isinstance(inner, tk.SumOp) else float("-inf")
                total = None
                for rank in range(self.P):
                    x = views[rank][inner.input.index].float()
                    xr = self._keep(x, split, rank, ident)
                    if isinstance(inner, tk.SumOp):
                        p = torch.sum(xr, dim=list(inner.axes_list), keepdim=inner.keepdim is not None)
                        total = p if total is None else total + p
                    else:
                        p = torch.amax(xr, dim=list(inner.axes_list), keepdim=inner.keepdim is not None)
                        total = p if total is None else torch.maximum(total, p)
                env[inner.result] = total.to(torch_dtype(inner.result.type.get_element_type()))
            else:
                outs = DEFAULT.eval_op(inner, [env[v] for v in inner.operands])
                env.update(zip(inner.results, outs))
        raise SchedInterpreterError(f"{op.name}: body without tk.yield")
