"""The tk pass set keeps programs' values: a hypothesis property test.

For random valid tk programs (tests/tk_program_gen.py) the CPU interpreter
gives the same outputs before and after each of canonicalize, cse, dce and
tk-decompose and tk-legalize-masks, and after all of them in sequence. The comparison is
*bit-exact* (NaN compares equal to NaN, signed zeros are distinguished) for
every pass: each pattern is meant to keep values exactly (see the pass
docstrings), with one documented exception: tk-decompose's addmm rewrite,
where PyTorch's CPU addmm lets the BLAS accumulate the products into the bias
(C with beta = 1), an order a separate add cannot reproduce. The
exact tests therefore draw programs without addmm, and addmm's decomposition
has its own property test with an f32-reassociation error bound.

Every generated program also round-trips through print -> parse (custom and
generic form) to the same text.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from xdsl.dialects.builtin import Float16Type, i1

sys.path.insert(0, os.path.dirname(__file__))

from tk_program_gen import GenProgram, addmm_programs, tk_programs  # noqa: E402

from trainkernel import elements  # noqa: E402
from trainkernel.dialects import make_context, tk  # noqa: E402
from trainkernel.interpreter import interpret  # noqa: E402
from trainkernel.ir import parse_module, print_module  # noqa: E402
from trainkernel.passes import PASSES  # noqa: E402

EXAMPLES = int(os.environ.get("TK_HYPOTHESIS_EXAMPLES", "70"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def assert_bit_equal(got: torch.Tensor, want: torch.Tensor, what: str = "") -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    if not want.is_floating_point():
        assert torch.equal(got, want), f"{what}: {got} != {want}"
        return
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[want.element_size()]
    g, w = got.contiguous(), want.contiguous()
    same = (g.view(bits) == w.view(bits)) | (g.isnan() & w.isnan())
    if not bool(same.all()):
        bad = (~same).nonzero()[:5].tolist()
        raise AssertionError(
            f"{what}: values differ at {bad}: got {g[~same][:5].tolist()}, want {w[~same][:5].tolist()}"
        )


def assert_same_outputs(got, want, what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs != {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert_bit_equal(g, w, f"{what}, output #{i}")


def run_passes(text: str, names: list[str]):
    module = parse_module(text)
    ctx = make_context()
    for name in names:
        PASSES[name]()().apply(ctx, module)
        module.verify()
    return module


def check_pipeline(program: GenProgram, names: list[str]):
    text = print_module(program.module)
    want = interpret(program.module, *program.args)
    after = run_passes(text, names)
    got = interpret(after, *program.args)
    assert_same_outputs(got, want, f"after {','.join(names)} on\n{text}\n->\n{print_module(after)}")
    return after


@pytest.mark.parametrize("pipeline", ["canonicalize", "cse", "dce", "tk-legalize-masks"])
@SETTINGS
@given(program=tk_programs())
def test_pass_keeps_values(pipeline: str, program: GenProgram):
    check_pipeline(program, [pipeline])


@SETTINGS
@given(program=tk_programs(addmm=False))
def test_decompose_keeps_values(program: GenProgram):
    check_pipeline(program, ["tk-decompose"])


def ulp(x: torch.Tensor) -> torch.Tensor:
    """The spacing of x's dtype at |x| (as f64)."""
    info = torch.finfo(x.dtype)
    mag = x.double().abs().clamp_min(info.tiny)
    return torch.exp2(torch.floor(torch.log2(mag))) * info.eps


@SETTINGS
@given(program=addmm_programs())
def test_decompose_addmm_within_reassociation_error(program: GenProgram):
    """addmm -> matmul + add (f32: `mm + bias`; bf16/f16: f32 matmul of the
    upcast operands, f32 add, one rounding). PyTorch's CPU addmm lets the BLAS
    accumulate the products into the bias (C with beta = 1), so the bound is
    f32 reassociation error plus one ulp of a low-precision result:
    |got - want| <= ulp_out(want) + (K + 2) * eps_f32 * (|bias| + |a| @ |b|)."""
    bias, a, b = program.args
    (want,) = interpret(program.module, *program.args)
    after = run_passes(print_module(program.module), ["tk-decompose", "canonicalize", "cse"])
    (got,) = interpret(after, *program.args)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_within_addmm_bound(got, want, bias, a, b, str(program))


def assert_within_addmm_bound(got, want, bias, a, b, what=""):
    k = a.shape[1]
    scale = bias.double().abs() + a.double().abs() @ b.double().abs()
    bound = (k + 2) * torch.finfo(torch.float32).eps * scale
    if want.dtype != torch.float32:
        bound = bound + ulp(want)
    err = (got.double() - want.double()).abs()
    assert bool((err <= bound).all()), f"error {err.max().item()} above bound\n{what}"


