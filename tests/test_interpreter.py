"""The CPU reference interpreter against PyTorch, op by op, bit for bit."""

from __future__ import annotations

import types

import pytest
import torch
from torch.utils import _pytree as pytree

from trainkernel.dialects import tk
from trainkernel.interpreter import interpret
from trainkernel.numerics import (
    DEFAULT,
    TK_OP_TABLE,
    Interpreter,
    InterpreterError,
    eval_tk_op,
    run_block,
    torch_dtype,
)
from trainkernel.ir import parse_module
from trainkernel.workloads import COMPUTE_DTYPES as DTYPES  # f32, bf16, f16


def bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape and bits (NaN == NaN; +0 and -0 differ)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    a, b = a.contiguous(), b.contiguous()
    return bool(((a.view(ints) == b.view(ints)) | (a.isnan() & b.isnan())).all())


def run(args: str, rets: str, body: str, *tensors):
    module = parse_module(f"func.func @main({args}) -> ({rets}) {{\n{body}\n}}")
    return interpret(module, *tensors)


def randn(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * 2).to(dtype)


# ------------------------------------------------------------ elementwise

BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_with_broadcast(name, dt):
    x, y = randn(4, 8, dtype=DTYPES[dt]), randn(8, dtype=DTYPES[dt], seed=1)
    (r,) = run(
        f"%x: tensor<4x8x{dt}>, %y: tensor<8x{dt}>",
        f"tensor<4x8x{dt}>",
        f"""  %r = tk.{name} %x, %y : (tensor<4x8x{dt}>, tensor<8x{dt}>) -> tensor<4x8x{dt}>
  func.return %r : tensor<4x8x{dt}>""",
        x,
        y,
    )
    assert bits_equal(r, BINARY[name](x, y))


def test_binary_broadcast_both_ways():
    x, y = randn(4, 1), randn(1, 5, seed=1)
    (r,) = run(
        "%x: tensor<4x1xf32>, %y: tensor<1x5xf32>",
        "tensor<4x5xf32>",
        """  %r = tk.sub %y, %x : (tensor<1x5xf32>, tensor<4x1xf32>) -> tensor<4x5xf32>
  func.return %r : tensor<4x5xf32>""",
        x,
        y,
    )
    assert bits_equal(r, y - x)


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_rank0_scalar_of_other_type_is_a_wrapped_number(name, dt):
    """A rank-0 f32 operand next to a bf16 tensor behaves as a Python float in
    eager PyTorch (`x * 0.1`): the result stays bf16."""
    x = randn(64, dtype=DTYPES[dt])
    s = torch.tensor(0.1234567, dtype=torch.float32)
    (right, left) = run(
        f"%x: tensor<64x{dt}>, %s: tensor<f32>",
        f"tensor<64x{dt}>, tensor<64x{dt}>",
        f"""  %r = tk.{name} %x, %s : (tensor<64x{dt}>, tensor<f32>) -> tensor<64x{dt}>
  %l = tk.{name} %s, %x : (tensor<f32>, tensor<64x{dt}>) -> tensor<64x{dt}>
  func.return %r, %l : tensor<64x{dt}>, tensor<64x{dt}>""",
        x,
        s,
    )
    fn = BINARY[name]
    assert bits_equal(right, fn(x, 0.1234567))
    assert bits_equal(left, fn(0.1234567, x))


def test_mul_scalar_keeps_f32_scalar_precision_for_bf16():
    # PyTorch's CPU mul uses the scalar in f32 (opmath): rounding it to bf16
    # first would give a different answer for some inputs.
    x = randn(256, dtype=torch.bfloat16)
    (r,) = run(
        "%x: tensor<256xbf16>, %s: tensor<f32>",
        "tensor<256xbf16>",
        """  %r = tk.mul %x, %s : (tensor<256xbf16>, tensor<f32>) -> tensor<256xbf16>
  func.return %r : tensor<256xbf16>""",
        x,
        torch.tensor(0.1234567),
    )
    assert bits_equal(r, (x.float() * torch.tensor(0.1234567)).bfloat16())


