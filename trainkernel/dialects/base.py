"""What the buffer levels share: the op bases of `sched` and `tile`.

`sched.program` and `tile.kernel` are both a `ProgramLikeOp` (external buffers
as block arguments, a workspace arena); `sched.compute` and the tile compute
ops are all a `ComputeLikeOp` (buffers in, a `tk` body, buffers out);
`sched.barrier` and `tile.sync` are both a `ScopedSyncOp`. The `ArenaBuffer`
trait marks the ops whose result is a view of the arena (`sched.buffer`).

Imports only the `tk` dialect (compute bodies are tk ops), never `sched` or
`tile`, so both levels can build on it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntAttr, MemRefType, StringAttr, TensorType, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    base,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator, OpTrait
from xdsl.utils.exceptions import VerifyException

from trainkernel.dialects.tk import TK, TkBody, YieldOp, int_values
from trainkernel.elements import nbytes

MemRefT = base(MemRefType)


def tensor_type_of(memref: Attribute) -> TensorType:
    assert isinstance(memref, MemRefType)
    return TensorType(memref.get_element_type(), memref.get_shape())


def memref_type_of(tensor: Attribute) -> MemRefType:
    assert isinstance(tensor, TensorType)
    return MemRefType(tensor.get_element_type(), tensor.get_shape())


class ArenaBuffer(OpTrait):
    """An op whose one result is a view of the program's workspace arena at byte
    `offset_value` (None until `sched-allocate` has placed it)."""


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
    `outs`. Subclasses add their own properties (printed as `config {...}`)."""

    ins = var_operand_def(MemRefT)
    outs = var_operand_def(MemRefT)
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(TkBody())

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
            if op is not term and op.dialect_name() != TK.name:
                raise VerifyException(f"{self.name}: only tk ops may compute inside, found {op.name}")

    # Properties other than the operand segment sizes go in the attr-dict.
    def _extra_properties(self) -> dict[str, Attribute]:
        return {k: v for k, v in self.properties.items() if k != "operandSegmentSizes"}

    # Hand-written: the tile ops' own properties print as `config {...}`, which a
    # declarative format (one per op, naming each property) cannot express here.
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


# ------------------------------------------------------------------ programs


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
        return int_values(self.result_buffers)

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
        verify_printed_names(self)
        verify_arena_bounds(self)

    # Hand-written: the entry block's arguments print in the op's signature
    # (`@name(%w: memref<..>, ...)`), which declarative formats cannot express.
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


# ------------------------------------------------------------------ program contract checks
#
# What the CUDA printer relies on and does not check itself: names it pastes
# into C++ and the arena layout it turns into pointer arithmetic. Called by
# `ProgramLikeOp.verify_` (both levels), one function per rule. The rules that
# need phases (byte-range liveness, reads after writes) are in `sched`.

C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INT64_MAX = 2**63 - 1
"""The largest byte count or offset the printer may emit (as a C++ long long)."""


def check_c_identifier(what: str, name: str) -> None:
    """Raise VerifyException unless `name` is a C identifier
    (``[A-Za-z_][A-Za-z0-9_]*``): for any name the printer pastes into C++."""
    if not C_IDENTIFIER.fullmatch(name):
        raise VerifyException(
            f"{what} {name!r} is not a C identifier ([A-Za-z_][A-Za-z0-9_]*); it is printed into the generated CUDA"
        )


def verify_printed_names(program: ProgramLikeOp) -> None:
    """The symbol name and the SSA names of arguments and arena buffers become
    C++ identifiers (`tk_<name>_kernel`, `b0_<arg>`, `t6_<buffer>`)."""
    check_c_identifier(f"{program.name} name", program.sym_name.data)
    for arg in program.block.args:
        if arg.name_hint is not None:
            check_c_identifier(f"{program.name}: argument name", arg.name_hint)
    for op in program.block.ops:
        if op.has_trait(ArenaBuffer) and op.results[0].name_hint is not None:
            check_c_identifier(f"{program.name}: buffer name", op.results[0].name_hint)


def verify_arena_bounds(program: ProgramLikeOp) -> None:
    """`arena` is -1 (not allocated: no buffer has an offset yet) or a byte
    count up to INT64_MAX; every buffer has a static shape, and once the
    arena is sized, an offset and all its bytes inside it. (Offsets are
    non-negative and aligned: `sched.BufferOp.verify_`.)"""
    arena = program.arena_bytes.data
    if arena < -1 or arena > INT64_MAX:
        raise VerifyException(
            f"{program.name}: arena {arena} must be -1 (not allocated yet) or a byte count from 0 to {INT64_MAX}"
        )
    buffers = [op for op in program.block.ops if op.has_trait(ArenaBuffer)]
    memrefs = [(f"argument {a.index}", a.type) for a in program.block.args]
    memrefs += [("sched.buffer", op.results[0].type) for op in buffers]
    for what, t in memrefs:
        if isinstance(t, MemRefType):
            if any(d < 0 for d in t.get_shape()):
                raise VerifyException(f"{program.name}: {what} has a dynamic shape ({t}); buffers need static shapes")
            if nbytes(t) > INT64_MAX:
                raise VerifyException(f"{program.name}: {what} ({t}) holds more than {INT64_MAX} bytes")
    for op in buffers:
        if arena == -1 and op.offset_value is not None:
            raise VerifyException(
                f"{program.name}: arena -1 (not allocated) but a sched.buffer has offset {op.offset_value}: "
                "give the arena's size (or run sched-allocate)"
            )
        if arena >= 0:
            if op.offset_value is None:
                raise VerifyException(f"{program.name}: arena is sized but a sched.buffer has no offset")
            assert isinstance(op.results[0].type, MemRefType)
            if op.offset_value + nbytes(op.results[0].type) > arena:
                raise VerifyException(
                    f"{program.name}: buffer at offset {op.offset_value} ({nbytes(op.results[0].type)} bytes) "
                    f"overruns the {arena}-byte arena"
                )


# ------------------------------------------------------------------ syncs


class ScopedSyncOp(IRDLOperation):
    """A barrier with a `scope` keyword (one of SCOPES: `grid` or `block`, and
    for `tile.sync` also `items`); shared by `sched.barrier` and `tile.sync`."""

    scope = prop_def(StringAttr)
    SCOPES: ClassVar[tuple[str, ...]] = ("grid", "block")

    def __init__(self, scope: str = "grid"):
        super().__init__(properties={"scope": StringAttr(scope)})

    def verify_(self) -> None:
        if self.scope.data not in self.SCOPES:
            raise VerifyException(f"{self.name} scope must be {self._scopes()}, got {self.scope.data!r}")

    @classmethod
    def _scopes(cls) -> str:
        return " or ".join(cls.SCOPES)

    # Hand-written: a declarative format prints a StringAttr quoted ("grid"), and
    # its parse error would not name the scopes.
    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.scope.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        scope = parser.parse_optional_keyword_in(cls.SCOPES)
        if scope is None:
            parser.raise_error(f"{cls.name} expects " + " or ".join(f"`{s}`" for s in cls.SCOPES))
        op = cls(scope)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op
