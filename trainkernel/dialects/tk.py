"""The `tk` dialect: a training step as a pure SSA graph on builtin tensors.

Value semantics only: every op produces new tensors, nothing aliases. Shapes are
static. Element types are f32, bf16, f16 (floating point), i1 and i64 (argmax).

Numeric contract (mirrors PyTorch, so the CPU interpreter is an exact oracle):
- floating-point ops compute in their "opmath" type (f32 for bf16/f16 inputs) and
  round once to the result type;
- elementwise binary ops broadcast NumPy-style; operands of rank >= 1 share the
  result's element type, while rank-0 operands are *scalars* and may have any
  floating type (PyTorch's wrapped-number rule: a scalar never changes the
  computation's dtype);
- matmul accumulates in f32 and rounds the result once;
- reductions accumulate in f32 and round once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrConstraint,
    VerificationContext,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.pattern_rewriter import RewritePattern
from xdsl.traits import HasCanonicalizationPatternsTrait, IsolatedFromAbove, IsTerminator, OpTrait, Pure
from xdsl.utils.exceptions import VerifyException

from trainkernel import elements
from trainkernel.elements import is_float, is_tk_element_type
from trainkernel.util import numel


def _tensor(value: SSAValue | Attribute) -> TensorType:
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return t


def shape_of(value: SSAValue | Attribute) -> tuple[int, ...]:
    return tuple(_tensor(value).get_shape())


def element_type_of(value: SSAValue | Attribute) -> Attribute:
    return _tensor(value).get_element_type()


def type_str(t: Attribute) -> str:
    """Short spelling of a type for error messages: `tensor<4x8xbf16>`."""
    return str(t).replace("!", "")


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """NumPy broadcasting of static shapes; None when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(rank):
        size = 1
        for s in shapes:
            k = axis - (rank - len(s))
            if k < 0:
                continue
            d = s[k]
            if d == 1:
                continue
            if size not in (1, d):
                return None
            size = d
        out.append(size)
    return tuple(out)


def _float_value(op: Operation, name: str) -> float:
    attr = op.properties[name]
    assert isinstance(attr, FloatAttr)
    return float(attr.value.data)


def _print_float(printer: Printer, value: float) -> None:
    # repr() keeps every bit of a double and parses back exactly. MLIR's float
    # literal needs a '.' in the mantissa (`1e-07` lexes as `1` `e`), so write
    # `1.0e-07`. Non-finite values print as the keywords inf, -inf and nan.
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa and text not in ("inf", "-inf", "nan"):
        text = mantissa + ".0" + e + exponent
    printer.print_string(text)


def _parse_float(parser: Parser) -> float:
    """A float or integer literal, or inf, -inf, nan (as `_print_float` writes)."""
    negative = parser.parse_optional_punctuation("-") is not None
    if parser.parse_optional_keyword("inf") is not None:
        return float("-inf") if negative else float("inf")
    if not negative and parser.parse_optional_keyword("nan") is not None:
        return float("nan")
    value = float(parser.parse_number(context_msg=" (or inf, -inf, nan)"))
    return -value if negative else value


def _int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def int_values(attr: Attribute) -> tuple[int, ...]:
    """The integers of an `array<i64: ...>` property."""
    assert isinstance(attr, DenseArrayBase)
    return tuple(int(v) for v in attr.get_values())


@dataclass(frozen=True)
class TkTensorConstraint(AttrConstraint[TensorType]):
    """A statically shaped `tensor<...>` of f32, bf16, f16, i1 or i64."""

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        if not isinstance(attr, TensorType):
            raise VerifyException(f"{attr} should be of base attribute {TensorType.name}")
        if any(d < 0 for d in attr.get_shape()):
            raise VerifyException(f"tk tensors have static shapes, got {type_str(attr)}")
        if not is_tk_element_type(attr.get_element_type()):
            raise VerifyException(
                f"tk tensors hold f32, bf16, f16, i1 or i64, got {type_str(attr)}"
            )

    def get_bases(self) -> set[type[Attribute]] | None:
        return {TensorType}

    def mapping_type_vars(self, type_var_mapping: Mapping[TypeVar, object]) -> TkTensorConstraint:
        return self


TensorT = TkTensorConstraint()
# Axes, permutations, starts and steps: `array<i64: ...>`.
IndexArray = DenseArrayBase.constr(i64)


CANONICALIZATION_PATTERNS: dict[str, tuple[RewritePattern, ...]] = {}
"""Canonicalization patterns of tk ops, by op name. The patterns are rewrites, so
they live above the dialect (`trainkernel/passes/tk_canonicalize.py`) and
register themselves here when imported; the `canonicalize` entry of
`trainkernel.passes.PASSES` imports them before the pass runs."""


def register_canonicalization_patterns(patterns: Mapping[str, Sequence[RewritePattern]]) -> None:
    for name, pats in patterns.items():
        CANONICALIZATION_PATTERNS[name] = tuple(pats)


class TkCanonicalization(HasCanonicalizationPatternsTrait):
    """Lets xDSL's `canonicalize` pass find the patterns registered for an op."""

    def get_patterns(self, op: type[Operation]) -> tuple[RewritePattern, ...]:
        if not CANONICALIZATION_PATTERNS:
            # A canonicalize pass that did not come from trainkernel.passes would
            # silently skip every tk rewrite: say so instead.
            raise RuntimeError(
                "tk canonicalization patterns are not loaded: run canonicalize through "
                "trainkernel.passes.PASSES (or import trainkernel.passes.tk_canonicalize)"
            )
        return CANONICALIZATION_PATTERNS.get(op.name, ())

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return ()


# --------------------------------------------------------------------------- fill