def test_two_scalars_result_type_of_one_operand():
    a = torch.tensor(1.3, dtype=torch.bfloat16)
    b = torch.tensor(0.1234567, dtype=torch.float32)
    (r,) = run(
        "%a: tensor<bf16>, %b: tensor<f32>",
        "tensor<bf16>",
        """  %r = tk.add %a, %b : (tensor<bf16>, tensor<f32>) -> tensor<bf16>
  func.return %r : tensor<bf16>""",
        a,
        b,
    )
    assert bits_equal(r, torch.add(a, 0.1234567))


def test_maximum_propagates_nan():
    x = torch.tensor([1.0, float("nan"), -2.0])
    y = torch.tensor([0.0, 0.0, float("nan")])
    (r,) = run(
        "%x: tensor<3xf32>, %y: tensor<3xf32>",
        "tensor<3xf32>",
        """  %r = tk.maximum %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>""",
        x,
        y,
    )
    assert bits_equal(r, torch.maximum(x, y)) and r[1].isnan() and r[2].isnan()


UNARY = {"neg": torch.neg, "relu": torch.relu, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, dt):
    x = randn(3, 5, dtype=DTYPES[dt])
    (r,) = run(
        f"%x: tensor<3x5x{dt}>",
        f"tensor<3x5x{dt}>",
        f"""  %r = tk.{name} %x : tensor<3x5x{dt}>
  func.return %r : tensor<3x5x{dt}>""",
        x,
    )
    assert bits_equal(r, UNARY[name](x))


@pytest.mark.parametrize("dt", DTYPES)
def test_relu_grad_is_threshold_backward(dt):
    g = randn(6, dtype=DTYPES[dt])
    out = torch.tensor([0.0, -0.0, 1.0, 2.0, 0.0, float("nan")], dtype=DTYPES[dt])
    (r,) = run(
        f"%g: tensor<6x{dt}>, %o: tensor<6x{dt}>",
        f"tensor<6x{dt}>",
        f"""  %r = tk.relu_grad %g, %o : tensor<6x{dt}>
  func.return %r : tensor<6x{dt}>""",
        g,
        out,
    )
    assert bits_equal(r, torch.ops.aten.threshold_backward(g, out, 0))
    assert bits_equal(r[:4], torch.where(out[:4] > 0, g[:4], torch.zeros_like(g[:4])))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("e", [2.0, 0.5, -1.0, 3.0, 1.5, 0.0, 1.0])
def test_pow(e, dt):
    x = randn(16, dtype=DTYPES[dt]).abs()
    (r,) = run(
        f"%x: tensor<16x{dt}>",
        f"tensor<16x{dt}>",
        f"""  %r = tk.pow %x, {e!r} : tensor<16x{dt}>
  func.return %r : tensor<16x{dt}>""",
        x,
    )
    assert bits_equal(r, torch.pow(x, e))


