"""Canonicalization patterns for `tk`, picked up by xDSL's `canonicalize` pass
through the TkCanonicalization trait: importing this module registers
`PATTERNS` (one tuple per op name) with the dialect
(`tk.register_canonicalization_patterns`).

Every pattern keeps the program's values *bit for bit* under the CPU reference
interpreter's numerics (`trainkernel.numerics`), which mirror PyTorch. That rules out
some textbook identities:

- `x + 0.0 -> x` is wrong for x = -0.0 (-0.0 + 0.0 = +0.0), so only
  `x + (-0.0)`, `(-0.0) + x` and `x - 0.0` fold (as in LLVM and MLIR's arith);
- a narrowing cast pair (f32 -> bf16 -> f32) is not an identity, and neither is
  a narrowing chain a single cast (f32 -> f16 -> bf16 rounds twice);
- constant folding evaluates the op with the interpreter's own implementation
  (on one-element tensors), so a folded constant is exactly what the op would
  have produced; a non-finite result is not folded (tk cannot print it).

Patterns (op: rewrite):

- add/sub/mul/div/maximum:
  - both operands `tk.fill` -> one `tk.fill` of the result type (folded value);
  - `x + (-0.0)`, `(-0.0) + x`, `x - 0.0`, `x * 1`, `1 * x`, `x / 1` -> x, where
    the constant is a fill of any shape (rank 0, or broadcast) whose value in
    its own element type is exactly that number, and the result type equals
    x's type (so no broadcast or scalar type change is dropped);
  - `maximum(x, x)` -> x.
- neg/relu/exp/log/sqrt of a fill -> fill; `neg(neg(x))` -> x.
- pow: exponent 1 -> x; exponent 0 -> fill 1 (PyTorch: `out.fill_(1)`, even for
  NaN); pow of a fill -> fill.
- cast: to its own type -> x; of a fill -> fill; `cast(cast(x: A -> B) -> C)`
  where A -> B is exact (widening: bf16/f16 -> f32/f64, f32 -> f64; i1 -> any
  float or i64) -> x when C == A, else one cast A -> C. A narrowing first cast
  is never folded, and neither is a float chain that ends in an integer type
  (NaN -> integer is undefined; leave that question to the single cast).
- reshape: to its own type -> x; reshape of reshape -> one reshape; of a fill ->
  fill.
- expand: to its own type -> x; expand of expand -> one expand; of a fill -> fill.
- transpose: identity perm -> x; transpose of transpose -> one transpose with
  the composed perm (or x, when the composition is the identity); of a fill ->
  fill.
- slice: the whole input (starts 0, steps 1, same type) -> x; of a fill -> fill.
- sum/mean/max over no axes -> x (the identity, see the interpreter).
- activations (tanh, sigmoid, gelu, ..., and their *_grad ops), cmp: of fills
  -> fill (folded with the interpreter's value).
- select: all operands fills -> fill; `select(c, x, x)` -> x; a constant
  condition -> the operand it picks, where that has the result's type.
- matmul: an operand that is a 2-D `tk.transpose` (perm [1, 0]) is read
  through the op's `transpose_a` / `transpose_b` flag instead (toggling it).
  Exact: both forms hand the same strided view to the same GEMM.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from trainkernel import elements
from trainkernel.dialects import tk

# ---------------------------------------------------------------- helpers


def _fill(value: SSAValue) -> tk.FillOp | None:
    owner = value.owner
    return owner if isinstance(owner, tk.FillOp) else None


def fill_value_in_type(fill: tk.FillOp) -> float:
    """The value every element of `fill` has, after rounding to its element type."""
    import torch

    return float(torch.full((), fill.fill_value, dtype=elements.torch_dtype(fill.result.type)).item())


def _is_const(value: SSAValue, number: float) -> bool:
    """True when `value` is a fill whose typed value is exactly `number`
    (signed zeros distinguished)."""
    f = _fill(value)
    if f is None:
        return False
    v = fill_value_in_type(f)
    return v == number and math.copysign(1.0, v) == math.copysign(1.0, number)


def _probe(fill: tk.FillOp):
    """A one-element tensor standing for `fill` in constant folding: rank 0 stays
    rank 0 (scalar rules depend on it), any other rank becomes shape (1,)."""
    import torch

    shape = () if not tk.shape_of(fill.result) else (1,)
    return torch.full(shape, fill.fill_value, dtype=elements.torch_dtype(fill.result.type))


def _folded_value(op: Operation, fills: Sequence[tk.FillOp]) -> float | None:
    """Evaluate elementwise `op` on its constant operands with the interpreter;
    None if the result is not finite (or anything goes wrong)."""
    from trainkernel.numerics import InterpreterError, eval_tk_op

    try:
        (r,) = eval_tk_op(op, [_probe(f) for f in fills])
    except InterpreterError:
        return None
    v = float(r.reshape(-1)[0].item())
    if not math.isfinite(v):
        return None
    return v


def _replace_with_fill(op: Operation, rewriter: PatternRewriter, value: float) -> None:
    rewriter.replace(op, tk.FillOp(value, op.results[0].type))


def _replace_with_value(op: Operation, rewriter: PatternRewriter, value: SSAValue) -> None:
    rewriter.replace(op, [], [value])


# ----------------------------------------------------------- elementwise


class FoldElementwiseOfFills(RewritePattern):
    """An elementwise op whose operands are all fills becomes one fill."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        fills = [_fill(v) for v in op.operands]
        if not fills or any(f is None for f in fills):
            return
        value = _folded_value(op, fills)  # type: ignore[arg-type]
        if value is not None:
            _replace_with_fill(op, rewriter, value)


