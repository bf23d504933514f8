"""trainkernel.capture: aten -> tk conversion, pytree names, round trips, errors.

Every supported op is captured from a small step, printed, parsed back
(`trainkernel.ir` and the `trainkernel-opt` executable) and, where the CPU
interpreter exists, run and compared with eager PyTorch. The interpreter calls
the same PyTorch ops eager runs, so results are bit-identical except where the
capture legitimately computes differently (noted per case: alpha folded into a
separate multiply, and decompositions of fused kernels such as softmax and
mse_loss), which are compared with a tolerance of a few f32 ulps.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from torch.func import grad, grad_and_value
from torch.utils import _pytree as pytree

import trainkernel
from trainkernel.frontend import CaptureError, UnsupportedOpError
from trainkernel.ir import parse_module, print_module
from trainkernel.workloads import COMPUTE_DTYPES, WORKLOADS

try:
    from trainkernel.interpreter import interpret
except ImportError:  # pragma: no cover - the interpreter is a separate module
    interpret = None

THIS_FILE = Path(__file__).resolve()
f32, bf16, f16 = torch.float32, torch.bfloat16, torch.float16


def R(*shape, dtype=f32, seed=0, positive=False):
    g = torch.Generator().manual_seed(seed + 31 * len(shape) + sum(shape))
    t = torch.randn(shape, generator=g, dtype=torch.float32)
    if positive:
        t = t.abs() + 0.1
    return t.to(dtype)


def line_of(marker: str) -> int:
    """Line number in this file of the line that ends with `# <marker>`."""
    for i, line in enumerate(THIS_FILE.read_text().splitlines(), start=1):
        if line.rstrip().endswith(f"# {marker}"):
            return i
    raise AssertionError(f"marker {marker} not found")


def ops_in(text: str) -> set[str]:
    return set(re.findall(r"= (tk\.[a-z_]+)", text))


def roundtrip(captured) -> str:
    text = str(captured)
    module = parse_module(text)
    assert print_module(module) == text
    return text


# ------------------------------------------------------------------ op cases


@dataclass
class Case:
    id: str
    fn: Callable
    args: Callable[[], tuple]
    ops: tuple[str, ...]  # tk ops that must appear
    exact: bool = True  # bit-identical to eager through the interpreter

    def __post_init__(self):
        inner = self.fn

        def step(*args):
            return inner(*args)

        step.__name__ = "case_" + self.id
        self.fn = step


def _relu_grad_step(x):
    return grad(lambda t: torch.relu(t).sum())(x)


def _fill_inplace(a):
    z = torch.empty_like(a)
    z.fill_(2.5)
    return z * a


def _zero_inplace(a):
    z = a.clone()
    z.zero_()
    return z + 1


A = lambda: (R(4, 8),)  # noqa: E731
AB = lambda: (R(4, 8), R(4, 8, seed=1))  # noqa: E731
POS = lambda: (R(4, 8, positive=True),)  # noqa: E731

CASES = [
    # matrix products
    Case("matmul_operator", lambda a, b: a @ b, lambda: (R(4, 8), R(8, 5)), ("tk.matmul",)),
    Case("mm", torch.mm, lambda: (R(4, 8), R(8, 5)), ("tk.matmul",)),
    Case("matmul_bf16", torch.matmul, lambda: (R(4, 8, dtype=bf16), R(8, 5, dtype=bf16)), ("tk.matmul",)),
    Case("matmul_3d_by_2d", torch.matmul, lambda: (R(2, 4, 8), R(8, 5)), ("tk.matmul", "tk.reshape")),
    Case("addmm", torch.addmm, lambda: (R(5), R(4, 8), R(8, 5)), ("tk.addmm",)),
    Case("addmm_2d_bias", torch.addmm, lambda: (R(4, 5), R(4, 8), R(8, 5)), ("tk.addmm",)),
    Case("linear", F.linear, lambda: (R(4, 8), R(5, 8), R(5)), ("tk.addmm", "tk.transpose")),
    # transposes
    Case("t", lambda a: a.t(), A, ("tk.transpose",)),
    Case("transpose_3d", lambda a: a.transpose(0, 2), lambda: (R(2, 3, 4),), ("tk.transpose",)),
    Case("permute", lambda a: a.permute(2, 0, 1), lambda: (R(2, 3, 4),), ("tk.transpose",)),
    Case("permute_negative", lambda a: a.permute(-1, 0, -2), lambda: (R(2, 3, 4),), ("tk.transpose",)),
    # elementwise binary, broadcasting
    Case("add", torch.add, AB, ("tk.add",)),
    Case("add_broadcast", lambda a, b: a + b, lambda: (R(4, 8), R(8)), ("tk.add",)),
    Case("sub_broadcast_both", lambda a, b: a - b, lambda: (R(4, 1), R(1, 8)), ("tk.sub",)),
    Case("mul", torch.mul, AB, ("tk.mul",)),
    Case("div", torch.div, lambda: (R(4, 8), R(4, 8, positive=True)), ("tk.div",)),
    Case("add_scalar", lambda a: a + 2, A, ("tk.add", "tk.fill")),
    Case("sub_scalar", lambda a: a - 0.5, A, ("tk.sub", "tk.fill")),
    Case("mul_scalar", lambda a: a * 3.0, A, ("tk.mul", "tk.fill")),
    Case("div_scalar", lambda a: a / 4, A, ("tk.div", "tk.fill")),
    Case("mul_scalar_bf16", lambda a: a * 0.1, lambda: (R(4, 8, dtype=bf16),), ("tk.mul", "tk.fill")),
    Case("add_alpha", lambda a, b: torch.add(a, b, alpha=2.0), AB, ("tk.add", "tk.mul"), exact=False),
    Case("sub_alpha", lambda a, b: torch.sub(a, b, alpha=0.5), AB, ("tk.sub", "tk.mul"), exact=False),
    Case(
        "sub_alpha_bf16",
        lambda a, b: torch.sub(a, b, alpha=0.5),
        lambda: (R(4, 8, dtype=bf16), R(4, 8, dtype=bf16, seed=1)),
        ("tk.sub", "tk.mul", "tk.cast"),
        exact=False,
    ),
    Case("rsub_scalar", lambda a: 1 - a, A, ("tk.sub", "tk.fill")),
    Case("rsub_tensor", torch.rsub, AB, ("tk.sub",)),
    Case("rsub_alpha", lambda a, b: torch.rsub(a, b, alpha=2), AB, ("tk.sub", "tk.mul"), exact=False),
    Case("maximum", torch.maximum, AB, ("tk.maximum",)),
    Case("minimum", torch.minimum, AB, ("tk.maximum", "tk.neg")),
    Case("clamp_min", lambda a: torch.clamp_min(a, 0.1), A, ("tk.cmp", "tk.select")),
    Case("clamp", lambda a: torch.clamp(a, -0.5, 0.5), A, ("tk.cmp", "tk.select")),
    Case("clamp_bf16", lambda a: torch.clamp(a, max=0.3), lambda: (R(4, 8, dtype=bf16),), ("tk.cmp", "tk.select")),
    # activations (tests/test_activations.py has their backward and special values)
    Case("tanh", torch.tanh, A, ("tk.tanh",)),
    Case("sigmoid_bf16", torch.sigmoid, lambda: (R(4, 8, dtype=bf16),), ("tk.sigmoid",)),
    Case("gelu_tanh", lambda a: F.gelu(a, approximate="tanh"), A, ("tk.gelu",)),
    Case("softplus", lambda a: F.softplus(a, beta=2), A, ("tk.softplus",)),
    Case("celu", lambda a: F.celu(a, 0.5), A, ("tk.elu",)),
    Case("where", lambda a, b: torch.where(a > b, a, b * 2), AB, ("tk.cmp", "tk.select")),
    Case("masked_fill_bf16", lambda a: a.masked_fill(a < 0, -1.5), lambda: (R(4, 8, dtype=bf16),), ("tk.cmp", "tk.select")),
    Case("bool_to_float", lambda a: (a > 0).float() * a, A, ("tk.cmp", "tk.cast")),
    # promotion: rank >= 1 operands get the result's type, 0-d ones keep theirs
    Case("promote_bf16_f32", lambda a, b: a + b, lambda: (R(4, 8, dtype=bf16), R(4, 8)), ("tk.add", "tk.cast")),
    Case("promote_f16_bf16", lambda a, b: a * b, lambda: (R(4, 8, dtype=f16), R(8, dtype=bf16)), ("tk.mul", "tk.cast")),
    Case("scalar_tensor_operand", lambda a, s: a * s, lambda: (R(4, 8, dtype=bf16), R()), ("tk.mul",)),
    # unary
    Case("neg", torch.neg, A, ("tk.neg",)),
    Case("relu", torch.relu, A, ("tk.relu",)),
    Case("relu_functional", F.relu, lambda: (R(4, 8, dtype=bf16),), ("tk.relu",)),
    Case("sqrt", torch.sqrt, POS, ("tk.sqrt",)),
    Case("exp", torch.exp, A, ("tk.exp",)),
    Case("log", torch.log, POS, ("tk.log",)),
    Case("reciprocal", torch.reciprocal, POS, ("tk.div",)),
    Case("pow_int", lambda a: a**3, A, ("tk.pow",)),
    Case("pow_float", lambda a: torch.pow(a, 0.5), POS, ("tk.pow",)),
    Case("square", torch.square, A, ("tk.pow",)),
    Case("relu_backward", _relu_grad_step, A, ("tk.relu_grad",)),
    Case("relu_backward_bf16", _relu_grad_step, lambda: (R(4, 8, dtype=bf16),), ("tk.relu_grad",)),
    # reductions
    Case("sum_all", torch.sum, A, ("tk.sum",)),
    Case("sum_dim", lambda a: a.sum(dim=1), A, ("tk.sum",)),
    Case("sum_dims_keepdim_negative", lambda a: a.sum(dim=(0, -1), keepdim=True), lambda: (R(2, 3, 4),), ("tk.sum",)),
    Case("sum_dtype", lambda a: a.sum(dim=0, dtype=torch.float32), lambda: (R(4, 8, dtype=bf16),), ("tk.sum", "tk.cast")),
    Case("sum_bf16", lambda a: a.sum(0), lambda: (R(16, 8, dtype=bf16),), ("tk.sum",)),
    Case("mean_all", torch.mean, A, ("tk.mean",)),
    Case("mean_dim_keepdim", lambda a: a.mean(-1, keepdim=True), A, ("tk.mean",)),
    Case("amax", lambda a: torch.amax(a, dim=1), A, ("tk.max",)),
    Case("max_all", lambda a: a.max(), A, ("tk.max",)),
    Case("max_dim", lambda a: tuple(a.max(dim=1)), A, ("tk.max", "tk.argmax")),
    Case("max_dim_keepdim", lambda a: tuple(a.max(dim=0, keepdim=True)), A, ("tk.max", "tk.argmax")),
    Case("min_dim", lambda a: tuple(a.min(dim=1)), A, ("tk.max", "tk.argmax", "tk.neg")),
    Case("amin", lambda a: torch.amin(a, dim=0), A, ("tk.max", "tk.neg")),
    Case("argmax_dim", lambda a: torch.argmax(a, dim=1), A, ("tk.argmax",)),
    Case("argmax_keepdim", lambda a: torch.argmax(a, dim=-1, keepdim=True), A, ("tk.argmax",)),
    Case("argmax_flat", torch.argmax, A, ("tk.argmax", "tk.reshape")),
    Case("argmin", lambda a: torch.argmin(a, dim=0), A, ("tk.argmax", "tk.neg")),
    # casts
    Case("cast_roundtrip", lambda a: a.to(bf16).to(f32), A, ("tk.cast",)),
    Case("cast_half", lambda a: a.half(), A, ("tk.cast",)),
    Case("cast_type", lambda a: a.type(torch.bfloat16) * 2, A, ("tk.cast",)),
    Case("cast_noop", lambda a: a.to(f32) + a.float(), A, ("tk.add",)),
    # fills and constants
    Case("zeros", lambda a: torch.zeros(4, 8) + a, A, ("tk.fill",)),
    Case("ones_like", lambda a: torch.ones_like(a) - a, A, ("tk.fill",)),
    Case("full", lambda a: torch.full((4, 8), 2.5) * a, A, ("tk.fill",)),
    Case("full_like_bf16", lambda a: torch.full_like(a, -1.0) * a, lambda: (R(4, 8, dtype=bf16),), ("tk.fill",)),
    Case("zeros_like_returned", torch.zeros_like, A, ("tk.fill",)),
    Case("new_zeros", lambda a: a.new_zeros(2, 3), A, ("tk.fill",)),
    Case("new_ones", lambda a: a.new_ones(8) + a, A, ("tk.fill",)),
    Case("tensor_constant", lambda a: torch.tensor(3.0) * a, A, ("tk.fill",)),
    Case("tensor_constant_uniform", lambda a: torch.tensor([[2.0, 2.0]]) + a[:, :2], A, ("tk.fill",)),
    Case("scalar_tensor", lambda a: torch.scalar_tensor(1.5) + a, A, ("tk.fill",)),
    Case("fill_inplace_on_temp", _fill_inplace, A, ("tk.fill",)),
    Case("zero_inplace_on_temp", _zero_inplace, A, ("tk.fill",)),
    # views
    Case("view", lambda a: a.view(32) * 2, A, ("tk.reshape",)),
    Case("reshape", lambda a: a.reshape(2, 16) * 2, A, ("tk.reshape",)),
    Case("unsqueeze", lambda a: a.unsqueeze(1) * 2, A, ("tk.reshape",)),
    Case("squeeze", lambda a: a.squeeze() * 2, lambda: (R(4, 1, 8),), ("tk.reshape",)),
    Case("squeeze_dim", lambda a: a.squeeze(-2) * 2, lambda: (R(4, 1, 8),), ("tk.reshape",)),
    Case("flatten", lambda a: torch.flatten(a, 1) * 2, lambda: (R(2, 3, 4),), ("tk.reshape",)),
    Case("expand", lambda b: b.unsqueeze(0).expand(4, 8) * 2, lambda: (R(8),), ("tk.expand",)),
    Case("expand_minus_one", lambda b: b.expand(-1, 8) * 2, lambda: (R(4, 1),), ("tk.expand",)),
    Case("slice", lambda a: a[:, 1:5] * 2, A, ("tk.slice",)),
    Case("slice_step", lambda a: a[::2] * 2, A, ("tk.slice",)),
    Case("slice_negative", lambda a: a[-2:, :-3] * 2, A, ("tk.slice",)),
    Case("select", lambda a: a[1] * 2, A, ("tk.slice", "tk.reshape")),
    Case("select_negative", lambda a: a[:, -1] * 2, A, ("tk.slice", "tk.reshape")),
    Case("narrow", lambda a: a.narrow(1, 2, 3) * 2, A, ("tk.slice",)),
    Case("split", lambda a: tuple(t * 2 for t in a.split(3, dim=1)), A, ("tk.slice",)),
    Case("chunk", lambda a: tuple(t * 2 for t in a.chunk(2)), A, ("tk.slice",)),
    Case("unbind", lambda a: tuple(t * 2 for t in a.unbind(0)), A, ("tk.slice", "tk.reshape")),
    Case("clone_detach_contiguous", lambda a: a.clone() + a.detach() + a.t().contiguous().t(), A, ("tk.add",)),
    # decomposed composites
    Case("softmax", lambda a: torch.softmax(a, dim=-1), A, ("tk.exp", "tk.max", "tk.sum", "tk.div"), exact=False),
    Case("log_softmax", lambda a: F.log_softmax(a, dim=1), A, ("tk.exp", "tk.log", "tk.max"), exact=False),
    Case("mse_loss", F.mse_loss, AB, ("tk.pow", "tk.mean"), exact=False),
    Case(
        "mse_loss_grad",
        lambda a, b: grad_and_value(lambda t: F.mse_loss(t, b))(a),
        AB,
        ("tk.mul", "tk.sub"),
        exact=False,
    ),
    Case("identity_return", lambda a: (a, a * 2), A, ("tk.mul",)),
]


@functools.lru_cache(maxsize=None)
def captured_case(case_id: str):
    case = next(c for c in CASES if c.id == case_id)
    return trainkernel.capture(case.fn, case.args())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_captured_and_round_trips(case: Case):
    c = captured_case(case.id)
    text = roundtrip(c)
    assert set(case.ops) <= ops_in(text), text
    assert c.name == case.fn.__name__
    assert f"func.func @{case.fn.__name__}(" in text


@pytest.mark.skipif(interpret is None, reason="trainkernel.interpreter not available")
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_numerics_match_eager(case: Case):
    args = case.args()
    want = case.fn(*args)
    got = interpret(captured_case(case.id), *args)
    want_leaves, want_spec = pytree.tree_flatten(want)
    got_leaves, got_spec = pytree.tree_flatten(got)
    assert want_spec == got_spec
    for w, g in zip(want_leaves, got_leaves):
        assert g.dtype == w.dtype and g.shape == w.shape
        if case.exact:
            assert torch.equal(g, w), (case.id, (g.float() - w.float()).abs().max())
        else:
            # A different but equally valid f32 evaluation order: a few ulps.
            torch.testing.assert_close(g, w, rtol=4e-6 if w.dtype == f32 else 1e-2, atol=1e-6)


def test_supported_op_table_is_covered():
    """Every aten overload named in the brief has a handler."""
    from trainkernel.frontend.aten_to_tk import HANDLERS

    for name in [
        "aten.mm.default", "aten.addmm.default", "aten.t.default", "aten.transpose.int", "aten.permute.default",
        "aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar", "aten.mul.Tensor",
        "aten.mul.Scalar", "aten.div.Tensor", "aten.div.Scalar", "aten.rsub.Scalar", "aten.rsub.Tensor",
        "aten.neg.default", "aten.relu.default", "aten.threshold_backward.default", "aten.pow.Tensor_Scalar",
        "aten.sqrt.default", "aten.exp.default", "aten.log.default", "aten.maximum.default", "aten.sum.default",
        "aten.sum.dim_IntList", "aten.mean.default", "aten.mean.dim", "aten.amax.default", "aten.max.dim",
        "aten.argmax.default", "aten._to_copy.default", "aten.fill.Scalar", "aten.zeros.default",
        "aten.ones.default", "aten.full.default", "aten.zeros_like.default", "aten.ones_like.default",
        "aten.full_like.default", "aten.scalar_tensor.default", "aten.lift_fresh_copy.default",
        "aten.view.default", "aten.reshape.default", "aten._unsafe_view.default", "aten.unsqueeze.default",
        "aten.squeeze.dim", "aten.flatten.using_ints", "aten.expand.default", "aten.slice.Tensor",
        "aten.select.int", "aten.narrow.default", "aten.clone.default", "aten.detach.default", "aten.alias.default",
    ]:
        assert name in HANDLERS, name


# ---------------------------------------------------------------- structure


def test_dce_removes_unused_values():
    def step(a):
        unused = torch.exp(a) * 3  # noqa: F841
        return a + 1

    text = str(trainkernel.capture(step, (R(4),)))
    assert "tk.exp" not in text and "3.0" not in text
    assert ops_in(text) == {"tk.add", "tk.fill"}


def test_lambda_name_is_a_valid_symbol():
    c = trainkernel.capture(lambda a: a * 2, (R(3),))
    assert c.name == "_lambda_"
    roundtrip(c)


def _sgd(params, x):
    def loss_fn(p, x):
        return sum((x @ w).pow(2).mean() for w in pytree.tree_leaves(p))

    grads, loss = grad_and_value(loss_fn)(params, x)
    new = pytree.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return loss, new


@pytest.mark.parametrize(
    "params, arg_names, result_names",
    [
        ((R(8, 4), R(8, 2)), ["params[0]", "params[1]"], ["[0]", "[1][0]", "[1][1]"]),
        ([R(8, 4), R(8, 2)], ["params[0]", "params[1]"], ["[0]", "[1][0]", "[1][1]"]),
        (
            {"w1": R(8, 4), "blocks": {"a": R(8, 3), "b": [R(8, 2)]}},
            ["params['w1']", "params['blocks']['a']", "params['blocks']['b'][0]"],
            ["[0]", "[1]['w1']", "[1]['blocks']['a']", "[1]['blocks']['b'][0]"],
        ),
    ],
    ids=["tuple", "list", "nested_dict"],
)
def test_pytree_params(params, arg_names, result_names):
    x = R(5, 8)
    c = trainkernel.capture(_sgd, (params, x))
    assert list(c.arg_names) == arg_names + ["x"]
    assert list(c.result_names) == result_names
    assert c.in_spec == pytree.tree_flatten((params, x))[1]
    assert c.out_spec == pytree.tree_flatten(_sgd(params, x))[1]
    text = roundtrip(c)
    fn = parse_module(text).ops.first
    names = [d.data["tk.name"].data for d in fn.arg_attrs.data]
    assert names == list(c.arg_names)
    assert [d.data["tk.name"].data for d in fn.res_attrs.data] == list(c.result_names)
    for name in arg_names:
        assert f'{{tk.name = "{name}"}}' in text
    if interpret is not None:
        want = _sgd(params, x)
        got = interpret(c, params, x)
        for w, g in zip(pytree.tree_leaves(want), pytree.tree_leaves(got)):
            assert torch.equal(w, g)


def test_positional_names_and_star_args():
    def step(a, *rest):
        return a + rest[0] + rest[1]

    c = trainkernel.capture(step, (R(3), R(3), R(3)))
    assert c.arg_names == ("a", "rest[0]", "rest[1]")
    assert c.result_names == ("result",)
    assert c.module is c.func.parent_op()


def test_meta_and_cpu_example_args_give_the_same_ir():
    w = WORKLOADS["tiny"]
    step = w.make_step("bf16")
    on_meta = str(trainkernel.capture(step, w.example_args(device="meta")))
    on_cpu = str(trainkernel.capture(step, w.example_args(device="cpu")))
    assert on_meta == on_cpu


def test_captured_fields():
    w = WORKLOADS["tiny"]
    step = w.make_step("f32")
    c = trainkernel.capture(step, w.example_args())
    assert c.step is step
    assert c.func.sym_name.data == "tiny_sgd_f32"
    assert len(c.arg_names) == len(c.func.body.block.args) == 6
    assert len(c.result_names) == 9 and c.result_names[0] == "[0]" and c.result_names[-1] == "[2][3]"
    assert "tiny_sgd_f32" in repr(c)
    c.module.verify()


# ------------------------------------------------------------------- errors


def _sin_step(w, x):
    h = torch.sin(x @ w)  # sin-line
    return h.sum()


def test_unsupported_op_names_op_and_line():
    with pytest.raises(UnsupportedOpError) as info:
        trainkernel.capture(_sin_step, (R(8, 4), R(2, 8)))
    err = info.value
    msg = str(err)
    assert "aten.sin" in msg
    assert f"test_capture.py:{line_of('sin-line')}" in msg
    assert "torch.sin(x @ w)" in msg
    assert err.op == "aten.sin.default"
    assert err.location.lineno == line_of("sin-line")
    assert Path(err.location.filename).resolve() == THIS_FILE


def test_successful_capture_records_no_stack_traces():
    # Recording the user's stack costs ~30% of a trace (a warm compile is
    # mostly the trace): only a graph that fails to convert is traced again
    # with it, which the test above needs for its source line.
    cap = trainkernel.capture(_linear_step, (R(8, 4), R(2, 8)))
    nodes = [n for n in cap.graph_module.graph.nodes if n.op == "call_function"]
    assert nodes and all("stack_trace" not in n.meta or not n.meta["stack_trace"] for n in nodes)


def _linear_step(w, x):
    return (x @ w).sum()


def _product_step(w, x):
    return (x @ w).sum()  # product-line


def test_invalid_ir_is_reported_with_the_source_line(monkeypatch):
    # A successful conversion verifies the module once (not each op as it is
    # built: that was ~30 ms of mlp4-adamw-ce's warm compile); IR that does
    # not verify is converted again op by op, so the error still names the
    # op and the step's line.
    from trainkernel.dialects import tk
    from trainkernel.frontend import aten_to_tk

    def bad_mm(cv, node, args, kwargs):  # a product with the wrong result shape
        a, b = args[:2]
        return cv.emit(tk.MatmulOp(a, b, tk.TensorType(tk.element_type_of(a), [3, 3]))).result

    for name in ("aten.mm.default", "aten.matmul.default"):
        monkeypatch.setitem(aten_to_tk.HANDLERS, name, bad_mm)
    with pytest.raises(CaptureError, match=r"internal error: converting aten\.mm\.default produced invalid IR") as info:
        trainkernel.capture(_product_step, (R(8, 4), R(2, 8)))
    assert f"test_capture.py:{line_of('product-line')}" in str(info.value)


def test_successful_capture_verifies_the_module_not_each_op(monkeypatch):
    from trainkernel.dialects import tk

    calls = []
    real = tk.MatmulOp.verify
    monkeypatch.setattr(tk.MatmulOp, "verify", lambda self, *a, **k: calls.append(self) or real(self, *a, **k))
    trainkernel.capture(_product_step, (R(8, 4), R(2, 8)))
    assert len(calls) == 1  # the module's verification, which visits every op


def _helper_with_cos(h):
    return torch.cos(h)  # cos-line


def test_unsupported_op_in_helper_and_on_meta_tensors():
    def step(w, x):
        return _helper_with_cos(x @ w).mean()

    with pytest.raises(UnsupportedOpError, match=r"aten\.cos\.default") as info:
        trainkernel.capture(step, (torch.empty(8, 4, device="meta"), torch.empty(2, 8, device="meta")))
    assert f"test_capture.py:{line_of('cos-line')}" in str(info.value)


def test_unsupported_op_inside_grad():
    def loss(w, x):
        return torch.sin(x @ w).sum()  # grad-sin-line

    def step(w, x):
        g, l = grad_and_value(loss)(w, x)
        return l, w - 0.1 * g

    with pytest.raises(UnsupportedOpError) as info:
        trainkernel.capture(step, (R(8, 4), R(2, 8)))
    assert "aten.sin.default" in str(info.value)
    assert f":{line_of('grad-sin-line')}" in str(info.value)


def _error_cases():
    def integer_math(a):
        return a.long() + 1  # int-line

    def bmm(a, b):
        return torch.bmm(a, b)  # bmm-line

    def addmm_beta(c, a, b):
        return torch.addmm(c, a, b, beta=0.5)  # beta-line

    def nonuniform_constant(a):
        return a * torch.tensor([1.0, 2.0])  # const-line

    def infinite_constant(a):
        return a + float("inf")  # inf-line

    def rounding_div(a, b):
        return torch.div(a, b, rounding_mode="floor")  # floor-line

    def data_dependent(a):
        if a.sum() > 0:  # branch-line
            return a * 2
        return a

    def item(a):
        return a * a.sum().item()  # item-line

    def mutate_input(a):
        a.add_(1.0)  # mutate-line
        return a * 2

    def threshold_nonzero(a):
        return torch.ops.aten.threshold_backward(a, a, 0.5)  # threshold-line

    return [
        (integer_math, (R(4),), "aten._to_copy.default", "int-line"),
        (bmm, (R(2, 3, 4), R(2, 4, 5)), "aten.bmm.default", "bmm-line"),
        (addmm_beta, (R(5), R(4, 8), R(8, 5)), "aten.addmm.default", "beta-line"),
        (nonuniform_constant, (R(2),), "aten.lift_fresh_copy.default", "const-line"),
        (infinite_constant, (R(2),), "aten.add.Tensor", "inf-line"),
        (rounding_div, (R(2), R(2)), "aten.div.Tensor_mode", "floor-line"),
        (data_dependent, (R(2),), "aten._local_scalar_dense.default", "branch-line"),
        (item, (R(2),), "aten._local_scalar_dense.default", "item-line"),
        (mutate_input, (R(2),), "aten.copy_.default", "mutate-line"),
        (threshold_nonzero, (R(2),), "aten.threshold_backward.default", "threshold-line"),
    ]


@pytest.mark.parametrize("fn, args, op, marker", _error_cases(), ids=lambda v: getattr(v, "__name__", ""))
def test_unsupported_errors(fn, args, op, marker):
    with pytest.raises(UnsupportedOpError) as info:
        trainkernel.capture(fn, args)
    msg = str(info.value)
    assert op in msg, msg
    if marker is not None:
        assert f"test_capture.py:{line_of(marker)}" in msg, msg


def test_in_place_on_input_names_the_line_of_the_in_place_op():
    def mutate(a):
        a.mul_(2.0)  # mul_-line
        return a + 1

    with pytest.raises(UnsupportedOpError, match="in-place") as info:
        trainkernel.capture(mutate, (R(3),))
    assert "aten.copy_" in str(info.value)
    assert f"test_capture.py:{line_of('mul_-line')}" in str(info.value)


def test_in_place_on_a_temporary_is_fine():
    def step(a):
        b = a * 2
        b.add_(1.0)
        return b

    c = trainkernel.capture(step, (R(3),))
    assert ops_in(str(c)) == {"tk.mul", "tk.add", "tk.fill"}


def test_non_tensor_leaf_is_a_clear_error():
    def step(params, x):
        return x * params["lr"]

    with pytest.raises(CaptureError, match=r"argument params\['lr'\] is float 0\.1, not a tensor"):
        trainkernel.capture(step, ({"lr": 0.1, "w": R(3)}, R(3)))


def test_non_tensor_result_is_a_clear_error():
    def step(x):
        return x * 2, 3

    with pytest.raises(CaptureError, match=r"result \[1\] .* is int 3, not a tensor"):
        trainkernel.capture(step, (R(3),))


def test_float64_argument_is_rejected():
    with pytest.raises(CaptureError, match="float64"):
        trainkernel.capture(lambda a: a * 2, (R(3).double(),))


def test_no_silent_fallback_for_an_unknown_op():
    from trainkernel.frontend.aten_to_tk import HANDLERS

    assert "aten.sin.default" not in HANDLERS and "aten.erf.default" not in HANDLERS
    with pytest.raises(UnsupportedOpError, match=r"aten\.erf"):
        trainkernel.capture(lambda a: torch.where(a > 0, torch.erf(a), 0.0), (R(3),))


# ------------------------------------------------------------ the workloads


@functools.lru_cache(maxsize=None)
def captured_workload(name: str, dtype: str):
    w = WORKLOADS[name]
    return trainkernel.capture(w.make_step(dtype), w.example_args())


WORKLOAD_IDS = [(n, d) for n in WORKLOADS for d in COMPUTE_DTYPES]


@pytest.mark.parametrize("name, dtype", WORKLOAD_IDS, ids=[f"{n}-{d}" for n, d in WORKLOAD_IDS])
def test_workload_capture_print_parse(name, dtype):
    w = WORKLOADS[name]
    c = captured_workload(name, dtype)
    text = roundtrip(c)
    assert c.name == f"{name}_sgd_{dtype}"
    n = len(w.param_shapes())
    assert list(c.arg_names) == [f"params[{i}]" for i in range(n)] + ["x", "y"]
    assert list(c.result_names) == ["[0]"] + [f"[1][{i}]" for i in range(n)] + [f"[2][{i}]" for i in range(n)]
    ops = ops_in(text)
    assert {"tk.matmul", "tk.relu", "tk.relu_grad", "tk.mean", "tk.sum"} <= ops
    assert ("tk.cast" in ops) == (dtype != "f32")
    # every result: loss f32 scalar, grads and new params f32 with the param shapes
    fn = c.func
    out_types = fn.function_type.outputs.data
    assert str(out_types[0]) == "tensor<f32>"
    for t, shape in zip(out_types[1:], w.param_shapes() * 2):
        assert tuple(t.get_shape()) == shape and "f32" in str(t)


def test_opt_tool_parses_captured_ir_back_unchanged(tmp_path):
    """All workload captures and op captures through the `trainkernel-opt`
    executable (one process, --split-input-file)."""
    captures = [captured_workload(n, d) for n, d in WORKLOAD_IDS] + [captured_case(c.id) for c in CASES]
    texts = [str(c) for c in captures]
    path = tmp_path / "captured.mlir"
    path.write_text("\n// -----\n".join(texts))
    exe = shutil.which("trainkernel-opt") or str(Path(sys.executable).with_name("trainkernel-opt"))
    assert Path(exe).exists(), "the trainkernel-opt console script is not installed"
    cmd = [exe]
    proc = subprocess.run([*cmd, "--split-input-file", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    outs = proc.stdout.split("// -----")
    assert len(outs) == len(texts)
    for out, text in zip(outs, texts):
        assert out.strip() == text.strip()


def test_generic_form_parses_to_the_same_module():
    c = captured_workload("tiny", "bf16")
    generic = print_module(c.module, generic=True)
    assert '"tk.matmul"' in generic
    assert print_module(parse_module(generic)) == str(c)