@irdl_op_definition
class FillOp(IRDLOperation):
    """A tensor whose every element is one constant; rank 0 is a scalar constant.

    `%c = tk.fill 0.001 : tensor<f32>`
    """

    name = "tk.fill"
    value = prop_def(FloatAttr)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())

    def __init__(self, value: float, result_type: TensorType):
        super().__init__(
            properties={"value": FloatAttr(float(value), f64)},
            result_types=[result_type],
        )

    @property
    def fill_value(self) -> float:
        return _float_value(self, "value")

    def verify_(self) -> None:
        et = element_type_of(self.result)
        v = self.fill_value
        if is_float(et):
            return
        if not math.isfinite(v) or v != int(v):
            raise VerifyException(
                f"tk.fill of integer type {type_str(et)} needs an integral value, got {v}"
            )
        lo, hi = (0, 1) if isinstance(et, IntegerType) and et.width.data == 1 else (-(2**63), 2**63 - 1)
        if not lo <= int(v) <= hi:
            raise VerifyException(f"tk.fill value {v} does not fit {type_str(et)} (range [{lo}, {hi}])")

    # Hand-written: the value prints as Python's shortest exact repr (and inf/nan
    # as keywords); a declarative `$value` prints FloatAttrs as `1.000000e-03 : f64`.
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_float(printer, self.fill_value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> FillOp:
        value = _parse_float(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if not isinstance(t, TensorType):
            parser.raise_error(f"tk.fill result must be a tensor type, got {t}")
        op = cls(value, t)
        op.attributes.update(attrs)
        return op


# ------------------------------------------------------------------ elementwise


def _require_float_result(op: Operation) -> None:
    t = op.results[0].type
    if not is_float(element_type_of(t)):
        raise VerifyException(f"{op.name} computes on floating types only, got {type_str(t)}")


class ElementwiseBinaryOp(IRDLOperation):
    """Broadcasting elementwise binary op (see the module docstring for dtypes)."""

    lhs = operand_def(TensorT)
    rhs = operand_def(TensorT)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        rt = _tensor(self.result)
        et = rt.get_element_type()
        if not is_float(et):
            raise VerifyException(f"{self.name} computes on floating types only, got {type_str(rt)}")
        for operand in (self.lhs, self.rhs):
            ot = _tensor(operand)
            if ot.get_shape() and ot.get_element_type() != et:
                raise VerifyException(
                    f"{self.name}: operand {type_str(ot)} must have the result's element type "
                    f"{type_str(et)} (only rank-0 scalars may differ)"
                )
            if not is_float(ot.get_element_type()):
                raise VerifyException(f"{self.name}: operand {type_str(ot)} is not floating point")
        expected = broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))
        if expected is None:
            raise VerifyException(
                f"{self.name}: shapes {list(shape_of(self.lhs))} and {list(shape_of(self.rhs))} do not broadcast"
            )
        if expected != shape_of(self.result):
            raise VerifyException(
                f"{self.name}: result shape {list(shape_of(self.result))} is not the broadcast shape {list(expected)}"
            )


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    """`%r = tk.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>`"""

    name = "tk.add"


@irdl_op_definition
class SubOp(ElementwiseBinaryOp):
    """`%r = tk.sub %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>`"""

    name = "tk.sub"


@irdl_op_definition
class MulOp(ElementwiseBinaryOp):
    """`%r = tk.mul %a, %s : (tensor<4x8xbf16>, tensor<f32>) -> tensor<4x8xbf16>`"""

    name = "tk.mul"


@irdl_op_definition
class DivOp(ElementwiseBinaryOp):
    """`%r = tk.div %a, %b : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>`"""

    name = "tk.div"


@irdl_op_definition
class MaximumOp(ElementwiseBinaryOp):
    """Elementwise maximum (NaN-propagating, as torch.maximum)."""

    name = "tk.maximum"


class ElementwiseUnaryOp(IRDLOperation):
    T: ClassVar = VarConstraint("T", TensorT)
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure(), TkCanonicalization())
    assembly_format = "$input attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation):
        v = SSAValue.get(input)
        super().__init__(operands=[v], result_types=[v.type])

    def verify_(self) -> None:
        _require_float_result(self)


@irdl_op_definition
class NegOp(ElementwiseUnaryOp):
    """`%r = tk.neg %x : tensor<4x8xf32>`"""

    name = "tk.neg"


@irdl_op_definition
class ReluOp(ElementwiseUnaryOp):
    """`%r = tk.relu %x : tensor<4x8xbf16>`"""

    name = "tk.relu"


@irdl_op_definition
class ExpOp(ElementwiseUnaryOp):
    name = "tk.exp"


@irdl_op_definition
class LogOp(ElementwiseUnaryOp):
    name = "tk.log"


@irdl_op_definition
class SqrtOp(ElementwiseUnaryOp):
    name = "tk.sqrt"


@irdl_op_definition
class ReluGradOp(IRDLOperation):
    """Backward of relu: `grad` where `out > 0`, else 0 (aten.threshold_backward at 0).

    `%dx = tk.relu_grad %grad, %out : tensor<4x8xbf16>`
    """

    name = "tk.relu_grad"
    T: ClassVar = VarConstraint("T", TensorT)
    grad = operand_def(T)
    output = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure(), TkCanonicalization())
    assembly_format = "$grad `,` $output attr-dict `:` type($result)"

    def __init__(self, grad: SSAValue | Operation, output: SSAValue | Operation):
        g = SSAValue.get(grad)
        super().__init__(operands=[g, output], result_types=[g.type])

    def verify_(self) -> None:
        _require_float_result(self)


