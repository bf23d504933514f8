"""`tk-split-reductions`: give a long reduction into few outputs the parallelism it lacks.

A reduction becomes one work item per output (the whole block folds that
output's elements), so a loss `mean` over a 1024x256 batch is 262,144 loads
by ONE block while the rest of the grid waits: a block keeps only a few KB of
loads in flight, so it reads at a small fraction of what the chip can. When
every output of a `tk.sum` or `tk.max` folds at least `min_elements` elements
over two or more axes, this pass reduces the last reduced axis first and the
remaining ones after it:

    sum(x, [0, 1])  ->  sum(sum(x, [1]), [0])     (1024 row sums, then 1024 of them)

The first stage has one output per remaining index, so it spreads over the
grid; the second is short. The stages are separate computes (`tk-to-sched`
orders the second after the first, usually in a phase the step has anyway).

Values: `max` is exact in any order. A `sum` changes only its summation order
(the kernels sum in a fixed order, so results stay deterministic); its first
stage is f32 whatever the element type (bf16/f16 inputs are cast to f32,
exactly), and the result is rounded to the element type once, at the end, as
the unsplit reduction's f32 accumulator was. `argmax` and reductions over one
axis are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from trainkernel.dialects import tk

DEFAULT_MIN_ELEMENTS = 65536
"""Elements per output from which a reduction is split: 256 per thread of a
256-thread block, where one block reading alone starts to dominate a phase."""


def _reduced_type(shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool, element) -> TensorType:
    kept = [1 if i in axes else d for i, d in enumerate(shape)] if keepdim else [
        d for i, d in enumerate(shape) if i not in axes]
    return TensorType(element, kept)


class SplitLongReduction(RewritePattern):
    def __init__(self, min_elements: int) -> None:
        self.min_elements = min_elements

    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> None:
        if not isinstance(op, tk.SumOp | tk.MaxOp):
            return
        axes, shape = op.axes_list, tuple(tk.shape_of(op.input))
        if len(axes) < 2 or prod(shape[a] for a in axes) < self.min_elements:
            return
        keepdim = op.keepdim is not None
        element = tk.element_type_of(op.result)
        # A sum's partials stay f32 (the unsplit sum accumulated in f32 too).
        inner = f32 if isinstance(op, tk.SumOp) else element
        new_ops = []
        src = op.input
        if inner != tk.element_type_of(src):
            cast_in = tk.CastOp(src, TensorType(inner, list(shape)))
            new_ops.append(cast_in)
            src = cast_in.result
        last = axes[-1:]
        first = type(op)(src, last, _reduced_type(shape, last, keepdim, inner), keepdim=keepdim)
        # Removing the last reduced axis (the highest index) renumbers none of the others.
        mid_shape = tuple(tk.shape_of(first.result))
        rest = axes[:-1]
        second = type(op)(first.result, rest, _reduced_type(mid_shape, rest, keepdim, inner), keepdim=keepdim)
        new_ops += [first, second]
        result = second.result
        if inner != element:
            cast_out = tk.CastOp(result, op.result.type)
            new_ops.append(cast_out)
            result = cast_out.result
        rewriter.replace_op(op, new_ops, [result])


@dataclass(frozen=True)
class TkSplitReductionsPass(ModulePass):
    """Split every long multi-axis sum/max into two stages (see the module)."""

    name = "tk-split-reductions"

    min_elements: int = DEFAULT_MIN_ELEMENTS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(SplitLongReduction(self.min_elements), apply_recursively=False).rewrite_module(op)