@SETTINGS
@given(program=tk_programs(addmm=False))
def test_all_passes_in_sequence_keep_values(program: GenProgram):
    after = check_pipeline(
        program, ["canonicalize", "cse", "tk-decompose", "tk-legalize-masks", "canonicalize", "cse", "dce"]
    )
    returned = set(after.body.block.first_op.body.block.last_op.operands)
    for op in after.walk():
        assert not isinstance(op, (tk.MeanOp, tk.AddmmOp)), f"{op.name} survived tk-decompose"
        if op.name.startswith("tk.") and not isinstance(op, tk.CastOp):
            # No i1 value is left inside, except a mask compared back for a result.
            for r in op.results:
                assert tk.element_type_of(r) != i1 or r in returned, f"{op.name} still makes an i1 value"


@SETTINGS
@given(program=tk_programs())
def test_decompose_leaves_only_core_ops(program: GenProgram):
    after = run_passes(print_module(program.module), ["tk-decompose"])
    for op in after.walk():
        assert not isinstance(op, (tk.MeanOp, tk.AddmmOp)), f"{op.name} survived tk-decompose"
        if isinstance(op, tk.PowOp):
            e = op.exponent_value
            f16 = isinstance(tk.element_type_of(op.result), Float16Type)
            assert e not in (0.0, 1.0, 2.0, -1.0) and (e != 0.5 or f16), f"pow {e} survived"


@SETTINGS
@given(program=tk_programs())
def test_print_parse_round_trip(program: GenProgram):
    text = print_module(program.module)
    again = parse_module(text)
    assert print_module(again) == text
    generic = print_module(program.module, generic=True)
    assert print_module(parse_module(generic)) == text
    assert print_module(parse_module(generic), generic=True) == generic
    # And the parsed program computes the same thing.
    assert_same_outputs(interpret(again, *program.args), interpret(program.module, *program.args), "re-parsed")


# ------------------------------------------------------ targeted pass checks

HEADER = "func.func @main({args}) -> ({rets}) {{\n{body}\n}}"


def _ir(args: str, rets: str, body: str) -> str:
    return HEADER.format(args=args, rets=rets, body=body)


def _names(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("tk.")]


def test_canonicalize_removes_identities_and_is_exact_on_signed_zero():
    text = _ir(
        "%x: tensor<4xbf16>",
        "tensor<4xbf16>, tensor<4xbf16>",
        """  %mz = tk.fill -0.0 : tensor<f32>
  %pz = tk.fill 0.0 : tensor<f32>
  %one = tk.fill 1.0 : tensor<4xbf16>
  %a = tk.add %x, %mz : (tensor<4xbf16>, tensor<f32>) -> tensor<4xbf16>
  %b = tk.mul %a, %one : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %c = tk.add %x, %pz : (tensor<4xbf16>, tensor<f32>) -> tensor<4xbf16>
  func.return %b, %c : tensor<4xbf16>, tensor<4xbf16>""",
    )
    after = run_passes(text, ["canonicalize"])
    assert _names(after) == ["tk.fill", "tk.add"]  # x + 0.0 kept: -0.0 + 0.0 = +0.0
    x = torch.tensor([-0.0, 0.0, 1.5, -2.0], dtype=torch.bfloat16)
    assert_same_outputs(interpret(after, x), interpret(parse_module(text), x), "canonicalize")


def test_decompose_mean_matches_torch_bitwise():
    text = _ir(
        "%x: tensor<7x13xbf16>",
        "tensor<7xbf16>",
        """  %m = tk.mean %x axes [1] : tensor<7x13xbf16> -> tensor<7xbf16>
  func.return %m : tensor<7xbf16>""",
    )
    after = run_passes(text, ["tk-decompose"])
    assert "tk.mean" not in _names(after)
    x = torch.randn(7, 13, dtype=torch.bfloat16)
    (got,) = interpret(after, x)
    assert_bit_equal(got, torch.mean(x, dim=1), "mean")