@irdl_op_definition
class PowOp(IRDLOperation):
    """Elementwise power by a constant exponent: `%r = tk.pow %x, 2.0 : tensor<4x8xf32>`"""

    name = "tk.pow"
    T: ClassVar = VarConstraint("T", TensorT)
    input = operand_def(T)
    exponent = prop_def(FloatAttr)
    result = result_def(T)
    traits = traits_def(Pure(), TkCanonicalization())

    def __init__(self, input: SSAValue | Operation, exponent: float):
        v = SSAValue.get(input)
        super().__init__(
            operands=[v],
            properties={"exponent": FloatAttr(float(exponent), f64)},
            result_types=[v.type],
        )

    @property
    def exponent_value(self) -> float:
        return _float_value(self, "exponent")

    def verify_(self) -> None:
        _require_float_result(self)

    # Hand-written for the exponent, printed as tk.fill prints its value.
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        _print_float(printer, self.exponent_value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> PowOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        exponent = _parse_float(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        (value,) = parser.resolve_operands([operand], [t], parser.pos)
        op = cls(value, exponent)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class CastOp(IRDLOperation):
    """Element type conversion, same shape; rounds to nearest even.

    `%r = tk.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>`
    """

    name = "tk.cast"
    input = operand_def(TensorT)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def __init__(self, input: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        if shape_of(self.input) != shape_of(self.result):
            raise VerifyException(
                f"tk.cast keeps the shape: {type_str(self.input.type)} cannot become {type_str(self.result.type)}"
            )


# ------------------------------------------------------------- activations
#
# Pointwise activation functions and their backward ops (one op per aten
# backward op, so each computes what PyTorch's own kernel computes, with one
# rounding; docs/ir/tk.md gives the formulas). Unary ops keep the operand's
# type; a `*_grad` op takes (grad, value) of one type, as tk.relu_grad.


@irdl_op_definition
class TanhOp(ElementwiseUnaryOp):
    """`%r = tk.tanh %x : tensor<4x8xf32>`"""

    name = "tk.tanh"


@irdl_op_definition
class SigmoidOp(ElementwiseUnaryOp):
    """`1 / (1 + exp(-x))`: `%r = tk.sigmoid %x : tensor<4x8xbf16>`"""

    name = "tk.sigmoid"


@irdl_op_definition
class SiluOp(ElementwiseUnaryOp):
    """`x / (1 + exp(-x))` (x * sigmoid(x)): `%r = tk.silu %x : tensor<4x8xf32>`"""

    name = "tk.silu"


@irdl_op_definition
class AbsOp(ElementwiseUnaryOp):
    """`%r = tk.abs %x : tensor<4x8xf32>`"""

    name = "tk.abs"


@irdl_op_definition
class SignOp(ElementwiseUnaryOp):
    """`(0 < x) - (x < 0)`: -1, 0 or 1 (0 for +-0 and NaN, as torch.sign):
    `%r = tk.sign %x : tensor<4x8xf32>`"""

    name = "tk.sign"


@irdl_op_definition
class RsqrtOp(ElementwiseUnaryOp):
    """`1 / sqrt(x)`: `%r = tk.rsqrt %x : tensor<4x8xf32>`"""

    name = "tk.rsqrt"


class ParamElementwiseOp(IRDLOperation):
    """A pointwise op with constant parameters, all operands and the result of
    one type: `%r = tk.NAME %a (, %b)* (PARAM float)* (FLAG)? attr-dict : type`.

    Subclasses list their float properties in `FLOAT_PARAMS` (in print order,
    with defaults in `DEFAULTS`) and their unit flags in `FLAGS`."""

    FLOAT_PARAMS: ClassVar[tuple[str, ...]] = ()
    FLAGS: ClassVar[tuple[str, ...]] = ()
    T: ClassVar = VarConstraint("T", TensorT)
    result = result_def(T)
    traits = traits_def(Pure(), TkCanonicalization())

    def __init__(self, *operands: SSAValue | Operation, **params: float | bool):
        values = [SSAValue.get(v) for v in operands]
        props: dict[str, Attribute] = {}
        unknown = set(params) - set(self.FLOAT_PARAMS) - set(self.FLAGS)
        if unknown:
            raise TypeError(f"{self.name}: unknown parameters {sorted(unknown)}")
        for name in self.FLOAT_PARAMS:
            if name not in params:
                raise TypeError(f"{self.name}: parameter {name!r} is required")
            props[name] = FloatAttr(float(params[name]), f64)
        for flag in self.FLAGS:
            if params.get(flag):
                props[flag] = UnitAttr()
        super().__init__(operands=values, properties=props, result_types=[values[0].type])

    def param(self, name: str) -> float:
        return _float_value(self, name)

    def flag(self, name: str) -> bool:
        return name in self.properties

    def verify_(self) -> None:
        if not is_float(element_type_of(self.result)):
            raise VerifyException(f"{self.name} computes on floating types only, got {type_str(self.result.type)}")

    # Hand-written: the float parameters print as tk.fill prints its value (a
    # declarative `$beta` prints FloatAttrs as `1.000000e+00 : f64`), one
    # printer for every parametrized op.
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        for name in self.FLOAT_PARAMS:
            printer.print_string(f" {name} ")
            _print_float(printer, self.param(name))
        for flag in self.FLAGS:
            if self.flag(flag):
                printer.print_string(f" {flag}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        params: dict[str, float | bool] = {}
        for name in cls.FLOAT_PARAMS:
            parser.parse_keyword(name)
            params[name] = _parse_float(parser)
        for flag in cls.FLAGS:
            params[flag] = parser.parse_optional_keyword(flag) is not None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        values = parser.resolve_operands(operands, [t] * len(operands), parser.pos)
        op = cls(*values, **params)
        op.attributes.update(attrs)
        return op


class ParamUnaryOp(ParamElementwiseOp):
    input = operand_def(ParamElementwiseOp.T)


class ParamGradOp(ParamElementwiseOp):
    """Backward of a pointwise op: `grad` (the result's gradient) and the forward
    `value` it needs (input or output, per op), one type."""

    grad = operand_def(ParamElementwiseOp.T)
    value = operand_def(ParamElementwiseOp.T)


@irdl_op_definition
class GeluOp(ParamUnaryOp):
    """GELU: `x * 0.5 * (1 + erf(x / sqrt(2)))`, or with `tanh` the approximation
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`.

    `%r = tk.gelu %x tanh : tensor<4x8xf32>`
    """

    name = "tk.gelu"
    FLAGS: ClassVar[tuple[str, ...]] = ("tanh",)
    tanh = opt_prop_def(UnitAttr)


@irdl_op_definition
class SoftplusOp(ParamUnaryOp):
    """`x` where `x * beta > threshold`, else `log1p(exp(x * beta)) / beta`.

    `%r = tk.softplus %x beta 1.0 threshold 20.0 : tensor<4x8xf32>`
    """

    name = "tk.softplus"
    FLOAT_PARAMS: ClassVar[tuple[str, ...]] = ("beta", "threshold")
    beta = prop_def(FloatAttr)
    threshold = prop_def(FloatAttr)


@irdl_op_definition
class LeakyReluOp(ParamUnaryOp):
    """`x > 0 ? x : x * negative_slope`.

    `%r = tk.leaky_relu %x negative_slope 0.01 : tensor<4x8xf32>`
    """

    name = "tk.leaky_relu"
    FLOAT_PARAMS: ClassVar[tuple[str, ...]] = ("negative_slope",)
    negative_slope = prop_def(FloatAttr)


@irdl_op_definition
class EluOp(ParamUnaryOp):
    """`x > 0 ? x * scale : expm1(x * input_scale) * (alpha * scale)` (aten.elu;
    SELU and CELU are ELUs with other constants).

    `%r = tk.elu %x alpha 1.0 scale 1.0 input_scale 1.0 : tensor<4x8xf32>`
    """

    name = "tk.elu"
    FLOAT_PARAMS: ClassVar[tuple[str, ...]] = ("alpha", "scale", "input_scale")
    alpha = prop_def(FloatAttr)
    scale = prop_def(FloatAttr)
    input_scale = prop_def(FloatAttr)


@irdl_op_definition
class TanhGradOp(ParamGradOp):
    """aten.tanh_backward: `grad * (1 - out * out)`, `value` = tanh's output.

    `%dx = tk.tanh_grad %grad, %out : tensor<4x8xf32>`
    """

    name = "tk.tanh_grad"


@irdl_op_definition
class SigmoidGradOp(ParamGradOp):
    """aten.sigmoid_backward: `grad * (1 - out) * out`, `value` = sigmoid's output.

    `%dx = tk.sigmoid_grad %grad, %out : tensor<4x8xf32>`
    """

    name = "tk.sigmoid_grad"


@irdl_op_definition
class GeluGradOp(ParamGradOp):
    """aten.gelu_backward (`value` = gelu's input; `tanh`: of the approximation).

    `%dx = tk.gelu_grad %grad, %x tanh : tensor<4x8xf32>`
    """

    name = "tk.gelu_grad"
    FLAGS: ClassVar[tuple[str, ...]] = ("tanh",)
    tanh = opt_prop_def(UnitAttr)


@irdl_op_definition
class SoftplusGradOp(ParamGradOp):
    """aten.softplus_backward (`value` = softplus's input):
    `x * beta > threshold ? grad : grad * z / (z + 1)` with `z = exp(x * beta)`.

    `%dx = tk.softplus_grad %grad, %x beta 1.0 threshold 20.0 : tensor<4x8xf32>`
    """

    name = "tk.softplus_grad"
    FLOAT_PARAMS: ClassVar[tuple[str, ...]] = ("beta", "threshold")
    beta = prop_def(FloatAttr)
    threshold = prop_def(FloatAttr)


@irdl_op_definition
class LeakyReluGradOp(ParamGradOp):
    """aten.leaky_relu_backward (`value` = leaky_relu's input, or its output:
    they have the same sign): `x > 0 ? grad : grad * negative_slope`.

    `%dx = tk.leaky_relu_grad %grad, %x negative_slope 0.01 : tensor<4x8xf32>`
    """

    name = "tk.leaky_relu_grad"
    FLOAT_PARAMS: ClassVar[tuple[str, ...]] = ("negative_slope",)
    negative_slope = prop_def(FloatAttr)


@irdl_op_definition
class EluGradOp(ParamGradOp):
    """aten.elu_backward: `value` is elu's input, or with `is_result` its output.
    `b <= 0 ? grad * input_scale * alpha * scale * exp(b * input_scale)` (input)
    or `grad * input_scale * (b + alpha * scale)` (output), else `grad * scale`.

    `%dx = tk.elu_grad %grad, %out alpha 1.0 scale 1.0 input_scale 1.0 is_result : tensor<4x8xf32>`
    """

    name = "tk.elu_grad"
    FLOAT_PARAMS: ClassVar[tuple[str, ...]] = ("alpha", "scale", "input_scale")
    FLAGS: ClassVar[tuple[str, ...]] = ("is_result",)
    alpha = prop_def(FloatAttr)
    scale = prop_def(FloatAttr)
    input_scale = prop_def(FloatAttr)
    is_result = opt_prop_def(UnitAttr)


# ------------------------------------------------------------------ iota


@irdl_op_definition
class IotaOp(IRDLOperation):
    """A tensor whose element at index i is i[axis] (0, 1, 2, ... along `axis`,
    the same along every other axis): the class numbers that comparisons with
    integer labels (gather, scatter, one-hot) need. f32, bf16, f16 or i64.

    `%r = tk.iota axis 1 : tensor<1x10xi64>`
    """

    name = "tk.iota"
    axis = prop_def(IntegerAttr)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())

    def __init__(self, axis: int, result_type: Attribute):
        super().__init__(properties={"axis": IntegerAttr(axis, i64)}, result_types=[result_type])

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        rank = len(shape_of(self.result))
        if not 0 <= self.axis_value < max(rank, 1) or rank == 0:
            raise VerifyException(f"tk.iota: axis {self.axis_value} is not an axis of {type_str(self.result.type)}")
        et = element_type_of(self.result)
        if not (is_float(et) or (isinstance(et, IntegerType) and et.width.data == 64)):
            raise VerifyException(f"tk.iota counts in a floating type or i64, got {type_str(self.result.type)}")
        n = shape_of(self.result)[self.axis_value]
        if is_float(et) and n > 2 ** (elements.lookup(et).mantissa_bits + 1):
            raise VerifyException(
                f"tk.iota: {n} values along axis {self.axis_value} are not all exact in {type_str(et)}"
            )

    # Hand-written: the axis is a bare integer (`axis 1`); a declarative `$axis`
    # prints the IntegerAttr with its type (`1 : i64`).
    def print(self, printer: Printer) -> None:
        printer.print_string(f" axis {self.axis_value}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IotaOp:
        parser.parse_keyword("axis")
        axis = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(axis, t)
        op.attributes.update(attrs)
        return op


# ------------------------------------------------------- compare and select

CMP_PREDICATES: tuple[str, ...] = ("eq", "ne", "lt", "le", "gt", "ge")


def _is_i64(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 64


def _is_mask_type(t: Attribute) -> bool:
    """i1, or a floating type holding 0 / 1 (masks after tk-legalize-masks)."""
    return (isinstance(t, IntegerType) and t.width.data == 1) or is_float(t)


@irdl_op_definition
class CmpOp(IRDLOperation):
    """Elementwise comparison with broadcast: true where `lhs PRED rhs` (IEEE:
    every predicate but `ne` is false on NaN). Both operands have one floating
    element type; the result is i1, or (after `tk-legalize-masks`) a floating
    type holding 1.0 for true and 0.0 for false.

    `%m = tk.cmp gt %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>`
    """

    name = "tk.cmp"
    predicate = prop_def(StringAttr)
    lhs = operand_def(TensorT)
    rhs = operand_def(TensorT)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())

    def __init__(self, predicate: str, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute | None = None):
        a, b = SSAValue.get(lhs), SSAValue.get(rhs)
        if result_type is None:
            shape = broadcast_shapes(shape_of(a), shape_of(b))
            result_type = TensorType(IntegerType(1), list(shape if shape is not None else shape_of(a)))
        super().__init__(operands=[a, b], result_types=[result_type], properties={"predicate": StringAttr(predicate)})

    @property
    def predicate_name(self) -> str:
        return self.predicate.data

    def verify_(self) -> None:
        if self.predicate_name not in CMP_PREDICATES:
            raise VerifyException(f"tk.cmp: predicate {self.predicate_name!r} is not one of {', '.join(CMP_PREDICATES)}")
        et = element_type_of(self.lhs)
        if not (is_float(et) or _is_i64(et)) or element_type_of(self.rhs) != et:
            raise VerifyException(
                f"tk.cmp compares two operands of one floating (or i64) element type, got "
                f"{type_str(self.lhs.type)} and {type_str(self.rhs.type)}"
            )
        if not _is_mask_type(element_type_of(self.result)):
            raise VerifyException(f"tk.cmp returns i1 (or a 0/1 float mask), got {type_str(self.result.type)}")
        expected = broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))
        if expected is None:
            raise VerifyException(
                f"tk.cmp: shapes {list(shape_of(self.lhs))} and {list(shape_of(self.rhs))} do not broadcast"
            )
        if expected != shape_of(self.result):
            raise VerifyException(f"tk.cmp: result shape {list(shape_of(self.result))} is not the broadcast shape {list(expected)}")

    # Hand-written: the predicate is a bare keyword (`tk.cmp gt %a, %b`); a
    # declarative `$predicate` would print the StringAttr quoted.
    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate_name} ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], [self.result.type])

    @classmethod
    def parse(cls, parser: Parser) -> CmpOp:
        pos = parser.pos
        pred = parser.parse_identifier()
        if pred not in CMP_PREDICATES:
            parser.raise_error(f"tk.cmp predicate must be one of {', '.join(CMP_PREDICATES)}, got {pred!r}", pos, parser.pos)
        operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ft = parser.parse_function_type()
        if len(operands) != 2 or len(ft.inputs.data) != 2 or len(ft.outputs.data) != 1:
            parser.raise_error("tk.cmp takes two operands and has one result")
        lhs, rhs = parser.resolve_operands(operands, list(ft.inputs.data), parser.pos)
        op = cls(pred, lhs, rhs, ft.outputs.data[0])
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class SelectOp(IRDLOperation):
    """Elementwise `cond ? a : b` with broadcast (aten.where, masked_fill). `cond`
    is i1, or a floating 0/1 mask (nonzero is true); `a` and `b` have the
    result's element type (floating point, i1 for logical ops on masks, i64
    for labels).

    `%r = tk.select %m, %x, %zero : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>`
    """

    name = "tk.select"
    cond = operand_def(TensorT)
    true_value = operand_def(TensorT)
    false_value = operand_def(TensorT)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())
    assembly_format = "$cond `,` $true_value `,` $false_value attr-dict `:` functional-type(operands, results)"

    def __init__(self, cond, true_value, false_value, result_type: Attribute):
        super().__init__(operands=[cond, true_value, false_value], result_types=[result_type])

    def verify_(self) -> None:
        if not _is_mask_type(element_type_of(self.cond)):
            raise VerifyException(f"tk.select: condition {type_str(self.cond.type)} must be i1 (or a 0/1 float mask)")
        et = element_type_of(self.result)
        if not (_is_mask_type(et) or _is_i64(et)):
            raise VerifyException(f"tk.select selects floating, i1 or i64 values, got {type_str(self.result.type)}")
        for v in (self.true_value, self.false_value):
            if element_type_of(v) != et:
                raise VerifyException(
                    f"tk.select: {type_str(v.type)} must have the result's element type {type_str(et)}"
                )
        expected = broadcast_shapes(shape_of(self.cond), shape_of(self.true_value), shape_of(self.false_value))
        if expected is None:
            raise VerifyException(
                f"tk.select: shapes {list(shape_of(self.cond))}, {list(shape_of(self.true_value))} and "
                f"{list(shape_of(self.false_value))} do not broadcast"
            )
        if expected != shape_of(self.result):
            raise VerifyException(f"tk.select: result shape {list(shape_of(self.result))} is not the broadcast shape {list(expected)}")


