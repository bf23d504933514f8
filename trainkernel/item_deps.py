"""What each work item of a grid kernel reads and writes, and which items of
earlier phases it must follow: the dependencies that let `tile.sync items`
replace a grid barrier by per-item flags (tile-item-flags, issue 10.5).

An item's accesses are boxes (a lower and an upper corner) in the shape of the
buffer or view it goes through, over-approximated where an exact box would need
more than the op's structure says (a transposed or sliced operand: the whole
buffer). Two accesses conflict where one writes and their boxes meet: in the
same buffer through the same shape, box against box; otherwise by the bytes
they span (views share their buffer's bytes; arena temporaries share bytes
where sched-allocate reused them; kernel arguments never share). An item
follows every earlier item it conflicts with (read after write, write after
read, write after write) since the last grid barrier, through a chain of
direct dependencies: `ItemDeps.waits` lists only the items no chain already
orders it after.

The item structure mirrors the printer and the device library: a map's items
are chunks of its flattened output, a gemm's are tiles (and K slices) in the
engine's raster (mma.sync: row-major; wgmma: tk::hopper::work_unit's groups of
16 tile-rows, column-major within a group), a reduction's are groups of
`rows` outputs. The item-level interpreter (trainkernel/item_interpreter.py)
checks the dependencies independently by running items in random orders.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from collections.abc import Callable, Iterable, Sequence

import torch
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.dialects import builtin
from xdsl.dialects.builtin import MemRefType

from trainkernel.dialects import sched, tile, tk
from trainkernel.elements import byte_size
from trainkernel.passes.tile_resident import state_casts
from trainkernel.util import ceil_div, numel, strides

GROUP_M = 16  # tk::hopper::kGroupM: tile-rows per raster group of the wgmma engine
PARTIAL_ROWS = 16  # rows a tk.column_partials row sums (target.column_partial_rows)

Box = tuple[tuple[int, ...], tuple[int, ...]]  # [lo, hi) per dimension


@dataclasses.dataclass(frozen=True)
class Access:
    """Boxes of one buffer (as `value`, a buffer, view or argument) an item touches."""

    value: SSAValue | None  # None: arena bytes (`boxes` in bytes), a split gemm's workspace
    boxes: tuple[Box, ...]
    write: bool


def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, MemRefType)
    return tuple(t.get_shape())


def flat_boxes(lo: int, hi: int, shape: Sequence[int]) -> list[Box]:
    """The flat element range [lo, hi) of a row-major `shape` as at most 2 * rank - 1 boxes."""
    if hi <= lo:
        return []
    if not shape:
        return [((), ())]
    inner = math.prod(shape[1:])
    a0, a1 = divmod(lo, inner)
    b0, b1 = divmod(hi, inner)
    if a0 == b0:
        return [((a0, *l), (a0 + 1, *h)) for l, h in flat_boxes(a1, b1, shape[1:])]
    out: list[Box] = []
    if a1:
        out += [((a0, *l), (a0 + 1, *h)) for l, h in flat_boxes(a1, inner, shape[1:])]
        a0 += 1
    if a0 < b0:
        out.append(((a0, *(0 for _ in shape[1:])), (b0, *shape[1:])))
    if b1:
        out += [((b0, *l), (b0 + 1, *h)) for l, h in flat_boxes(0, b1, shape[1:])]
    return out


def broadcast_box(box: Box, shape: Sequence[int]) -> Box:
    """The box of an operand of `shape` that a box of the iteration space reads
    when the operand broadcasts into it (trailing dimensions aligned, size-1
    dimensions repeated: cuda_target.broadcast_index)."""
    lo, hi = box
    skip = len(lo) - len(shape)
    assert skip >= 0, (box, shape)
    return (tuple(0 if d == 1 else l for d, l in zip(shape, lo[skip:])),
            tuple(1 if d == 1 else h for d, h in zip(shape, hi[skip:])))


def whole(shape: Sequence[int]) -> Box:
    return (tuple(0 for _ in shape), tuple(shape))


ArgPlan = list[tuple[SSAValue, tuple[int, ...], bool]]  # (buffer, its shape, read through broadcast boxes)


def _arg_plan(op: tile.TileWorkOp, space: Sequence[int], args: Iterable[BlockArgument] | None = None) -> ArgPlan:
    """How `op`'s pointwise body reads its region arguments over boxes of the
    iteration space `space`: through the boxes broadcast into each argument
    where it is used directly (or through tk.expand); the whole buffer where it
    is read through a transpose or a slice, or its shape does not broadcast
    into the space."""
    plan = []
    for arg in op.body.block.args if args is None else args:
        if not arg.uses:
            continue
        buf = op.ins[arg.index]
        shape = _shape(buf)
        direct = all(not isinstance(u.operation, tk.TransposeOp | tk.SliceOp) for u in arg.uses)
        fits = len(shape) <= len(space) and all(
            d in (1, s) for d, s in zip(shape, space[len(space) - len(shape):]))
        plan.append((buf, shape, direct and fits))
    return plan


def _reads(plan: ArgPlan, boxes: Sequence[Box]) -> list[Access]:
    return [Access(buf, tuple(broadcast_box(b, shape) for b in boxes) if boxed else (whole(shape),), False)
            for buf, shape, boxed in plan]


def _writes(outs: Iterable[SSAValue], boxes: Sequence[Box]) -> list[Access]:
    return [Access(v, tuple(boxes), True) for v in outs]


# ---------------------------------------------------------------- per op kind
# Each factory reads the op once and returns its items' accesses by item.


def map_accesses(op: tile.MapOp) -> Callable[[int], list[Access]]:
    term = op.body.block.last_op
    assert isinstance(term, tk.YieldOp)
    space = tuple(tk.shape_of(term.values[0])) if term.values else ()
    n, chunk, outs = numel(space), op.chunk, list(op.outs)
    plan = _arg_plan(op, space)

    def accesses(item: int) -> list[Access]:
        boxes = flat_boxes(item * chunk, min((item + 1) * chunk, n), space)
        return _reads(plan, boxes) + _writes(outs, boxes)

    return accesses


def gemm_tile(op: tile.GemmOp, item: int) -> tuple[int, int, int]:
    """(tile row, tile column, K slice) of a gemm's work item, in its engine's raster."""
    return _gemm_raster(op)(item)


def _gemm_raster(op: tile.GemmOp) -> Callable[[int], tuple[int, int, int]]:
    mm = op.matmul
    m, n = tk.shape_of(mm.result)
    bm, bn, _ = op.tile_shape
    tiles_m, tiles_n = ceil_div(m, bm), ceil_div(n, bn)
    ksplit, wgmma = op.ksplit, op.engine == "wgmma"

    def raster(item: int) -> tuple[int, int, int]:
        t, s = divmod(item, ksplit)
        if not wgmma:
            return t // tiles_n, t % tiles_n, s
        per_group = GROUP_M * tiles_n
        g, in_group = divmod(t, per_group)
        rows = min(tiles_m - g * GROUP_M, GROUP_M)
        return g * GROUP_M + in_group % rows, in_group // rows, s

    return raster


def gemm_accesses(op: tile.GemmOp) -> Callable[[int], tuple[list[Access], list[Access]]]:
    """By item: (the operands' reads, which the wgmma producer's TMA makes; the
    epilogue's reads and every write, which its consumers make). A K slice's
    item also owns its tile's epilogue (whichever slice arrives last runs it)
    and the split's whole workspace."""
    mm = op.matmul
    m, n = tk.shape_of(mm.result)
    bm, bn, bk = op.tile_shape
    ta, tb = mm.transpose_a is not None, mm.transpose_b is not None
    k = tk.shape_of(mm.lhs)[0 if ta else 1]
    width = tile.gemm_k_slice(k, op.ksplit, bk) if op.ksplit > 1 else k
    raster = _gemm_raster(op)
    a, b = op.ins[mm.lhs.index], op.ins[mm.rhs.index]
    plan = _arg_plan(op, (m, n), [x for x in op.body.block.args if x not in (mm.lhs, mm.rhs)])
    # The operands read again by the epilogue (rare): the whole buffer.
    again = [Access(op.ins[x.index], (whole(_shape(op.ins[x.index])),), False)
             for x in (mm.lhs, mm.rhs) if any(u.operation is not mm for u in x.uses)]
    partials = op.column_partials()
    outs = [(buf, partials is not None and v.owner is partials)
            for buf, v in zip(op.outs, op.body.block.last_op.operands)]
    workspace = ([Access(None, (((op.workspace,), (op.workspace + op.workspace_bytes(),)),), True)]
                 if op.ksplit > 1 and op.workspace is not None else [])  # partials and counters: arena bytes

    def accesses(item: int) -> tuple[list[Access], list[Access]]:
        tm, tn, s = raster(item)
        m0, m1 = tm * bm, min(m, (tm + 1) * bm)
        n0, n1 = tn * bn, min(n, (tn + 1) * bn)
        k0, k1 = s * width, min(k, (s + 1) * width)
        operands = [Access(a, (((k0, m0), (k1, m1)) if ta else ((m0, k0), (m1, k1)),), False),
                    Access(b, (((n0, k0), (n1, k1)) if tb else ((k0, n0), (k1, n1)),), False)]
        tile_box = ((m0, n0), (m1, n1))
        epilogue = _reads(plan, [tile_box]) + again + workspace
        for buf, is_partials in outs:
            box = ((m0 // PARTIAL_ROWS, n0), (ceil_div(m1, PARTIAL_ROWS), n1)) if is_partials else tile_box
            epilogue.append(Access(buf, (box,), True))
        return operands, epilogue

    return accesses


def reduce_accesses(op: tile.ReduceOp) -> Callable[[int], list[Access]]:
    red = op.reduction()
    in_shape = tuple(tk.shape_of(red.input))
    axes = set(red.axes_list)
    kept = [d for i, d in enumerate(in_shape) if i not in axes]
    n_out, rows = numel(kept), op.rows
    res_shape = tuple(tk.shape_of(red.result))
    # The prologue's arguments (what the reduction's input is computed from)
    # index by the input; the epilogue's (after the reduction) by the result.
    prologue = _operands_of(red.input)
    body_args = op.body.block.args
    in_plan = _arg_plan(op, in_shape, [x for x in body_args if x in prologue])
    res_plan = _arg_plan(op, res_shape, [x for x in body_args
                                         if any(u.operation is not red and not _in_slice(u.operation, red.input)
                                                for u in x.uses)])
    outs = [(buf, _shape(buf) == res_shape) for buf in op.outs]

    def accesses(item: int) -> list[Access]:
        first, last = (item * rows, min((item + 1) * rows, n_out)) if rows > 1 else (item, item + 1)
        # The kept outputs' boxes, then the input boxes that fold into them (the
        # reduced dimensions whole).
        out_boxes = flat_boxes(first, last, kept)
        in_boxes = []
        for lo, hi in out_boxes:
            it_lo, it_hi = iter(lo), iter(hi)
            in_boxes.append((tuple(0 if i in axes else next(it_lo) for i in range(len(in_shape))),
                             tuple(d if i in axes else next(it_hi) for i, d in enumerate(in_shape))))
        res_boxes = [_result_box(b, in_shape, axes, res_shape) for b in out_boxes]
        writes = [Access(buf, tuple(res_boxes) if same else (whole(_shape(buf)),), True) for buf, same in outs]
        return _reads(in_plan, in_boxes) + _reads(res_plan, res_boxes) + writes

    return accesses


def _operands_of(v: SSAValue) -> set[SSAValue]:
    """Every value `v` is computed from inside its block (v included)."""
    seen: set[SSAValue] = set()
    todo = [v]
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        if isinstance(x.owner, Operation):
            todo.extend(x.owner.operands)
    return seen


def _in_slice(user: Operation, v: SSAValue) -> bool:
    """Whether `user` is one of the ops `v` is computed by."""
    return any(r in _operands_of(v) for r in user.results)


def _result_box(kept_box: Box, in_shape: Sequence[int], axes: set[int], res_shape: Sequence[int]) -> Box:
    """The box of a reduction's result that a box of its kept dimensions holds
    (keepdim: the reduced dimensions stay, of size 1)."""
    if len(res_shape) == len(kept_box[0]):
        return kept_box
    it_lo, it_hi = iter(kept_box[0]), iter(kept_box[1])
    lo = tuple(0 if i in axes else next(it_lo) for i in range(len(in_shape)))
    hi = tuple(1 if i in axes else next(it_hi) for i in range(len(in_shape)))
    return lo, hi


def op_accesses(op: tile.TileWorkOp) -> Callable[[int], list[Access]]:
    """Every access of `op`'s work items, by item."""
    if isinstance(op, tile.GemmOp):
        parts = gemm_accesses(op)
        return lambda item: [a for part in parts(item) for a in part]
    if isinstance(op, tile.MapOp):
        return map_accesses(op)
    if isinstance(op, tile.ReduceOp):
        return reduce_accesses(op)
    raise TypeError(f"item_deps: {op.name} has no items")


def item_accesses(op: tile.TileWorkOp, item: int) -> list[Access]:
    """Every access of `op`'s work item `item`."""
    return op_accesses(op)(item)


# ---------------------------------------------------------------- conflicts


class _Space:
    """Where an access lands: `exact` names the buffer and shape its boxes are
    in; `root` the memory its bytes are in (an argument, or the arena), and
    `start`/`esize` turn a box into the bytes it spans."""

    def __init__(self, value: SSAValue | None):
        if value is None:
            self.exact, self.root, self.start, self.shape, self.esize = None, "arena", 0, None, 1
            return
        root = sched.root_buffer(value)
        self.shape = _shape(value)
        self.exact = (root, self.shape)
        self.esize = byte_size(value.type.get_element_type())
        self.strides = [st * self.esize for st in strides(self.shape)]
        if isinstance(root.owner, sched.BufferOp):
            self.root, self.start = "arena", root.owner.offset_value or 0
        else:
            self.root, self.start = root, 0

    def bytes_of(self, box: Box) -> tuple[int, int]:
        if self.shape is None:
            return box[0][0], box[1][0]
        lo, hi = box
        if any(h <= l for l, h in zip(lo, hi)):
            return self.start, self.start
        first = sum(l * st for l, st in zip(lo, self.strides))
        last = sum((h - 1) * st for h, st in zip(hi, self.strides))
        return self.start + first, self.start + last + self.esize


class _Rows:
    """One op's accesses as rows of tensors, per (where, read or write): the
    item of each box and its corners (boxes in an exact space; byte intervals
    in a root, with the exact space's number to tell same-space rows)."""

    def __init__(self, accesses: Sequence[Sequence[Access]], spaces: dict):
        exact: dict[tuple, list] = {}
        flat: dict[tuple, list] = {}
        known: dict[SSAValue | None, _Space] = {}
        for item, accs in enumerate(accesses):
            for a in accs:
                sp = known.get(a.value)
                if sp is None:
                    sp = known[a.value] = _Space(a.value)
                # Bytes without a buffer (a workspace) have no exact space: -1, never "the same".
                key = spaces.setdefault(sp.exact, len(spaces)) if sp.exact is not None else -1
                for box in a.boxes:
                    if sp.exact is not None:
                        exact.setdefault((sp.exact, a.write), []).append((item, *box[0], *box[1]))
                    lo, hi = sp.bytes_of(box)
                    if hi > lo:
                        flat.setdefault((sp.root, a.write), []).append((item, key, lo, hi))
        self.items = len(accesses)
        self.exact = {k: torch.tensor(v, dtype=torch.int64) for k, v in exact.items()}
        self.flat = {k: torch.tensor(v, dtype=torch.int64) for k, v in flat.items()}


def _hits(item_c: torch.Tensor, item_p: torch.Tensor, meet: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    out = torch.zeros(shape, dtype=torch.bool)
    c, p = meet.nonzero(as_tuple=True)
    out[item_c[c], item_p[p]] = True
    return out


def conflicts(c: _Rows, p: _Rows) -> torch.Tensor:
    """[items of c, items of p]: where an item of c and one of p touch the same
    bytes and at least one writes them."""
    out = torch.zeros((c.items, p.items), dtype=torch.bool)
    for (where, wc), rc in c.exact.items():
        for wp in (True, False) if wc else (True,):
            rp = p.exact.get((where, wp))
            if rp is None:
                continue
            rank = (rc.shape[1] - 1) // 2
            lo_c, hi_c = rc[:, None, 1:1 + rank], rc[:, None, 1 + rank:]
            lo_p, hi_p = rp[None, :, 1:1 + rank], rp[None, :, 1 + rank:]
            meet = ((lo_c < hi_p) & (lo_p < hi_c)).all(dim=2)
            out |= _hits(rc[:, 0], rp[:, 0], meet, out.shape)
    for (root, wc), rc in c.flat.items():
        for wp in (True, False) if wc else (True,):
            rp = p.flat.get((root, wp))
            if rp is None:
                continue
            # The same exact space: the boxes above decide.
            other = (rc[:, None, 1] != rp[None, :, 1]) | (rc[:, None, 1] < 0)
            meet = other & (rc[:, None, 2] < rp[None, :, 3]) & (rp[None, :, 2] < rc[:, None, 3])
            out |= _hits(rc[:, 0], rp[:, 0], meet, out.shape)
    return out


# ---------------------------------------------------------------- dependencies

ItemRef = tuple[int, int]  # (index of the op among the kernel's work ops, item)


@dataclasses.dataclass
class ItemDeps:
    """The direct dependencies of every item after a `tile.sync items`. A wgmma
    gemm's unit: `producer_waits[(op, item)]` the items its operands' TMA
    copies must follow (its producer warp waits for them before its first
    copy), `waits` those its epilogue's reads and writes must follow (its
    consumer warps wait for them before the unit). Any other item: `waits`,
    before any of its threads reads or writes. A list leaves out what a chain
    of other waits already orders before it. Items with the same list share
    it: read, never modify."""

    ops: list[tile.TileWorkOp]
    waits: dict[ItemRef, list[ItemRef]]
    producer_waits: dict[ItemRef, list[ItemRef]]
    # Per `tile.sync items` of the kernel, in order: whether it orders as much as
    # a barrier (every item after it waits, directly or through others, for
    # every item of the phase before it).
    full_syncs: list[bool] = dataclasses.field(default_factory=list)

    def signalled(self) -> set[int]:
        """The ops whose items some item waits for (they count arrivals)."""
        return {o for table in (self.waits, self.producer_waits) for refs in table.values() for o, _ in refs}


def _reduce(required: int, ancestors: list[int], refs: list[ItemRef]) -> tuple[list[ItemRef], int]:
    """The items of `required` (a mask) that no chain through another pick already
    orders, the latest first; and what they all cover."""
    direct, covered = [], 0
    left = required
    while left:
        n = left.bit_length() - 1
        direct.append(refs[n])
        covered |= ancestors[n] | (1 << n)
        left &= ~covered
    return sorted(direct), covered


# ---------------------------------------------------------------- one analysis a kernel

# The analysis of a kernel as it stands (tile-item-flags computes it, the printer
# reads it; large's costs ~1 s). A kernel changed since, or parsed from text,
# has another stamp and is analysed again.
_ANALYSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _stamp(kernel: tile.KernelOp) -> tuple:
    """What the analysis reads of `kernel`: its ops (by identity), their properties
    and operands."""
    return tuple((op, tuple(op.properties.items()), tuple(op.operands)) for op in kernel.walk())


def item_deps(kernel: tile.KernelOp) -> ItemDeps:
    """The dependencies of the items after each `tile.sync items` of `kernel`
    on the items since the last grid barrier."""
    stamp = _stamp(kernel)
    known = _ANALYSED.get(kernel)
    if known is not None and known[0] == stamp:
        return known[1]
    deps = _analyse(kernel)
    _ANALYSED[kernel] = (stamp, deps)
    return deps


def _phases(kernel: tile.KernelOp) -> tuple[list[tile.TileWorkOp], list[int], list[bool]]:
    """The kernel's work ops, each one's phase (the syncs before it), and per
    sync whether it is a barrier (grid or block scope) rather than `items`."""
    phases = kernel.phases()
    ops = [op for ops in phases for op in ops]
    phase_of = [q for q, ops in enumerate(phases) for _ in ops]
    barrier_after = [op.scope.data != "items" for op in kernel.block.ops if isinstance(op, tile.SyncOp)]
    return ops, phase_of, barrier_after


def keep_barriers(kernel: tile.KernelOp, deps: ItemDeps, barriers: Sequence[bool]) -> ItemDeps:
    """`deps` of `kernel` after its `tile.sync items` flagged in `barriers` (one
    per items sync, in order) become grid barriers, recorded as the kernel's
    analysis. Exactly what analysing the changed kernel gives: an item loses
    its waits on items a barrier now orders, and nothing else changes, since a
    chain that orders an item after a later one never runs through an earlier
    item."""
    for s, barrier in zip((o for o in kernel.block.ops if isinstance(o, tile.SyncOp) and o.scope.data == "items"),
                          list(barriers)):
        if barrier:
            s.properties["scope"] = builtin.StringAttr("grid")
    ops, phase_of, barrier_after = _phases(kernel)
    assert ops == deps.ops
    # Per phase, the number of barriers before it: an item waits only within its count.
    count = [0]
    for b in barrier_after:
        count.append(count[-1] + b)
    kept: dict[int, list[ItemRef]] = {}

    def keep(i: int, refs: list[ItemRef]) -> list[ItemRef]:
        if id(refs) not in kept:  # shared lists stay shared
            kept[id(refs)] = [r for r in refs if count[phase_of[r[0]]] == count[phase_of[i]]]
        return kept[id(refs)]

    waits, producer_waits = ({ref: out for ref, refs in table.items() if (out := keep(ref[0], refs))}
                             for table in (deps.waits, deps.producer_waits))
    full = [f for f, b in zip(deps.full_syncs, barriers) if not b]
    out = ItemDeps(deps.ops, waits, producer_waits, full)
    _ANALYSED[kernel] = (_stamp(kernel), out)
    return out


def _analyse(kernel: tile.KernelOp) -> ItemDeps:
    ops, phase_of, barrier_after = _phases(kernel)
    item_syncs = [q for q, b in enumerate(barrier_after) if not b]  # the phases an items sync ends
    barrier_after.append(True)
    waits: dict[ItemRef, list[ItemRef]] = {}
    producer_waits: dict[ItemRef, list[ItemRef]] = {}
    if not item_syncs:
        return ItemDeps(ops, waits, producer_waits)
    spaces: dict = {}
    rows: dict[int, _Rows] = {}
    operand_rows: dict[int, tuple[_Rows, _Rows]] = {}

    # The updates of a state argument also store the cast a later launch reads
    # (target.grid_carried_casts: CudaPrinter.plan_chained_casts): counted as
    # writes of the cast's temporary wherever they are printed.
    casts: dict[SSAValue, list[SSAValue]] = {}
    for cast in state_casts(kernel):
        casts.setdefault(sched.root_buffer(cast.ins[0]), []).append(cast.outs[0])

    factories: dict[int, Callable[[int], list[Access]]] = {}

    def accesses(i: int, t: int) -> list[Access]:
        if i not in factories:
            factories[i] = op_accesses(ops[i])
        out = factories[i](t)
        for a in list(out):
            for temp in casts.get(sched.root_buffer(a.value), []) if a.write and a.value is not None else []:
                same = _shape(temp) == _shape(a.value)
                out.append(Access(temp, a.boxes if same else (whole(_shape(temp)),), True))
        return out

    def rows_of(i: int) -> _Rows:
        if i not in rows:
            rows[i] = _Rows([accesses(i, t) for t in range(ops[i].items)], spaces)
        return rows[i]

    def split_rows_of(i: int) -> tuple[_Rows, _Rows]:
        """A wgmma gemm's (operand reads, every other access)."""
        if i not in operand_rows:
            op = ops[i]
            assert isinstance(op, tile.GemmOp)
            parts = gemm_accesses(op)
            operands = [parts(t)[0] for t in range(op.items)]
            rest = [accesses(i, t) for t in range(op.items)]
            operand_rows[i] = (_Rows(operands, spaces),
                               _Rows([[a for a in r if a not in o] for r, o in zip(rest, operands)], spaces))
        return operand_rows[i]

    # Items are numbered in op order (op j's items from base[j]); ancestors[n]:
    # the items item n is ordered after (bit k: item k), through its waits.
    base: list[int] = []
    refs: list[ItemRef] = []
    ancestors: list[int] = []
    # _reduce by required mask: the ancestors of the items a mask names are final
    # by then, and many items need the same ones (every unit of large's first
    # gemm: all 1366 items of a weight's cast). Items with one mask share a list.
    reduced: dict[int, tuple[list[ItemRef], int]] = {}
    window: list[int] = []  # ops since the last barrier, in order
    for i, op in enumerate(ops):
        ph = phase_of[i]
        if window and any(barrier_after[x] for x in range(phase_of[window[-1]], ph)):
            window = []  # a barrier since: everything before it is done
        earlier = [j for j in window if phase_of[j] < ph]
        wgmma = isinstance(op, tile.GemmOp) and op.engine == "wgmma"
        if wgmma:  # the producer's copies and the consumers' epilogue wait apart
            operand, rest = split_rows_of(i)
            parts = [{j: conflicts(operand, rows_of(j)) for j in earlier},
                     {j: conflicts(rest, rows_of(j)) for j in earlier}]
        else:
            parts = [{}, {j: conflicts(rows_of(i), rows_of(j)) for j in earlier}]
        # Per part and item, the earlier items it conflicts with, as a mask.
        required = [[0] * op.items for _ in parts]
        for masks, need in zip(required, parts):
            for j, m in need.items():
                for t, row in enumerate(_row_masks(m)):
                    masks[t] |= row << base[j]
        base.append(len(refs))
        for t in range(op.items):
            ref = (i, t)
            done = 0
            for table, masks in zip((producer_waits, waits), required):
                if masks[t] not in reduced:
                    reduced[masks[t]] = _reduce(masks[t], ancestors, refs)
                direct, covered = reduced[masks[t]]
                done |= covered
                if direct:
                    table[ref] = direct
            refs.append(ref)
            ancestors.append(done)
        window.append(i)
    # A sync is full where every item of the phase after it covers every item of the phase before.
    full = []
    for q in item_syncs:
        before = [j for j in range(len(ops)) if phase_of[j] == q]
        after = [j for j in range(len(ops)) if phase_of[j] == q + 1]
        mask = sum(((1 << ops[j].items) - 1) << base[j] for j in before)
        full.append(bool(after) and bool(before) and all(
            ancestors[base[j] + t] & mask == mask for j in after for t in range(ops[j].items)))
    return ItemDeps(ops, waits, producer_waits, full)


def _row_masks(m: torch.Tensor) -> list[int]:
    """Each row of a [rows, cols] bool matrix as an int (bit c: column c)."""
    rows, cols = m.shape
    width = ceil_div(max(cols, 1), 8) * 8
    padded = torch.zeros((rows, width), dtype=torch.uint8)
    padded[:, :cols] = m
    weights = torch.tensor([1 << b for b in range(8)], dtype=torch.int32)
    packed = (padded.view(rows, width // 8, 8).to(torch.int32) * weights).sum(-1).to(torch.uint8)
    data = bytes(packed.flatten().tolist())
    step = width // 8
    return [int.from_bytes(data[r * step:(r + 1) * step], "little") for r in range(rows)]