@pytest.mark.parametrize("k", [32, 64])
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_decompose_addmm_against_torch_addmm(dtype, k):
    """Not bit-exact (the CPU BLAS accumulates into the bias): within the
    reassociation bound of test_decompose_addmm_within_reassociation_error."""
    tdt = elements.from_name(dtype).torch
    text = _ir(
        f"%b: tensor<24x{dtype}>, %x: tensor<16x{k}x{dtype}>, %w: tensor<{k}x24x{dtype}>",
        f"tensor<16x24x{dtype}>",
        f"""  %r = tk.addmm %b, %x, %w : (tensor<24x{dtype}>, tensor<16x{k}x{dtype}>, tensor<{k}x24x{dtype}>) -> tensor<16x24x{dtype}>
  func.return %r : tensor<16x24x{dtype}>""",
    )
    after = run_passes(text, ["tk-decompose"])
    assert "tk.addmm" not in _names(after)
    gen = torch.Generator().manual_seed(k)
    b, x, w = (torch.randn(s, generator=gen).to(tdt) for s in ((24,), (16, k), (k, 24)))
    (got,) = interpret(after, b, x, w)
    want = torch.addmm(b, x, w)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_within_addmm_bound(got, want, b, x, w)


# ------------------------------------------- a captured training step end to end


def test_passes_keep_a_captured_mixed_precision_step_bit_exact():
    """capture -> canonicalize, cse, tk-decompose, dce -> interpret equals eager."""
    trainkernel = pytest.importorskip("trainkernel")
    from torch.func import grad_and_value
    from torch.utils import _pytree as pytree

    def loss_fn(p, x, y):
        h = torch.relu(x @ p["w1"] + p["b1"])
        o = (h.to(torch.bfloat16) @ p["w2"].to(torch.bfloat16)).float()
        return ((o - y) ** 2).mean()

    def step(p, x, y):
        g, loss = grad_and_value(loss_fn)(p, x, y)
        return {k: p[k] - 0.01 * g[k] for k in p}, loss

    gen = torch.Generator().manual_seed(0)
    p = {k: torch.randn(s, generator=gen) for k, s in (("w1", (8, 16)), ("b1", (16,)), ("w2", (16, 4)))}
    x, y = torch.randn(5, 8, generator=gen), torch.randn(5, 4, generator=gen)
    captured = trainkernel.capture(step, (p, x, y))
    after = run_passes(print_module(captured.module), ["canonicalize", "cse", "tk-decompose", "canonicalize", "cse", "dce"])
    got = interpret(after, *pytree.tree_leaves((p, x, y)))
    want = pytree.tree_leaves(step(p, x, y))
    assert_same_outputs(got, want, "captured step after the tk pass set")


POW_EDGE_VALUES = [-0.0, 0.0, float("inf"), float("-inf"), float("nan"), 4.0, 2.25, -1.0, 1e-3]


@pytest.mark.parametrize("exponent", [0.5, 2.0, -1.0, 1.0, 0.0, 3.0])
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_pow_special_exponents_match_torch_at_signed_zero_inf_and_nan(dtype, exponent):
    """The pow special cases (canonicalize: exponents 1 and 0; tk-decompose: 2, -1,
    and 0.5 except in f16, where PyTorch's powf(-0, 0.5) = +0 and sqrt(-0) = -0)
    give torch.pow's bits, signed zeros included, through the interpreter."""
    text = _ir(f"%x: tensor<9x{dtype}>", f"tensor<9x{dtype}>",
               f"  %p = tk.pow %x, {exponent!r} : tensor<9x{dtype}>\n  func.return %p : tensor<9x{dtype}>")
    x = torch.tensor(POW_EDGE_VALUES, dtype=elements.from_name(dtype).torch)
    want = torch.pow(x, exponent)
    for names in (["canonicalize"], ["tk-decompose"], ["canonicalize", "tk-decompose", "canonicalize"]):
        (got,) = interpret(run_passes(text, names), x)
        assert_bit_equal(got, want, f"pow(x, {exponent}) {dtype} after {names}")


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_printer_prints_pow_half_as_sqrtf_in_every_dtype(dtype):
    """ATen's CUDA pow takes sqrt for pow(x, 0.5) in every float dtype (the H200
    special-value test: eager f16 gives NaN at -inf, where powf gives +inf), so
    the printer prints sqrtf even in f16, where tk-decompose keeps the pow
    because eager CPU (the interpreter's contract) calls powf there."""
    from trainkernel.backend.cuda_target import emit_cuda
    from trainkernel.pipeline import pass_pipeline
    from trainkernel.pipeline import run_passes as run_spec

    text = _ir(f"%x: tensor<8x{dtype}>", f"tensor<8x{dtype}>",
               f"  %p = tk.pow %x, 0.5 : tensor<8x{dtype}>\n  func.return %p : tensor<8x{dtype}>")
    module = parse_module(text)
    run_spec(module, pass_pipeline("tile"))
    source = emit_cuda(module)
    assert "sqrtf(" in source and "powf(" not in source