# ----------------------------------------------------------------------- matmul


class _MatmulBase(IRDLOperation):
    def _check_matmul(
        self, a: SSAValue, b: SSAValue, result: SSAValue, ta: bool = False, tb: bool = False
    ) -> tuple[int, int]:
        sa, sb, sr = shape_of(a), shape_of(b), shape_of(result)
        if len(sa) != 2 or len(sb) != 2 or len(sr) != 2:
            raise VerifyException(f"{self.name} takes and returns rank-2 tensors, got {list(sa)} x {list(sb)} -> {list(sr)}")
        et = element_type_of(result)
        if not is_float(et) or element_type_of(a) != et or element_type_of(b) != et:
            raise VerifyException(
                f"{self.name} needs one floating element type for both operands and the result, "
                f"got {type_str(a.type)}, {type_str(b.type)} -> {type_str(result.type)}"
            )
        m, ka = (sa[1], sa[0]) if ta else sa
        kb, n = (sb[1], sb[0]) if tb else sb
        if ka != kb:
            raise VerifyException(f"{self.name}: contraction sizes differ ({ka} vs {kb})")
        if sr != (m, n):
            raise VerifyException(f"{self.name}: result shape {list(sr)} should be {[m, n]}")
        return m, n


@irdl_op_definition
class MatmulOp(_MatmulBase):
    """2-D matrix product, f32 accumulation. `transpose_a`/`transpose_b` read the
    stored operand transposed.

    `%c = tk.matmul %a, %b transpose_b : (tensor<16x32xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>`
    """

    name = "tk.matmul"
    transpose_a = opt_prop_def(UnitAttr)
    transpose_b = opt_prop_def(UnitAttr)
    lhs = operand_def(TensorT)
    rhs = operand_def(TensorT)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())
    assembly_format = (
        "$lhs `,` $rhs (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)? attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(self, lhs, rhs, result_type: Attribute, transpose_a: bool = False, transpose_b: bool = False):
        props: dict[str, Attribute] = {}
        if transpose_a:
            props["transpose_a"] = UnitAttr()
        if transpose_b:
            props["transpose_b"] = UnitAttr()
        super().__init__(operands=[lhs, rhs], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        self._check_matmul(
            self.lhs, self.rhs, self.result, self.transpose_a is not None, self.transpose_b is not None
        )


@irdl_op_definition
class AddmmOp(_MatmulBase):
    """`bias + a @ b` with the bias broadcast to the product's shape (aten.addmm with
    alpha = beta = 1). Decomposed by `tk-decompose`.

    `%r = tk.addmm %bias, %a, %b : (tensor<64xf32>, tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>`
    """

    name = "tk.addmm"
    bias = operand_def(TensorT)
    lhs = operand_def(TensorT)
    rhs = operand_def(TensorT)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())
    assembly_format = "$bias `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, bias, lhs, rhs, result_type: Attribute):
        super().__init__(operands=[bias, lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        m, n = self._check_matmul(self.lhs, self.rhs, self.result)
        if element_type_of(self.bias) != element_type_of(self.result):
            raise VerifyException(f"tk.addmm: bias {type_str(self.bias.type)} must have the result's element type")
        if broadcast_shapes(shape_of(self.bias), (m, n)) != (m, n):
            raise VerifyException(f"tk.addmm: bias shape {list(shape_of(self.bias))} does not broadcast to {[m, n]}")


# ------------------------------------------------------------------- reductions


class ReductionOp(IRDLOperation):
    """Reduction along `axes`; `keepdim` keeps reduced axes with size 1.

    `%r = tk.sum %x axes [0] keepdim : tensor<16x8xf32> -> tensor<1x8xf32>`
    """

    input = operand_def(TensorT)
    axes = prop_def(IndexArray)
    keepdim = opt_prop_def(UnitAttr)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())
    assembly_format = "$input `axes` $axes (`keepdim` $keepdim^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input, axes: Sequence[int], result_type: Attribute, keepdim: bool = False):
        props: dict[str, Attribute] = {"axes": _int_array(axes)}
        if keepdim:
            props["keepdim"] = UnitAttr()
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    @property
    def axes_list(self) -> tuple[int, ...]:
        return int_values(self.axes)

    def expected_shape(self) -> tuple[int, ...]:
        shape = shape_of(self.input)
        axes = set(self.axes_list)
        if self.keepdim:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def verify_(self) -> None:
        rank = len(shape_of(self.input))
        axes = self.axes_list
        if len(set(axes)) != len(axes) or any(a < 0 or a >= rank for a in axes):
            raise VerifyException(f"{self.name}: axes {list(axes)} must be distinct and in [0, {rank})")
        if list(axes) != sorted(axes):
            raise VerifyException(f"{self.name}: axes {list(axes)} must be sorted")
        if shape_of(self.result) != self.expected_shape():
            raise VerifyException(
                f"{self.name}: result shape {list(shape_of(self.result))} should be {list(self.expected_shape())}"
            )
        self._verify_types()

    def _verify_types(self) -> None:
        if element_type_of(self.input) != element_type_of(self.result) or not is_float(element_type_of(self.result)):
            raise VerifyException(
                f"{self.name}: input {type_str(self.input.type)} and result {type_str(self.result.type)} "
                "need one floating element type"
            )

@irdl_op_definition
class SumOp(ReductionOp):
    name = "tk.sum"


@irdl_op_definition
class MeanOp(ReductionOp):
    name = "tk.mean"


@irdl_op_definition
class MaxOp(ReductionOp):
    name = "tk.max"


@irdl_op_definition
class ArgmaxOp(ReductionOp):
    """Index of the first maximum along one axis; i64 result.

    `%r = tk.argmax %x axes [1] : tensor<16x10xf32> -> tensor<16xi64>`
    """

    name = "tk.argmax"

    def _verify_types(self) -> None:
        if len(self.axes_list) != 1:
            raise VerifyException("tk.argmax reduces exactly one axis")
        et = element_type_of(self.result)
        if not (isinstance(et, IntegerType) and et.width.data == 64):
            raise VerifyException(f"tk.argmax returns i64 indices, got {type_str(self.result.type)}")
        if not is_float(element_type_of(self.input)):
            raise VerifyException(f"tk.argmax input must be floating point, got {type_str(self.input.type)}")


@irdl_op_definition
class ColumnPartialsOp(IRDLOperation):
    """Column sums of each run of `rows` rows, in fp32: result[g, j] is the sum,
    in row order, of input[g * rows + r, j] for r = 0 .. rows-1 (the rows that
    exist: the last run may be short). A rank-2 floating input, an f32 result
    of shape [ceil(M / rows), N].

    Not written by users or the tk passes: `tile-column-partials` puts it in
    a tile.gemm's body, where the Hopper row walk sums each thread's 16 rows
    of the value it stores, and a later column sum reads the partials instead
    of the whole output (issue 10.3).

    `%p = tk.column_partials %x rows 16 : tensor<100x8xbf16> -> tensor<7x8xf32>`
    """

    name = "tk.column_partials"
    input = operand_def(TensorT)
    rows = prop_def(IntegerAttr)
    result = result_def(TensorT)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, rows: int):
        m, n = shape_of(input)
        t = TensorType(elements.F32.ir, [math.ceil(m / rows), n])
        super().__init__(operands=[input], properties={"rows": IntegerAttr(rows, i64)}, result_types=[t])

    @property
    def rows_value(self) -> int:
        return self.rows.value.data

    def verify_(self) -> None:
        shape = shape_of(self.input)
        if len(shape) != 2 or not is_float(element_type_of(self.input)):
            raise VerifyException(f"tk.column_partials: input must be a rank-2 floating tensor, got {type_str(self.input.type)}")
        if self.rows_value < 1:
            raise VerifyException(f"tk.column_partials: rows must be positive, got {self.rows_value}")
        m, n = shape
        want = (-(-m // self.rows_value), n)
        if shape_of(self.result) != want or element_type_of(self.result) != elements.F32.ir:
            raise VerifyException(
                f"tk.column_partials: result must be tensor<{want[0]}x{want[1]}xf32> (runs of {self.rows_value} "
                f"rows of {m}), got {type_str(self.result.type)}"
            )

    # Hand-written as tk.iota's: `rows 16`, a bare integer.
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f" rows {self.rows_value}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ColumnPartialsOp:
        x = parser.parse_unresolved_operand()
        parser.parse_keyword("rows")
        rows = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        in_type = parser.parse_type()
        parser.parse_punctuation("->")
        out_type = parser.parse_type()
        (value,) = parser.resolve_operands([x], [in_type], parser.pos)
        op = cls.create(operands=[value], properties={"rows": IntegerAttr(rows, i64)}, result_types=[out_type])
        op.attributes.update(attrs)
        return op


# ------------------------------------------------------------------------ views


class _ViewOp(IRDLOperation):
    input = operand_def(TensorT)
    result = result_def(TensorT)
    traits = traits_def(Pure(), TkCanonicalization())

    def _same_element_type(self) -> None:
        if element_type_of(self.input) != element_type_of(self.result):
            raise VerifyException(
                f"{self.name} keeps the element type: {type_str(self.input.type)} -> {type_str(self.result.type)}"
            )


class _ShapeViewOp(_ViewOp):
    """A view given by its result type alone (reshape, expand)."""

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])


@irdl_op_definition
class ReshapeOp(_ShapeViewOp):
    """Same elements in row-major order, new shape.

    `%r = tk.reshape %x : tensor<1x8xf32> -> tensor<8xf32>`
    """

    name = "tk.reshape"

    def verify_(self) -> None:
        self._same_element_type()
        if numel(shape_of(self.input)) != numel(shape_of(self.result)):
            raise VerifyException(
                f"tk.reshape: {list(shape_of(self.input))} and {list(shape_of(self.result))} have different element counts"
            )


@irdl_op_definition
class ExpandOp(_ShapeViewOp):
    """Broadcast to a larger shape (NumPy rules: leading axes added, size-1 axes
    repeated).

    `%r = tk.expand %x : tensor<1x8xf32> -> tensor<16x8xf32>`
    """

    name = "tk.expand"

    def verify_(self) -> None:
        self._same_element_type()
        src, dst = shape_of(self.input), shape_of(self.result)
        if len(src) > len(dst) or broadcast_shapes(src, dst) != dst:
            raise VerifyException(f"tk.expand: {list(src)} does not broadcast to {list(dst)}")


@irdl_op_definition
class TransposeOp(_ViewOp):
    """Axis permutation: result axis i is input axis perm[i].

    `%r = tk.transpose %x perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>`
    """

    name = "tk.transpose"
    perm = prop_def(IndexArray)
    assembly_format = "$input `perm` $perm attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input, perm: Sequence[int], result_type: Attribute | None = None):
        if result_type is None:
            t = _tensor(SSAValue.get(input))
            result_type = TensorType(t.get_element_type(), [t.get_shape()[p] for p in perm])
        super().__init__(operands=[input], result_types=[result_type], properties={"perm": _int_array(perm)})

    @property
    def perm_list(self) -> tuple[int, ...]:
        return int_values(self.perm)

    def verify_(self) -> None:
        self._same_element_type()
        src, perm = shape_of(self.input), self.perm_list
        if sorted(perm) != list(range(len(src))):
            raise VerifyException(f"tk.transpose: perm {list(perm)} is not a permutation of {len(src)} axes")
        want = tuple(src[p] for p in perm)
        if shape_of(self.result) != want:
            raise VerifyException(f"tk.transpose: result shape {list(shape_of(self.result))} should be {list(want)}")

@irdl_op_definition
class SliceOp(_ViewOp):
    """Strided slice: result[i] = input[starts + i * steps] per axis; the result
    type gives the sizes.

    `%r = tk.slice %x starts [0, 2] steps [1, 2] : tensor<16x8xf32> -> tensor<16x3xf32>`
    """

    name = "tk.slice"
    starts = prop_def(IndexArray)
    steps = prop_def(IndexArray)
    assembly_format = "$input `starts` $starts `steps` $steps attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input, starts: Sequence[int], steps: Sequence[int], result_type: Attribute):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"starts": _int_array(starts), "steps": _int_array(steps)},
        )

    @property
    def starts_list(self) -> tuple[int, ...]:
        return int_values(self.starts)

    @property
    def steps_list(self) -> tuple[int, ...]:
        return int_values(self.steps)

    def verify_(self) -> None:
        self._same_element_type()
        src, dst = shape_of(self.input), shape_of(self.result)
        starts, steps = self.starts_list, self.steps_list
        if not (len(src) == len(dst) == len(starts) == len(steps)):
            raise VerifyException(
                f"tk.slice: input rank {len(src)}, result rank {len(dst)}, {len(starts)} starts and "
                f"{len(steps)} steps must agree"
            )
        for axis, (n, size, start, step) in enumerate(zip(src, dst, starts, steps)):
            if step < 1 or start < 0 or (size > 0 and start + (size - 1) * step >= n):
                raise VerifyException(
                    f"tk.slice: axis {axis} reads [{start} : {start + size * step} : {step}] outside size {n}"
                )


