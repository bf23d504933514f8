"""Special values (NaN, ±inf, -0.0, subnormals, near-overflow) through every tk op
on the CPU, against eager PyTorch (issue 12, item 4; the GPU half runs the
same inputs through the kernel and is the device suite's).

Each case is a small function whose capture holds the op under test. It runs
on inputs that pair every special value with every other one (12 x 12
matrices), in f32, bf16 and f16, and is checked at every level the compiler
has: the captured tk function, the tk stage after the tk passes (canonicalize,
decompose, cse, fusion: a rewrite such as `x * 0 -> 0` would show here), and
the sched.program and tile.kernel run by the buffer interpreter. Equality is
bit for bit, signed zeros included; any NaN matches any NaN.

`test_every_tk_op_is_covered` fails when the tk dialect grows an op no case
exercises.

The activations (tanh, sigmoid, SiLU, GELU erf/tanh, softplus, leaky_relu,
ELU/SELU/CELU, abs, sign, rsqrt) run with their backward as autodiff makes
it; comparisons and selects with NaN (compares false) and -0.0 (== 0.0).

The relu-backward case also guards a fixed printer bug (issue 12): the CUDA
expression was `out > 0 ? grad : 0`, which zeroes the gradient where `out` is
NaN, while the interpreter and eager (`threshold_backward`: `out <= 0 ? 0 :
grad`) pass it. A test greps the emitted CUDA (grid and resident kernels):
every relu-backward line has eager's form and none the NaN-dropping one. The
GPU half (tests/test_special_values_cuda.py) runs these cases through the
compiled kernels.
"""

from __future__ import annotations

import functools
import math
import re

import pytest
import torch
from torch.utils import _pytree as pytree
from xdsl.dialects import builtin

import trainkernel
import trainkernel.frontend
from trainkernel.dialects import sched, tk
from trainkernel.interpreter import interpret
from trainkernel.pipeline import run_passes, stage_passes

SPECIAL = [math.nan, -math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.0, 1e-40, 3e38]
N = len(SPECIAL)
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def pairs(dtype):
    """a[i, j] = SPECIAL[i], b[i, j] = SPECIAL[j]: every ordered pair once."""
    t = torch.tensor(SPECIAL, dtype=torch.float32)
    return t.repeat_interleave(N).reshape(N, N).to(dtype), t.repeat(N).reshape(N, N).to(dtype)


def vector(dtype):
    return torch.tensor(SPECIAL, dtype=torch.float32).flip(0).to(dtype)


def _with_grad(f, a, b):
    """f(a) and the gradient of sum(f(a) * b) with respect to a."""
    return (f(a), torch.func.grad(lambda x: (f(x) * b).sum())(a))


