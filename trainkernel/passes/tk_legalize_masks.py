"""`tk-legalize-masks`: carry boolean masks and integer labels as f32 values inside the kernel.

Comparisons, `where`, `masked_fill` and the logical ops produce and consume
`i1` tensors at the tk level (PyTorch's bool tensors); class labels of a
classification loss are `i64` (compared with a `tk.iota`, selected by
`where`). The kernel computes every value in float, so this pass retypes each
`i1` and `i64` value that a tk op computes to `f32`:

- a mask holds 1.0 (true) or 0.0 (false): `tk.cmp ... -> i1` returns the f32
  mask instead (`tk.cmp` allows that); `tk.select` keeps its meaning (its
  condition may be a float mask: nonzero is true), and a select of masks (a
  logical op) selects 0/1 values; an i1 `tk.fill` becomes 0.0 or 1.0;
- an integer holds its value: `tk.iota`, `tk.fill`, `tk.select` of i64 values
  and `tk.cmp` of i64 operands compute in f32, which is exact for integers of
  magnitude up to 2**24 (class indices, labels; `tk.iota` verifies its
  length). Larger integers would be rounded: steps that compute with such
  values are outside what this pass supports;
- `tk.cast` from a mask or an integer to a float type is the conversion of
  its (exact) f32 value, and to f32 it disappears; a cast from a float type to
  i1 is `x != 0`;
- views (`reshape`, `expand`, `transpose`, `slice`) of such values are views
  of the f32 values.

Function boundaries keep their types: an `i1`/`i64` argument is converted
once (`tk.cast : i64 -> f32`), a returned mask is turned back into `i1` with
`tk.cmp ne %m, 0.0` and a returned integer with `tk.cast : f32 -> i64`; the
i64 result of `tk.argmax` is converted for its readers the same way. Every
rewrite keeps the interpreter's values exactly (within the integer range
above). Any other op reading such a value is an error naming it.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from trainkernel.dialects import tk

F32 = Float32Type()
VIEWS = (tk.ReshapeOp, tk.ExpandOp, tk.TransposeOp, tk.SliceOp)


def _width(v: SSAValue) -> int:
    t = v.type
    if isinstance(t, TensorType) and isinstance(t.get_element_type(), IntegerType):
        return t.get_element_type().width.data
    return 0


def _is_int(v: SSAValue) -> bool:
    return _width(v) in (1, 64)


def _f32(t: TensorType) -> TensorType:
    return TensorType(F32, list(t.get_shape()))


def legalize_function(f: func.FuncOp) -> None:
    block = f.body.block
    standin: dict[SSAValue, SSAValue] = {}  # i1 / i64 value -> its f32 stand-in
    inserted: set[Operation] = set()  # the conversions this pass inserts
    first = block.first_op

    def as_f32(v: SSAValue) -> SSAValue:
        if v in standin:
            return standin[v]
        # An argument, or the result of an op that keeps its integer type
        # (tk.argmax): convert it once, where it is defined.
        cast = tk.CastOp(v, _f32(v.type))
        inserted.add(cast)
        owner = v.owner
        if isinstance(owner, Operation):
            Rewriter.insert_op(cast, InsertPoint.after(owner))
        elif first is not None:
            block.insert_op_before(cast, first)
        else:
            block.add_op(cast)
        standin[v] = cast.result
        return cast.result

    rewritten: list[Operation] = []
    for op in list(block.ops):
        if op in inserted or not any(_is_int(v) for v in (*op.operands, *op.results)):
            continue
        new: list[Operation] = []
        replacement: SSAValue | None = None
        if isinstance(op, func.ReturnOp):
            args = []
            for v in op.operands:
                if _width(v) == 1:
                    zero = tk.FillOp(0.0, TensorType(F32, []))
                    back = tk.CmpOp("ne", as_f32(v), zero.result, v.type)
                    new += [zero, back]
                    args.append(back.result)
                elif _width(v) == 64 and v.owner in rewritten:
                    back = tk.CastOp(standin[v], v.type)
                    new.append(back)
                    args.append(back.result)
                else:
                    args.append(v)
            if new:
                Rewriter.insert_op(new, InsertPoint.before(op))
                inserted.update(new)
            op.operands = args
            continue
        if isinstance(op, tk.ArgmaxOp):
            continue  # keeps its i64 result; readers get a conversion (as_f32)
        if isinstance(op, tk.CastOp) and not _is_int(op.input) and _width(op.result) == 64:
            if all(isinstance(u.operation, func.ReturnOp) for u in op.result.uses):
                continue  # a returned count: converted at the boundary
            raise DiagnosticException("tk-legalize-masks: a float -> i64 cast read inside the step is not supported")
        if isinstance(op, tk.FillOp):
            new.append(tk.FillOp(op.fill_value, _f32(op.result.type)))
        elif isinstance(op, tk.IotaOp):
            new.append(tk.IotaOp(op.axis_value, _f32(op.result.type)))
        elif isinstance(op, tk.CmpOp):
            lhs, rhs = op.lhs, op.rhs
            if _is_int(lhs):
                lhs, rhs = as_f32(lhs), as_f32(rhs)
            new.append(tk.CmpOp(op.predicate_name, lhs, rhs, _f32(op.result.type)))
        elif isinstance(op, tk.SelectOp):
            rt = op.result.type
            if _is_int(op.result):
                branches = [as_f32(op.true_value), as_f32(op.false_value)]
                rt = _f32(rt)
            else:
                branches = [op.true_value, op.false_value]
            cond = as_f32(op.cond) if _is_int(op.cond) else op.cond
            new.append(tk.SelectOp(cond, *branches, rt))
        elif isinstance(op, tk.CastOp) and _is_int(op.input):
            src = as_f32(op.input)
            if _width(op.result) == 1 and _width(op.input) == 64:  # integer -> bool: x != 0
                zero = tk.FillOp(0.0, TensorType(F32, []))
                new += [zero, tk.CmpOp("ne", src, zero.result, _f32(op.result.type))]
            elif _is_int(op.result) or op.result.type == src.type:
                replacement = src  # i1 -> i64 keeps 0/1; to f32 is the stand-in itself
            else:
                new.append(tk.CastOp(src, op.result.type))
        elif isinstance(op, tk.CastOp):  # float -> i1: x != 0
            zero = tk.FillOp(0.0, TensorType(tk.element_type_of(op.input), []))
            new += [zero, tk.CmpOp("ne", op.input, zero.result, _f32(op.result.type))]
        elif isinstance(op, VIEWS) and _is_int(op.input):
            src, rt = as_f32(op.input), _f32(op.result.type)
            if isinstance(op, tk.TransposeOp):
                new.append(tk.TransposeOp(src, op.perm_list, rt))
            elif isinstance(op, tk.SliceOp):
                new.append(tk.SliceOp(src, op.starts_list, op.steps_list, rt))
            else:
                new.append(type(op)(src, rt))
        else:
            raise DiagnosticException(
                f"tk-legalize-masks: {op.name} reads or writes an i1 or i64 value, which only tk.cmp, tk.select, "
                "tk.fill, tk.iota, tk.cast and the views may"
            )
        if new:
            Rewriter.insert_op(new, InsertPoint.before(op))
            replacement = new[-1].results[0]
            replacement.name_hint = op.results[0].name_hint
        assert replacement is not None
        rewritten.append(op)
        if _is_int(op.results[0]):
            standin[op.results[0]] = replacement
        else:
            op.results[0].replace_all_uses_with(replacement)
    # Every reader of an old integer result was rewritten above; drop the
    # originals, readers first.
    for op in reversed(rewritten):
        Rewriter.erase_op(op)


class TkLegalizeMasksPass(ModulePass):
    """Retype the i1 masks and i64 integers that tk ops compute to f32 values (see the module docstring)."""

    name = "tk-legalize-masks"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for f in op.ops:
            if isinstance(f, func.FuncOp) and f.body.blocks:
                legalize_function(f)