@pytest.mark.parametrize("src", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("dst", ["f32", "bf16", "f16", "i1", "i64"])
def test_cast(src, dst):
    x = torch.tensor([0.0, -0.0, 1.5, -2.75, 3.0e4, 1.0e-3, 0.1], dtype=DTYPES[src])
    (r,) = run(
        f"%x: tensor<7x{src}>",
        f"tensor<7x{dst}>",
        f"""  %r = tk.cast %x : tensor<7x{src}> to tensor<7x{dst}>
  func.return %r : tensor<7x{dst}>""",
        x,
    )
    want_dtype = {"i1": torch.bool, "i64": torch.int64}.get(dst) or DTYPES[dst]
    assert bits_equal(r, x.to(want_dtype))


def test_cast_rounds_to_nearest_even():
    # 1 + 2^-8 is halfway between two bf16 values: ties go to the even one (1.0).
    x = torch.tensor([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8])
    (r,) = run(
        "%x: tensor<2xf32>",
        "tensor<2xbf16>",
        """  %r = tk.cast %x : tensor<2xf32> to tensor<2xbf16>
  func.return %r : tensor<2xbf16>""",
        x,
    )
    assert r.float().tolist() == [1.0, 1.0 + 2 * 2.0**-7]


@pytest.mark.parametrize("dt", DTYPES)
def test_fill(dt):
    (s, t) = run(
        "",
        f"tensor<{dt}>, tensor<2x3x{dt}>",
        f"""  %s = tk.fill 0.1 : tensor<{dt}>
  %t = tk.fill -0.0 : tensor<2x3x{dt}>
  func.return %s, %t : tensor<{dt}>, tensor<2x3x{dt}>""",
    )
    assert bits_equal(s, torch.tensor(0.1, dtype=DTYPES[dt]))
    assert bits_equal(t, torch.full((2, 3), -0.0, dtype=DTYPES[dt]))


# ---------------------------------------------------------------- matmul


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul(dt, ta, tb):
    m, k, n = 5, 7, 3
    a = randn(*((k, m) if ta else (m, k)), dtype=DTYPES[dt])
    b = randn(*((n, k) if tb else (k, n)), dtype=DTYPES[dt], seed=1)
    ashape, bshape = "x".join(map(str, a.shape)), "x".join(map(str, b.shape))
    flags = (" transpose_a" if ta else "") + (" transpose_b" if tb else "")
    (r,) = run(
        f"%a: tensor<{ashape}x{dt}>, %b: tensor<{bshape}x{dt}>",
        f"tensor<{m}x{n}x{dt}>",
        f"""  %r = tk.matmul %a, %b{flags} : (tensor<{ashape}x{dt}>, tensor<{bshape}x{dt}>) -> tensor<{m}x{n}x{dt}>
  func.return %r : tensor<{m}x{n}x{dt}>""",
        a,
        b,
    )
    assert bits_equal(r, torch.mm(a.t() if ta else a, b.t() if tb else b))


@pytest.mark.parametrize("dt", DTYPES)
def test_addmm(dt):
    bias, a, b = randn(3, dtype=DTYPES[dt]), randn(4, 6, dtype=DTYPES[dt], seed=1), randn(6, 3, dtype=DTYPES[dt], seed=2)
    (r,) = run(
        f"%c: tensor<3x{dt}>, %a: tensor<4x6x{dt}>, %b: tensor<6x3x{dt}>",
        f"tensor<4x3x{dt}>",
        f"""  %r = tk.addmm %c, %a, %b : (tensor<3x{dt}>, tensor<4x6x{dt}>, tensor<6x3x{dt}>) -> tensor<4x3x{dt}>
  func.return %r : tensor<4x3x{dt}>""",
        bias,
        a,
        b,
    )
    assert bits_equal(r, torch.addmm(bias, a, b))


# ------------------------------------------------------------ reductions


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name,fn", [("sum", torch.sum), ("mean", torch.mean), ("max", torch.amax)])
@pytest.mark.parametrize("axes,keepdim", [([1], False), ([0, 2], True), ([0, 1, 2], False)])
def test_reductions(dt, name, fn, axes, keepdim):
    x = randn(3, 4, 5, dtype=DTYPES[dt])
    shape = [1 if i in axes else d for i, d in enumerate((3, 4, 5)) if keepdim or i not in axes]
    rt = "x".join(map(str, shape)) + "x" if shape else ""
    (r,) = run(
        f"%x: tensor<3x4x5x{dt}>",
        f"tensor<{rt}{dt}>",
        f"""  %r = tk.{name} %x axes {axes}{" keepdim" if keepdim else ""} : tensor<3x4x5x{dt}> -> tensor<{rt}{dt}>
  func.return %r : tensor<{rt}{dt}>""",
        x,
    )
    assert bits_equal(r, fn(x, dim=axes, keepdim=keepdim))


def test_reduction_over_no_axes_is_identity():
    x = randn(2, 3)
    (r,) = run(
        "%x: tensor<2x3xf32>",
        "tensor<2x3xf32>",
        """  %r = tk.sum %x axes [] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>""",
        x,
    )
    assert bits_equal(r, x)


def test_argmax_first_maximum():
    x = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    (r,) = run(
        "%x: tensor<2x3xf32>",
        "tensor<2xi64>",
        """  %r = tk.argmax %x axes [1] : tensor<2x3xf32> -> tensor<2xi64>
  func.return %r : tensor<2xi64>""",
        x,
    )
    assert r.tolist() == [1, 0] and r.dtype == torch.int64


# ----------------------------------------------------------------- views


def test_views():
    x = randn(2, 3, 4)
    outs = run(
        "%x: tensor<2x3x4xf32>",
        "tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<5x2x3x4xf32>, tensor<2x2x2xf32>",
        """  %a = tk.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %b = tk.transpose %x perm [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %c = tk.expand %x : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
  %d = tk.slice %x starts [0, 1, 0] steps [1, 1, 2] : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
  func.return %a, %b, %c, %d : tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<5x2x3x4xf32>, tensor<2x2x2xf32>""",
        x,
    )
    want = (x.reshape(6, 4), x.permute(2, 0, 1), x.expand(5, 2, 3, 4), x[:, 1:3, 0:4:2])
    for got, w in zip(outs, want):
        assert bits_equal(got, w)


def test_expand_size_one_axes():
    x = randn(3, 1)
    (r,) = run(
        "%x: tensor<3x1xf32>",
        "tensor<2x3x4xf32>",
        """  %r = tk.expand %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>""",
        x,
    )
    assert bits_equal(r, x.expand(2, 3, 4))


# ----------------------------------------------------------------- fused


def test_fused_runs_its_body():
    a, b = randn(4, dtype=torch.bfloat16), randn(4, dtype=torch.bfloat16, seed=1)
    (r, s) = run(
        "%a: tensor<4xbf16>, %b: tensor<4xbf16>",
        "tensor<4xbf16>, tensor<4xbf16>",
        """  %r, %s = tk.fused %a, %b : (tensor<4xbf16>, tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xbf16>) {
  ^bb0(%x: tensor<4xbf16>, %y: tensor<4xbf16>):
    %h = tk.fill 0.5 : tensor<f32>
    %m = tk.mul %x, %h : (tensor<4xbf16>, tensor<f32>) -> tensor<4xbf16>
    %t = tk.add %m, %y : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    %u = tk.relu %t : tensor<4xbf16>
    tk.yield %u, %m : tensor<4xbf16>, tensor<4xbf16>
  }
  func.return %r, %s : tensor<4xbf16>, tensor<4xbf16>""",
        a,
        b,
    )
    assert bits_equal(r, torch.relu(a * 0.5 + b)) and bits_equal(s, a * 0.5)


# ----------------------------------------------------- entry points, errors

ADD_IR = """func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
  %r = tk.add %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}"""


def test_module_and_func_entry_points():
    module = parse_module(ADD_IR)
    x, y = torch.ones(2), torch.full((2,), 2.0)
    (r,) = interpret(module, x, y)
    fn = next(iter(module.ops))
    (r2,) = interpret(fn, x, y)
    assert isinstance(interpret(module, x, y), tuple)
    assert r.tolist() == [3.0, 3.0] and r2.tolist() == [3.0, 3.0]
    (r3,) = interpret(module, x, y, func_name="main")
    assert r3.tolist() == [3.0, 3.0]


def test_captured_program_takes_and_returns_pytrees():
    module = parse_module(ADD_IR)
    fn = next(iter(module.ops))

    def step(params, batch):
        return {"out": params["w"] + batch[0]}

    w, b = torch.ones(2), torch.full((2,), 2.0)
    example = ({"w": w}, (b,))
    _, in_spec = pytree.tree_flatten(example)
    _, out_spec = pytree.tree_flatten(step(*example))
    captured = types.SimpleNamespace(module=module, func=fn, in_spec=in_spec, out_spec=out_spec)
    got = interpret(captured, *example)
    assert set(got) == {"out"} and bits_equal(got["out"], step(*example)["out"])
    with pytest.raises(InterpreterError, match="structure"):
        interpret(captured, {"w": w}, b)


def test_inputs_are_moved_to_cpu_and_detached():
    module = parse_module(ADD_IR)
    x = torch.ones(2, requires_grad=True)
    (r,) = interpret(module, x, torch.ones(2))
    assert r.device.type == "cpu" and not r.requires_grad


def test_meta_inputs_are_rejected():
    with pytest.raises(InterpreterError, match="meta"):
        interpret(parse_module(ADD_IR), torch.ones(2, device="meta"), torch.ones(2))


@pytest.mark.parametrize(
    "args,match",
    [
        ((torch.ones(3), torch.ones(2)), r"argument #0 .* expected tensor<2xf32>"),
        ((torch.ones(2, dtype=torch.bfloat16), torch.ones(2)), r"argument #0 .* torch.bfloat16"),
        ((torch.ones(2),), "takes 2 tensors, got 1"),
        ((torch.ones(2), 3.0), "argument #1 .* float, not a tensor"),
    ],
)
def test_argument_mismatch_errors(args, match):
    with pytest.raises(InterpreterError, match=match):
        interpret(parse_module(ADD_IR), *args)


def test_unknown_op_is_named():
    from xdsl.dialects.test import TestOp

    module = parse_module(ADD_IR)
    block = next(iter(module.ops)).body.block
    add = block.first_op
    mystery = TestOp(operands=[add.lhs], result_types=[add.result.type])
    block.insert_op_before(mystery, add)
    add.operands[1] = mystery.results[0]
    with pytest.raises(InterpreterError, match=r"no implementation for op 'test.op' \(op #0 of func.func\)"):
        interpret(module, torch.ones(2), torch.ones(2))


def test_removed_impl_is_reported():
    interp = Interpreter()
    del interp.table[tk.AddOp]
    with pytest.raises(InterpreterError, match="no implementation for op 'tk.add'"):
        interpret(parse_module(ADD_IR), torch.ones(2), torch.ones(2), interpreter=interp)


def test_not_a_program():
    with pytest.raises(InterpreterError, match="takes a Captured step"):
        interpret("func.func @main()", torch.ones(1))


def test_module_with_two_functions_needs_a_name():
    module = parse_module(ADD_IR + "\n" + ADD_IR.replace("@main", "@other"))
    with pytest.raises(InterpreterError, match="exactly one function"):
        interpret(module, torch.ones(2), torch.ones(2))
    (r,) = interpret(module, torch.ones(2), torch.ones(2), func_name="other")
    assert r.tolist() == [2.0, 2.0]


def test_torch_failure_names_the_op():
    interp = Interpreter({tk.AddOp: lambda i, op, args: torch.mm(*args)})
    with pytest.raises(InterpreterError, match=r"tk.add \(op #0 of func.func\) failed"):
        interpret(parse_module(ADD_IR), torch.ones(2), torch.ones(2), interpreter=interp)


def test_result_type_checked():
    interp = Interpreter({tk.AddOp: lambda i, op, args: args[0].double()})
    with pytest.raises(InterpreterError, match="result #0: expected tensor<2xf32>"):
        interpret(parse_module(ADD_IR), torch.ones(2), torch.ones(2), interpreter=interp)


# ------------------------------------------------------- reusable pieces


def test_table_covers_every_tk_op():
    for op in tk.TK.operations:
        assert op in TK_OP_TABLE, f"{op.name} has no interpreter implementation"


def test_eval_tk_op_and_run_block():
    module = parse_module(ADD_IR)
    fn = next(iter(module.ops))
    block = fn.body.block
    add = block.first_op
    (r,) = eval_tk_op(add, [torch.ones(2), torch.ones(2)])
    assert r.tolist() == [2.0, 2.0]
    (r,) = run_block(block, [torch.ones(2), torch.ones(2)])
    assert r.tolist() == [2.0, 2.0]
    assert DEFAULT.table is not TK_OP_TABLE  # extending one interpreter leaves the table alone


def test_torch_dtype_mapping():
    from xdsl.dialects.builtin import IntegerType, bf16, f16, f32, f64, i1, i64

    assert [torch_dtype(t) for t in (f32, bf16, f16, f64, i1, i64, IntegerType(32))] == [
        torch.float32,
        torch.bfloat16,
        torch.float16,
        torch.float64,
        torch.bool,
        torch.int64,
        torch.int32,
    ]