class BinaryIdentity(RewritePattern):
    """x + (-0.0), (-0.0) + x, x - 0.0, x * 1, 1 * x, x / 1  ->  x."""

    # op name -> (constants that may stand on the right, on the left)
    IDENTITIES: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
        "tk.add": ((-0.0,), (-0.0,)),
        "tk.sub": ((0.0,), ()),
        "tk.mul": ((1.0,), (1.0,)),
        "tk.div": ((1.0,), ()),
    }

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if op.name not in self.IDENTITIES:
            return
        right, left = self.IDENTITIES[op.name]
        lhs, rhs = op.operands
        result_type = op.results[0].type
        if lhs.type == result_type and any(_is_const(rhs, c) for c in right):
            _replace_with_value(op, rewriter, lhs)
        elif rhs.type == result_type and any(_is_const(lhs, c) for c in left):
            _replace_with_value(op, rewriter, rhs)


class MaximumSelf(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, tk.MaximumOp) and op.lhs is op.rhs and op.lhs.type == op.result.type:
            _replace_with_value(op, rewriter, op.lhs)


class NegNeg(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, tk.NegOp) and isinstance(op.input.owner, tk.NegOp):
            _replace_with_value(op, rewriter, op.input.owner.input)


class PowIdentity(RewritePattern):
    """pow(x, 1) -> x; pow(x, 0) -> fill 1."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.PowOp):
            return
        e = op.exponent_value
        if e == 1.0:
            _replace_with_value(op, rewriter, op.input)
        elif e == 0.0:
            _replace_with_fill(op, rewriter, 1.0)


# ------------------------------------------------------------------- casts


class CastIdentity(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, tk.CastOp) and op.input.type == op.result.type:
            _replace_with_value(op, rewriter, op.input)


class CastOfCast(RewritePattern):
    """cast(cast(x: A -> B) -> C) with A -> B exact: x if C == A, else cast A -> C."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.CastOp) or not isinstance(op.input.owner, tk.CastOp):
            return
        inner = op.input.owner
        x = inner.input
        a = tk.element_type_of(x)
        b = tk.element_type_of(inner.result)
        c = tk.element_type_of(op.result)
        if not elements.cast_is_exact(a, b):
            return
        c_row = elements.find(c)
        if tk.is_float(a) and not (c_row is not None and c_row.is_float):
            # float -> float -> integer: fine mathematically, but keep the
            # (NaN -> integer is undefined) question out of the rewriter.
            return
        if x.type == op.result.type:
            _replace_with_value(op, rewriter, x)
        else:
            rewriter.replace(op, tk.CastOp(x, op.result.type))


# ------------------------------------------------------------------- views


class ViewOfFill(RewritePattern):
    """reshape/expand/transpose/slice of a fill is a fill of the result type."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        f = _fill(op.operands[0])
        if f is not None:
            _replace_with_fill(op, rewriter, f.fill_value)


class SameTypeView(RewritePattern):
    """reshape/expand to the input's own type -> the input."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        (x,) = op.operands
        if x.type == op.results[0].type:
            _replace_with_value(op, rewriter, x)