# name -> (function, arguments(dtype), tk ops it must produce)
CASES = {
    "add": (lambda a, b: (a + b,), pairs, {"tk.add"}),
    "sub": (lambda a, b: (a - b,), pairs, {"tk.sub"}),
    "mul": (lambda a, b: (a * b,), pairs, {"tk.mul"}),
    "div": (lambda a, b: (a / b,), pairs, {"tk.div"}),
    "maximum": (lambda a, b: (torch.maximum(a, b),), pairs, {"tk.maximum"}),
    "minimum": (lambda a, b: (torch.minimum(a, b),), pairs, set()),
    "clamp": (lambda a, b: (torch.clamp(a, -1.0, 1.0),), pairs, set()),
    "neg": (lambda a, b: (-a,), pairs, {"tk.neg"}),
    "relu": (lambda a, b: (torch.relu(a),), pairs, {"tk.relu"}),
    "exp": (lambda a, b: (torch.exp(a),), pairs, {"tk.exp"}),
    "log": (lambda a, b: (torch.log(a),), pairs, {"tk.log"}),
    "sqrt": (lambda a, b: (torch.sqrt(a),), pairs, {"tk.sqrt"}),
    "relu_backward": (lambda a, b: (torch.ops.aten.threshold_backward.default(a, b, 0.0),), pairs, {"tk.relu_grad"}),
    "relu_grad_by_autodiff": (
        lambda a, b: torch.func.grad(lambda x: (torch.relu(x) * b).sum())(a),
        pairs, {"tk.relu_grad"},
    ),
    "pow2": (lambda a, b: (a ** 2,), pairs, {"tk.pow"}),
    "pow3": (lambda a, b: (a ** 3.0,), pairs, {"tk.pow"}),
    "pow_half": (lambda a, b: (a ** 0.5,), pairs, {"tk.pow"}),
    "pow_minus1": (lambda a, b: (a ** -1.0,), pairs, {"tk.pow"}),
    "to_f32": (lambda a, b: (a.float(),), pairs, set()),
    "to_bf16": (lambda a, b: (a.float().bfloat16(),), pairs, {"tk.cast"}),
    "to_f16": (lambda a, b: (a.float().half(),), pairs, {"tk.cast"}),
    # Wrapped scalars and constants with signed zeros and units: a rewrite such as
    # x * 0 -> 0, x + 0 -> x or x * 1 -> x would be wrong for NaN, inf or -0.0.
    "scalars": (lambda a, b: (a * 0.0, a * -0.0, a + 0.0, a - 0.0, a + (-0.0), a - (-0.0), a * 1.0, a / 1.0,
                              a * -1.0, 0.0 - a, a ** 1.0), pairs, {"tk.fill"}),
    "constants": (lambda a, b: (a + torch.full((N, N), -0.0, dtype=a.dtype, device=a.device),
                                a * torch.zeros(N, dtype=a.dtype, device=a.device),
                                a * torch.full((N,), torch.finfo(a.dtype).max, dtype=a.dtype, device=a.device)),
                  pairs, {"tk.fill"}),
    "matmul": (lambda a, b: (a @ b,), pairs, {"tk.matmul"}),
    "matmul_t": (lambda a, b: (a.t() @ b, a @ b.t()), pairs, {"tk.matmul"}),
    "addmm": (lambda a, b, c: (torch.addmm(c, a, b),), lambda d: (*pairs(d), vector(d)), {"tk.addmm"}),
    "bias_add_broadcast": (lambda a, b, c: (a + c, c * b),
                           lambda d: (*pairs(d), vector(d)), {"tk.add", "tk.mul"}),
    "sum": (lambda a, b: (a.sum(0), a.sum(1), b.sum(), a.sum(1, keepdim=True)), pairs, {"tk.sum"}),
    "mean": (lambda a, b: (a.mean(0), b.mean(1), a.mean()), pairs, {"tk.mean"}),
    "amax": (lambda a, b: (a.amax(0), b.amax(1), a.amax()), pairs, {"tk.max"}),
    "argmax": (lambda a, b: (a.argmax(0), b.argmax(1), a.argmax(1, keepdim=True)), pairs, {"tk.argmax"}),
    "reshape": (lambda a, b: (a.reshape(N * N), b.reshape(4, -1)), pairs, {"tk.reshape"}),
    "transpose": (lambda a, b: (a.t() + b,), pairs, {"tk.transpose"}),
    "expand": (lambda a, b, c: (c.expand(N, N) * a,), lambda d: (*pairs(d), vector(d)), {"tk.expand"}),
    "slice": (lambda a, b: (a[1:9:2] + b[0:4],), pairs, {"tk.slice"}),
    # Activation backwards through autodiff alone, and abs/sign together (the forward
    # cases, with their backward, follow below).
    "tanh_grad_by_autodiff": (lambda a, b: torch.func.grad(lambda x: (torch.tanh(x) * b).sum())(a), pairs, {"tk.tanh_grad"}),
    "sigmoid_grad_by_autodiff": (lambda a, b: torch.func.grad(lambda x: (torch.sigmoid(x) * b).sum())(a), pairs, {"tk.sigmoid_grad"}),
    "gelu_grad_by_autodiff": (lambda a, b: torch.func.grad(lambda x: (torch.nn.functional.gelu(x) * b).sum())(a), pairs, {"tk.gelu_grad"}),
    "softplus_grad_by_autodiff": (lambda a, b: torch.func.grad(lambda x: (torch.nn.functional.softplus(x) * b).sum())(a), pairs, {"tk.softplus_grad"}),
    "leaky_relu_grad_by_autodiff": (lambda a, b: torch.func.grad(lambda x: (torch.nn.functional.leaky_relu(x) * b).sum())(a), pairs, {"tk.leaky_relu_grad"}),
    "elu_grad_by_autodiff": (lambda a, b: torch.func.grad(lambda x: (torch.nn.functional.elu(x) * b).sum())(a), pairs, {"tk.elu_grad"}),
    "abs_sign": (lambda a, b: (torch.abs(a), torch.sign(a)), pairs, {"tk.abs", "tk.sign"}),
    "mse": (lambda a, b: (((a - b) ** 2).mean(),), pairs, set()),
    # activations, and their backward as autodiff produces it (grad = b)
    "abs": (lambda a, b: (torch.abs(a),), pairs, {"tk.abs"}),
    "sign": (lambda a, b: (torch.sign(a),), pairs, {"tk.sign"}),
    "rsqrt": (lambda a, b: (torch.rsqrt(a),), pairs, {"tk.rsqrt"}),
    "tanh": (lambda a, b: _with_grad(torch.tanh, a, b), pairs, {"tk.tanh", "tk.tanh_grad"}),
    "sigmoid": (lambda a, b: _with_grad(torch.sigmoid, a, b), pairs, {"tk.sigmoid", "tk.sigmoid_grad"}),
    "silu": (lambda a, b: _with_grad(torch.nn.functional.silu, a, b), pairs, {"tk.silu"}),
    "gelu": (lambda a, b: _with_grad(torch.nn.functional.gelu, a, b), pairs, {"tk.gelu", "tk.gelu_grad"}),
    "gelu_tanh": (lambda a, b: _with_grad(lambda x: torch.nn.functional.gelu(x, approximate="tanh"), a, b),
                  pairs, {"tk.gelu", "tk.gelu_grad"}),
    "softplus": (lambda a, b: _with_grad(torch.nn.functional.softplus, a, b), pairs, {"tk.softplus", "tk.softplus_grad"}),
    "leaky_relu": (lambda a, b: _with_grad(lambda x: torch.nn.functional.leaky_relu(x, 0.01), a, b),
                   pairs, {"tk.leaky_relu", "tk.leaky_relu_grad"}),
    "elu": (lambda a, b: _with_grad(torch.nn.functional.elu, a, b), pairs, {"tk.elu", "tk.elu_grad"}),
    "selu": (lambda a, b: _with_grad(torch.selu, a, b), pairs, {"tk.elu", "tk.elu_grad"}),
    "celu": (lambda a, b: _with_grad(lambda x: torch.celu(x, 0.5), a, b), pairs, {"tk.elu", "tk.elu_grad"}),
    # comparisons and selects (NaN compares false; -0.0 == 0.0)
    "where": (lambda a, b: (torch.where(a > b, a, b), torch.where(a == b, b, a)), pairs, {"tk.cmp", "tk.select"}),
    "masked_fill": (lambda a, b: (a.masked_fill(b < a, -0.0), a.masked_fill(a != a, 1.0)), pairs, {"tk.select"}),
    "compare": (lambda a, b: (a < b, a <= b, a == b, a != b, a >= b, a > b), pairs, {"tk.cmp"}),
    "iota": (lambda a, b: (a * torch.arange(N, dtype=a.dtype, device=a.device), b + torch.arange(N, dtype=b.dtype, device=b.device)), pairs, {"tk.iota"}),
    "fused_chain": (lambda a, b: (torch.relu(a * b + a) - b,), pairs, {"tk.fused"}),
}

