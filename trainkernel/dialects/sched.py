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

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntAttr,
    MemRefType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    VarConstraint,
    IRDLOperation,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from trainkernel.elements import nbytes
from trainkernel.util import align_up, numel

MemRefT = base(MemRefType)

ARENA_ALIGNMENT = 256
"""Every arena buffer starts on a 256-byte boundary (vector loads, cp.async)."""


def tensor_type_of(memref: Attribute) -> TensorType:
    assert isinstance(memref, MemRefType)
    return TensorType(memref.get_element_type(), memref.get_shape())


def memref_type_of(tensor: Attribute) -> MemRefType:
    assert isinstance(tensor, TensorType)
    return MemRefType(tensor.get_element_type(), tensor.get_shape())


def arena_footprint(t: MemRefType) -> int:
    """Bytes a temporary of type `t` occupies in the arena: its size rounded up
    to ARENA_ALIGNMENT (so the next buffer starts aligned)."""
    return align_up(nbytes(t), ARENA_ALIGNMENT)


def _ints(attr: Attribute) -> tuple[int, ...]:
    assert isinstance(attr, DenseArrayBase)
    return tuple(int(v) for v in attr.get_values())


def _print_operands_with_types(printer: Printer, keyword: str, values: Sequence[SSAValue]) -> None:
    printer.print_string(f"{keyword}(")
    printer.print_list(values, printer.print_operand)
    if values:
        printer.print_string(" : ")
        printer.print_list([v.type for v in values], printer.print_attribute)
    printer.print_string(")")


def _parse_operands_with_types(parser: Parser, keyword: str) -> list[SSAValue]:
    parser.parse_keyword(keyword)
    parser.parse_punctuation("(")
    if parser.parse_optional_punctuation(")") is not None:
        return []
    names = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    parser.parse_punctuation(")")
    if len(names) != len(types):
        parser.raise_error(f"{keyword}: {len(names)} operands but {len(types)} types")
    return parser.resolve_operands(names, types, parser.pos)


def _print_config_and_attributes(printer: Printer, config: dict[str, Attribute], attributes) -> None:
    """Op-specific properties as `config {...}` and discardable attributes as
    `attributes {...}`: keywords, because a bare `{` would be the region."""
    if config:
        printer.print_string(" config ")
        printer.print_attr_dict(config)
    if attributes:
        printer.print_string(" attributes ")
        printer.print_attr_dict(attributes)


def _parse_config_and_attributes(parser: Parser) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """Parse what `_print_config_and_attributes` prints: (properties, attributes)."""
    config = parser.parse_optional_attr_dict() if parser.parse_optional_keyword("config") is not None else {}
    attrs = parser.parse_optional_attr_dict_with_keyword()
    return config, (dict(attrs.data) if attrs is not None else {})


# ------------------------------------------------------------------ compute-like


class ComputeLikeOp(IRDLOperation):
    """Shared shape of `sched.compute` and the `tile` compute ops: `ins` buffers
    become the region's tensor arguments, `tk.yield`'s tensors are stored to
    `outs`. Subclasses add their own properties (printed in the attr-dict)."""

    ins = var_operand_def(MemRefT)
    outs = var_operand_def(MemRefT)
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        ins: Sequence[SSAValue],
        outs: Sequence[SSAValue],
        body: Region,
        properties: dict[str, Attribute] | None = None,
    ):
        super().__init__(operands=[list(ins), list(outs)], regions=[body], properties=properties or {})

    def verify_(self) -> None:
        block = self.body.block
        want = [tensor_type_of(v.type) for v in self.ins]
        if [a.type for a in block.args] != want:
            raise VerifyException(f"{self.name}: region arguments must be the tensor types of `ins`")
        term = block.last_op
        from trainkernel.dialects.tk import YieldOp

        if not isinstance(term, YieldOp):
            raise VerifyException(f"{self.name}: region must end with tk.yield")
        got = [v.type for v in term.values]
        want_out = [tensor_type_of(v.type) for v in self.outs]
        if got != want_out:
            raise VerifyException(
                f"{self.name}: tk.yield gives {', '.join(map(str, got)) or 'nothing'} but `outs` need "
                f"{', '.join(map(str, want_out)) or 'nothing'}"
            )
        for op in block.ops:
            if op is not term and not op.name.startswith("tk."):
                raise VerifyException(f"{self.name}: only tk ops may compute inside, found {op.name}")

    # Properties other than the operand segment sizes go in the attr-dict.
    def _extra_properties(self) -> dict[str, Attribute]:
        return {k: v for k, v in self.properties.items() if k != "operandSegmentSizes"}

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_operands_with_types(printer, "ins", self.ins)
        printer.print_string(" ")
        _print_operands_with_types(printer, "outs", self.outs)
        _print_config_and_attributes(printer, self._extra_properties(), self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body)

    @classmethod
    def parse(cls, parser: Parser):
        ins = _parse_operands_with_types(parser, "ins")
        outs = _parse_operands_with_types(parser, "outs")
        props, attrs = _parse_config_and_attributes(parser)
        body = parser.parse_region()
        op = cls(ins, outs, body, props)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class ComputeOp(ComputeLikeOp):
    """One unit of work of a phase: load `ins`, run the tk body, store to `outs`."""

    name = "sched.compute"


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
        if parent is None or parent.name not in ("sched.program", "tile.kernel"):
            raise VerifyException("sched.buffer must be directly inside sched.program or tile.kernel")

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


