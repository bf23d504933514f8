"""`tk-decompose`: rewrite composite `tk` ops into the core set the lowering
(`tk-to-sched`) consumes.

Core set after this pass (what every later stage must handle):

    fill
    add sub mul div maximum          (broadcasting, rank-0 scalars)
    neg relu exp log sqrt            (unary)
    relu_grad                        (kept: it is one select, `out > 0 ? g : 0`,
                                      and splitting it would need a compare op
                                      and an i1 select that tk does not have)
    pow                              (only exponents not rewritten below)
    cast
    matmul                           (transpose_a / transpose_b)
    sum max argmax                   (reductions)
    reshape expand transpose slice   (views)
    fused yield

Rewrites (each checked bit-exact against the CPU interpreter, i.e. PyTorch,
except addmm, see there):

- `mean(x) -> sum(x) / n` with n = the number of reduced elements as a rank-0
  f32 (or the input's type for f32/f64) constant. PyTorch's CPU mean is exactly
  `sum_out(...).div_(n)`, a division, not a multiplication by 1/n (which would
  round 1/n first and differ in the last bit). For bf16/f16 inputs PyTorch sums
  into f32, divides in f32 and rounds once, so the rewrite is
  `cast(sum(cast(x, f32)) / n, bf16)`.
- `addmm(bias, a, b) -> add(matmul(a, b), bias)` for f32. For bf16/f16, PyTorch
  adds the bias to the f32 accumulator and rounds once, so the rewrite is
  `cast(add(matmul(cast(a), cast(b)) : f32, cast(bias)), bf16)`; products of
  bf16/f16 values are exact in f32, so the lowering may run that f32 matmul as
  a bf16/f16 tensor-core MMA with f32 accumulators.
  NOT bit-exact against PyTorch's CPU addmm, which hands the bias to the BLAS
  as C with beta = 1, and the BLAS accumulates the products *into* it: on the
  CPU torch this is tested with, most f32 shapes differ in the last bit, f16
  rarely (K >= 32), bf16 matched in every case tried. The difference is f32
  reassociation of one addition (plus one ulp of a bf16/f16 result); the
  property test checks exactly that bound. No GPU GEMM reproduces the CPU
  BLAS's order either, so nothing downstream may rely on addmm bits.
- `pow(x, 2) -> mul(x, x)` (PyTorch computes x*x, in f32 for bf16, one rounding;
  for f16 `powf(x, 2)` of an f16 value is exact in f32: same result);
- `pow(x, 1) -> x`; `pow(x, 0) -> fill 1` (PyTorch special-cases both): the
  canonicalization pattern `tk_canonicalize.PowIdentity`, applied here too;
- `pow(x, 0.5) -> sqrt(x)` for f32 and bf16 (PyTorch dispatches to sqrt). Not
  for f16: PyTorch uses powf there and powf(-0, 0.5) = +0 where sqrt gives -0;
- `pow(x, -1) -> div(1, x)` with a rank-0 constant 1 of x's type (PyTorch's
  reciprocal kernel; checked on every bf16 and f16 value).
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import Float16Type, ModuleOp, TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from trainkernel import elements
from trainkernel.dialects import tk
from trainkernel.passes.tk_canonicalize import PowIdentity
from trainkernel.util import numel


def _low_precision(t) -> bool:
    """bf16 / f16: PyTorch computes them in f32 (their opmath type) and rounds once."""
    return elements.lookup(t).opmath is not elements.lookup(t)


def _with_element(t: TensorType, element) -> TensorType:
    return TensorType(element, list(t.get_shape()))


def _to_f32(value: SSAValue, new_ops: list[Operation]) -> SSAValue:
    cast = tk.CastOp(value, _with_element(value.type, f32))
    new_ops.append(cast)
    return cast.result


class DecomposeMean(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.MeanOp):
            return
        shape = tk.shape_of(op.input)
        n = numel(shape[a] for a in op.axes_list)
        keepdim = op.keepdim is not None
        result_type = op.result.type
        et = tk.element_type_of(op.result)
        new_ops: list[Operation] = []
        low = _low_precision(et)
        x = _to_f32(op.input, new_ops) if low else op.input
        acc = f32 if low else et
        total = tk.SumOp(x, op.axes_list, _with_element(result_type, acc), keepdim)
        count = tk.FillOp(float(n), TensorType(acc, []))
        mean = tk.DivOp(total, count, _with_element(result_type, acc))
        new_ops += [total, count]
        _replace_rounded(rewriter, op, new_ops, mean, low)


def _replace_rounded(rewriter: PatternRewriter, op: Operation, new_ops: list[Operation], value: Operation,
                     low: bool) -> None:
    """Replace `op` by `new_ops` and `value`, the result computed in f32 for a
    low-precision `op` and then rounded once to its type (as PyTorch does)."""
    new_ops.append(value)
    if low:
        new_ops.append(tk.CastOp(value.results[0], op.results[0].type))
    rewriter.replace(op, new_ops)


class DecomposeAddmm(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.AddmmOp):
            return
        result_type = op.result.type
        low = _low_precision(tk.element_type_of(op.result))
        new_ops: list[Operation] = []
        if low:
            a, b, bias = (_to_f32(v, new_ops) for v in (op.lhs, op.rhs, op.bias))
            acc_type = _with_element(result_type, f32)
        else:
            a, b, bias = op.lhs, op.rhs, op.bias
            acc_type = result_type
        product = tk.MatmulOp(a, b, acc_type)
        new_ops.append(product)
        _replace_rounded(rewriter, op, new_ops, tk.AddOp(product, bias, acc_type), low)


class DecomposePow(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.PowOp):
            return
        e = op.exponent_value
        x = op.input
        t = op.result.type
        if e == 2.0:
            rewriter.replace(op, tk.MulOp(x, x, t))
        elif e == 0.5 and not isinstance(tk.element_type_of(t), Float16Type):
            rewriter.replace(op, tk.SqrtOp(x))
        elif e == -1.0:
            one = tk.FillOp(1.0, TensorType(tk.element_type_of(t), []))
            rewriter.replace(op, [one, tk.DivOp(one, x, t)])


# pow(x, 1) and pow(x, 0) are canonicalizations; the pattern is canonicalize's own,
# applied here too so that tk-decompose alone leaves no special exponent behind.
DECOMPOSE_PATTERNS: tuple[RewritePattern, ...] = (DecomposeMean(), DecomposeAddmm(), PowIdentity(), DecomposePow())


class TkDecomposePass(ModulePass):
    """Rewrite mean, addmm and special-exponent pow into the core tk set."""

    name = "tk-decompose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(list(DECOMPOSE_PATTERNS)),
            apply_recursively=False,
        ).rewrite_module(op)