# ------------------------------------------------------------------------ fused


class TkBody(OpTrait):
    """An op whose single-block region is a `tk` body ending in `tk.yield`, which
    hands the region's values back to it: `tk.fused` here, and the compute ops of
    the buffer levels (`sched.compute`, the `tile` ops), which carry it through
    `ComputeLikeOp`. The only parents `tk.yield` accepts."""


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of a `tk` body (`tk.fused`, `sched.compute`, tile ops): the
    values the region produces."""

    name = "tk.yield"
    values = var_operand_def(TensorT)
    traits = traits_def(IsTerminator())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[list(values)])

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is None or not parent.has_trait(TkBody):
            where = parent.name if parent is not None else "no op"
            raise VerifyException(
                f"tk.yield must terminate an op with a tk body (TkBody: tk.fused, sched.compute, tile ops), not {where}"
            )


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A group of `tk` ops that lower to one kernel stage: a pointwise chain, or a
    matmul or reduction with its pointwise epilogue. The region's arguments are the operands;
    its `tk.yield` gives the results. Semantics are exactly those of the body.

    ```
    %r = tk.fused %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
      %s = tk.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      tk.yield %s : tensor<4xf32>
    }
    ```
    """

    name = "tk.fused"
    inputs = var_operand_def(TensorT)
    outputs = var_result_def(TensorT)
    body = region_def("single_block")
    traits = traits_def(Pure(), IsolatedFromAbove(), TkBody(), TkCanonicalization())
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $outputs) $body"

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[list(inputs)], result_types=[list(result_types)], regions=[body])

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [a.type for a in block.args]
        in_types = [v.type for v in self.inputs]
        if arg_types != in_types:
            raise VerifyException("tk.fused: region argument types must equal the operand types")
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException("tk.fused: region must end with tk.yield")
        if [v.type for v in term.values] != [r.type for r in self.outputs]:
            raise VerifyException("tk.fused: tk.yield types must equal the result types")
        for op in block.ops:
            if op is not term and not isinstance(op, FUSIBLE_OPS):
                raise VerifyException(f"tk.fused: {op.name} cannot be fused")