class ScopedSyncOp(IRDLOperation):
    """A barrier with a `scope` keyword (`grid` or `block`); shared by
    `sched.barrier` and `tile.sync`."""

    scope = prop_def(StringAttr)
    SCOPES: ClassVar[tuple[str, ...]] = ("grid", "block")

    def __init__(self, scope: str = "grid"):
        super().__init__(properties={"scope": StringAttr(scope)})

    def verify_(self) -> None:
        if self.scope.data not in self.SCOPES:
            raise VerifyException(f"{self.name} scope must be grid or block, got {self.scope.data!r}")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.scope.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        scope = parser.parse_optional_keyword_in(cls.SCOPES)
        if scope is None:
            parser.raise_error(f"{cls.name} expects `grid` or `block`")
        op = cls(scope)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


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


class ProgramLikeOp(IRDLOperation):
    """Shared by `sched.program` and `tile.kernel`: external buffers as block
    arguments, `inputs` of them are step inputs, `results[i]` is the argument
    that holds flat step result i, `arena` the workspace bytes (-1: unallocated)."""

    sym_name = prop_def(StringAttr)
    num_inputs = prop_def(IntAttr)
    result_buffers = prop_def(DenseArrayBase)
    arena_bytes = prop_def(IntAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    # Properties printed as keywords; the rest go into the trailing attr-dict.
    KEYWORD_PROPS: ClassVar[tuple[str, ...]] = ("sym_name", "num_inputs", "result_buffers", "arena_bytes")

    def __init__(
        self,
        name: str,
        num_inputs: int,
        results: Sequence[int],
        body: Region,
        arena_bytes: int = -1,
        properties: dict[str, Attribute] | None = None,
    ):
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "num_inputs": IntAttr(num_inputs),
            "result_buffers": DenseArrayBase.from_list(i64, list(results)),
            "arena_bytes": IntAttr(arena_bytes),
        }
        props.update(properties or {})
        super().__init__(properties=props, regions=[body])

    @property
    def result_args(self) -> tuple[int, ...]:
        return _ints(self.result_buffers)

    @property
    def block(self) -> Block:
        return self.body.block

    def verify_(self) -> None:
        nargs = len(self.block.args)
        if not 0 <= self.num_inputs.data <= nargs:
            raise VerifyException(f"{self.name}: {self.num_inputs.data} inputs but only {nargs} buffers")
        for r in self.result_args:
            if not 0 <= r < nargs:
                raise VerifyException(f"{self.name}: result buffer {r} is not one of the {nargs} arguments")
        for arg in self.block.args:
            if not isinstance(arg.type, MemRefType):
                raise VerifyException(f"{self.name}: arguments must be memrefs, got {arg.type}")
        arena = self.arena_bytes.data
        for op in self.block.ops:
            if isinstance(op, BufferOp) and arena >= 0:
                if op.offset_value is None:
                    raise VerifyException(f"{self.name}: arena is sized but a sched.buffer has no offset")
                assert isinstance(op.result.type, MemRefType)
                if op.offset_value + nbytes(op.result.type) > arena:
                    raise VerifyException(
                        f"{self.name}: buffer at offset {op.offset_value} ({nbytes(op.result.type)} bytes) "
                        f"overruns the {arena}-byte arena"
                    )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(self.block.args, printer.print_block_argument)
        printer.print_string(f") inputs {self.num_inputs.data} results ")
        printer.print_string("[" + ", ".join(map(str, self.result_args)) + "]")
        printer.print_string(f" arena {self.arena_bytes.data}")
        extra = {k: v for k, v in self.properties.items() if k not in self.KEYWORD_PROPS}
        _print_config_and_attributes(printer, extra, self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser):
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
        parser.parse_keyword("inputs")
        num_inputs = parser.parse_integer()
        parser.parse_keyword("results")
        results = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        parser.parse_keyword("arena")
        arena = parser.parse_integer()
        props, attrs = _parse_config_and_attributes(parser)
        body = parser.parse_region(args)
        op = cls(name, num_inputs, results, body, arena, props)
        op.attributes.update(attrs)
        return op


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
        elif op.name == "tile.sync" or isinstance(op, BarrierOp):
            current = None
        elif isinstance(op, ComputeLikeOp | CommitOp):
            if current is None:
                current = []
                groups.append(current)
            current.append(op)
    return groups


SCHED = Dialect("sched", [ProgramOp, BufferOp, ViewOp, PhaseOp, BarrierOp, ComputeOp, CommitOp], [])

__all__ = [
    "ARENA_ALIGNMENT",
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
]
