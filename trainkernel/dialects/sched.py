"""The `sched` dialect: a bufferized training step cut into phases.

A `sched.program` is one kernel's worth of work. Its block arguments are the
external buffers (step inputs first, then step outputs that need a buffer of
their own); temporaries are `sched.buffer` views into ONE workspace arena. The
body is a sequence of `sched.phase` regions separated by `sched.barrier`:
everything inside one phase may run concurrently on the whole grid, so the
verifier rejects a phase in which one compute reads or writes a buffer that
another compute of the same phase writes.

Compute is expressed with `tk` ops: a `sched.compute` loads its `ins` buffers
as tensors (region arguments), runs its `tk` body and stores what `tk.yield`
returns into its `outs` buffers. So the CPU interpreter runs this level with
the very same op semantics as the tensor level.

```
sched.program @step(%w: memref<4x4xf32>, %x: memref<2x4xf32>, %loss: memref<f32>)
    inputs 2 results [2, 0] arena 64 {
  %t = sched.buffer offset 0 : memref<2x4xf32>
  sched.phase {
    sched.compute ins(%x, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%t : memref<2x4xf32>) {
    ^bb0(%a: tensor<2x4xf32>, %b: tensor<4x4xf32>):
      %p = tk.matmul %a, %b : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      tk.yield %p : tensor<2x4xf32>
    }
  }
  sched.barrier grid
  ...
}
```
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IntAttr, MemRefType
from xdsl.ir import Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    VarConstraint,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

# The bases are shared with `tile`; tensor_type_of / memref_type_of are re-exported
# for the passes, and `_ints` for the CUDA printer (it reads `sched._ints`).
from trainkernel.dialects.base import (
    C_IDENTIFIER,
    INT64_MAX,
    ArenaBuffer,
    ComputeLikeOp,
    MemRefT,
    ProgramLikeOp,
    ScopedSyncOp,
    check_c_identifier,
    memref_type_of,
    tensor_type_of,
    verify_arena_bounds,
    verify_printed_names,
)
from trainkernel.dialects.tk import int_values as _ints  # noqa: F401
from trainkernel.elements import nbytes
from trainkernel.util import align_up, numel

ARENA_ALIGNMENT = 256
"""Every arena buffer starts on a 256-byte boundary (vector loads, cp.async)."""


def arena_footprint(t: MemRefType) -> int:
    """Bytes a temporary of type `t` occupies in the arena: its size rounded up
    to ARENA_ALIGNMENT (so the next buffer starts aligned)."""
    return align_up(nbytes(t), ARENA_ALIGNMENT)


@irdl_op_definition
class ComputeOp(ComputeLikeOp):
    """One unit of work of a phase: load `ins`, run the tk body, store to `outs`.

    `sched.compute ins(%x, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%t : memref<2x4xf32>) {...}`
    """

    name = "sched.compute"
    # sched.compute has no `config`: a declarative format replaces the one the tile
    # ops inherit from ComputeLikeOp, whose methods xDSL wants undefined here.
    print = Operation.print
    parse = Operation.parse
    assembly_format = (
        "`ins` `(` ($ins^ `:` type($ins))? `)` `outs` `(` ($outs^ `:` type($outs))? `)` attr-dict-with-keyword $body"
    )


# ------------------------------------------------------------------------ memory


@irdl_op_definition
class BufferOp(IRDLOperation):
    """A temporary: a view of the workspace arena at a byte offset. Before
    `sched-allocate` runs the offset is absent (printed without `offset`).

    `%t = sched.buffer offset 256 : memref<16x64xbf16>`
    """

    name = "sched.buffer"
    offset = opt_prop_def(IntAttr)
    result = result_def(MemRefT)
    traits = traits_def(ArenaBuffer())

    def __init__(self, result_type: MemRefType, offset: int | None = None):
        props = {} if offset is None else {"offset": IntAttr(offset)}
        super().__init__(result_types=[result_type], properties=props)

    @property
    def offset_value(self) -> int | None:
        return None if self.offset is None else self.offset.data

    def verify_(self) -> None:
        off = self.offset_value
        if off is not None and (off < 0 or off % ARENA_ALIGNMENT):
            raise VerifyException(f"sched.buffer offset {off} must be a non-negative multiple of {ARENA_ALIGNMENT}")
        parent = self.parent_op()
        if not isinstance(parent, ProgramLikeOp):
            raise VerifyException("sched.buffer must be directly inside sched.program or tile.kernel")

    # Hand-written: the offset is a builtin IntAttr, which a declarative format
    # prints qualified (`#builtin.int<256>`), and the parse error names the op.
    def print(self, printer: Printer) -> None:
        if self.offset_value is not None:
            printer.print_string(f" offset {self.offset_value}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> BufferOp:
        offset = None
        if parser.parse_optional_keyword("offset") is not None:
            offset = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if not isinstance(t, MemRefType):
            parser.raise_error("sched.buffer must have a memref type")
        op = cls(t, offset)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class ViewOp(IRDLOperation):
    """The same bytes under another shape (row-major reshape): no copy.

    `%v = sched.view %t : memref<1x64xf32> to memref<64xf32>`
    """

    name = "sched.view"
    source = operand_def(MemRefT)
    result = result_def(MemRefT)
    assembly_format = "$source attr-dict `:` type($source) `to` type($result)"

    def __init__(self, source: SSAValue, result_type: MemRefType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        s, r = self.source.type, self.result.type
        assert isinstance(s, MemRefType) and isinstance(r, MemRefType)
        if s.get_element_type() != r.get_element_type() or numel(s.get_shape()) != numel(r.get_shape()):
            raise VerifyException(f"sched.view must keep element type and count: {s} to {r}")


def root_buffer(value: SSAValue) -> SSAValue:
    """The buffer a value's bytes belong to, looking through views."""
    while isinstance(value.owner, ViewOp):
        value = value.owner.source
    return value