class ViewOfSameView(RewritePattern):
    """reshape(reshape(x)) -> reshape(x); expand(expand(x)) -> expand(x)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        inner = op.operands[0].owner
        if type(inner) is not type(op):
            return
        x = inner.operands[0]
        result_type = op.results[0].type
        if x.type == result_type:
            _replace_with_value(op, rewriter, x)
        else:
            rewriter.replace(op, type(op)(x, result_type))


class TransposeIdentity(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.TransposeOp):
            return
        perm = op.perm_list
        if list(perm) == list(range(len(perm))) and op.input.type == op.result.type:
            _replace_with_value(op, rewriter, op.input)


class TransposeOfTranspose(RewritePattern):
    """t2(t1(x)): result axis i is t1's axis p2[i], which is x's axis p1[p2[i]]."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.TransposeOp) or not isinstance(op.input.owner, tk.TransposeOp):
            return
        inner = op.input.owner
        p1, p2 = inner.perm_list, op.perm_list
        if len(p1) != len(p2):
            return
        perm = [p1[i] for i in p2]
        x = inner.input
        shape = tk.shape_of(x)
        want = TensorType(tk.element_type_of(x), [shape[p] for p in perm])
        if want != op.result.type:  # a verified program always lines up; be safe
            return
        if perm == list(range(len(perm))):
            _replace_with_value(op, rewriter, x)
        else:
            rewriter.replace(op, tk.TransposeOp(x, perm, op.result.type))


class SliceIdentity(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.SliceOp) or op.input.type != op.result.type:
            return
        if all(s == 0 for s in op.starts_list) and all(s == 1 for s in op.steps_list):
            _replace_with_value(op, rewriter, op.input)


class ReduceNoAxes(RewritePattern):
    """sum/mean/max over no axes is the identity."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, (tk.SumOp, tk.MeanOp, tk.MaxOp)) and not op.axes_list and op.input.type == op.result.type:
            _replace_with_value(op, rewriter, op.input)


class MatmulAbsorbTranspose(RewritePattern):
    """matmul(transpose(a), b) -> matmul(a, b) with transpose_a toggled (same for b)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.MatmulOp):
            return
        operands = [op.lhs, op.rhs]
        flags = [op.transpose_a is not None, op.transpose_b is not None]
        changed = False
        for i in range(2):
            owner = operands[i].owner
            if isinstance(owner, tk.TransposeOp) and owner.perm_list == (1, 0):
                operands[i] = owner.input
                flags[i] = not flags[i]
                changed = True
        if changed:
            rewriter.replace(op, tk.MatmulOp(operands[0], operands[1], op.result.type, flags[0], flags[1]))


class SelectSimplify(RewritePattern):
    """select(c, x, x) -> x; select of a constant condition -> the chosen operand
    (when it already has the result's type: no broadcast is dropped)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, tk.SelectOp):
            return
        rt = op.result.type
        if op.true_value is op.false_value and op.true_value.type == rt:
            _replace_with_value(op, rewriter, op.true_value)
            return
        c = _fill(op.cond)
        if c is None:
            return
        chosen = op.true_value if fill_value_in_type(c) != 0 else op.false_value
        if chosen.type == rt:
            _replace_with_value(op, rewriter, chosen)


# ---------------------------------------------------------------- registry

_FOLD = FoldElementwiseOfFills()
_BINARY = (_FOLD, BinaryIdentity())
_VIEW_COMMON = (ViewOfFill(),)

PATTERNS: dict[str, tuple[RewritePattern, ...]] = {
    "tk.add": _BINARY,
    "tk.sub": _BINARY,
    "tk.mul": _BINARY,
    "tk.div": _BINARY,
    "tk.maximum": (_FOLD, MaximumSelf()),
    "tk.neg": (_FOLD, NegNeg()),
    "tk.relu": (_FOLD,),
    "tk.exp": (_FOLD,),
    "tk.log": (_FOLD,),
    "tk.sqrt": (_FOLD,),
    "tk.pow": (PowIdentity(), _FOLD),
    "tk.cast": (CastIdentity(), _FOLD, CastOfCast()),
    "tk.reshape": (SameTypeView(), *_VIEW_COMMON, ViewOfSameView()),
    "tk.expand": (SameTypeView(), *_VIEW_COMMON, ViewOfSameView()),
    "tk.transpose": (TransposeIdentity(), *_VIEW_COMMON, TransposeOfTranspose()),
    "tk.slice": (SliceIdentity(), *_VIEW_COMMON),
    "tk.sum": (ReduceNoAxes(),),
    "tk.mean": (ReduceNoAxes(),),
    "tk.max": (ReduceNoAxes(),),
    "tk.matmul": (MatmulAbsorbTranspose(),),
    **{cls.name: (_FOLD,) for cls in tk.ACTIVATION_OPS},
    "tk.cmp": (_FOLD,),
    "tk.select": (_FOLD, SelectSimplify()),
}

tk.register_canonicalization_patterns(PATTERNS)