def outline(ops: Sequence[Operation], outputs: Sequence[SSAValue]) -> tuple[list[SSAValue], Region]:
    """A tk body (the region of a `tk.fused`, a `sched.compute`, a tile op) that
    computes `outputs` with clones of `ops`, in order. Its arguments are the values
    read from outside (by the ops, or yielded directly), in first-use order; a
    constant (`tk.fill`, `tk.iota`: CONSTANT_OPS) read from outside is cloned in
    instead, ahead of the ops (it costs nothing per element). Ends in `tk.yield`
    of the outputs.

    Returns (the values to pass as operands, the region)."""
    members = set(ops)
    inputs: list[SSAValue] = []
    fills: list[Operation] = []
    for value in [v for op in ops for v in op.operands] + list(outputs):
        owner = value.owner
        if isinstance(owner, CONSTANT_OPS) and owner not in members:
            if owner not in fills:
                fills.append(owner)
        elif owner not in members and value not in inputs:
            inputs.append(value)
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
    for fill in fills:
        clone = fill.clone()
        block.add_op(clone)
        mapping[fill.result] = clone.result
    for op in ops:
        block.add_op(op.clone(value_mapper=mapping))
    block.add_op(YieldOp(*[mapping[v] for v in outputs]))
    return inputs, Region(block)


