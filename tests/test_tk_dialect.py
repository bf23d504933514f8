"""The `tk` dialect from Python: every op built through its `__init__`, verified,
printed, and parsed back to an equal op (custom and generic form); verifier
errors raised for ill-formed builds; the float literal format; and a guard that
every op keeps its lit round-trip and verifier-error tests.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from trainkernel.dialects import tk
from trainkernel.ir import parse_module, print_module

bf16 = BFloat16Type()
f16 = Float16Type()
LIT_TK = Path(__file__).resolve().parents[1] / "lit_tests" / "tk"


def T(*shape_and_type) -> TensorType:
    """T(4, 8, f32) -> tensor<4x8xf32>; T(f32) -> tensor<f32>."""
    *shape, et = shape_and_type
    return TensorType(et, list(shape))


def module_with(arg_types: Sequence[Attribute], body: Callable[..., list[Operation]]) -> ModuleOp:
    """A module holding `func.func @f(args)` whose body is `body(*args)`."""
    block = Block(arg_types=arg_types)
    ops = body(*block.args)
    block.add_ops(ops)
    block.add_op(func.ReturnOp())
    return ModuleOp([func.FuncOp("f", (list(arg_types), []), Region(block))])


def round_trip(module: ModuleOp) -> ModuleOp:
    """Verify, print (custom and generic), parse back; both parse to equal IR."""
    module.verify()
    text = print_module(module)
    parsed = parse_module(text)
    assert parsed.is_structurally_equivalent(module), text
    assert print_module(parsed) == text
    generic = print_module(module, generic=True)
    from_generic = parse_module(generic)
    assert from_generic.is_structurally_equivalent(module), generic
    assert print_module(from_generic) == text
    return parsed


def tk_ops(module: ModuleOp) -> list[Operation]:
    return [op for op in module.walk() if op.name.startswith("tk.")]


# ----------------------------------------------------------------- builders
# One entry per op: (arg types, body building the op from the args). The
# guard below checks that together they construct every op of the dialect.

BINARY = [tk.AddOp, tk.SubOp, tk.MulOp, tk.DivOp, tk.MaximumOp]
UNARY = [tk.NegOp, tk.ReluOp, tk.ExpOp, tk.LogOp, tk.SqrtOp]
REDUCTIONS = [tk.SumOp, tk.MeanOp, tk.MaxOp]


def _fused_body(a: SSAValue, s: SSAValue) -> list[Operation]:
    block = Block(arg_types=[a.type, s.type])
    x, y = block.args
    mul = tk.MulOp(x, y, a.type)
    relu = tk.ReluOp(mul)
    cast = tk.CastOp(relu, T(4, 8, bf16))
    block.add_ops([mul, relu, cast, tk.YieldOp(relu, cast)])
    return [tk.FusedOp([a, s], [a.type, T(4, 8, bf16)], Region(block))]


BUILDERS: dict[str, tuple[list[Attribute], Callable[..., list[Operation]]]] = {
    "fill": ([], lambda: [tk.FillOp(0.001, T(f32)), tk.FillOp(-2, T(4, 8, bf16)), tk.FillOp(7, T(3, i64))]),
    **{
        f"binary-{op.name}": (
            [T(4, 8, f32), T(8, f32), T(f32)],
            lambda a, b, s, op=op: [op(a, b, T(4, 8, f32)), op(s, a, T(4, 8, f32))],
        )
        for op in BINARY
    },
    "binary-scalar-dtype": ([T(4, 8, f16), T(f32)], lambda h, s: [tk.MulOp(h, s, T(4, 8, f16))]),
    **{
        f"unary-{op.name}": ([T(4, 8, bf16)], lambda x, op=op: [op(x)])
        for op in UNARY
    },
    "relu_grad": ([T(16, f16), T(16, f16)], lambda g, y: [tk.ReluGradOp(g, y)]),
    **{
        f"activation-{op.name}": ([T(4, 8, bf16)], lambda x, op=op: [op(x)])
        for op in (tk.TanhOp, tk.SigmoidOp, tk.SiluOp, tk.AbsOp, tk.SignOp, tk.RsqrtOp)
    },
    "activation-params": (
        [T(4, 8, f32)],
        lambda x: [
            tk.GeluOp(x),
            tk.GeluOp(x, tanh=True),
            tk.SoftplusOp(x, beta=2.0, threshold=1e-5),
            tk.LeakyReluOp(x, negative_slope=-0.5),
            tk.EluOp(x, alpha=1.0, scale=2.0, input_scale=0.5),
        ],
    ),
    "activation-grads": (
        [T(16, f16), T(16, f16)],
        lambda g, x: [
            tk.TanhGradOp(g, x),
            tk.SigmoidGradOp(g, x),
            tk.GeluGradOp(g, x, tanh=True),
            tk.SoftplusGradOp(g, x, beta=1.0, threshold=20.0),
            tk.LeakyReluGradOp(g, x, negative_slope=0.01),
            tk.EluGradOp(g, x, alpha=1.0, scale=1.0, input_scale=1.0, is_result=True),
        ],
    ),
    "cmp-select": (
        [T(4, 8, f32), T(8, f32), T(f32), T(4, 8, i1)],
        lambda x, y, s, m: [
            *(tk.CmpOp(p, x, y) for p in tk.CMP_PREDICATES),
            tk.CmpOp("lt", s, y, T(8, f32)),
            tk.SelectOp(m, x, s, T(4, 8, f32)),
            tk.SelectOp(y, s, x, T(4, 8, f32)),
            tk.SelectOp(m, m, m, T(4, 8, i1)),
        ],
    ),
    "iota": (
        [T(8, 1, i64)],
        lambda t: [
            c := tk.IotaOp(1, T(1, 10, i64)),
            m := tk.CmpOp("eq", t, c.result),
            tk.IotaOp(0, T(4, 3, bf16)),
            tk.SelectOp(m.result, t, c.result, T(8, 10, i64)),
        ],
    ),
    "pow": ([T(4, f32)], lambda x: [tk.PowOp(x, 2.0), tk.PowOp(x, -0.5), tk.PowOp(x, 1e-07)]),
    "cast": ([T(4, 8, f32)], lambda x: [tk.CastOp(x, T(4, 8, bf16)), tk.CastOp(x, T(4, 8, i1))]),
    "matmul": (
        [T(16, 32, bf16), T(32, 64, bf16), T(64, 32, bf16), T(32, 16, bf16)],
        lambda a, b, bt, at: [
            tk.MatmulOp(a, b, T(16, 64, bf16)),
            tk.MatmulOp(a, bt, T(16, 64, bf16), transpose_b=True),
            tk.MatmulOp(at, b, T(16, 64, bf16), transpose_a=True),
            tk.MatmulOp(at, bt, T(16, 64, bf16), transpose_a=True, transpose_b=True),
        ],
    ),
    "addmm": (
        [T(64, f32), T(16, 32, f32), T(32, 64, f32)],
        lambda bias, a, b: [tk.AddmmOp(bias, a, b, T(16, 64, f32))],
    ),
    **{
        f"reduce-{op.name}": (
            [T(16, 8, f32)],
            lambda x, op=op: [
                op(x, [1], T(16, f32)),
                op(x, [0], T(1, 8, f32), keepdim=True),
                op(x, [0, 1], T(f32)),
                op(x, [], T(16, 8, f32)),
            ],
        )
        for op in REDUCTIONS
    },
    "argmax": ([T(16, 10, f32)], lambda x: [tk.ArgmaxOp(x, [1], T(16, i64)), tk.ArgmaxOp(x, [0], T(1, 10, i64), True)]),
    "column_partials": ([T(100, 8, bf16), T(32, 3, f32)],
                        lambda x, y: [tk.ColumnPartialsOp(x, 16), tk.ColumnPartialsOp(y, 1)]),
    "reshape": ([T(1, 8, f32)], lambda x: [tk.ReshapeOp(x, T(8, f32)), tk.ReshapeOp(x, T(2, 2, 2, f32))]),
    "expand": ([T(1, 8, f32), T(f16)], lambda x, s: [tk.ExpandOp(x, T(3, 4, 8, f32)), tk.ExpandOp(s, T(2, f16))]),
    "transpose": (
        [T(2, 3, 4, i64)],
        lambda x: [tk.TransposeOp(x, [2, 0, 1]), tk.TransposeOp(x, [0, 1, 2], T(2, 3, 4, i64))],
    ),
    "slice": ([T(16, 8, f32)], lambda x: [tk.SliceOp(x, [0, 2], [1, 2], T(16, 3, f32))]),
    "fused": ([T(4, 8, f32), T(f32)], _fused_body),
}


@pytest.mark.parametrize("case", sorted(BUILDERS))
def test_build_verify_print_parse(case):
    arg_types, body = BUILDERS[case]
    round_trip(module_with(arg_types, body))


def test_builders_cover_every_op():
    built = set()
    for arg_types, body in BUILDERS.values():
        built |= {op.name for op in tk_ops(module_with(arg_types, body))}
    assert built == {op.name for op in tk.TK.operations}


def test_inferred_types_and_accessors():
    m = module_with(
        [T(4, 8, bf16), T(2, 3, 4, f32)],
        lambda x, y: [
            tk.NegOp(x),
            tk.ReluGradOp(x, x),
            tk.PowOp(x, 3),
            tk.TransposeOp(y, [2, 0, 1]),
            tk.FillOp(1.5, T(f32)),
            tk.SumOp(y, [0, 2], T(1, 3, 1, f32), keepdim=True),
            tk.MatmulOp(x, x, T(8, 8, bf16), transpose_a=True),
            tk.SliceOp(y, [0, 1, 0], [1, 1, 2], T(2, 2, 2, f32)),
        ],
    )
    m.verify()
    neg, rg, pow_, tr, fill, s, mm, sl = tk_ops(m)
    assert neg.result.type == T(4, 8, bf16) and rg.result.type == T(4, 8, bf16)
    assert pow_.exponent_value == 3.0 and pow_.result.type == T(4, 8, bf16)
    assert tr.perm_list == (2, 0, 1) and tr.result.type == T(4, 2, 3, f32)
    assert fill.fill_value == 1.5
    assert s.axes_list == (0, 2) and s.keepdim is not None and s.expected_shape() == (1, 3, 1)
    assert mm.transpose_a is not None and mm.transpose_b is None
    assert sl.starts_list == (0, 1, 0) and sl.steps_list == (1, 1, 2)


def test_discardable_attributes_survive():
    m = module_with([T(4, f32)], lambda x: [tk.NegOp(x), tk.FillOp(2.0, T(f32)), tk.SumOp(x, [0], T(f32))])
    from xdsl.dialects.builtin import StringAttr

    for op in tk_ops(m):
        op.attributes["tag"] = StringAttr("keep")
    parsed = round_trip(m)
    assert all(op.attributes["tag"] == StringAttr("keep") for op in tk_ops(parsed))


# -------------------------------------------------------- verifier, from Python

INVALID: dict[str, tuple[list[Attribute], Callable[..., list[Operation]], str]] = {
    "broadcast": ([T(4, 8, f32), T(7, f32)], lambda a, b: [tk.AddOp(a, b, T(4, 8, f32))], "do not broadcast"),
    "binary-result-shape": (
        [T(4, 1, f32), T(8, f32)],
        lambda a, b: [tk.SubOp(a, b, T(4, 1, f32))],
        "is not the broadcast shape [4, 8]",
    ),
    "binary-dtype": (
        [T(4, bf16), T(4, f32)],
        lambda a, b: [tk.MulOp(a, b, T(4, bf16))],
        "only rank-0 scalars may differ",
    ),
    "binary-int-scalar": ([T(4, f32), T(i64)], lambda a, s: [tk.DivOp(a, s, T(4, f32))], "is not floating point"),
    "unary-int": ([T(4, i64)], lambda a: [tk.SqrtOp(a)], "floating types only"),
    "pow-int": ([T(4, i1)], lambda a: [tk.PowOp(a, 2.0)], "floating types only"),
    "cast-shape": ([T(4, f32)], lambda a: [tk.CastOp(a, T(2, 2, bf16))], "keeps the shape"),
    "matmul-k": (
        [T(4, 8, f32), T(4, 8, f32)],
        lambda a, b: [tk.MatmulOp(a, b, T(4, 8, f32))],
        "contraction sizes differ (8 vs 4)",
    ),
    "matmul-transpose": (
        [T(4, 8, f32), T(4, 8, f32)],
        lambda a, b: [tk.MatmulOp(a, b, T(4, 4, f32), transpose_b=True), tk.MatmulOp(a, b, T(4, 4, f32), True)],
        "result shape [4, 4] should be [8, 8]",
    ),
    "addmm-bias": (
        [T(5, f32), T(4, 8, f32), T(8, 6, f32)],
        lambda c, a, b: [tk.AddmmOp(c, a, b, T(4, 6, f32))],
        "does not broadcast to [4, 6]",
    ),
    "reduce-axes": ([T(4, 8, f32)], lambda x: [tk.MeanOp(x, [1, 0], T(f32))], "must be sorted"),
    "reduce-keepdim": ([T(4, 8, f32)], lambda x: [tk.MaxOp(x, [1], T(4, f32), keepdim=True)], "should be [4, 1]"),
    "argmax-type": ([T(4, 8, f32)], lambda x: [tk.ArgmaxOp(x, [1], T(4, f32))], "returns i64 indices"),
    "reshape-count": ([T(4, 8, f32)], lambda x: [tk.ReshapeOp(x, T(30, f32))], "different element counts"),
    "expand": ([T(2, 8, f32)], lambda x: [tk.ExpandOp(x, T(4, 8, f32))], "does not broadcast to [4, 8]"),
    "transpose-perm": ([T(4, 8, f32)], lambda x: [tk.TransposeOp(x, [0, 0], T(4, 4, f32))], "not a permutation"),
    "slice-bounds": ([T(10, f32)], lambda x: [tk.SliceOp(x, [5], [2], T(4, f32))], "outside size 10"),
    "fill-int": ([], lambda: [tk.FillOp(0.5, T(2, i64))], "needs an integral value"),
    "tanh-int": ([T(4, i64)], lambda a: [tk.TanhOp(a)], "floating types only"),
    "gelu-grad-int": ([T(4, i64), T(4, i64)], lambda g, x: [tk.GeluGradOp(g, x)], "floating types only"),
    "cmp-predicate": ([T(4, f32)], lambda a: [tk.CmpOp("olt", a, a)], "is not one of eq, ne, lt, le, gt, ge"),
    "cmp-dtypes": ([T(4, f32), T(4, bf16)], lambda a, b: [tk.CmpOp("lt", a, b)], "one floating (or i64) element type"),
    "cmp-result": ([T(4, f32)], lambda a: [tk.CmpOp("lt", a, a, T(4, i64))], "returns i1 (or a 0/1 float mask)"),
    "select-types": (
        [T(4, i1), T(4, f32), T(4, bf16)],
        lambda c, a, b: [tk.SelectOp(c, a, b, T(4, f32))],
        "must have the result's element type f32",
    ),
    "iota-axis": ([], lambda: [tk.IotaOp(2, T(4, 3, f32))], "is not an axis of"),
    "iota-exact": ([], lambda: [tk.IotaOp(0, T(4096, f16))], "are not all exact in f16"),
    "select-broadcast": (
        [T(2, i1), T(3, f32)],
        lambda c, a: [tk.SelectOp(c, a, a, T(3, f32))],
        "do not broadcast",
    ),
    "fill-bool": ([], lambda: [tk.FillOp(3, T(2, i1))], "does not fit i1"),
    "dynamic": ([TensorType(f32, [-1])], lambda x: [tk.NegOp(x)], "static shapes"),
    "f64": ([T(4, Float64Type())], lambda x: [tk.ReluOp(x)], "tk tensors hold"),
    "unsigned": ([T(4, IntegerType(64, Signedness.UNSIGNED))], lambda x: [tk.ReshapeOp(x, T(2, 2, i64))], "tk tensors hold"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_verifier_rejects(case):
    arg_types, body, message = INVALID[case]
    m = module_with(arg_types, body)
    with pytest.raises(VerifyException, match=re.escape(message)):
        m.verify()


def test_param_ops_need_every_parameter():
    x = Block(arg_types=[T(4, f32)]).args[0]
    with pytest.raises(TypeError, match="parameter 'threshold' is required"):
        tk.SoftplusOp(x, beta=1.0)
    with pytest.raises(TypeError, match=r"unknown parameters \['slope'\]"):
        tk.LeakyReluOp(x, slope=0.1)
    op = tk.EluGradOp(x, x, alpha=2.0, scale=1.0, input_scale=0.5, is_result=True)
    assert op.param("alpha") == 2.0 and op.param("input_scale") == 0.5 and op.flag("is_result")
    assert not tk.GeluOp(x).flag("tanh") and tk.GeluOp(x, tanh=True).flag("tanh")


def test_yield_outside_a_region_op():
    with pytest.raises(VerifyException, match=r"must terminate an op with a tk body \(TkBody: .*\), not builtin.module"):
        ModuleOp([tk.YieldOp()]).verify()


def test_yield_parents_are_the_ops_with_the_tk_body_trait():
    """tk.yield accepts exactly the parents with the TkBody trait: tk.fused and every
    compute op of the buffer levels (through ComputeLikeOp), found by the trait."""
    from trainkernel.dialects import base, sched, tile

    for dialect in (tk.TK, sched.SCHED, tile.TILE):
        for op in dialect.operations:
            holds_body = op is tk.FusedOp or issubclass(op, base.ComputeLikeOp)
            assert op.has_trait(tk.TkBody) == holds_body, op.name


def test_fused_body_may_not_capture():
    def body(a, b):
        block = Block(arg_types=[a.type])
        add = tk.AddOp(block.args[0], b, a.type)  # b is defined outside
        block.add_ops([add, tk.YieldOp(add)])
        return [tk.FusedOp([a], [a.type], Region(block))]

    with pytest.raises(VerifyException, match="IsolatedFromAbove"):
        module_with([T(4, f32), T(4, f32)], body).verify()


def test_fused_yield_types():
    def body(a):
        block = Block(arg_types=[a.type])
        block.add_op(tk.YieldOp(block.args[0]))
        return [tk.FusedOp([a], [T(4, bf16)], Region(block))]

    with pytest.raises(VerifyException, match="tk.yield types must equal the result types"):
        module_with([T(4, f32)], body).verify()


# ------------------------------------------------------------ helpers, floats


@pytest.mark.parametrize(
    "shapes, expected",
    [
        ([(4, 8), (8,)], (4, 8)),
        ([(4, 1), (1, 8)], (4, 8)),
        ([(), (3,)], (3,)),
        ([(2, 1, 8), (4, 1)], (2, 4, 8)),
        ([(4, 8), (7,)], None),
        ([(0, 1), (1, 5)], (0, 5)),
        ([], ()),
    ],
)
def test_broadcast_shapes(shapes, expected):
    assert tk.broadcast_shapes(*shapes) == expected


def test_element_types():
    for t in (f32, bf16, f16, i1, i64):
        assert tk.is_tk_element_type(t)
    for t in (Float64Type(), IntegerType(32), IntegerType(64, Signedness.SIGNED), IntegerType(8)):
        assert not tk.is_tk_element_type(t)


def _same_float(a: float, b: float) -> bool:
    return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))


@settings(max_examples=300, deadline=None)
@given(value=st.floats(allow_nan=True, allow_infinity=True))
def test_fill_and_pow_constants_round_trip_bit_exactly(value):
    m = module_with([T(2, f32)], lambda x: [tk.FillOp(value, T(2, f32)), tk.PowOp(x, value)])
    parsed = round_trip(m) if not math.isnan(value) else parse_module(print_module(m))
    fill, pow_ = tk_ops(parsed)
    assert _same_float(fill.fill_value, value) and _same_float(pow_.exponent_value, value)
    generic = parse_module(print_module(m, generic=True))
    gfill, gpow = tk_ops(generic)
    assert _same_float(gfill.fill_value, value) and _same_float(gpow.exponent_value, value)


@pytest.mark.parametrize(
    "value, text",
    [(1e-07, "1.0e-07"), (1e300, "1.0e+300"), (-0.0, "-0.0"), (2.0, "2.0"), (0.1, "0.1"),
     (float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan")],
)
def test_float_spelling(value, text):
    m = module_with([], lambda: [tk.FillOp(value, T(f32))])
    assert f"tk.fill {text} : tensor<f32>" in print_module(m)


# ------------------------------------------------------ lit coverage guard


def _mentions(path: Path, name: str) -> bool:
    return re.search(rf'(?<![\w."]){re.escape(name)}\b|"{re.escape(name)}"', path.read_text()) is not None


@pytest.mark.parametrize("name", sorted(op.name for op in tk.TK.operations))
def test_every_op_has_lit_round_trip_and_error_tests(name):
    files = sorted(LIT_TK.glob("*.mlir"))
    round_trips = [f for f in files if not f.stem.endswith("-invalid") and f.stem != "parse-errors"]
    invalid = [f for f in files if f.stem.endswith("-invalid")]
    assert any(_mentions(f, name) and "--print-op-generic" in f.read_text() for f in round_trips), name
    assert any(_mentions(f, name) and "--verify-diagnostics" in f.read_text() for f in invalid), name


def test_custom_syntax_is_declarative_or_says_why():
    """Every tk and sched op prints through a declarative `assembly_format`, or the
    hand-written `print` it uses is led by a `# Hand-written: <why>` comment."""
    import inspect

    from trainkernel.dialects import sched

    for dialect in (tk.TK, sched.SCHED):
        for op in dialect.operations:
            if op.get_irdl_definition().assembly_format is not None:
                continue
            owner = next(c for c in op.__mro__ if "print" in c.__dict__)
            lines, _ = inspect.getsourcelines(owner)
            at = next(i for i, line in enumerate(lines) if line.strip().startswith("def print("))
            above = "".join(lines[max(0, at - 3) : at])
            assert "# Hand-written" in above, f"{op.name}: {owner.__name__}.print has no comment saying why"