# ------------------------------------------------------------------ structure


@irdl_op_definition
class PhaseOp(IRDLOperation):
    """Work that may run concurrently; separated from the next phase by a barrier."""

    name = "sched.phase"
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "attr-dict-with-keyword $body"

    def __init__(self, body: Region | None = None):
        super().__init__(regions=[body or Region(Block())])

    def verify_(self) -> None:
        writers: dict[SSAValue, Operation] = {}
        for op in self.body.block.ops:
            if not isinstance(op, ComputeLikeOp | CommitOp):
                raise VerifyException(f"sched.phase may only hold computes and commits, found {op.name}")
            for out in buffers_written(op):
                if out in writers:
                    raise VerifyException(f"sched.phase: two ops write the same buffer {out.name_hint or ''}".rstrip())
                writers[out] = op
        for op in self.body.block.ops:
            for src in buffers_read(op):
                w = writers.get(src)
                if w is not None and w is not op:
                    raise VerifyException(
                        f"sched.phase: {op.name} reads a buffer that {w.name} writes in the same phase "
                        "(read-after-write hazard: split the phase)"
                    )


def buffers_written(op: Operation) -> list[SSAValue]:
    if isinstance(op, CommitOp):
        return [root_buffer(op.target)]
    if isinstance(op, ComputeLikeOp):
        return [root_buffer(v) for v in op.outs]
    return []


def buffers_read(op: Operation) -> list[SSAValue]:
    if isinstance(op, CommitOp):
        return [root_buffer(op.source)]
    if isinstance(op, ComputeLikeOp):
        return [root_buffer(v) for v in op.ins]
    return []


@irdl_op_definition
class BarrierOp(ScopedSyncOp):
    """Waits until all work of the previous phase is visible. `grid` syncs every
    block of the cooperative launch; `block` is enough when the kernel runs as a
    single block.

    `sched.barrier grid`
    """

    name = "sched.barrier"


@irdl_op_definition
class CommitOp(IRDLOperation):
    """Copies a staged parameter update into the state buffer, after the last
    reader of the old value (placed there by the in-place state analysis).

    `sched.commit %staged to %w : memref<32x64xf32>`
    """

    name = "sched.commit"
    T: ClassVar = VarConstraint("T", MemRefT)
    source = operand_def(T)
    target = operand_def(T)
    assembly_format = "$source `to` $target attr-dict `:` type($target)"

    def __init__(self, source: SSAValue, target: SSAValue):
        super().__init__(operands=[source, target])

    def verify_(self) -> None:
        if self.source.type != self.target.type:
            raise VerifyException(f"sched.commit: {self.source.type} cannot be committed to {self.target.type}")


@irdl_op_definition
class ProgramOp(ProgramLikeOp):
    """The scheduled step: buffers, then phases separated by barriers."""

    name = "sched.program"

    def verify_(self) -> None:
        super().verify_()
        previous: Operation | None = None
        for op in self.block.ops:
            if not isinstance(op, BufferOp | ViewOp | PhaseOp | BarrierOp):
                raise VerifyException(f"sched.program may hold buffers, views, phases and barriers, not {op.name}")
            if isinstance(op, PhaseOp) and isinstance(previous, PhaseOp):
                raise VerifyException("sched.program: consecutive phases need a sched.barrier between them")
            if isinstance(op, PhaseOp | BarrierOp):
                previous = op
        verify_arena_liveness(self)
        verify_reads_after_writes(self)


