"""`tk-fuse`: group ops into `tk.fused` regions that lower to one
kernel stage each: pointwise chains, and the pointwise epilogues of matmuls
and reductions (hence not "elementwise" alone: it was `tk-fuse-elementwise`).

A group has a root and an iteration shape:
- a `tk.matmul` root: its pointwise consumers become the GEMM epilogue (bias,
  relu, casts, loss gradient, SGD update), computed per output element;
- a reduction root (`tk.sum`/`tk.max`/`tk.argmax`): pointwise consumers on the
  reduced shape become its epilogue (the 1/n of a mean, say);
- a pointwise root: a chain of pointwise ops over one shape.

A pointwise op joins the group of one of its operands when its result has that
group's iteration shape and joining cannot create a cycle between groups.
Values used outside the group become results of the `tk.fused`. Fills are
cloned into every group that reads them (`tk.outline`).

Before grouping, a reshape that only drops the size-1 axes of a keepdim
reduction is folded into the reduction, so bias-gradient updates fuse into it.
(A 2-D `tk.transpose` feeding a matmul is already folded into the matmul's
transpose flags by `canonicalize`, which the pipeline runs first.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from trainkernel.dialects import tk

POINTWISE = (*tk.ELEMENTWISE_OPS, tk.ExpandOp)
REDUCTIONS = (tk.SumOp, tk.MaxOp, tk.ArgmaxOp)


def drop_keepdim_reshapes(body: Block) -> None:
    """`reshape(sum(x, axes, keepdim))` that only drops the kept size-1 axes is
    `sum(x, axes)`: without the reshape in between, the reduction's consumers
    (a bias gradient's cast and SGD update) can join it as its epilogue."""
    for op in list(body.ops):
        if not isinstance(op, tk.ReshapeOp):
            continue
        red = op.input.owner
        if not isinstance(red, tk.SumOp | tk.MaxOp) or red.keepdim is None or sum(1 for _ in red.result.uses) != 1:
            continue  # (a keepdim result used elsewhere too would be reduced twice)
        plain = tuple(d for i, d in enumerate(tk.shape_of(red.input)) if i not in set(red.axes_list))
        if tuple(tk.shape_of(op.result)) != plain:
            continue
        new = type(red)(red.input, red.axes_list, op.result.type, keepdim=False)
        body.insert_op_before(new, op)
        op.result.replace_all_uses_with(new.result)
        Rewriter.erase_op(op)
        if not red.result.uses:
            Rewriter.erase_op(red)


@dataclass(eq=False)
class Group:
    root: Operation
    shape: tuple[int, ...]
    ops: list[Operation] = field(default_factory=list)


def _result_shape(op: Operation) -> tuple[int, ...]:
    return tk.shape_of(op.results[0])


def _depends_on(value: SSAValue, target: Group, group_of: dict[Operation, Group], memo: dict) -> bool:
    """Whether `value` is (transitively) computed from an op of `target`."""
    owner = value.owner
    if not isinstance(owner, Operation):
        return False
    key = owner
    if key in memo:
        return memo[key]
    memo[key] = False
    g = group_of.get(owner)
    if g is target:
        memo[key] = True
        return True
    ops = g.ops if g is not None else [owner]
    result = any(_depends_on(o, target, group_of, memo) for op in ops for o in op.operands)
    memo[key] = result
    return result


def _can_merge(a: Group, b: Group, group_of: dict[Operation, Group], merge: str) -> bool:
    """Whether groups a and b (one iteration shape) can become one: at most one
    of them is rooted at a matmul or reduction, and none with `merge="maps"`;
    that root's operands come from neither group (a gemm or reduction cannot
    compute its own inputs in its epilogue), and no value outside both lies on
    a path between them (the merged group would depend on itself)."""
    if a is b or a.shape != b.shape:
        return False
    roots = [g.root for g in (a, b) if not isinstance(g.root, POINTWISE)]
    if len(roots) > (0 if merge == "maps" else 1):
        return False
    members = set(a.ops) | set(b.ops)
    if roots and any(o.owner in members for o in roots[0].operands):
        return False
    for x, y in ((a, b), (b, a)):
        outside = [o for op in x.ops for o in op.operands if o.owner not in members]
        if any(_depends_on(o, y, group_of, {}) for o in outside):
            return False
    return True


def _merge(into: Group, other: Group, group_of: dict[Operation, Group], groups: list[Group],
           position: dict[Operation, int]) -> Group:
    """other's ops join `into`, in program order; a matmul or reduction root stays
    the root and goes first (nothing in the group feeds it, `_can_merge`)."""
    if not isinstance(other.root, POINTWISE):
        into.root = other.root
    ops = sorted(into.ops + other.ops, key=position.__getitem__)
    if isinstance(into.root, POINTWISE):
        into.root = ops[0]
    else:
        ops = [into.root, *(op for op in ops if op is not into.root)]
    into.ops = ops
    for op in other.ops:
        group_of[op] = into
    groups.remove(other)
    return into


MERGE_MODES = ("none", "maps", "epilogues")


def _casts_arguments_only(g: Group) -> bool:
    """Whether every op of `g` is a tk.cast of a function argument."""
    return all(isinstance(op, tk.CastOp) and isinstance(op.operands[0], BlockArgument) for op in g.ops)


def absorb_input_casts(groups: list[Group], group_of: dict[Operation, Group], position: dict[Operation, int]) -> None:
    """A group that only casts function arguments (a bf16 batch's `y.float()`),
    whose results one other group of its shape alone reads, joins that group:
    the reader casts the argument where it reads it (a gemm's epilogue reads y
    itself), instead of a map of its own writing a wider copy for it to read
    back. The cast is computed once either way, the same op on the same value:
    the same bits. Not where the reader is a root's operand (a gemm or a
    reduction cannot cast its own operands, `_can_merge`)."""
    for g in [g for g in groups if _casts_arguments_only(g)]:
        readers = {group_of.get(use.operation) for op in g.ops for r in op.results for use in r.uses}
        if len(readers) != 1:
            continue
        (reader,) = readers
        if reader is not None and _can_merge(reader, g, group_of, "epilogues"):
            _merge(reader, g, group_of, groups, position)


def form_groups(body: Block, merge: str = "none", input_casts: bool = False) -> list[Group]:
    """Greedy grouping in program order. With `merge` other than "none", a
    pointwise op whose operands come from several groups of its shape also
    merges those groups (where `_can_merge` allows): AdamW's moment and
    parameter updates, each starting from its own state tensor, become one map
    ("maps": only groups rooted at pointwise ops merge) instead of three behind
    barriers of their own, or also join the gradient's gemm epilogue
    ("epilogues"; perf-log step 17: that loses, an epilogue walks the
    accumulator's fragments where a map reads coalesced). `input_casts`: a group
    that only casts arguments joins its one reader (absorb_input_casts)."""
    if merge not in MERGE_MODES:
        raise DiagnosticException(f"tk-fuse: merge must be one of {', '.join(MERGE_MODES)}, got {merge!r}")
    group_of: dict[Operation, Group] = {}
    groups: list[Group] = []
    position = {op: i for i, op in enumerate(body.ops)}
    for op in body.ops:
        if isinstance(op, tk.CONSTANT_OPS) or isinstance(op, func.ReturnOp):
            continue
        if isinstance(op, POINTWISE):
            shape = _result_shape(op)
            joined = None
            for operand in op.operands:
                g = group_of.get(operand.owner) if isinstance(operand.owner, Operation) else None
                if g is None or g.shape != shape or g is joined:
                    continue
                # Joining must not make g depend on another group that depends on g.
                others = [o for o in op.operands if o is not operand]
                if any(
                    group_of.get(o.owner) is not g and _depends_on(o, g, group_of, {}) for o in others
                ):
                    continue
                joined = g
                break
            if joined is not None:
                joined.ops.append(op)
                group_of[op] = joined
                if merge != "none":
                    for operand in op.operands:
                        g = group_of.get(operand.owner) if isinstance(operand.owner, Operation) else None
                        if g is not None and _can_merge(joined, g, group_of, merge):
                            joined = _merge(joined, g, group_of, groups, position)
                continue
            g = Group(op, shape, [op])
        elif isinstance(op, (tk.MatmulOp, *REDUCTIONS)):
            g = Group(op, _result_shape(op), [op])
        else:
            continue  # views and other ops stay as they are
        groups.append(g)
        group_of[op] = g
    if input_casts:
        absorb_input_casts(groups, group_of, position)
    return groups


def outline(group: Group) -> None:
    """Replace the group's ops by one tk.fused holding clones of them."""
    members = set(group.ops)
    outputs = [
        r for op in group.ops for r in op.results if any(use.operation not in members for use in r.uses)
    ]
    fills = {o.owner for op in group.ops for o in op.operands if isinstance(o.owner, tk.CONSTANT_OPS)}
    inputs, body = tk.outline(group.ops, outputs)
    fused = tk.FusedOp(inputs, [v.type for v in outputs], body)
    last = group.ops[-1]
    assert last.parent is not None
    last.parent.insert_op_after(fused, last)
    for old, new in zip(outputs, fused.outputs):
        old.replace_all_uses_with(new)
    for op in reversed(group.ops):
        Rewriter.erase_op(op)
    for f in fills:
        if not f.result.uses:
            Rewriter.erase_op(f)


def topological_sort(body: Block) -> None:
    """Reorder ops so every value is defined before use, keeping the original
    order where it already is (outlining puts a group where its last op was,
    which can be after an outside user of an earlier member)."""
    ops = list(body.ops)
    position = {op: i for i, op in enumerate(ops)}
    placed: set[Operation] = set()
    order: list[Operation] = []

    def visit(op: Operation) -> None:
        if op in placed:
            return
        placed.add(op)
        deps = [o.owner for o in op.operands if isinstance(o.owner, Operation) and o.owner in position]
        for region in op.regions:
            for inner in region.walk():
                deps += [o.owner for o in inner.operands if isinstance(o.owner, Operation) and o.owner in position]
        for dep in sorted(set(deps), key=position.__getitem__):
            visit(dep)
        order.append(op)

    for op in ops:
        visit(op)
    for op in order:
        op.detach()
        body.add_op(op)


def fuse_function(f: func.FuncOp, merge: str = "none", input_casts: bool = False) -> None:
    body = f.body.block
    drop_keepdim_reshapes(body)
    for group in form_groups(body, merge, input_casts):
        outline(group)
    topological_sort(body)


@dataclass(frozen=True)
class TkFusePass(ModulePass):
    """Group pointwise chains and matmul/reduction epilogues into tk.fused.

    merge: also merge the groups a pointwise op reads from (form_groups):
    none, maps (pointwise groups only) or epilogues (into a matmul or
    reduction group too). input_casts: a group that only casts arguments
    joins the one group that reads it (absorb_input_casts)."""

    name = "tk-fuse"

    merge: str = "none"
    input_casts: bool = False

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, func.FuncOp):
                fuse_function(f, self.merge, self.input_casts)
