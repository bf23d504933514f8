"""What every `tk` op computes, on CPU torch tensors: the one definition of the
numerics, shared by the CPU interpreters (`trainkernel.interpreter` for the
tensor level, `trainkernel.sched_interpreter` for the buffer levels) and by
constant folding (`trainkernel.passes.tk_canonicalize`), so all of them agree
bit for bit.

Numerics: every op calls the PyTorch CPU op that eager PyTorch itself runs, on
the same dtypes (bf16 matmul is `torch.mm` on bf16, a bf16 sum is `torch.sum`
on bf16, ...), so results are bit-identical to eager PyTorch on CPU. Rules
where the IR needs a convention (see `trainkernel/dialects/tk.py`):

- elementwise binary ops: a rank-0 operand whose element type differs from the
  result's is a *scalar*. On the right it is passed as a Python float
  (`torch.mul(x, 0.5)`), on the left as well (`torch.sub(0.5, x)`): PyTorch's
  wrapped-number rule, so it never changes the computation's dtype. (Note:
  PyTorch's CPU kernels keep a right-hand scalar in f32 for mul/div but round
  it to the tensor's dtype first for add/sub, and round a left-hand scalar
  for all four; the interpreter inherits exactly that.) If *neither* operand
  has the result's element type (two rank-0 scalars), the left one is first
  converted to the result type. `tk.maximum` uses `torch.maximum` on 0-d
  tensors and casts (exact: rounding is monotone).
- reductions with empty `axes` are the identity (the result has the input's
  shape); PyTorch's "dim=[] means all dims" is never used.
- views (`reshape`, `transpose`, `expand`, `slice`) are PyTorch views; values
  are never mutated, so aliasing is invisible.

Structure (reused by the `sched`-level interpreter): a dispatch table
`{op class: impl}`; an impl is `impl(interp, op, operands) -> tensor | tuple`.
`Interpreter.run_block` walks a block, keeping an environment from SSA values
to tensors, and returns the values its terminator hands back (`func.return`,
`tk.yield`). Ops with regions (`tk.fused`) call `interp.run_block` on their
body. A buffer-semantics dialect registers its own impls (which may write into
operand tensors in place and return `()`), and terminators, on an
`Interpreter` made with `Interpreter(extra_table)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from trainkernel import elements
from trainkernel.dialects import tk


class InterpreterError(RuntimeError):
    """A program the interpreter cannot run, or arguments that do not fit it."""


# An op implementation: (interpreter, op, operand tensors) -> result tensor(s).
OpImpl = Callable[["Interpreter", Operation, Sequence[torch.Tensor]], Any]


# ----------------------------------------------------------------------- types


def torch_dtype(t: Attribute) -> torch.dtype:
    """The torch dtype of an element type, or of a tensor type's element type
    (`trainkernel.elements`), as an InterpreterError when there is none."""
    try:
        return elements.torch_dtype(t)
    except elements.ElementTypeError:
        raise InterpreterError(f"no torch dtype for element type {tk.type_str(elements.element_type(t))}") from None


def _result_dtype(op: Operation, index: int = 0) -> torch.dtype:
    return torch_dtype(op.results[index].type)


def _result_shape(op: Operation, index: int = 0) -> tuple[int, ...]:
    return tk.shape_of(op.results[index])


def check_tensor(t: torch.Tensor, ty: Attribute, what: str) -> None:
    """Raise InterpreterError unless `t` has exactly the tensor type `ty`."""
    if not isinstance(ty, TensorType):
        raise InterpreterError(f"{what}: type {tk.type_str(ty)} is not a tensor type")
    want_shape = tuple(ty.get_shape())
    want_dtype = torch_dtype(ty)
    if tuple(t.shape) != want_shape or t.dtype != want_dtype:
        raise InterpreterError(
            f"{what}: expected {tk.type_str(ty)} ({want_dtype}, shape {list(want_shape)}), "
            f"got a {t.dtype} tensor of shape {list(t.shape)}"
        )


# ------------------------------------------------------------------ tk ops


def _fill(interp, op: tk.FillOp, args):
    return torch.full(_result_shape(op), op.fill_value, dtype=_result_dtype(op))


def binary_apply(fn: Callable, lhs: torch.Tensor, rhs: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    """`fn(lhs, rhs)` with tk's scalar convention (see the module docstring);
    `out` is the result element type. Used by the interpreter and by constant
    folding, so both agree bit for bit."""
    lhs_scalar = lhs.dim() == 0 and lhs.dtype != out
    rhs_scalar = rhs.dim() == 0 and rhs.dtype != out
    if fn is torch.maximum:
        r = torch.maximum(lhs, rhs)
        return r if r.dtype == out else r.to(out)
    if lhs_scalar and rhs_scalar:
        lhs, lhs_scalar = lhs.to(out), False
    if rhs_scalar:
        r = fn(lhs, rhs.item())
    elif lhs_scalar:
        r = fn(lhs.item(), rhs)
    else:
        r = fn(lhs, rhs)
    return r if r.dtype == out else r.to(out)


def _binary(fn: Callable) -> OpImpl:
    def impl(interp, op, args):
        lhs, rhs = args
        return binary_apply(fn, lhs, rhs, _result_dtype(op))

    impl.__name__ = f"binary_{fn.__name__}"
    return impl


def _unary(fn: Callable) -> OpImpl:
    def impl(interp, op, args):
        (x,) = args
        return fn(x)

    impl.__name__ = f"unary_{fn.__name__}"
    return impl


def _relu_grad(interp, op, args):
    grad, out = args
    return torch.ops.aten.threshold_backward(grad, out, 0)


def _pow(interp, op: tk.PowOp, args):
    (x,) = args
    return torch.pow(x, op.exponent_value)


_aten = torch.ops.aten


def _gelu(interp, op: tk.GeluOp, args):
    (x,) = args
    return _aten.gelu(x, approximate="tanh" if op.flag("tanh") else "none")


def _softplus(interp, op: tk.SoftplusOp, args):
    (x,) = args
    return _aten.softplus(x, op.param("beta"), op.param("threshold"))


def _leaky_relu(interp, op: tk.LeakyReluOp, args):
    (x,) = args
    return _aten.leaky_relu(x, op.param("negative_slope"))


def _elu(interp, op: tk.EluOp, args):
    (x,) = args
    return _aten.elu(x, op.param("alpha"), op.param("scale"), op.param("input_scale"))


def _tanh_grad(interp, op, args):
    return _aten.tanh_backward(*args)


def _sigmoid_grad(interp, op, args):
    return _aten.sigmoid_backward(*args)


def _gelu_grad(interp, op: tk.GeluGradOp, args):
    grad, x = args
    return _aten.gelu_backward(grad, x, approximate="tanh" if op.flag("tanh") else "none")


def _softplus_grad(interp, op: tk.SoftplusGradOp, args):
    grad, x = args
    return _aten.softplus_backward(grad, x, op.param("beta"), op.param("threshold"))


def _leaky_relu_grad(interp, op: tk.LeakyReluGradOp, args):
    grad, x = args
    return _aten.leaky_relu_backward(grad, x, op.param("negative_slope"), False)


def _elu_grad(interp, op: tk.EluGradOp, args):
    grad, value = args
    return _aten.elu_backward(
        grad, op.param("alpha"), op.param("scale"), op.param("input_scale"), op.flag("is_result"), value
    )


_CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


def _cmp(interp, op: tk.CmpOp, args):
    lhs, rhs = args
    r = _CMP[op.predicate_name](lhs, rhs)
    out = _result_dtype(op)
    return r if r.dtype == out else r.to(out)


def _iota(interp, op: tk.IotaOp, args):
    shape = _result_shape(op)
    axis = op.axis_value
    line = torch.arange(shape[axis], dtype=_result_dtype(op))
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return line.reshape(view).expand(shape)


def _select(interp, op: tk.SelectOp, args):
    cond, a, b = args
    if cond.dtype != torch.bool:  # a 0/1 float mask (tk-legalize-masks)
        cond = cond != 0
    return torch.where(cond, a, b)


def _cast(interp, op: tk.CastOp, args):
    (x,) = args
    return x.to(_result_dtype(op))


def _matmul(interp, op: tk.MatmulOp, args):
    a, b = args
    if op.transpose_a is not None:
        a = a.t()
    if op.transpose_b is not None:
        b = b.t()
    # Views, as eager autograd passes mm its transposed operands. (A user's own
    # `w.t()` is materialized by functionalization instead; BLAS may then differ
    # from this in the last bit: see docs/ir/tk.md, "matmul".)
    return torch.mm(a, b)


def _addmm(interp, op: tk.AddmmOp, args):
    bias, a, b = args
    return torch.addmm(bias, a, b)


def _reduction(fn: Callable) -> OpImpl:
    def impl(interp, op: tk.ReductionOp, args):
        (x,) = args
        axes = list(op.axes_list)
        if not axes:  # tk: no axes = nothing reduced (torch would reduce all)
            return x
        return fn(x, axes, op.keepdim is not None)

    impl.__name__ = f"reduce_{fn.__name__}"
    return impl


def _sum(x, axes, keepdim):
    return torch.sum(x, dim=axes, keepdim=keepdim)


def _mean(x, axes, keepdim):
    return torch.mean(x, dim=axes, keepdim=keepdim)


def _amax(x, axes, keepdim):
    return torch.amax(x, dim=axes, keepdim=keepdim)


def _argmax(interp, op: tk.ArgmaxOp, args):
    (x,) = args
    (axis,) = op.axes_list
    return torch.argmax(x, dim=axis, keepdim=op.keepdim is not None)


def _column_partials(interp, op: tk.ColumnPartialsOp, args):
    # Row by row in fp32 from +0.0, as a thread of the Hopper row walk adds its
    # 16 rows; rows past the end are skipped (not added as zeros), as there.
    (x,) = args
    rows = op.rows_value
    m, n = x.shape
    groups = -(-m // rows)
    x = x.float()
    acc = torch.zeros(groups, n, dtype=torch.float32)
    for r in range(rows):
        idx = torch.arange(groups) * rows + r
        valid = idx < m
        acc[valid] = acc[valid] + x[idx[valid]]
    return acc


def _reshape(interp, op, args):
    (x,) = args
    return x.reshape(_result_shape(op))


def _expand(interp, op, args):
    (x,) = args
    return x.expand(_result_shape(op))


def _transpose(interp, op: tk.TransposeOp, args):
    (x,) = args
    return x.permute(op.perm_list)


def _slice(interp, op: tk.SliceOp, args):
    (x,) = args
    starts, steps = op.starts_list, op.steps_list
    index = tuple(
        slice(start, start + size * step, step)
        for start, step, size in zip(starts, steps, _result_shape(op))
    )
    return x[index] if index else x


def _fused(interp, op: tk.FusedOp, args):
    return interp.run_block(op.body.block, args)


def _terminator(interp, op, args):
    return tuple(args)


TK_OP_TABLE: dict[type[Operation], OpImpl] = {
    tk.FillOp: _fill,
    tk.AddOp: _binary(torch.add),
    tk.SubOp: _binary(torch.sub),
    tk.MulOp: _binary(torch.mul),
    tk.DivOp: _binary(torch.div),
    tk.MaximumOp: _binary(torch.maximum),
    tk.NegOp: _unary(torch.neg),
    tk.ReluOp: _unary(torch.relu),
    tk.ExpOp: _unary(torch.exp),
    tk.LogOp: _unary(torch.log),
    tk.SqrtOp: _unary(torch.sqrt),
    tk.ReluGradOp: _relu_grad,
    tk.PowOp: _pow,
    tk.CastOp: _cast,
    tk.TanhOp: _unary(torch.tanh),
    tk.SigmoidOp: _unary(torch.sigmoid),
    tk.SiluOp: _unary(torch.nn.functional.silu),
    tk.AbsOp: _unary(torch.abs),
    tk.SignOp: _unary(torch.sign),
    tk.RsqrtOp: _unary(torch.rsqrt),
    tk.GeluOp: _gelu,
    tk.SoftplusOp: _softplus,
    tk.LeakyReluOp: _leaky_relu,
    tk.EluOp: _elu,
    tk.TanhGradOp: _tanh_grad,
    tk.SigmoidGradOp: _sigmoid_grad,
    tk.GeluGradOp: _gelu_grad,
    tk.SoftplusGradOp: _softplus_grad,
    tk.LeakyReluGradOp: _leaky_relu_grad,
    tk.EluGradOp: _elu_grad,
    tk.CmpOp: _cmp,
    tk.SelectOp: _select,
    tk.IotaOp: _iota,
    tk.MatmulOp: _matmul,
    tk.AddmmOp: _addmm,
    tk.SumOp: _reduction(_sum),
    tk.MeanOp: _reduction(_mean),
    tk.MaxOp: _reduction(_amax),
    tk.ArgmaxOp: _argmax,
    tk.ColumnPartialsOp: _column_partials,
    tk.ReshapeOp: _reshape,
    tk.ExpandOp: _expand,
    tk.TransposeOp: _transpose,
    tk.SliceOp: _slice,
    tk.FusedOp: _fused,
    tk.YieldOp: _terminator,
    func.ReturnOp: _terminator,
}

# Ops whose impl's return value is what the enclosing block hands back.
TERMINATORS: set[type[Operation]] = {tk.YieldOp, func.ReturnOp}


# ----------------------------------------------------------------- the engine


def _where(op: Operation) -> str:
    """A short location for error messages: the op's position in its block."""
    block = op.parent_block()
    if block is None:
        return ""
    for i, other in enumerate(block.ops):
        if other is op:
            parent = block.parent_op()
            owner = f" of {parent.name}" if parent is not None else ""
            return f" (op #{i}{owner})"
    return ""


