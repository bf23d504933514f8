"""Convert a functional aten FX graph (from `make_fx`) into one `func.func` of `tk` ops.

Every node is handled by a function registered for its exact aten overload in
`HANDLERS`; a node without a handler, or a handled node whose arguments `tk`
cannot express (integer compute, alpha != 1 on addmm, a non-finite constant, a
3-D matmul, ...), raises `UnsupportedOpError` naming the overload and the
user's source line. There is no fallback.

Types come from each node's fake tensor (`node.meta["val"]`), so every result
has exactly PyTorch's shape and dtype. Where PyTorch promotes, the converter
makes it explicit: operands of rank >= 1 of an elementwise binary op are cast
to the result's element type; rank-0 operands (0-d tensors and Python numbers,
which become 0-d f32 `tk.fill`s) keep their own type, as the `tk` contract says.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from trainkernel import elements
from trainkernel.dialects import tk
from trainkernel.frontend.errors import CaptureError, SourceLocation, UnsupportedOpError
from trainkernel.util import numel

F32 = elements.F32.ir

_DEFAULT_MEMORY_FORMATS = (None, torch.preserve_format, torch.contiguous_format)


def element_type(dtype: torch.dtype) -> Attribute | None:
    """The tk element type of a torch dtype (`trainkernel.elements`), None when a
    tk tensor cannot hold it. Integer/bool types exist only for argmax results,
    fills and pass-through values; no compute op accepts them."""
    e = elements.from_torch(dtype)
    return e.ir if e is not None and e.in_tk else None


def tensor_type(shape: Sequence[int], dtype: torch.dtype) -> TensorType:
    et = element_type(dtype)
    assert et is not None, dtype
    return TensorType(et, [int(d) for d in shape])


_FRAME_RE = re.compile(r'^\s*File "(?P<file>.*)", line (?P<line>\d+), in (?P<func>.*)$')


def location_from_stack_trace(text: str | None) -> SourceLocation | None:
    """The innermost frame of a node's recorded (already filtered) stack trace."""
    if not text:
        return None
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        m = _FRAME_RE.match(lines[i])
        if m:
            src = ""
            if i + 1 < len(lines) and not _FRAME_RE.match(lines[i + 1]):
                src = lines[i + 1].strip()
            return SourceLocation(m.group("file"), int(m.group("line")), m.group("func"), src)
    return None


class _Constant:
    """A real tensor held by the graph (`get_attr`): `torch.tensor(...)` in the step."""

    def __init__(self, value: torch.Tensor):
        self.value = value


Handler = Callable[["Converter", torch.fx.Node, tuple, dict], Any]
HANDLERS: dict[str, Handler] = {}


