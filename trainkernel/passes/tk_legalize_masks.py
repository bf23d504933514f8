"""`tk-legalize-masks`: carry boolean masks as 0/1 f32 values inside the kernel.

Comparisons, `where`, `masked_fill` and the logical ops produce and consume
`i1` tensors at the tk level (PyTorch's bool tensors). The kernel computes
every value in float, so this pass retypes each `i1` value that a tk op
computes to `f32` holding 1.0 (true) or 0.0 (false):

- `tk.cmp ... -> i1` returns the f32 mask instead (`tk.cmp` allows that);
- `tk.select` keeps its meaning: its condition may be a float mask (nonzero is
  true), and a select of masks (a logical op) selects 0/1 values;
- a `tk.fill` of i1 becomes an f32 fill of 0.0 or 1.0;
- `tk.cast` from a mask to a float type is the (exact) conversion of 0/1, and
  to f32 it disappears; a cast from a float type to i1 is `x != 0`;
- views (`reshape`, `expand`, `transpose`, `slice`) of a mask are views of
  the f32 mask.

Function boundaries keep their types: an `i1` argument is converted once
(`tk.cast : i1 -> f32`), and a returned mask is turned back into `i1` with
`tk.cmp ne %m, 0.0`. Every rewrite is exact (0/1 are exact in every float
type), so the interpreter gives the same results before and after. Any other
op reading an `i1` value is an error naming it (none is produced by capture).
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from trainkernel.dialects import tk

F32 = Float32Type()
VIEWS = (tk.ReshapeOp, tk.ExpandOp, tk.TransposeOp, tk.SliceOp)


def _is_i1(v: SSAValue) -> bool:
    t = v.type
    return isinstance(t, TensorType) and isinstance(t.get_element_type(), IntegerType) and t.get_element_type().width.data == 1


def _f32(t: TensorType) -> TensorType:
    return TensorType(F32, list(t.get_shape()))


def legalize_function(f: func.FuncOp) -> None:
    block = f.body.block
    mask: dict[SSAValue, SSAValue] = {}  # i1 value -> its f32 0/1 stand-in
    mask_casts: set[Operation] = set()  # the argument conversions this pass inserts
    first = block.first_op

    def as_f32(v: SSAValue) -> SSAValue:
        if v in mask:
            return mask[v]
        # An i1 argument: convert it once, at the top of the function.
        cast = tk.CastOp(v, _f32(v.type))
        mask_casts.add(cast)
        if first is not None:
            block.insert_op_before(cast, first)
        else:
            block.add_op(cast)
        mask[v] = cast.result
        return cast.result

    rewritten: list[Operation] = []
    for op in list(block.ops):
        if not any(_is_i1(v) for v in (*op.operands, *op.results)):
            continue
        if isinstance(op, tk.CastOp) and op in mask_casts:
            continue
        new: list[Operation] = []
        replacement: SSAValue | None = None
        if isinstance(op, func.ReturnOp):
            args = []
            for v in op.operands:
                if _is_i1(v):
                    zero = tk.FillOp(0.0, TensorType(F32, []))
                    back = tk.CmpOp("ne", as_f32(v), zero.result, v.type)
                    new += [zero, back]
                    args.append(back.result)
                else:
                    args.append(v)
            Rewriter.insert_op(new, _before(op))
            op.operands = args
            continue
        if isinstance(op, tk.FillOp):
            new.append(tk.FillOp(op.fill_value, _f32(op.result.type)))
        elif isinstance(op, tk.CmpOp):
            new.append(tk.CmpOp(op.predicate_name, op.lhs, op.rhs, _f32(op.result.type)))
        elif isinstance(op, tk.SelectOp):
            rt = op.result.type
            if _is_i1(op.result):
                branches = [as_f32(op.true_value), as_f32(op.false_value)]
                rt = _f32(rt)
            else:
                branches = [op.true_value, op.false_value]
            cond = as_f32(op.cond) if _is_i1(op.cond) else op.cond
            new.append(tk.SelectOp(cond, *branches, rt))
        elif isinstance(op, tk.CastOp) and _is_i1(op.input):
            src = as_f32(op.input)
            if _is_i1(op.result):
                replacement = src
            elif op.result.type == src.type:
                replacement = src
            else:
                new.append(tk.CastOp(src, op.result.type))
        elif isinstance(op, tk.CastOp):  # float -> i1: x != 0
            zero = tk.FillOp(0.0, TensorType(tk.element_type_of(op.input), []))
            new += [zero, tk.CmpOp("ne", op.input, zero.result, _f32(op.result.type))]
        elif isinstance(op, VIEWS) and _is_i1(op.input):
            src, rt = as_f32(op.input), _f32(op.result.type)
            if isinstance(op, tk.TransposeOp):
                new.append(tk.TransposeOp(src, op.perm_list, rt))
            elif isinstance(op, tk.SliceOp):
                new.append(tk.SliceOp(src, op.starts_list, op.steps_list, rt))
            else:
                new.append(type(op)(src, rt))
        else:
            raise DiagnosticException(
                f"tk-legalize-masks: {op.name} reads or writes an i1 value, which only tk.cmp, tk.select, tk.fill, "
                "tk.cast and the views may"
            )
        if new:
            Rewriter.insert_op(new, _before(op))
            replacement = new[-1].results[0]
            replacement.name_hint = op.results[0].name_hint
        assert replacement is not None
        rewritten.append(op)
        if _is_i1(op.results[0]):
            mask[op.results[0]] = replacement
        else:
            op.results[0].replace_all_uses_with(replacement)
    # Every reader of an old i1 result was rewritten above; drop the originals,
    # readers first.
    for op in reversed(rewritten):
        Rewriter.erase_op(op)


def _before(op: Operation):
    from xdsl.rewriter import InsertPoint

    return InsertPoint.before(op)


class TkLegalizeMasksPass(ModulePass):
    """Retype the i1 masks that tk ops compute to 0/1 f32 values (see the module docstring)."""

    name = "tk-legalize-masks"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for f in op.ops:
            if isinstance(f, func.FuncOp) and f.body.blocks:
                legalize_function(f)