class Interpreter:
    """Runs blocks of ops through a dispatch table {op class: impl}.

    `check=True` verifies every result against its IR type (shape and dtype),
    which catches interpreter and pass bugs at the op that caused them.
    """

    def __init__(
        self,
        table: Mapping[type[Operation], OpImpl] | None = None,
        terminators: set[type[Operation]] | None = None,
        check: bool = True,
    ):
        self.table: dict[type[Operation], OpImpl] = dict(TK_OP_TABLE)
        if table:
            self.table.update(table)
        self.terminators = set(TERMINATORS) | set(terminators or ())
        self.check = check

    def register(self, op_class: type[Operation], impl: OpImpl, terminator: bool = False) -> None:
        self.table[op_class] = impl
        if terminator:
            self.terminators.add(op_class)

    def impl_for(self, op: Operation) -> OpImpl:
        impl = self.table.get(type(op))
        if impl is None:
            raise InterpreterError(
                f"the CPU interpreter has no implementation for op '{op.name}'{_where(op)}"
            )
        return impl

    def eval_op(self, op: Operation, operands: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """Evaluate one op on operand tensors; returns its results as a tuple."""
        try:
            out = self.impl_for(op)(self, op, list(operands))
        except InterpreterError:
            raise
        except Exception as exc:  # a torch error: say which op hit it
            raise InterpreterError(f"{op.name}{_where(op)} failed: {type(exc).__name__}: {exc}") from exc
        if isinstance(out, torch.Tensor):
            out = (out,)
        return tuple(out)

    def run_block(
        self,
        block: Block,
        args: Sequence[torch.Tensor],
        env: dict[SSAValue, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, ...]:
        """Run `block` with its arguments bound to `args`; return the values its
        terminator yields (empty if the block has no terminator). `env` may
        carry values defined outside the block (regions that are not
        isolated from above)."""
        if len(args) != len(block.args):
            raise InterpreterError(f"block takes {len(block.args)} arguments, got {len(args)}")
        env = dict(env) if env else {}
        for value, t in zip(block.args, args):
            if self.check:
                check_tensor(t, value.type, f"block argument #{value.index}")
            env[value] = t
        for op in block.ops:
            try:
                operands = [env[v] for v in op.operands]
            except KeyError:
                raise InterpreterError(f"{op.name}{_where(op)} uses a value defined nowhere visible") from None
            results = self.eval_op(op, operands)
            if type(op) in self.terminators:
                return results
            if len(results) != len(op.results):
                raise InterpreterError(
                    f"{op.name}{_where(op)}: implementation gave {len(results)} results, the op has {len(op.results)}"
                )
            for value, t in zip(op.results, results):
                if self.check:
                    check_tensor(t, value.type, f"{op.name}{_where(op)} result #{value.index}")
                env[value] = t
        return ()

    def run_function(self, fn: func.FuncOp, args: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        if not fn.body.blocks:
            raise InterpreterError(f"function @{fn.sym_name.data} has no body")
        block = fn.body.block
        if len(args) != len(block.args):
            raise InterpreterError(
                f"function @{fn.sym_name.data} takes {len(block.args)} tensors, got {len(args)}"
            )
        tensors = []
        for i, (a, value) in enumerate(zip(args, block.args)):
            if not isinstance(a, torch.Tensor):
                raise InterpreterError(f"argument #{i} of @{fn.sym_name.data} is a {type(a).__name__}, not a tensor")
            if a.device.type == "meta":
                raise InterpreterError(f"argument #{i} is a meta tensor: it has no values to interpret")
            a = a.detach()
            if a.device.type != "cpu":
                a = a.cpu()
            check_tensor(a, value.type, f"argument #{i} of @{fn.sym_name.data}")
            tensors.append(a)
        return self.run_block(block, tensors)


DEFAULT = Interpreter()


def eval_tk_op(op: Operation, values: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Evaluate one op of the default table on operand tensors (no type checks)."""
    return DEFAULT.eval_op(op, values)


def run_block(block: Block, args: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Run a block with the default table; returns what its terminator yields."""
    return DEFAULT.run_block(block, args)