LEVELS = ("captured", "tk", "sched", "tile")


def same(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """Elementwise: equal bits, or both NaN."""
    if not want.is_floating_point():
        return got == want
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[want.element_size()]
    g, w = got.contiguous(), want.contiguous()
    return (g.view(bits) == w.view(bits)) | (g.isnan() & w.isnan())


def op_names(module: builtin.ModuleOp) -> set[str]:
    return {op.name for op in module.walk() if op.name.startswith("tk.")}


@functools.cache
def lowered(case: str, dtype: str):
    fn, make, _ = CASES[case]
    args = make(DTYPES[dtype])
    captured = trainkernel.capture(fn, args)
    stages = {}
    module = captured.module.clone()
    for stage in ("tk", "sched", "tile"):
        run_passes(module, stage_passes(stage, False))
        stages[stage] = module.clone()
    return captured, stages, args


def run_level(level: str, captured, stages, args):
    flat = pytree.tree_leaves(args)
    if level == "captured":
        return pytree.tree_leaves(interpret(captured, *args))
    if level == "tk":
        return list(interpret(stages["tk"], *flat))
    return list(interpret(stages[level], *flat))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", list(CASES))
def test_special_values_match_eager_at_every_level(case, dtype):
    fn, _, must = CASES[case]
    captured, stages, args = lowered(case, dtype)
    want = pytree.tree_leaves(fn(*args))
    names = op_names(captured.module) | op_names(stages["tk"])
    assert must <= names, f"{case}: expected {sorted(must)} in the IR, found {sorted(names)}"
    for level in LEVELS:
        got = run_level(level, captured, stages, args)
        assert len(got) == len(want), level
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype and g.shape == w.shape, (level, k, g.dtype, w.dtype, g.shape, w.shape)
            ok = same(g, w)
            if not bool(ok.all()):
                bad = (~ok).nonzero()[:6].tolist()
                inputs = [[a[tuple(i)].item() if a.dim() == 2 and len(i) == 2 else None for a in pytree.tree_leaves(args)]
                          for i in bad]
                pytest.fail(f"{case} {dtype}, {level} level, result {k}: {int((~ok).sum())} of {ok.numel()} differ; "
                            f"at {bad}: got {g[~ok][:6].tolist()}, eager {w[~ok][:6].tolist()} (inputs {inputs})")


# Ops no captured step holds (a tile pass makes them), each with its own test here.
TILE_ONLY = {"tk.column_partials": "test_column_partials_on_special_values"}


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_column_partials_on_special_values(dtype):
    """tk.column_partials (tile-column-partials puts it in wgmma gemm bodies) through the
    interpreters' op table on the 12 x 12 pairs, runs of 5 rows (the last of 2): each partial
    is the row-order fp32 sum of its run from +0.0, NaN and infinities propagating as eager's
    one add at a time."""
    from xdsl.dialects.builtin import TensorType
    from xdsl.ir import Block

    from trainkernel.elements import from_torch
    from trainkernel.numerics import Interpreter

    a, b = pairs(DTYPES[dtype])
    x = a * b if dtype == "f32" else (a.float() * b.float()).to(DTYPES[dtype])
    block = Block(arg_types=[TensorType(from_torch(x.dtype).ir, list(x.shape))])
    (got,) = Interpreter().eval_op(tk.ColumnPartialsOp(block.args[0], 5), [x])
    want = torch.zeros(3, N, dtype=torch.float32)
    for r in range(3):
        for i in range(5 * r, min(5 * r + 5, N)):
            want[r] = want[r] + x[i].float()
    assert bool(same(got, want).all()), (got, want)


def test_every_tk_op_is_covered():
    seen: set[str] = set(TILE_ONLY)
    for case in CASES:
        captured, stages, _ = lowered(case, "f32")
        seen |= op_names(captured.module) | op_names(stages["tk"]) | op_names(stages["sched"])
    every = {op.name for op in tk.TK.operations}
    assert every - seen <= {"tk.yield"} or every - seen == set(), f"no special-value case for {sorted(every - seen)}"
    assert "tk.yield" in seen


def test_the_inputs_hold_every_special_value():
    a, b = pairs(torch.float32)
    assert a.isnan().any() and a.isposinf().any() and a.isneginf().any()
    assert bool(((a == 0) & torch.signbit(a)).any()) and bool(((a == 0) & ~torch.signbit(a)).any())
    assert bool(((a != 0) & (a.abs() < torch.finfo(torch.float32).tiny)).any())  # a subnormal
    assert bool(same(a.t(), b).all())


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_constants_are_a_clear_error(value):
    """A limitation, not a miscompile: tk.fill holds finite values only, and a
    step with a NaN or inf constant is refused naming the op and the line."""
    with pytest.raises(trainkernel.frontend.UnsupportedOpError, match=r"non-finite constant .*tk.fill needs a finite"):
        trainkernel.capture(lambda a: (a * value,), (torch.ones(4),))


def _relu_backward_lines(resident: str) -> list[str]:
    """The per-element C lines of the relu-backward kernel (grid or resident)."""
    from trainkernel.backend.cuda_target import emit_cuda

    fn, make, _ = CASES["relu_backward"]
    captured = trainkernel.capture(fn, make(torch.float32))
    module = captured.module.clone()
    for stage in ("tk", "sched", "tile"):
        run_passes(module, stage_passes(stage, False, resident=resident))
    return [l.strip() for l in emit_cuda(module).splitlines() if "const float v" in l and len(_OPERAND.findall(l)) >= 2]


# An operand of the per-element line: a load (resident kernels, epilogues) or a
# grid map's preloaded element (`tk_l<k>[u]`, loaded before any store).
_OPERAND = re.compile(r"tk::to_float\(\w+\[[^\]]*\]\)|tk_l\d+\[u\]")
_X = _OPERAND.pattern
_NAN_DROPPING = re.compile(rf"\(\((?:{_X})\) > 0\.0f \? \((?:{_X})\) : 0\.0f\)")
_THRESHOLD_BACKWARD = re.compile(rf"\(\((?:{_X})\) <= 0\.0f \? 0\.0f : \((?:{_X})\)\)")


@pytest.mark.parametrize("resident", ["off", "auto"])
def test_the_relu_backward_kernel_has_a_per_element_line(resident):
    """Keeps the test below honest: it greps these lines, so if the printer's
    format changes this fails (and the grep must follow)."""
    assert _relu_backward_lines(resident)


@pytest.mark.parametrize("resident", ["off", "auto"])
def test_printed_relu_backward_passes_the_gradient_where_out_is_nan(resident):
    """threshold_backward's `out <= 0 ? 0 : grad` (NaN out: grad), never `out > 0 ? grad : 0` (NaN out: 0)."""
    lines = _relu_backward_lines(resident)
    buggy = [l for l in lines if _NAN_DROPPING.search(l)]
    assert not buggy, f"NaN-dropping relu backward: {buggy[0]}"
    assert all(_THRESHOLD_BACKWARD.search(l) for l in lines), lines