def handles(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            assert name not in HANDLERS, name
            HANDLERS[name] = fn
        return fn

    return register


def op_name(node: torch.fx.Node) -> str:
    target = node.target
    if isinstance(target, torch._ops.OpOverload | torch._ops.OpOverloadPacket):
        return str(target)
    return getattr(target, "__name__", str(target))


class Converter:
    def __init__(self, gm: torch.fx.GraphModule, func_name: str, arg_names: Sequence[str], result_names: Sequence[str],
                 verify_ops: bool = True):
        self.gm = gm
        self.verify_ops = verify_ops
        self.func_name = func_name
        self.arg_names = list(arg_names)
        self.result_names = list(result_names)
        self.block: Block | None = None
        self.env: dict[torch.fx.Node, Any] = {}
        self.node: torch.fx.Node | None = None
        self._scalars: dict[tuple[float, Attribute], SSAValue] = {}

    # ------------------------------------------------------------ diagnostics

    def location(self, node: torch.fx.Node | None = None) -> SourceLocation | None:
        node = node or self.node
        return location_from_stack_trace(node.meta.get("stack_trace")) if node is not None else None

    def unsupported(self, reason: str = "") -> UnsupportedOpError:
        assert self.node is not None
        return UnsupportedOpError(op_name(self.node), self.location(), reason)

    # ---------------------------------------------------------------- builders

    def emit(self, op: Operation) -> Operation:
        assert self.block is not None
        self.block.add_op(op)
        if not self.verify_ops:
            return op
        try:
            op.verify()
        except VerifyException as exc:
            where = self.location()
            raise CaptureError(
                f"{where or '<unknown source line>'}: internal error: converting {op_name(self.node)} "
                f"produced invalid IR: {exc}"
            ) from exc
        return op

    def result_val(self, node: torch.fx.Node | None = None):
        node = node or self.node
        val = node.meta.get("val")
        if val is None:
            raise self.unsupported("the traced op has no tensor metadata")
        return val

    def type_of_val(self, val) -> TensorType:
        if not isinstance(val, torch.Tensor):
            raise self.unsupported(f"result {type(val).__name__} is not a tensor")
        if element_type(val.dtype) is None:
            raise self.unsupported(f"dtype {str(val.dtype).replace('torch.', '')} is not supported (tk has f32, bf16, f16; i64/i1 only for indices and constants)")
        return tensor_type(val.shape, val.dtype)

    def out_type(self) -> TensorType:
        return self.type_of_val(self.result_val())

    def out_float_type(self) -> TensorType:
        t = self.out_type()
        if not tk.is_float(t.get_element_type()):
            raise self.unsupported(f"computes on {tk.type_str(t)}; only f32, bf16 and f16 computation is supported")
        return t

    def scalar(self, value: float | int | bool, et: Attribute = F32) -> SSAValue:
        """A rank-0 constant (Python numbers become 0-d f32 fills)."""
        if isinstance(value, complex):
            raise self.unsupported(f"complex constant {value}")
        v = float(value)
        if not math.isfinite(v):
            raise self.unsupported(f"non-finite constant {v} (tk.fill needs a finite value)")
        # Keyed on the sign too: 0.0 == -0.0 in Python, but x + 0.0 and x + (-0.0) differ.
        key = (v, math.copysign(1.0, v), et)
        if key not in self._scalars:
            self._scalars[key] = self.emit(tk.FillOp(v, TensorType(et, []))).result
        return self._scalars[key]

    def fill(self, value, t: TensorType) -> SSAValue:
        if isinstance(value, complex):
            raise self.unsupported(f"complex constant {value}")
        v = float(value)
        if not math.isfinite(v):
            raise self.unsupported(f"non-finite constant {v} (tk.fill needs a finite value)")
        if not tk.is_float(t.get_element_type()) and v != int(v):
            raise self.unsupported(f"non-integral value {v} for {tk.type_str(t)}")
        if not t.get_shape():
            return self.scalar(v, t.get_element_type())
        return self.emit(tk.FillOp(v, t)).result

    def tensor(self, v, what: str = "operand") -> SSAValue:
        """An SSA tensor for a converted argument (materializes constants)."""
        if isinstance(v, SSAValue):
            return v
        if isinstance(v, _Constant):
            return self.constant(v.value)
        if isinstance(v, bool | int | float):
            return self.scalar(v)
        raise self.unsupported(f"{what} {v!r} is not a tensor")

    def float_tensor(self, v, what: str = "operand") -> SSAValue:
        t = self.tensor(v, what)
        if not tk.is_float(tk.element_type_of(t)):
            raise self.unsupported(
                f"{what} is {tk.type_str(t.type)}; computation on integer/bool tensors is not supported"
            )
        return t

    def constant(self, value: torch.Tensor) -> SSAValue:
        if element_type(value.dtype) is None:
            raise self.unsupported(f"tensor constant of dtype {value.dtype} is not supported")
        t = tensor_type(value.shape, value.dtype)
        flat = value.detach().reshape(-1)
        if flat.numel() == 0:
            return self.fill(0.0, t)
        first = flat[0]
        # Uniform means the same bits: 0.0 == -0.0 compares equal but is not the same constant.
        if not bool(((flat == first) & (torch.signbit(flat) == torch.signbit(first))).all()):
            raise self.unsupported(
                "non-uniform tensor constant (torch.tensor([...]) inside the step); tk has only uniform fills: "
                "pass the tensor as an argument instead"
            )
        return self.fill(first.item(), t)

    def cast(self, v: SSAValue, et: Attribute) -> SSAValue:
        if tk.element_type_of(v) == et:
            return v
        return self.emit(tk.CastOp(v, TensorType(et, tk.shape_of(v)))).result

    def reshape(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        shape = tuple(int(d) for d in shape)
        if tk.shape_of(v) == shape:
            return v
        return self.emit(tk.ReshapeOp(v, TensorType(tk.element_type_of(v), shape))).result

    def expand(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        shape = tuple(int(d) for d in shape)
        if tk.shape_of(v) == shape:
            return v
        return self.emit(tk.ExpandOp(v, TensorType(tk.element_type_of(v), shape))).result

    def transpose(self, v: SSAValue, perm: Sequence[int]) -> SSAValue:
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return v
        return self.emit(tk.TransposeOp(v, perm)).result

    def slice(self, v: SSAValue, axis: int, start: int, size: int, step: int) -> SSAValue:
        shape = list(tk.shape_of(v))
        if start == 0 and step == 1 and size == shape[axis]:
            return v
        starts = [0] * len(shape)
        steps = [1] * len(shape)
        starts[axis], steps[axis] = start, step
        shape[axis] = size
        return self.emit(tk.SliceOp(v, starts, steps, TensorType(tk.element_type_of(v), shape))).result

    def binary_operand(self, v, et: Attribute, what: str) -> SSAValue:
        if isinstance(v, SSAValue) and tk.element_type_of(v) == i1:
            return self.cast(v, et)  # a bool mask in arithmetic: 0 / 1, exact
        t = self.float_tensor(v, what)
        if tk.shape_of(t) and tk.element_type_of(t) != et:
            t = self.cast(t, et)
        return t

    def binary(self, cls: type[tk.ElementwiseBinaryOp], a, b, rt: TensorType | None = None) -> SSAValue:
        rt = rt or self.out_float_type()
        et = rt.get_element_type()
        lhs = self.binary_operand(a, et, "lhs")
        rhs = self.binary_operand(b, et, "rhs")
        return self.emit(cls(lhs, rhs, rt)).result

    def dim(self, d: int, rank: int) -> int:
        n = max(rank, 1)
        if not -n <= d < n:
            raise self.unsupported(f"dimension {d} out of range for rank {rank}")
        return d % n if rank > 0 else 0

    # ------------------------------------------------------------------ driver

    def convert(self) -> ModuleOp:
        graph = self.gm.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        arg_types = []
        for node, name in zip(placeholders, self.arg_names, strict=True):
            self.node = node
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor) or element_type(val.dtype) is None:
                dt = getattr(val, "dtype", type(val).__name__)
                raise CaptureError(
                    f"argument {name}: dtype {dt} is not supported (tk has f32, bf16, f16, i64 and bool tensors)"
                )
            arg_types.append(tensor_type(val.shape, val.dtype))
        self.block = Block(arg_types=arg_types)
        for node, arg in zip(placeholders, self.block.args):
            self.env[node] = arg

        results: list[SSAValue] = []
        for node in graph.nodes:
            self.node = node
            if node.op == "placeholder":
                continue
            if node.op == "get_attr":
                self.env[node] = self._get_attr(node)
            elif node.op == "call_function":
                self.env[node] = self._call(node)
            elif node.op == "output":
                (outs,) = node.args
                outs = outs if isinstance(outs, list | tuple) else [outs]
                for o, name in zip(outs, self.result_names, strict=True):
                    v = self.env[o] if isinstance(o, torch.fx.Node) else o
                    if not isinstance(v, SSAValue | _Constant):
                        raise CaptureError(f"result {name} is {v!r}, not a tensor")
                    value = self.tensor(v)
                    want = self.type_of_val(o.meta["val"]) if isinstance(o, torch.fx.Node) and "val" in o.meta else None
                    if want is not None and value.type != want and tk.shape_of(value) == tuple(want.get_shape()):
                        value = self.cast(value, want.get_element_type())  # an f32 count stands in for an int64
                    results.append(value)
            else:
                raise self.unsupported(f"FX node kind {node.op!r}")

        self.node = None
        self.block.add_op(func.ReturnOp(*results))

        def names(ns: Sequence[str]) -> ArrayAttr:
            return ArrayAttr([DictionaryAttr({"tk.name": StringAttr(n)}) for n in ns])

        fn = func.FuncOp(
            self.func_name,
            (arg_types, [r.type for r in results]),
            Region(self.block),
            arg_attrs=names(self.arg_names),
            res_attrs=names(self.result_names),
        )
        return ModuleOp([fn])

    def _get_attr(self, node: torch.fx.Node):
        obj: Any = self.gm
        for part in str(node.target).split("."):
            obj = getattr(obj, part)
        if not isinstance(obj, torch.Tensor):
            raise self.unsupported(f"graph attribute {node.target} is a {type(obj).__name__}")
        return _Constant(obj)

    def _call(self, node: torch.fx.Node):
        if node.target is operator.getitem:
            seq, index = node.args
            return self.env[seq][index]
        name = op_name(node)
        handler = HANDLERS.get(name)
        if handler is None:
            target = node.target
            schema = getattr(target, "_schema", None)
            if schema is not None and schema.is_mutable:
                # functionalize writes mutated inputs back at the end of the graph;
                # point at the op that computed the new value.
                loc = self.location()
                if loc is None:
                    sources = [a for a in node.args if isinstance(a, torch.fx.Node) and a.op != "placeholder"]
                    loc = next((self.location(a) for a in reversed(sources) if self.location(a)), None)
                raise UnsupportedOpError(
                    name,
                    loc,
                    "in-place op left after functionalization (the step mutates one of its inputs); "
                    "return the new value instead",
                )
            raise self.unsupported("no tk lowering for this op")
        args = torch.fx.node.map_arg(node.args, lambda n: self.env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: self.env[n])
        return handler(self, node, tuple(args), dict(kwargs))


def build_module(gm: torch.fx.GraphModule, func_name: str, arg_names, result_names, verify_ops: bool = True) -> ModuleOp:
    """`gm` as a `tk` module. `verify_ops`: verify each op as it is built, so an
    invalid one is reported with its node's source line (the caller verifies
    the whole module either way)."""
    return Converter(gm, func_name, arg_names, result_names, verify_ops).convert()


# =========================================================================
# Handlers. Each takes (converter, node, args, kwargs) with FX nodes replaced
# by converted values, and returns an SSAValue (or a list for multi-result ops).
# =========================================================================


def _arg(args: tuple, kwargs: dict, index: int, name: str, default=None):
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


# ----------------------------------------------------------------- matmul


@handles("aten.mm.default", "aten.matmul.default")
def _mm(cv: Converter, node, args, kwargs):
    a, b = (cv.float_tensor(x, w) for x, w in zip(args[:2], ("lhs", "rhs")))
    if len(tk.shape_of(a)) != 2 or len(tk.shape_of(b)) != 2:
        raise cv.unsupported(
            f"only 2-D matrix products are supported, got {list(tk.shape_of(a))} x {list(tk.shape_of(b))}"
        )
    rt = cv.out_float_type()
    if tk.element_type_of(a) != rt.get_element_type() or tk.element_type_of(b) != rt.get_element_type():
        raise cv.unsupported(f"operands {tk.type_str(a.type)} and {tk.type_str(b.type)} have different dtypes")
    return cv.emit(tk.MatmulOp(a, b, rt)).result


@handles("aten.addmm.default")
def _addmm(cv: Converter, node, args, kwargs):
    bias, a, b = args[:3]
    beta = _arg(args, kwargs, 3, "beta", 1)
    alpha = _arg(args, kwargs, 4, "alpha", 1)
    if beta != 1 or alpha != 1:
        raise cv.unsupported(f"addmm with beta={beta}, alpha={alpha}; only beta = alpha = 1 is supported")
    rt = cv.out_float_type()
    et = rt.get_element_type()
    a, b = cv.float_tensor(a, "mat1"), cv.float_tensor(b, "mat2")
    bias = cv.cast(cv.float_tensor(bias, "bias"), et)
    if tk.element_type_of(a) != et or tk.element_type_of(b) != et:
        raise cv.unsupported(f"operands {tk.type_str(a.type)} and {tk.type_str(b.type)} have different dtypes")
    return cv.emit(tk.AddmmOp(bias, a, b, rt)).result


# ------------------------------------------------------------ elementwise


def _with_alpha(cv: Converter, cls, lhs, scaled, alpha):
    """lhs (op) alpha * scaled: add/sub with `alpha` (rsub swaps its operands)."""
    rt = cv.out_float_type()
    if alpha == 1:
        return cv.binary(cls, lhs, scaled, rt)
    if isinstance(scaled, bool | int | float):
        return cv.binary(cls, lhs, float(scaled) * float(alpha), rt)
    # Fold alpha as a multiply, computed in f32 (PyTorch's opmath type) and
    # rounded once to the result type. PyTorch fuses this into one (possibly
    # FMA) kernel, so the last bit can differ for alpha != 1.
    lhs_t = cv.float_tensor(lhs, "lhs")
    src = cv.float_tensor(scaled, "rhs")
    up = lambda v: cv.cast(v, F32) if tk.shape_of(v) else v  # noqa: E731
    src, lhs_t = up(src), up(lhs_t)
    prod = cv.emit(tk.MulOp(src, cv.scalar(alpha), TensorType(F32, tk.shape_of(src)))).result
    out = cv.emit(cls(lhs_t, prod, TensorType(F32, rt.get_shape()))).result
    return cv.cast(out, rt.get_element_type())


@handles("aten.add.Tensor", "aten.add.Scalar")
def _add(cv, node, args, kwargs):
    return _with_alpha(cv, tk.AddOp, args[0], args[1], _arg(args, kwargs, 2, "alpha", 1))


@handles("aten.sub.Tensor", "aten.sub.Scalar")
def _sub(cv, node, args, kwargs):
    return _with_alpha(cv, tk.SubOp, args[0], args[1], _arg(args, kwargs, 2, "alpha", 1))


@handles("aten.rsub.Tensor", "aten.rsub.Scalar")
def _rsub(cv, node, args, kwargs):
    # rsub(a, b, alpha) = b - alpha * a
    return _with_alpha(cv, tk.SubOp, args[1], args[0], _arg(args, kwargs, 2, "alpha", 1))


@handles("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(cv, node, args, kwargs):
    return cv.binary(tk.MulOp, args[0], args[1])


@handles("prims.div.default")
def _prims_div(cv, node, args, kwargs):
    return cv.binary(tk.DivOp, args[0], args[1])  # true division on floating operands


@handles("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div(cv, node, args, kwargs):
    mode = _arg(args, kwargs, 2, "rounding_mode", None)
    if mode is not None:
        raise cv.unsupported(f"rounding_mode={mode!r}; only true division is supported")
    return cv.binary(tk.DivOp, args[0], args[1])


@handles("aten.maximum.default", "aten.max.other")
def _maximum(cv, node, args, kwargs):
    return cv.binary(tk.MaximumOp, args[0], args[1])


def _neg(cv: Converter, v: SSAValue) -> SSAValue:
    return cv.emit(tk.NegOp(v)).result


def _minimum_of(cv: Converter, a, b, rt: TensorType) -> SSAValue:
    # min(a, b) = -max(-a, -b): exact (negation is exact, NaN propagates).
    et = rt.get_element_type()
    na = _neg(cv, cv.binary_operand(a, et, "lhs"))
    nb = _neg(cv, cv.binary_operand(b, et, "rhs"))
    return _neg(cv, cv.emit(tk.MaximumOp(na, nb, rt)).result)


@handles("aten.minimum.default", "aten.min.other")
def _minimum(cv, node, args, kwargs):
    return _minimum_of(cv, args[0], args[1], cv.out_float_type())


def _clamp_of(cv: Converter, x, lo, hi, rt: TensorType) -> SSAValue:
    """PyTorch's clamp, `std::min(std::max(x, lo), hi)` with the bounds in the
    result's dtype: `m = x < lo ? lo : x`, then `hi < m ? hi : m`. Exact with
    eager on every value, signed zeros included (clamp(-0.0, 0, 1) is -0.0)
    and NaN (a NaN x stays NaN: both comparisons are false)."""
    et = rt.get_element_type()
    v = cv.binary_operand(x, et, "input")
    for bound, is_lo in ((lo, True), (hi, False)):
        if bound is None:
            continue
        b = _as_float_operand(cv, bound, et, "min" if is_lo else "max")
        mask = _cmp(cv, "lt", v, b) if is_lo else _cmp(cv, "lt", b, v)
        v = cv.emit(tk.SelectOp(mask, b, v, _broadcast_type(et, mask, b, v))).result
    return cv.expand(v, rt.get_shape())


@handles("aten.clamp_min.default", "aten.clamp_min.Tensor")
def _clamp_min(cv, node, args, kwargs):
    return _clamp_of(cv, args[0], args[1], None, cv.out_float_type())


@handles("aten.clamp_max.default", "aten.clamp_max.Tensor")
def _clamp_max(cv, node, args, kwargs):
    return _clamp_of(cv, args[0], None, args[1], cv.out_float_type())


@handles("aten.clamp.default", "aten.clamp.Tensor")
def _clamp(cv, node, args, kwargs):
    lo = _arg(args, kwargs, 1, "min", None)
    hi = _arg(args, kwargs, 2, "max", None)
    return _clamp_of(cv, args[0], lo, hi, cv.out_float_type())


def _unary(cls):
    def handler(cv: Converter, node, args, kwargs):
        rt = cv.out_float_type()
        x = cv.float_tensor(args[0], "input")
        if x.type != rt:
            raise cv.unsupported(f"input {tk.type_str(x.type)} and result {tk.type_str(rt)} differ")
        return cv.emit(cls(x)).result

    return handler


handles("aten.neg.default")(_unary(tk.NegOp))
handles("aten.relu.default")(_unary(tk.ReluOp))
handles("aten.exp.default")(_unary(tk.ExpOp))
handles("aten.log.default")(_unary(tk.LogOp))
handles("aten.sqrt.default")(_unary(tk.SqrtOp))


@handles("aten.reciprocal.default")
def _reciprocal(cv, node, args, kwargs):
    return cv.binary(tk.DivOp, 1.0, args[0])


@handles("aten.pow.Tensor_Scalar")
def _pow(cv, node, args, kwargs):
    x, exponent = args[0], args[1]
    if not isinstance(exponent, int | float) or isinstance(exponent, bool):
        raise cv.unsupported(f"exponent {exponent!r} must be a real Python number")
    if not math.isfinite(float(exponent)):
        raise cv.unsupported(f"non-finite exponent {exponent}")
    rt = cv.out_float_type()
    x = cv.float_tensor(x, "input")
    if x.type != rt:
        raise cv.unsupported(f"input {tk.type_str(x.type)} and result {tk.type_str(rt)} differ")
    return cv.emit(tk.PowOp(x, float(exponent))).result


@handles("aten.threshold_backward.default")
def _threshold_backward(cv, node, args, kwargs):
    # threshold_backward(grad, self, threshold) = grad where self > threshold else 0;
    # relu's backward passes relu's output as `self` with threshold 0.
    grad, x, threshold = args[:3]
    if threshold != 0:
        raise cv.unsupported(f"threshold {threshold}; only 0 (the backward of relu) is supported")
    rt = cv.out_float_type()
    g = cv.float_tensor(grad, "grad_output")
    x = cv.float_tensor(x, "self")
    if tk.element_type_of(g) != rt.get_element_type() or tk.element_type_of(x) != rt.get_element_type():
        raise cv.unsupported(f"grad {tk.type_str(g.type)} and self {tk.type_str(x.type)} have different dtypes")
    g = cv.expand(g, rt.get_shape())
    x = cv.expand(x, rt.get_shape())
    return cv.emit(tk.ReluGradOp(g, x)).result


# ------------------------------------------------------------- activations


handles("aten.tanh.default")(_unary(tk.TanhOp))
handles("aten.sigmoid.default")(_unary(tk.SigmoidOp))
handles("aten.silu.default")(_unary(tk.SiluOp))
handles("aten.abs.default")(_unary(tk.AbsOp))
# sgn of a real tensor is its sign (abs's backward is grad * sgn(x)).
handles("aten.sign.default", "aten.sgn.default")(_unary(tk.SignOp))
handles("aten.rsqrt.default")(_unary(tk.RsqrtOp))


def _number(cv: Converter, value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise cv.unsupported(f"{what} {value!r} must be a Python number")
    v = float(value)
    if not math.isfinite(v):
        raise cv.unsupported(f"non-finite {what} {v}")
    return v


def _param_unary(cv: Converter, cls, x, **params) -> SSAValue:
    rt = cv.out_float_type()
    x = cv.float_tensor(x, "input")
    if x.type != rt:
        raise cv.unsupported(f"input {tk.type_str(x.type)} and result {tk.type_str(rt)} differ")
    return cv.emit(cls(x, **params)).result


def _param_grad(cv: Converter, cls, grad, value, **params) -> SSAValue:
    """A backward op (grad, forward value) of one type, both broadcast to the result."""
    rt = cv.out_float_type()
    g = cv.float_tensor(grad, "grad_output")
    v = cv.float_tensor(value, "self")
    et = rt.get_element_type()
    if tk.element_type_of(g) != et or tk.element_type_of(v) != et:
        raise cv.unsupported(f"grad {tk.type_str(g.type)} and self {tk.type_str(v.type)} have different dtypes")
    g = cv.expand(g, rt.get_shape())
    v = cv.expand(v, rt.get_shape())
    return cv.emit(cls(g, v, **params)).result


def _approximate(cv: Converter, args, kwargs, index: int) -> bool:
    mode = _arg(args, kwargs, index, "approximate", "none")
    if mode not in ("none", "tanh"):
        raise cv.unsupported(f"approximate={mode!r}")
    return mode == "tanh"


@handles("aten.gelu.default")
def _gelu(cv, node, args, kwargs):
    return _param_unary(cv, tk.GeluOp, args[0], tanh=_approximate(cv, args, kwargs, 1))


@handles("aten.gelu_backward.default")
def _gelu_backward(cv, node, args, kwargs):
    return _param_grad(cv, tk.GeluGradOp, args[0], args[1], tanh=_approximate(cv, args, kwargs, 2))


@handles("aten.tanh_backward.default")
def _tanh_backward(cv, node, args, kwargs):
    return _param_grad(cv, tk.TanhGradOp, args[0], args[1])


@handles("aten.sigmoid_backward.default")
def _sigmoid_backward(cv, node, args, kwargs):
    return _param_grad(cv, tk.SigmoidGradOp, args[0], args[1])


def _softplus_params(cv, args, kwargs, first: int) -> dict[str, float]:
    return {
        "beta": _number(cv, _arg(args, kwargs, first, "beta", 1), "beta"),
        "threshold": _number(cv, _arg(args, kwargs, first + 1, "threshold", 20), "threshold"),
    }


@handles("aten.softplus.default")
def _softplus(cv, node, args, kwargs):
    return _param_unary(cv, tk.SoftplusOp, args[0], **_softplus_params(cv, args, kwargs, 1))


@handles("aten.softplus_backward.default")
def _softplus_backward(cv, node, args, kwargs):
    return _param_grad(cv, tk.SoftplusGradOp, args[0], args[1], **_softplus_params(cv, args, kwargs, 2))


@handles("aten.leaky_relu.default")
def _leaky_relu(cv, node, args, kwargs):
    slope = _number(cv, _arg(args, kwargs, 1, "negative_slope", 0.01), "negative_slope")
    return _param_unary(cv, tk.LeakyReluOp, args[0], negative_slope=slope)


@handles("aten.leaky_relu_backward.default")
def _leaky_relu_backward(cv, node, args, kwargs):
    slope = _number(cv, _arg(args, kwargs, 2, "negative_slope", 0.01), "negative_slope")
    # self_is_result: the output has the input's sign (for slope >= 0), same formula.
    if _arg(args, kwargs, 3, "self_is_result", False) and slope < 0:
        raise cv.unsupported("in-place leaky_relu with a negative slope has no backward (PyTorch refuses it too)")
    return _param_grad(cv, tk.LeakyReluGradOp, args[0], args[1], negative_slope=slope)


def _elu_params(cv, alpha, scale, input_scale) -> dict[str, float]:
    return {
        "alpha": _number(cv, alpha, "alpha"),
        "scale": _number(cv, scale, "scale"),
        "input_scale": _number(cv, input_scale, "input_scale"),
    }


@handles("aten.elu.default")
def _elu(cv, node, args, kwargs):
    params = _elu_params(
        cv, _arg(args, kwargs, 1, "alpha", 1), _arg(args, kwargs, 2, "scale", 1), _arg(args, kwargs, 3, "input_scale", 1)
    )
    return _param_unary(cv, tk.EluOp, args[0], **params)


@handles("aten.celu.default")
def _celu(cv, node, args, kwargs):
    # PyTorch: celu(x, alpha) = elu(x, alpha, 1, 1 / alpha), 1 / alpha in double.
    alpha = _number(cv, _arg(args, kwargs, 1, "alpha", 1.0), "alpha")
    if alpha == 0:
        raise cv.unsupported("celu with alpha = 0")
    return _param_unary(cv, tk.EluOp, args[0], **_elu_params(cv, alpha, 1.0, 1.0 / alpha))


@handles("aten.elu_backward.default")
def _elu_backward(cv, node, args, kwargs):
    grad, alpha, scale, input_scale, is_result, value = args[:6]
    params = _elu_params(cv, alpha, scale, input_scale)
    if is_result and params["alpha"] < 0:
        raise cv.unsupported("in-place elu with a negative alpha has no backward (PyTorch refuses it too)")
    return _param_grad(cv, tk.EluGradOp, grad, value, is_result=bool(is_result), **params)


@handles("aten.hardtanh.default")
def _hardtanh(cv, node, args, kwargs):
    # PyTorch's hardtanh is clamp(x, min_val, max_val).
    lo = _arg(args, kwargs, 1, "min_val", -1.0)
    hi = _arg(args, kwargs, 2, "max_val", 1.0)
    return _clamp_of(cv, args[0], lo, hi, cv.out_float_type())


@handles("aten.hardtanh_backward.default")
def _hardtanh_backward(cv, node, args, kwargs):
    # grad where min < x < max, else 0; the bounds in x's dtype (a NaN x passes grad).
    grad, x = args[:2]
    lo, hi = _number(cv, args[2], "min_val"), _number(cv, args[3], "max_val")
    rt = cv.out_float_type()
    et = rt.get_element_type()
    g = cv.expand(cv.binary_operand(grad, et, "grad_output"), rt.get_shape())
    x = cv.binary_operand(x, et, "self")
    outside = _logical(cv, "or", _cmp(cv, "le", x, cv.scalar(lo, et)), _cmp(cv, "ge", x, cv.scalar(hi, et)))
    return cv.emit(tk.SelectOp(outside, cv.scalar(0.0, et), g, rt)).result


# ---------------------------------------------------- comparisons and masks

_COMPARISONS = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
_BOOL = TensorType(i1, [])
_FLOAT_DTYPES = tuple(e.torch for e in elements.COMPUTE)


def _torch_dtype(et: Attribute) -> torch.dtype:
    return elements.torch_dtype(et)


def _common_dtype(cv: Converter, a, b) -> torch.dtype:
    """PyTorch's type promotion of two operands (tensors by dtype and rank, Python
    numbers as wrapped scalars): the dtype a comparison computes in."""

    def probe(v):
        if isinstance(v, SSAValue):
            return torch.empty([1] * len(tk.shape_of(v)), dtype=_torch_dtype(tk.element_type_of(v)), device="meta")
        if isinstance(v, _Constant):
            return torch.empty([1] * v.value.dim(), dtype=v.value.dtype, device="meta")
        return v

    pa, pb = probe(a), probe(b)
    if not isinstance(pa, torch.Tensor):
        pa, pb = pb, pa
    return torch.result_type(pa, pb)


def _as_float_operand(cv: Converter, v, et: Attribute, what: str) -> SSAValue:
    """`v` as a tensor of element type `et` (a float type): Python numbers become
    fills of `et` (PyTorch rounds a wrapped scalar to the computation's dtype;
    +-inf and NaN are fine here: they are compared or selected, never computed
    with), bools (0/1) and floats are cast."""
    if isinstance(v, bool | int | float):
        if not math.isfinite(float(v)):
            return cv.emit(tk.FillOp(float(v), TensorType(et, []))).result
        return cv.scalar(v, et)
    t = cv.tensor(v, what)
    src = tk.element_type_of(t)
    if src == et:
        return t
    return cv.cast(t, et)  # float, bool (0/1) or int64 (PyTorch's promotion converts it)


def _as_int_operand(cv: Converter, v, what: str) -> SSAValue:
    """`v` as an i64 tensor: Python integers become i64 fills, bools 0/1."""
    if isinstance(v, bool | int):
        return cv.fill(int(v), TensorType(i64, []))
    t = cv.tensor(v, what)
    et = tk.element_type_of(t)
    if et == i64:
        return t
    if et == i1:
        return cv.cast(t, i64)
    raise cv.unsupported(f"{what} is {tk.type_str(t.type)} in an integer comparison")


def _cmp(cv: Converter, predicate: str, a, b) -> SSAValue:
    dtype = _common_dtype(cv, a, b)
    if dtype == torch.bool:
        dtype = torch.float32  # 0/1 compare exactly as floats
    if dtype == torch.int64:  # labels, class indices
        lhs, rhs = _as_int_operand(cv, a, "lhs"), _as_int_operand(cv, b, "rhs")
        return cv.emit(tk.CmpOp(predicate, lhs, rhs)).result
    if dtype not in _FLOAT_DTYPES:
        raise cv.unsupported(
            f"comparison of {str(dtype).replace('torch.', '')} values; only floating-point, int64 and bool "
            "comparisons are supported"
        )
    et = element_type(dtype)
    lhs = _as_float_operand(cv, a, et, "lhs")
    rhs = _as_float_operand(cv, b, et, "rhs")
    return cv.emit(tk.CmpOp(predicate, lhs, rhs)).result


def _comparison(predicate: str):
    def handler(cv: Converter, node, args, kwargs):
        out = _cmp(cv, predicate, args[0], args[1])
        return cv.expand(out, cv.out_type().get_shape())

    return handler


for _name, _pred in _COMPARISONS.items():
    handles(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar")(_comparison(_pred))


def _mask(cv: Converter, v, what: str) -> SSAValue:
    """A bool tensor; any other dtype is `v != 0` (PyTorch's truth value)."""
    if isinstance(v, bool):
        return cv.fill(1.0 if v else 0.0, _BOOL)
    t = cv.tensor(v, what)
    if tk.element_type_of(t) == i1:
        return t
    if not tk.is_float(tk.element_type_of(t)):
        raise cv.unsupported(f"{what} is {tk.type_str(t.type)}; integer masks are not supported")
    return cv.emit(tk.CmpOp("ne", t, cv.scalar(0.0, tk.element_type_of(t)))).result


def _broadcast_type(et: Attribute, *values: SSAValue) -> TensorType:
    shape = tk.broadcast_shapes(*(tk.shape_of(v) for v in values))
    assert shape is not None
    return TensorType(et, list(shape))


def _logical(cv: Converter, kind: str, a: SSAValue, b: SSAValue | None = None) -> SSAValue:
    """Logical ops on i1 masks, as selects: a and b = a ? b : false, a or b =
    a ? true : b, a xor b = a ? not b : b, not a = a ? false : true."""
    true, false = cv.fill(1, _BOOL), cv.fill(0, _BOOL)
    if kind == "not":
        return cv.emit(tk.SelectOp(a, false, true, _broadcast_type(i1, a))).result
    assert b is not None
    rt = _broadcast_type(i1, a, b)
    if kind == "and":
        return cv.emit(tk.SelectOp(a, cv.expand(b, rt.get_shape()), false, rt)).result
    if kind == "or":
        return cv.emit(tk.SelectOp(a, true, cv.expand(b, rt.get_shape()), rt)).result
    not_b = _logical(cv, "not", b)
    return cv.emit(tk.SelectOp(a, not_b, b, rt)).result


def _logical_handler(kind: str):
    def handler(cv: Converter, node, args, kwargs):
        if kind != "not" and cv.out_type().get_element_type() != i1:
            raise cv.unsupported(f"logical_{kind} into {tk.type_str(cv.out_type())}; only a bool result is supported")
        a = _mask(cv, args[0], "input")
        b = _mask(cv, args[1], "other") if kind != "not" else None
        out = _logical(cv, kind, a, b)
        rt = cv.out_type()
        if rt.get_element_type() != i1:  # logical_not(x, out=float): 0/1 in that dtype
            out = cv.cast(out, rt.get_element_type())
        return cv.expand(out, rt.get_shape())

    return handler


handles("aten.logical_and.default")(_logical_handler("and"))
handles("aten.logical_or.default")(_logical_handler("or"))
handles("aten.logical_xor.default")(_logical_handler("xor"))
handles("aten.logical_not.default")(_logical_handler("not"))


def _bitwise_handler(kind: str):
    logical = _logical_handler(kind)

    def handler(cv: Converter, node, args, kwargs):
        if cv.out_type().get_element_type() != i1:
            raise cv.unsupported("bitwise ops on integer tensors are not supported (only on bool masks)")
        return logical(cv, node, args, kwargs)

    return handler


handles("aten.bitwise_and.Tensor")(_bitwise_handler("and"))
handles("aten.bitwise_or.Tensor")(_bitwise_handler("or"))
handles("aten.bitwise_xor.Tensor")(_bitwise_handler("xor"))
handles("aten.bitwise_not.default")(_bitwise_handler("not"))


def _where(cv: Converter, cond, a, b) -> SSAValue:
    rt = cv.out_type()
    et = rt.get_element_type()
    if not (tk.is_float(et) or et in (i1, i64)):
        raise cv.unsupported(f"where on {tk.type_str(rt)}; only floating-point, int64 and bool values are supported")
    c = _mask(cv, cond, "condition")
    if et == i1:
        x, y = _mask(cv, a, "self"), _mask(cv, b, "other")
    elif et == i64:
        x, y = _as_int_operand(cv, a, "self"), _as_int_operand(cv, b, "other")
    else:
        x, y = _as_float_operand(cv, a, et, "self"), _as_float_operand(cv, b, et, "other")
    return cv.emit(tk.SelectOp(c, x, y, rt)).result


@handles("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where_handler(cv, node, args, kwargs):
    return _where(cv, args[0], args[1], args[2])


@handles("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(cv, node, args, kwargs):
    x, mask, value = args[:3]
    if isinstance(value, SSAValue | _Constant) and tk.shape_of(cv.tensor(value)):
        raise cv.unsupported("masked_fill value must be a number or a 0-d tensor")
    return _where(cv, mask, value, x)


# ------------------------------------------------- gather, scatter, embedding
#
# Indexing with an integer tensor, as comparisons with a tk.iota of the
# indexed axis: `x[..., index[..., j]]` picks, along a new axis of the indexed
# size, the one element whose class number equals the index. Every value is
# selected, never multiplied (a NaN or inf elsewhere in the row stays there),
# and reductions over the one-hot axis are exact (a max over one value and
# -inf's; a sum of one value and zeros), so the results are eager's. Indices
# are compared as integers (exact); in the kernel they are f32 values, exact
# below 2**24 (tk-legalize-masks).


def _index_operand(cv: Converter, v, what: str) -> SSAValue:
    t = cv.tensor(v, what)
    if tk.element_type_of(t) != i64:
        raise cv.unsupported(f"{what} is {tk.type_str(t.type)}; indices must be int64")
    return t


def _move_last(cv: Converter, v: SSAValue, axis: int) -> SSAValue:
    rank = len(tk.shape_of(v))
    perm = [a for a in range(rank) if a != axis] + [axis]
    return cv.transpose(v, perm)


def _move_back(cv: Converter, v: SSAValue, axis: int) -> SSAValue:
    rank = len(tk.shape_of(v))
    perm = [a for a in range(rank) if a != axis] + [axis]
    inverse = [perm.index(a) for a in range(rank)]
    return cv.transpose(v, inverse)


def _one_hot(cv: Converter, index: SSAValue, classes: int) -> SSAValue:
    """i1 tensor of shape index.shape + [classes]: index[...] == c."""
    shape = tk.shape_of(index)
    col = cv.reshape(index, [*shape, 1])
    iota = cv.emit(tk.IotaOp(len(shape), TensorType(i64, [1] * len(shape) + [classes]))).result
    return cv.emit(tk.CmpOp("eq", col, iota)).result


def _gather_last(cv: Converter, x: SSAValue, index: SSAValue) -> SSAValue:
    """out[..., j] = x[..., index[..., j]] with x's other axes sliced to index's."""
    xs, ishape = tk.shape_of(x), tk.shape_of(index)
    for axis in range(len(xs) - 1):
        if ishape[axis] > xs[axis]:
            raise cv.unsupported(f"gather index shape {list(ishape)} exceeds the input's {list(xs)} on axis {axis}")
        x = cv.slice(x, axis, 0, ishape[axis], 1)
    et = tk.element_type_of(x)
    classes = xs[-1]
    hot = _one_hot(cv, index, classes)  # [..., K, C]
    rows = cv.reshape(x, [*ishape[:-1], 1, classes])
    full = TensorType(et, [*ishape, classes])
    picked = cv.emit(tk.SelectOp(hot, rows, cv.emit(tk.FillOp(float("-inf"), TensorType(et, []))).result, full)).result
    return cv.emit(tk.MaxOp(picked, [len(ishape)], TensorType(et, list(ishape)))).result


@handles("aten.gather.default")
def _gather(cv, node, args, kwargs):
    x = cv.float_tensor(args[0], "input")
    rank = len(tk.shape_of(x))
    axis = cv.dim(args[1], rank)
    index = _index_operand(cv, args[2], "index")
    if len(tk.shape_of(index)) != rank or rank == 0:
        raise cv.unsupported(f"gather of a rank-{rank} input by a rank-{len(tk.shape_of(index))} index")
    out = _gather_last(cv, _move_last(cv, x, axis), _move_last(cv, index, axis))
    return _move_back(cv, out, axis)


def _scatter_mask(cv: Converter, base_shape, index: SSAValue, axis: int) -> SSAValue:
    """i1 [..., C] (axis moved last): whether some index[..., j] names class c."""
    ishape = tk.shape_of(index)
    for a, (b, i) in enumerate(zip(base_shape, ishape)):
        if a != axis and b != i:
            raise cv.unsupported(f"scatter with index shape {list(ishape)} and input shape {list(base_shape)}")
    classes = base_shape[axis]
    hot = _one_hot(cv, _move_last(cv, index, axis), classes)  # [..., K, C]
    k = ishape[axis]
    rest = [d for a, d in enumerate(base_shape) if a != axis]
    if k == 1:
        return cv.reshape(hot, [*rest, classes])
    as_float = cv.cast(hot, F32)
    anyhot = cv.emit(tk.MaxOp(as_float, [len(rest)], TensorType(F32, [*rest, classes]))).result
    return cv.emit(tk.CmpOp("ne", anyhot, cv.scalar(0.0))).result


@handles("aten.scatter.value")
def _scatter_value(cv, node, args, kwargs):
    base = cv.float_tensor(args[0], "input")
    shape = tk.shape_of(base)
    axis = cv.dim(args[1], len(shape))
    index = _index_operand(cv, args[2], "index")
    et = tk.element_type_of(base)
    mask = _scatter_mask(cv, shape, index, axis)
    value = _as_float_operand(cv, args[3], et, "value")
    moved = _move_last(cv, base, axis)
    out = cv.emit(tk.SelectOp(mask, value, moved, moved.type)).result
    return _move_back(cv, out, axis)


@handles("aten.scatter_add.default")
def _scatter_add(cv, node, args, kwargs):
    # out[..., c] = base[..., c] + sum_j (index[..., j] == c ? src[..., j] : 0)
    base = cv.float_tensor(args[0], "input")
    shape = tk.shape_of(base)
    axis = cv.dim(args[1], len(shape))
    index = _index_operand(cv, args[2], "index")
    src = cv.float_tensor(args[3], "src")
    if tk.shape_of(src) != tk.shape_of(index) or tk.element_type_of(src) != tk.element_type_of(base):
        raise cv.unsupported(f"scatter_add of {tk.type_str(src.type)} by {tk.type_str(index.type)}")
    _scatter_mask(cv, shape, index, axis)  # checks the shapes
    et = tk.element_type_of(base)
    classes = shape[axis]
    ishape = tk.shape_of(_move_last(cv, index, axis))
    hot = _one_hot(cv, _move_last(cv, index, axis), classes)  # [..., K, C]
    vals = cv.reshape(_move_last(cv, src, axis), [*ishape, 1])
    full = TensorType(et, [*ishape, classes])
    parts = cv.emit(tk.SelectOp(hot, vals, cv.scalar(0.0, et), full)).result
    rest = list(ishape[:-1])
    total = cv.emit(tk.SumOp(parts, [len(rest)], TensorType(et, [*rest, classes]))).result
    moved = _move_last(cv, base, axis)
    out = cv.emit(tk.AddOp(moved, total, moved.type)).result
    return _move_back(cv, out, axis)


@handles("aten.embedding.default")
def _embedding(cv, node, args, kwargs):
    # weight[indices]: out[..., d] = max_v (indices[...] == v ? weight[v, d] : -inf)
    weight = cv.float_tensor(args[0], "weight")
    index = _index_operand(cv, args[1], "indices")
    if len(tk.shape_of(weight)) != 2:
        raise cv.unsupported("embedding of a weight that is not 2-D")
    v, d = tk.shape_of(weight)
    ishape = tk.shape_of(index)
    et = tk.element_type_of(weight)
    hot = cv.reshape(_one_hot(cv, index, v), [*ishape, v, 1])
    full = TensorType(et, [*ishape, v, d])
    picked = cv.emit(tk.SelectOp(hot, weight, cv.emit(tk.FillOp(float("-inf"), TensorType(et, []))).result, full)).result
    return cv.emit(tk.MaxOp(picked, [len(ishape)], TensorType(et, [*ishape, d]))).result


@handles("aten.embedding_dense_backward.default")
def _embedding_backward(cv, node, args, kwargs):
    # A deterministic scatter-add: grad_weight[v, d] = sum_n (indices[n] == v ? grad[n, d] : 0),
    # the rows of padding_idx zero; scale_grad_by_freq is refused.
    grad, indices, num_weights, padding_idx, scale = args[:5]
    if scale:
        raise cv.unsupported("embedding with scale_grad_by_freq=True")
    g = cv.float_tensor(grad, "grad_output")
    index = _index_operand(cv, indices, "indices")
    n = math.prod(tk.shape_of(index))
    d = tk.shape_of(g)[-1]
    et = tk.element_type_of(g)
    flat_i = cv.reshape(index, [n])
    flat_g = cv.reshape(g, [n, 1, d])
    hot = cv.reshape(_one_hot(cv, flat_i, num_weights), [n, num_weights, 1])
    parts = cv.emit(tk.SelectOp(hot, flat_g, cv.scalar(0.0, et), TensorType(et, [n, num_weights, d]))).result
    out = cv.emit(tk.SumOp(parts, [0], TensorType(et, [num_weights, d]))).result
    if padding_idx is not None and padding_idx >= 0:
        row = cv.emit(tk.IotaOp(0, TensorType(i64, [num_weights, 1]))).result
        pad = cv.emit(tk.CmpOp("eq", row, cv.fill(int(padding_idx), TensorType(i64, [])))).result
        out = cv.emit(tk.SelectOp(pad, cv.scalar(0.0, et), out, out.type)).result
    return out


@handles("aten.index_select.default")
def _index_select(cv, node, args, kwargs):
    x = cv.float_tensor(args[0], "input")
    rank = len(tk.shape_of(x))
    axis = cv.dim(args[1], rank)
    index = _index_operand(cv, args[2], "index")
    if len(tk.shape_of(index)) != 1:
        raise cv.unsupported("index_select with an index that is not 1-D")
    # Move the axis first: out[j, ...] = max_c (index[j] == c ? x[c, ...] : -inf)
    perm = [axis] + [a for a in range(rank) if a != axis]
    xt = cv.transpose(x, perm)
    rest = list(tk.shape_of(xt)[1:])
    classes = tk.shape_of(xt)[0]
    k = tk.shape_of(index)[0]
    et = tk.element_type_of(x)
    hot = cv.reshape(_one_hot(cv, index, classes), [k, classes] + [1] * len(rest))
    full = TensorType(et, [k, classes, *rest])
    picked = cv.emit(tk.SelectOp(hot, xt, cv.emit(tk.FillOp(float("-inf"), TensorType(et, []))).result, full)).result
    out = cv.emit(tk.MaxOp(picked, [1], TensorType(et, [k, *rest]))).result
    return cv.transpose(out, [perm.index(a) for a in range(rank)])


@handles("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(cv, node, args, kwargs):
    # 0, 1, ..., n-1 (a tk.iota); other starts and steps would need integer arithmetic.
    rt = cv.out_type()
    start, step = (args[0], args[2] if len(args) > 2 else kwargs.get("step", 1)) if len(args) > 1 else (0, 1)
    if start != 0 or step != 1:
        raise cv.unsupported(f"arange with start {start} and step {step}; only arange(n) (or start 0, step 1)")
    if len(rt.get_shape()) != 1 or rt.get_shape()[0] == 0:
        raise cv.unsupported("an empty arange")
    return cv.emit(tk.IotaOp(0, rt)).result


@handles("aten.index_add.default")
def _index_add(cv, node, args, kwargs):
    # out[c, ...] = base[c, ...] + alpha * sum_j (index[j] == c ? src[j, ...] : 0), `dim` moved first
    # (index_select's backward: a deterministic scatter-add).
    base = cv.float_tensor(args[0], "input")
    rank = len(tk.shape_of(base))
    axis = cv.dim(args[1], rank)
    index = _index_operand(cv, args[2], "index")
    src = cv.float_tensor(args[3], "source")
    alpha = _arg(args, kwargs, 4, "alpha", 1)
    if len(tk.shape_of(index)) != 1 or tk.element_type_of(src) != tk.element_type_of(base):
        raise cv.unsupported(f"index_add of {tk.type_str(src.type)} into {tk.type_str(base.type)} by a non-1-D index")
    perm = [axis] + [a for a in range(rank) if a != axis]
    bt, st = cv.transpose(base, perm), cv.transpose(src, perm)
    classes, rest = tk.shape_of(bt)[0], list(tk.shape_of(bt)[1:])
    if list(tk.shape_of(st)[1:]) != rest:
        raise cv.unsupported(f"index_add of {tk.type_str(src.type)} into {tk.type_str(base.type)}")
    k = tk.shape_of(index)[0]
    et = tk.element_type_of(base)
    hot = cv.reshape(_one_hot(cv, index, classes), [k, classes] + [1] * len(rest))
    vals = cv.reshape(st, [k, 1, *rest])
    parts = cv.emit(tk.SelectOp(hot, vals, cv.scalar(0.0, et), TensorType(et, [k, classes, *rest]))).result
    total = cv.emit(tk.SumOp(parts, [0], bt.type)).result
    if alpha != 1:
        total = cv.emit(tk.MulOp(total, cv.scalar(float(alpha)), bt.type)).result
    out = cv.emit(tk.AddOp(bt, total, bt.type)).result
    return cv.transpose(out, [perm.index(a) for a in range(rank)])


# -------------------------------------------------------------- reductions


def _axes(cv: Converter, dims, rank: int) -> list[int]:
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    dims = list(dims)
    if not dims:
        return list(range(rank))
    axes = sorted({cv.dim(d, rank) for d in dims})
    return axes if rank > 0 else []


def _reduce(cv: Converter, cls, x, dims, keepdim: bool, dtype=None, rt: TensorType | None = None) -> SSAValue:
    if cls is tk.SumOp and isinstance(x, SSAValue) and tk.element_type_of(x) == i1 and dtype is None:
        # A count of true elements (PyTorch: an int64). Counted in f32 (exact below
        # 2**24 elements) and kept as an f32 stand-in: its readers convert it to
        # their float type as they would the int64; a returned count is cast back.
        x = cv.cast(x, F32)
        out_shape = cv.out_type().get_shape()
        rt = TensorType(F32, out_shape)
        if math.prod(tk.shape_of(x)) >= 2**24:
            raise cv.unsupported("a count over 2**24 or more bool elements (counted exactly only below that)")
    x = cv.float_tensor(x, "input")
    if dtype is not None:
        et = element_type(dtype)
        if et is None or not tk.is_float(et):
            raise cv.unsupported(f"reduction to dtype {dtype}")
        x = cv.cast(x, et)
    rt = rt or cv.out_float_type()
    rank = len(tk.shape_of(x))
    axes = _axes(cv, dims, rank)
    if not axes:  # a 0-d input: the reduction is the identity
        return cv.reshape(x, rt.get_shape())
    if tk.element_type_of(x) != rt.get_element_type():
        raise cv.unsupported(f"input {tk.type_str(x.type)} and result {tk.type_str(rt)} differ in dtype")
    return cv.emit(cls(x, axes, rt, bool(keepdim))).result


def _sum_and_mean(cls: type[tk.ReductionOp], over_all: str, over_dims: str) -> None:
    """Handlers of `aten.<op>.default` (every axis) and `aten.<op>.<dims>` (some)."""

    @handles(over_all)
    def _all(cv, node, args, kwargs):
        return _reduce(cv, cls, args[0], None, False, kwargs.get("dtype"))

    @handles(over_dims)
    def _dims(cv, node, args, kwargs):
        return _reduce(
            cv, cls, args[0], _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False), kwargs.get("dtype")
        )


_sum_and_mean(tk.SumOp, "aten.sum.default", "aten.sum.dim_IntList")
_sum_and_mean(tk.MeanOp, "aten.mean.default", "aten.mean.dim")


@handles("prims.sum.default")
def _prims_sum(cv, node, args, kwargs):
    dtype = kwargs.get("output_dtype")
    return _reduce(cv, tk.SumOp, args[0], _arg(args, kwargs, 1, "dims"), False, dtype)


@handles("prims.var.default")
def _prims_var(cv, node, args, kwargs):
    # var(x, dims, correction) = sum((x - mean(x, dims))^2, dims) / (n - correction),
    # as PyTorch's decomposition of var/std/var_mean (the mean kept for the broadcast).
    x = cv.float_tensor(args[0], "input")
    rt = cv.out_float_type()
    et = tk.element_type_of(x)
    if et != rt.get_element_type():
        raise cv.unsupported(f"input {tk.type_str(x.type)} and result {tk.type_str(rt)} differ in dtype")
    shape = tk.shape_of(x)
    axes = _axes(cv, _arg(args, kwargs, 1, "dims"), len(shape))
    correction = _arg(args, kwargs, 2, "correction", 1)
    correction = 1.0 if correction is None else float(correction)
    n = math.prod(shape[a] for a in axes)
    kept = TensorType(et, [1 if i in axes else d for i, d in enumerate(shape)])
    mean = cv.emit(tk.MeanOp(x, axes, kept, keepdim=True)).result
    dev = cv.emit(tk.SubOp(x, mean, x.type)).result
    sq = cv.emit(tk.MulOp(dev, dev, x.type)).result
    total = cv.emit(tk.SumOp(sq, axes, rt)).result
    return cv.emit(tk.DivOp(total, cv.scalar(max(0.0, n - correction)), rt)).result


@handles("aten.amax.default", "aten.max.default")
def _amax(cv, node, args, kwargs):
    return _reduce(cv, tk.MaxOp, args[0], _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False))


@handles("aten.amin.default", "aten.min.default")
def _amin(cv, node, args, kwargs):
    x = _neg(cv, cv.float_tensor(args[0], "input"))
    return _neg(cv, _reduce(cv, tk.MaxOp, x, _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False)))


def _argmax_of(cv: Converter, x: SSAValue, dim, keepdim: bool, rt: TensorType) -> SSAValue:
    shape = tk.shape_of(x)
    if not shape:
        return cv.fill(0, rt)
    if dim is None:  # over the flattened tensor
        flat = cv.reshape(x, [numel(shape)])
        out = cv.emit(tk.ArgmaxOp(flat, [0], TensorType(i64, []))).result
        return cv.reshape(out, rt.get_shape())
    axis = cv.dim(dim, len(shape))
    return cv.emit(tk.ArgmaxOp(x, [axis], rt, bool(keepdim))).result


@handles("aten.argmax.default")
def _argmax(cv, node, args, kwargs):
    x = cv.float_tensor(args[0], "input")
    return _argmax_of(cv, x, _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False), cv.out_type())


@handles("aten.argmin.default")
def _argmin(cv, node, args, kwargs):
    x = _neg(cv, cv.float_tensor(args[0], "input"))
    return _argmax_of(cv, x, _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False), cv.out_type())


@handles("aten.max.dim")
def _max_dim(cv, node, args, kwargs):
    values_val, indices_val = cv.result_val()
    x = cv.float_tensor(args[0], "input")
    dim, keepdim = args[1], _arg(args, kwargs, 2, "keepdim", False)
    values = _reduce(cv, tk.MaxOp, x, [dim], keepdim, rt=cv.type_of_val(values_val))
    indices = _argmax_of(cv, x, dim, keepdim, cv.type_of_val(indices_val))
    return [values, indices]


@handles("aten.min.dim")
def _min_dim(cv, node, args, kwargs):
    values_val, indices_val = cv.result_val()
    x = _neg(cv, cv.float_tensor(args[0], "input"))
    dim, keepdim = args[1], _arg(args, kwargs, 2, "keepdim", False)
    values = _neg(cv, _reduce(cv, tk.MaxOp, x, [dim], keepdim, rt=cv.type_of_val(values_val)))
    indices = _argmax_of(cv, x, dim, keepdim, cv.type_of_val(indices_val))
    return [values, indices]


# ------------------------------------------------------------------ casts


def _check_memory_format(cv: Converter, kwargs: dict) -> None:
    mf = kwargs.get("memory_format")
    if mf not in _DEFAULT_MEMORY_FORMATS:
        raise cv.unsupported(f"memory_format={mf}; only the default (contiguous) layout is supported")


@handles(
    "aten._to_copy.default",
    "aten.to.dtype",
    "aten.to.dtype_layout",
    "aten.to.device",
    "aten.to.other",
    "prims.convert_element_type.default",
    "aten.type_as.default",
)
def _to_copy(cv, node, args, kwargs):
    _check_memory_format(cv, kwargs)
    x = cv.tensor(args[0], "input")
    rt = cv.out_type()
    et = rt.get_element_type()
    src = tk.element_type_of(x)
    if src == et:
        return x
    if src in (i1, i64) and tk.is_float(et):
        return cv.cast(x, et)  # bool -> 0.0 / 1.0; int64 -> nearest float (PyTorch's conversion)
    if src == i1 and et == i64:
        return cv.cast(x, et)
    if tk.is_float(src) and et == i1:
        return _mask(cv, x, "input")  # x != 0 (NaN is true)
    if not tk.is_float(src) or not tk.is_float(et):
        raise cv.unsupported(
            f"cast {tk.type_str(x.type)} -> {tk.type_str(rt)}; only casts among f32, bf16, f16 and bool are supported"
        )
    return cv.cast(x, et)


# ------------------------------------------------------------------ fills


def _fill_handler(value_of: Callable[[tuple, dict], Any], memory_format: bool = False):
    def handler(cv: Converter, node, args, kwargs):
        if memory_format:
            _check_memory_format(cv, kwargs)
        value = value_of(args, kwargs)
        if isinstance(value, SSAValue | _Constant):
            # fill.Tensor: a 0-d tensor value broadcast to the shape.
            rt = cv.out_type()
            v = cv.tensor(value)
            if tk.shape_of(v):
                raise cv.unsupported("fill value must be a 0-d tensor")
            if tk.element_type_of(v) != rt.get_element_type():
                if not (tk.is_float(tk.element_type_of(v)) and tk.is_float(rt.get_element_type())):
                    raise cv.unsupported(f"fill of {tk.type_str(rt)} from {tk.type_str(v.type)}")
                v = cv.cast(v, rt.get_element_type())
            return cv.expand(v, rt.get_shape())
        return cv.fill(value, cv.out_type())

    return handler


handles("aten.zeros.default", "aten.zeros_like.default", "aten.new_zeros.default", "aten.zero.default")(
    _fill_handler(lambda a, k: 0, memory_format=True)
)
handles("aten.ones.default", "aten.ones_like.default", "aten.new_ones.default")(
    _fill_handler(lambda a, k: 1, memory_format=True)
)
# Uninitialized memory: any value is a valid refinement; zeros keep runs deterministic.
handles(
    "aten.empty.memory_format",
    "aten.empty_like.default",
    "aten.new_empty.default",
    "aten.empty_strided.default",
    "aten.new_empty_strided.default",
)(_fill_handler(lambda a, k: 0, memory_format=True))
handles("aten.full.default", "aten.full_like.default")(
    _fill_handler(lambda a, k: _arg(a, k, 1, "fill_value"), memory_format=True)
)
handles("aten.new_full.default")(_fill_handler(lambda a, k: _arg(a, k, 2, "fill_value"), memory_format=True))
handles("aten.scalar_tensor.default")(_fill_handler(lambda a, k: a[0]))
handles("aten.fill.Scalar", "aten.fill.Tensor")(_fill_handler(lambda a, k: a[1]))


@handles("aten.lift_fresh_copy.default", "aten.lift_fresh.default")
def _lift_fresh(cv, node, args, kwargs):
    return cv.tensor(args[0], "constant")


# ------------------------------------------------------------------ views


@handles(
    "aten.view.default",
    "aten.view_copy.default",
    "aten._unsafe_view.default",
    "aten.reshape.default",
    "aten._reshape_alias.default",
    "aten._reshape_alias_copy.default",
    "aten.unsqueeze.default",
    "aten.unsqueeze_copy.default",
    "aten.squeeze.default",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.squeeze_copy.default",
    "aten.squeeze_copy.dim",
    "aten.squeeze_copy.dims",
    "aten.flatten.using_ints",
    "aten.unflatten.int",
)
def _reshape(cv, node, args, kwargs):
    x = cv.tensor(args[0], "input")
    rt = cv.out_type()
    if rt.get_element_type() != tk.element_type_of(x):
        raise cv.unsupported(f"reinterprets {tk.type_str(x.type)} as {tk.type_str(rt)}")
    return cv.reshape(x, rt.get_shape())


@handles(
    "aten.clone.default",
    "aten.detach.default",
    "aten.detach_copy.default",
    "aten.alias.default",
    "aten.alias_copy.default",
    "aten.contiguous.default",
)
def _identity(cv, node, args, kwargs):
    _check_memory_format(cv, kwargs)
    x = cv.tensor(args[0], "input")
    if x.type != cv.out_type():
        raise cv.unsupported(f"identity op changes {tk.type_str(x.type)} to {tk.type_str(cv.out_type())}")
    return x


@handles("aten.expand.default", "aten.expand_copy.default")
def _expand(cv, node, args, kwargs):
    x = cv.tensor(args[0], "input")
    return cv.expand(x, cv.out_type().get_shape())


@handles("prims.broadcast_in_dim.default")
def _broadcast_in_dim(cv, node, args, kwargs):
    # Input axis i becomes result axis broadcast_dimensions[i]; the others are new.
    x = cv.tensor(args[0], "input")
    shape, dims = [int(d) for d in args[1]], [int(d) for d in args[2]]
    src = tk.shape_of(x)
    if len(dims) != len(src) or list(dims) != sorted(dims):
        raise cv.unsupported(f"broadcast_in_dim with dimensions {dims} of a rank-{len(src)} input")
    kept = [1] * len(shape)
    for i, d in enumerate(dims):
        kept[d] = src[i]
    return cv.expand(cv.reshape(x, kept), shape)


@handles("aten.permute.default", "aten.permute_copy.default")
def _permute(cv, node, args, kwargs):
    x = cv.tensor(args[0], "input")
    rank = len(tk.shape_of(x))
    perm = [cv.dim(d, rank) for d in args[1]] if rank else []
    return cv.transpose(x, perm)


@handles("aten.transpose.int", "aten.transpose_copy.int")
def _transpose(cv, node, args, kwargs):
    x = cv.tensor(args[0], "input")
    rank = len(tk.shape_of(x))
    if rank == 0:
        return x
    d0, d1 = cv.dim(args[1], rank), cv.dim(args[2], rank)
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return cv.transpose(x, perm)


@handles("aten.t.default", "aten.t_copy.default")
def _t(cv, node, args, kwargs):
    x = cv.tensor(args[0], "input")
    return cv.transpose(x, [1, 0]) if len(tk.shape_of(x)) == 2 else x


def _norm_start(start, n: int) -> int:
    if start is None:
        return 0
    if start < 0:
        start += n
    return min(max(start, 0), n)


@handles("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(cv, node, args, kwargs):
    x = cv.tensor(args[0], "input")
    shape = tk.shape_of(x)
    if not shape:
        raise cv.unsupported("slice of a 0-d tensor")
    axis = cv.dim(_arg(args, kwargs, 1, "dim", 0), len(shape))
    start = _norm_start(_arg(args, kwargs, 2, "start", None), shape[axis])
    step = _arg(args, kwargs, 4, "step", 1)
    if not isinstance(step, int) or step < 1:
        raise cv.unsupported(f"slice step {step!r}")
    size = cv.out_type().get_shape()[axis]
    return cv.slice(x, axis, start if size else 0, size, step)


def _input_axis_position(cv, args, what: str) -> tuple[SSAValue, int, int]:
    """(input, axis, position) of `op(input, dim, position, ...)`, negatives wrapped."""
    x = cv.tensor(args[0], "input")
    shape = tk.shape_of(x)
    axis = cv.dim(args[1], len(shape))
    position = args[2]
    if not isinstance(position, int):
        raise cv.unsupported(f"{what} with a tensor {'start' if what == 'narrow' else 'index'}")
    return x, axis, position + shape[axis] if position < 0 else position


@handles("aten.narrow.default", "aten.narrow_copy.default")
def _narrow(cv, node, args, kwargs):
    x, axis, start = _input_axis_position(cv, args, "narrow")
    return cv.slice(x, axis, start, int(args[3]), 1)


@handles("aten.select.int", "aten.select_copy.int")
def _select(cv, node, args, kwargs):
    x, axis, index = _input_axis_position(cv, args, "select")
    return cv.reshape(cv.slice(x, axis, index, 1, 1), cv.out_type().get_shape())


def _split_pieces(cv: Converter, x: SSAValue, axis: int, sizes: Sequence[int], squeeze: bool) -> list[SSAValue]:
    vals = cv.result_val()
    out, start = [], 0
    for size, val in zip(sizes, vals, strict=True):
        piece = cv.slice(x, axis, start, size, 1)
        out.append(cv.reshape(piece, cv.type_of_val(val).get_shape()) if squeeze else piece)
        start += size
    return out


@handles(
    "aten.split.Tensor",
    "aten.split_copy.Tensor",
    "aten.split_with_sizes.default",
    "aten.split_with_sizes_copy.default",
)
def _split(cv, node, args, kwargs):
    x = cv.tensor(args[0], "input")
    shape = tk.shape_of(x)
    axis = cv.dim(_arg(args, kwargs, 2, "dim", 0), len(shape))
    sizes = [int(v.shape[axis]) for v in cv.result_val()]
    return _split_pieces(cv, x, axis, sizes, squeeze=False)


# ------------------------------------------------------------ placing a tensor in a larger one
# cat, stack and the backward of slice/select/split put each source element at a
# known position of a larger result. tk has no scatter op: like gather, the
# placement is a one-hot selection folded by a max (exact in every dtype, NaN and
# signed zeros included), then a select of the covered columns. It costs
# O(rows x m x n) element steps AND memory for an m-wide source in an n-wide
# result (tk-fuse does not pull a producer into a reduction, so the selection is
# stored before the max, as for gather and embedding): fine at the widths of
# feature concatenation and slicing, a poor copy at widths of many thousands; a
# tk op that places a tile (a padded view) is the way to a copy's cost.


def _place(cv: Converter, g: SSAValue, axis: int, n: int, start: int, step: int,
           other: SSAValue | None = None) -> SSAValue:
    """g with `axis` widened from m to n: g's k-th slice along it at start + k * step, `other`
    (else +0) elsewhere. No transposes: the result keeps g's layout (bit-identical matmuls
    downstream in the interpreter, which runs each op on its operands as laid out)."""
    shape = list(tk.shape_of(g))
    m, pre, post, et = shape[axis], shape[:axis], shape[axis + 1:], tk.element_type_of(g)
    if max(n, start + m * step) > 2**24:
        raise cv.unsupported(f"placing {m} slices among {n}: positions past 2**24 are not exact in the index arithmetic")
    pos = cv.emit(tk.IotaOp(0, TensorType(F32, [m, 1]))).result  # start + k * step: exact integers in f32
    if step != 1:
        pos = cv.emit(tk.MulOp(pos, cv.scalar(step), pos.type)).result
    if start != 0:
        pos = cv.emit(tk.AddOp(pos, cv.scalar(start), pos.type)).result
    col = cv.emit(tk.IotaOp(1, TensorType(F32, [1, n]))).result
    hot = cv.emit(tk.CmpOp("eq", pos, col)).result  # i1 [m, n]
    neg_inf = cv.emit(tk.FillOp(float("-inf"), TensorType(et, []))).result
    wide = TensorType(et, [*pre, m, n, *post])
    picked = cv.emit(tk.SelectOp(cv.reshape(hot, [m, n] + [1] * len(post)), cv.reshape(g, [*pre, m, 1, *post]),
                                 neg_inf, wide)).result
    out_type = TensorType(et, [*pre, n, *post])
    placed = cv.emit(tk.MaxOp(picked, [len(pre)], out_type)).result
    ones = cv.emit(tk.SelectOp(hot, cv.scalar(1.0), cv.scalar(0.0), TensorType(F32, [m, n]))).result
    hits = cv.emit(tk.MaxOp(ones, [0], TensorType(F32, [n]))).result
    covered = cv.emit(tk.CmpOp("gt", cv.reshape(hits, [n] + [1] * len(post)), cv.scalar(0.5))).result
    return cv.emit(tk.SelectOp(covered, placed, other if other is not None else cv.scalar(0.0, et), out_type)).result


def _placed(cv: Converter, g: SSAValue, sizes: Sequence[int], axis: int, start: int, step: int) -> SSAValue:
    """A tensor of `sizes` holding g's elements at start, start + step, ... along `axis`, zero elsewhere."""
    gs = tk.shape_of(g)
    if len(gs) != len(sizes) or any(a != b for i, (a, b) in enumerate(zip(gs, sizes)) if i != axis):
        raise cv.unsupported(f"placing a {list(gs)} tensor along axis {axis} of {list(sizes)}")
    if gs[axis] == 0:
        return cv.fill(0.0, TensorType(tk.element_type_of(g), list(sizes)))
    return _place(cv, g, axis, sizes[axis], start, step)


@handles("aten.slice_backward.default")
def _slice_backward(cv, node, args, kwargs):
    grad, input_sizes, dim, start, _end, step = args[:6]
    g = cv.float_tensor(grad, "grad_output")
    sizes = [int(s) for s in input_sizes]
    axis = cv.dim(dim, len(sizes))
    if not isinstance(step, int) or step < 1:
        raise cv.unsupported(f"slice step {step!r}")
    return _placed(cv, g, sizes, axis, _norm_start(start, sizes[axis]), step)


@handles("aten.select_backward.default")
def _select_backward(cv, node, args, kwargs):
    grad, input_sizes, dim, index = args[:4]
    g = cv.float_tensor(grad, "grad_output")
    sizes = [int(s) for s in input_sizes]
    axis = cv.dim(dim, len(sizes))
    index = index + sizes[axis] if index < 0 else index
    shape = list(tk.shape_of(g))
    return _placed(cv, cv.reshape(g, shape[:axis] + [1] + shape[axis:]), sizes, axis, index, 1)


def _concatenate(cv: Converter, pieces: list[SSAValue], axis: int) -> SSAValue:
    rt = cv.out_float_type()
    n = rt.get_shape()[axis]
    acc, offset = None, 0
    for t in pieces:
        if tk.element_type_of(t) != rt.get_element_type():
            t = cv.cast(t, rt.get_element_type())
        m = tk.shape_of(t)[axis]
        if m == 0:
            continue
        acc = _place(cv, t, axis, n, offset, 1, acc)
        offset += m
    return acc if acc is not None else cv.fill(0.0, rt)


@handles("aten.cat.default")
def _cat(cv, node, args, kwargs):
    rt = cv.out_float_type()
    rank = len(rt.get_shape())
    axis = cv.dim(_arg(args, kwargs, 1, "dim", 0), rank)
    pieces = []
    for k, v in enumerate(args[0]):
        t = cv.float_tensor(v, f"tensors[{k}]")
        if tk.shape_of(t) == (0,) and rank != 1:
            continue  # torch.cat skips 1-D empty tensors (legacy)
        pieces.append(t)
    return _concatenate(cv, pieces, axis)


@handles("aten.stack.default")
def _stack(cv, node, args, kwargs):
    rt = cv.out_float_type()
    axis = cv.dim(_arg(args, kwargs, 1, "dim", 0), len(rt.get_shape()))
    pieces = []
    for k, v in enumerate(args[0]):
        t = cv.float_tensor(v, f"tensors[{k}]")
        shape = list(tk.shape_of(t))
        pieces.append(cv.reshape(t, shape[:axis] + [1] + shape[axis:]))
    return _concatenate(cv, pieces, axis)


@handles("aten.unbind.int", "aten.unbind_copy.int")
def _unbind(cv, node, args, kwargs):
    x = cv.tensor(args[0], "input")
    shape = tk.shape_of(x)
    axis = cv.dim(_arg(args, kwargs, 1, "dim", 0), len(shape))
    return _split_pieces(cv, x, axis, [1] * shape[axis], squeeze=True)


@handles("aten.copy.default")
def _copy(cv, node, args, kwargs):
    # Functional copy: `src` converted to self's dtype and broadcast to self's shape.
    src = cv.tensor(args[1], "src")
    rt = cv.out_type()
    if tk.element_type_of(src) != rt.get_element_type():
        if not (tk.is_float(tk.element_type_of(src)) and tk.is_float(rt.get_element_type())):
            raise cv.unsupported(f"copy {tk.type_str(src.type)} into {tk.type_str(rt)}")
        src = cv.cast(src, rt.get_element_type())
    return cv.expand(src, rt.get_shape())

