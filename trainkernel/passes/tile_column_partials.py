"""`tile-column-partials`: column sums read 16-row partials that the producing gemm's epilogue wrote.

A bias gradient is a column sum (`tk.sum axes [0]`) of a gradient that a
gemm of an earlier phase stored: large's db1 reads all of dh (2048 x 8192
bf16, 32 MB) back from DRAM while the phase's gemm epilogues stream the fp32
weights (perf-log steps 35 and 36). The gemm had every one of those values in
a register: the Hopper row walk gives each thread one column of 16 rows a pass
(tk::hopper::rows_epilogue). So the gemm also writes their sums,

    P[g, j] = sum over r < 16 of dh[16 g + r, j]   (fp32, in row order)

a [ceil(M / 16), N] fp32 buffer appended to the arena (as split-K appends its
workspace), and the reduction sums P instead: 16 times fewer rows, 1/8 of the
bytes for a bf16 gradient.

IR: the gemm's body gains `tk.column_partials %v rows 16` of the yielded
value and yields it to P (one more output); the reduce reads P, sums it in
fp32 and casts to the type of the original sum. Numerics: fp32 sums of the
stored values, one rounding at the end, the class of the original sum (fp32
accumulation of bf16 values, rounded once); the order is the kernel's, and the
interpreters run the same op.

With `target.full_sum_partials`, a full sum (`tk.sum axes [0, 1]`: a mean
loss) of such an output reads the partials too, summing all of P, where the
one block that sums it would otherwise load more than one batch a thread
(more than `target.full_reduce_loads` x threads elements): small's loss
(16384 elements, three rounds of loads a thread) then reads 1024, mlp4's
(32768, six rounds) 2048. Another order of the same fp32 adds: deterministic,
other bits than the sum of the output (perf-log step 77).

Applies to grid kernels (`cluster` absent, more than one block) whose gemms use
the wgmma engine (the row walk; the mma.sync tiles have none), to a
`tk.sum axes [0]` of a rank-2 argument that the reduce reads only there and
that a gemm of an earlier phase stores whole (not a view) with more rows than
one run, of at least `target.column_partials_min_bytes` (a smaller output is
still in L2 when the sum reads it at its phase's start, and the partials only
lengthen the gemm's epilogue: perf-log step 38). `target.column_partials =
False` turns it off (a probe's baseline).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntAttr, MemRefType, TensorType
from xdsl.ir import BlockArgument, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from trainkernel.dialects import sched, tile, tk
from trainkernel.elements import F32
from trainkernel.target import DEFAULT, TargetOptions, pass_target
from trainkernel.util import align_up, ceil_div


def _summed_argument(op: tile.ReduceOp, full: bool) -> BlockArgument | None:
    """The reduce's argument that a column sum (or with `full`, a full sum of a
    rank-2 argument) reads directly and nothing else uses."""
    red = op.reduction()
    if not isinstance(red, tk.SumOp) or red.axes_list not in ((0,), (0, 1) if full else (0,)) \
            or not isinstance(red.input, BlockArgument):
        return None
    arg = red.input
    if len(tk.shape_of(arg)) != 2 or len(list(arg.uses)) != 1:
        return None
    if sum(1 for v in op.ins if v is op.ins[arg.index]) != 1:
        return None
    return arg


def _writer(ops: list, index: int, buf: SSAValue) -> tile.GemmOp | None:
    """The last op before ops[index] that stores `buf`, if it is a wgmma gemm."""
    for op in reversed(ops[:index]):
        if isinstance(op, tile.TileWorkOp) and buf in op.outs:
            return op if isinstance(op, tile.GemmOp) and op.engine == "wgmma" else None
    return None


def _rebuilt(gemm: tile.GemmOp, values: list[SSAValue], outs: list[SSAValue]) -> tile.GemmOp:
    """`gemm` yielding `values` to `outs` (the body's ops as they are), in its place."""
    term = gemm.body.block.last_op
    assert isinstance(term, tk.YieldOp)
    gemm.body.block.insert_op_before(tk.YieldOp(*values), term)
    term.detach()
    term.erase()
    new = tile.GemmOp(list(gemm.ins), outs, gemm.detach_region(gemm.body), dict(gemm.properties))
    block = gemm.parent_block()
    assert block is not None
    block.insert_op_before(new, gemm)
    gemm.detach()
    gemm.erase()
    return new


def _with_partials(gemm: tile.GemmOp, out: int, partials: SSAValue, rows: int) -> tile.GemmOp:
    """`gemm` with `tk.column_partials` of its output `out` yielded to `partials`."""
    term = gemm.body.block.last_op
    assert isinstance(term, tk.YieldOp)
    cp = tk.ColumnPartialsOp(term.values[out], rows)
    gemm.body.block.insert_op_before(cp, term)
    return _rebuilt(gemm, [*term.values, cp.result], [*gemm.outs, partials])


def _without_output(gemm: tile.GemmOp, out: int) -> tile.GemmOp:
    """`gemm` no longer storing its output `out` (whose only reader now reads the
    partials of its value instead: a full sum's)."""
    term = gemm.body.block.last_op
    assert isinstance(term, tk.YieldOp)
    return _rebuilt(gemm, [v for k, v in enumerate(term.values) if k != out],
                    [v for k, v in enumerate(gemm.outs) if k != out])


def _read_partials(op: tile.ReduceOp, arg: BlockArgument, partials: SSAValue) -> None:
    """The reduce's column sum over `partials` (fp32) instead of its argument."""
    red = op.reduction()
    index = arg.index
    ptype = TensorType(F32.ir, partials.type.get_shape())
    new_arg = op.body.block.insert_arg(ptype, index)
    keep = red.keepdim is not None
    shape = list(tk.shape_of(red.result))
    summed = tk.SumOp(new_arg, list(red.axes_list), TensorType(F32.ir, shape), keepdim=keep)
    op.body.block.insert_op_before(summed, red)
    result = summed.result
    if tk.element_type_of(red.result) != F32.ir:
        cast = tk.CastOp(summed.result, red.result.type)
        op.body.block.insert_op_before(cast, red)
        result = cast.result
    red.result.replace_all_uses_with(result)
    red.detach()
    red.erase()
    op.body.block.erase_arg(arg)
    operands = list(op.operands)
    operands[index] = partials
    op.operands = operands


def column_partials(kernel: tile.KernelOp, target: TargetOptions, min_bytes: int | None = None,
                    full_sums: bool | None = None) -> None:
    """Give every qualifying column sum of `kernel` the producing gemm's partials
    (of outputs of at least `min_bytes`, by default the target's), and with
    `full_sums` (by default target.full_sum_partials) every qualifying full sum."""
    full_sums = target.full_sum_partials if full_sums is None else full_sums
    rows = target.column_partial_rows
    min_bytes = target.column_partials_min_bytes if min_bytes is None else min_bytes
    ops = [op for op in kernel.block.ops if isinstance(op, tile.TileWorkOp | tile.SyncOp)]
    made: dict[tuple[int, int], SSAValue] = {}  # (id(gemm), output) -> its partials buffer
    arena = kernel.arena_bytes.data
    last_buffer = None
    for b in kernel.block.ops:
        if isinstance(b, sched.BufferOp):
            last_buffer = b
    for index, op in enumerate(ops):
        if not isinstance(op, tile.ReduceOp):
            continue
        arg = _summed_argument(op, full_sums)
        if arg is None:
            continue
        full = op.reduction().axes_list == (0, 1)
        buf = op.ins[arg.index]
        gemm = _writer(ops, index, buf)
        if gemm is None or sched.root_buffer(buf) is not buf:
            continue
        if not any(isinstance(s, tile.SyncOp) for s in ops[ops.index(gemm) + 1 : index]):
            continue  # the same phase: the verifier forbids it, do not depend on that here
        m, n = tk.shape_of(arg)
        if m <= rows or tuple(buf.type.get_shape()) != tuple(tile.iteration_space(gemm)[:2]):
            continue
        if full and m * n <= target.full_reduce_loads * kernel.threads:
            continue  # one batch of loads a thread of the block that sums it: nothing to save
        if not full and sched.nbytes(buf.type) < min_bytes:
            continue  # still in L2 when the sum reads it (target.column_partials_min_bytes)
        out = list(gemm.outs).index(buf)
        key = (id(gemm), out)
        if key not in made:
            if gemm.column_partials() is not None:
                continue  # one output's partials a gemm (the row walk sums one value)
            arena = align_up(arena, sched.ARENA_ALIGNMENT)
            ptype = MemRefType(F32.ir, [ceil_div(m, rows), n])
            pbuf = sched.BufferOp(ptype, arena)
            arena += sched.nbytes(ptype)
            if last_buffer is not None:
                kernel.block.insert_op_after(pbuf, last_buffer)
            else:
                kernel.block.insert_op_before(pbuf, kernel.block.first_op)
            last_buffer = pbuf
            new = _with_partials(gemm, out, pbuf.result, rows)
            ops[ops.index(gemm)] = new
            made[(id(new), out)] = pbuf.result
            key = (id(new), out)
        _read_partials(op, arg, made[key])
        gemm = next(o for o in ops if isinstance(o, tile.GemmOp) and id(o) == key[0])
        if full and not any(buf in o.ins for o in ops if isinstance(o, tile.TileWorkOp)) \
                and not any(isinstance(use.operation, sched.ViewOp) for use in buf.uses):
            # The sum read the output only to sum it: the gemm stores its partials alone
            # (and no later sum asks for this output's partials: nothing reads it now).
            ops[ops.index(gemm)] = _without_output(gemm, out)
            del made[key]
            if not list(buf.uses):
                buf.owner.detach()
                buf.owner.erase()
    kernel.properties["arena_bytes"] = IntAttr(arena)


@dataclass(frozen=True)
class TileColumnPartialsPass(ModulePass):
    """Column sums (and with target.full_sum_partials, full sums) of a gemm's output
    read 16-row partials its epilogue wrote."""

    name = "tile-column-partials"

    target: str = DEFAULT.name  # a name of trainkernel.target.TARGETS
    min_bytes: int = -1  # the smallest summed output given partials; -1: the target's column_partials_min_bytes
    full_sums: str = "target"  # full sums too: on, off, or as the target says (full_sum_partials)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        target = pass_target(self.name, self.target)
        if self.full_sums not in ("target", "on", "off"):
            raise DiagnosticException(f"{self.name}: full_sums must be target, on or off, got {self.full_sums!r}")
        if not target.column_partials:
            return
        full = None if self.full_sums == "target" else self.full_sums == "on"
        for kernel in list(op.walk()):
            if isinstance(kernel, tile.KernelOp) and kernel.cluster is None and kernel.grid > 1:
                column_partials(kernel, target, None if self.min_bytes < 0 else self.min_bytes, full)