ACTIVATION_OPS: tuple[type[IRDLOperation], ...] = (
    TanhOp,
    SigmoidOp,
    SiluOp,
    AbsOp,
    SignOp,
    RsqrtOp,
    GeluOp,
    SoftplusOp,
    LeakyReluOp,
    EluOp,
    TanhGradOp,
    SigmoidGradOp,
    GeluGradOp,
    SoftplusGradOp,
    LeakyReluGradOp,
    EluGradOp,
)
"""Pointwise activations and their backward ops."""

CONSTANT_OPS: tuple[type[IRDLOperation], ...] = (FillOp, IotaOp)
"""Ops without operands whose elements cost nothing to compute: never given a
kernel stage or a buffer of their own, they are cloned into every body that
reads them (`outline`, tk-fuse, tk-to-sched)."""

ELEMENTWISE_OPS: tuple[type[IRDLOperation], ...] = (
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaximumOp,
    NegOp,
    ReluOp,
    ExpOp,
    LogOp,
    SqrtOp,
    ReluGradOp,
    PowOp,
    CastOp,
    *ACTIVATION_OPS,
    CmpOp,
    SelectOp,
    IotaOp,
)
"""Ops whose result element i depends only on operand elements at (the
broadcast of) index i."""

FUSIBLE_OPS: tuple[type[IRDLOperation], ...] = (
    FillOp,
    *ELEMENTWISE_OPS,
    MatmulOp,
    SumOp,
    MaxOp,
    ArgmaxOp,
    ExpandOp,
    ReshapeOp,
    TransposeOp,
)
"""Ops a `tk.fused` region may hold."""

TK = Dialect(
    "tk",
    [
        FillOp,
        *ELEMENTWISE_OPS,
        MatmulOp,
        AddmmOp,
        SumOp,
        MeanOp,
        MaxOp,
        ArgmaxOp,
        ColumnPartialsOp,
        ReshapeOp,
        ExpandOp,
        TransposeOp,
        SliceOp,
        FusedOp,
        YieldOp,
    ],
    [],
)