def phases(program: ProgramLikeOp) -> list[PhaseOp]:
    return [op for op in program.block.ops if isinstance(op, PhaseOp)]


def phase_groups(program: ProgramLikeOp) -> list[list[Operation]]:
    """The work of each phase, in order, for both levels: the ops of each
    `sched.phase`, or the runs of tile ops between `tile.sync`s."""
    groups: list[list[Operation]] = []
    current: list[Operation] | None = None
    for op in program.block.ops:
        if isinstance(op, PhaseOp):
            groups.append(list(op.body.block.ops))
            current = None
        elif isinstance(op, ScopedSyncOp):
            current = None
        elif isinstance(op, ComputeLikeOp | CommitOp):
            if current is None:
                current = []
                groups.append(current)
            current.append(op)
    return groups


# ------------------------------------------------------------------ contract checks that need phases
#
# With the name and arena-bounds rules of `base` (re-exported here), what the
# CUDA printer relies on. Called by `ProgramOp.verify_`; they take any
# ProgramLikeOp (phases by `phase_groups`), so `tile.KernelOp.verify_` can call
# them too.


def _buffer_label(op: BufferOp, index: int) -> str:
    hint = op.result.name_hint
    return f"%{hint}" if hint else f"sched.buffer #{index}"


def verify_arena_liveness(program: ProgramLikeOp) -> None:
    """No two arena buffers whose byte ranges overlap are live at once.

    A buffer is live from the first to the last phase (`phase_groups`) that
    reads or writes it, through any view. Buffers live in a common phase may
    not share a byte, whatever their SSA roots: a phase runs concurrently, and
    across phases the later buffer would overwrite bytes still to be read.
    """
    if program.arena_bytes.data < 0:
        return
    first: dict[SSAValue, int] = {}
    last: dict[SSAValue, int] = {}
    for i, work in enumerate(phase_groups(program)):
        for op in work:
            for v in buffers_read(op) + buffers_written(op):
                if isinstance(v.owner, BufferOp):
                    first.setdefault(v, i)
                    last[v] = i
    placed: list[tuple[int, int, int, int, str]] = []  # (start, end, first, last, label)
    index = 0
    for op in program.block.ops:
        if not isinstance(op, BufferOp):
            continue
        index += 1
        v = op.result
        off = op.offset_value
        if v not in first or off is None:
            continue
        assert isinstance(v.type, MemRefType)
        size = nbytes(v.type)
        if size == 0:
            continue
        mine = (off, off + size, first[v], last[v], _buffer_label(op, index - 1))
        for other in placed:
            if mine[0] < other[1] and other[0] < mine[1] and mine[2] <= other[3] and other[2] <= mine[3]:
                raise VerifyException(
                    f"{program.name}: arena buffers {other[4]} (bytes {other[0]}..{other[1]}, live in phases "
                    f"{other[2]}..{other[3]}) and {mine[4]} (bytes {mine[0]}..{mine[1]}, live in phases "
                    f"{mine[2]}..{mine[3]}) overlap while both are live"
                )
        placed.append(mine)


def verify_reads_after_writes(program: ProgramLikeOp) -> None:
    """Every buffer a phase reads holds a value: it is a step input, or an
    earlier phase wrote it (arena temporaries and output buffers start
    undefined; within a phase every read sees memory as the phase began)."""
    defined: set[SSAValue] = set(program.block.args[: program.num_inputs.data])
    for i, work in enumerate(phase_groups(program)):
        for op in work:
            for v in buffers_read(op):
                if v not in defined:
                    name = f"%{v.name_hint}" if v.name_hint else ("an arena buffer" if isinstance(v.owner, BufferOp)
                                                                  else "an output buffer")
                    raise VerifyException(
                        f"{program.name}: phase {i} ({op.name}) reads {name} before any earlier phase writes it"
                    )
        for op in work:
            defined.update(buffers_written(op))


SCHED = Dialect("sched", [ProgramOp, BufferOp, ViewOp, PhaseOp, BarrierOp, ComputeOp, CommitOp], [])

__all__ = [
    "ARENA_ALIGNMENT",
    "C_IDENTIFIER",
    "INT64_MAX",
    "BarrierOp",
    "BufferOp",
    "CommitOp",
    "ComputeLikeOp",
    "ComputeOp",
    "PhaseOp",
    "ProgramLikeOp",
    "ProgramOp",
    "SCHED",
    "ViewOp",
    "check_c_identifier",
    "verify_arena_bounds",
    "verify_arena_liveness",
    "verify_printed_names",
    "verify_reads_after_writes",
]
