"""`tile-resident`: keep a step's working set on chip, partitioned over one cluster.

A grid kernel (what `sched-to-tile` makes) runs every phase out of global
memory: each phase re-loads its operands and the next phase waits on HBM.
When the step's working set fits the shared memory of one block, or of the
blocks of one thread block cluster (2-16), this pass rewrites the kernel so
that global memory is touched twice: every argument a tile op reads gets a
home in shared memory (`tile.smem stage %arg`, loaded at kernel start, all
copies in flight together), every temporary lives in shared memory
(`tile.smem`), and results are stored once by the epilogues that make them.

The partition is derived from the IR, sharding-propagation style, never from
the shape of a network:

1. Axes are unified into *classes*: a tile op's iteration dimensions (a
   gemm's m, n, k; a map's output axes; a reduction's input axes) with every
   axis of every buffer that op reads or writes at that dimension (broadcast
   axes of size 1 take no part). An axis read in a way this pass cannot
   follow (a slice, a reshape that is not a squeeze) poisons its class.
2. A *plan* splits some classes over the cluster's blocks: block r holds
   slice r of every buffer axis in a split class, and does slice r of every
   iteration dimension in it. A plan is legal when no buffer and no op has two
   split axes. Splitting a gemm's k or a reduced axis leaves each block a
   partial result: the op then sums the partials of all blocks in rank order
   through distributed shared memory (deterministic) and runs its epilogue on
   the full result on every block.
3. Plans are built greedily from each class in turn (largest bytes first,
   adding every compatible class), and each plan is priced for clusters of
   1, 2, 4, 8 and 16 by a cost model from measured H200 figures
   (`ResidentCosts`); the cheapest plan that fits shared memory wins if it
   beats the grid kernel's calibrated estimate. Otherwise the kernel is left
   as it is (a working set over the limit is never made resident).

Since every value a phase reads was made by the same block (or by every
block, for replicated values), phases are then ordered by block barriers.
`tile.kernel` gets `cluster = P` and `grid = P`; every tile op gets `split`,
the iteration dimension it divides over the cluster (-1: none).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import BlockArgument, SSAValue
from xdsl.passes import ModulePass

from trainkernel.dialects import sched, tile, tk
from trainkernel.elements import byte_size
from trainkernel.target import DEFAULT, ResidentCosts, TargetOptions, pass_switched_on, pass_target
from trainkernel.util import align_up, ceil_div, numel, strides

Axis = tuple[object, int]
"""A union-find node: (buffer root value or tile op, axis or iteration dimension)."""


# ---------------------------------------------------------------- cost figures


# The cost figures (ResidentCosts) and the cluster sizes are the target's
# (trainkernel.target); COSTS is the default target's.
COSTS = DEFAULT.resident_costs


# ---------------------------------------------------------------- axis classes


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Axis, Axis] = {}

    def find(self, x: Axis) -> Axis:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: Axis, b: Axis) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


@dataclass
class Analysis:
    """Axis classes of one tile.kernel."""

    kernel: tile.KernelOp
    uf: _UnionFind = field(default_factory=_UnionFind)
    poisoned: set[Axis] = field(default_factory=set)
    sizes: dict[Axis, int] = field(default_factory=dict)
    # (root, axis) of each buffer's own axes; views map onto their roots.
    view_axes: dict[SSAValue, dict[int, int] | None] = field(default_factory=dict)

    def root(self, v: SSAValue) -> SSAValue:
        return sched.root_buffer(v)

    def buf_axis(self, v: SSAValue, axis: int) -> Axis | None:
        """The node of axis `axis` of buffer (or view) v; None for size-1 axes."""
        if _shape(v)[axis] == 1:
            return None
        if isinstance(v.owner, sched.ViewOp):
            m = tile.squeeze_map(_shape(v.owner.source), _shape(v))
            if m is None:
                self.poison_buffer(v.owner.source)
                node = (v, axis)
                self.poisoned.add(node)
                self.sizes[node] = _shape(v)[axis]
                return node
            return self.buf_axis(v.owner.source, m[axis])
        node = (v, axis)
        self.sizes[node] = _shape(v)[axis]
        return node

    def poison_buffer(self, v: SSAValue) -> None:
        for a in range(len(_shape(v))):
            node = self.buf_axis(v, a)
            if node is not None:
                self.poisoned.add(node)

    def dim(self, op: tile.TileWorkOp, d: int, size: int) -> Axis | None:
        if size == 1:
            return None
        node = (op, d)
        self.sizes[node] = size
        return node

    def link(self, a: Axis | None, b: Axis | None) -> None:
        if a is not None and b is not None:
            self.uf.union(a, b)

    def poison_op(self, op: tile.TileWorkOp, dims: tuple[int, ...]) -> None:
        for d, size in enumerate(dims):
            node = self.dim(op, d, size)
            if node is not None:
                self.poisoned.add(node)

    def broadcast(self, op: tile.TileWorkOp, buf: SSAValue, space: tuple[int, ...], dims: list[int]) -> None:
        """buf is read (or written) at the iteration index restricted to
        `dims` (iteration dimensions, in order), right-aligned broadcast."""
        shape = _shape(buf)
        lead = len(dims) - len(shape)
        if lead < 0:
            self.poison_buffer(buf)
            self.poison_op(op, space)
            return
        for a, d in enumerate(shape):
            if d != 1:
                it = dims[lead + a]
                if space[it] != d:
                    self.poison_buffer(buf)
                    self.poison_op(op, space)
                    return
                self.link(self.buf_axis(buf, a), self.dim(op, it, space[it]))

    def read_uses(self, op: tile.TileWorkOp, space: tuple[int, ...], dims: list[int], skip=(), args=None) -> None:
        """Link region arguments of op (all, or `args`) to the iteration dims through their uses."""
        body = op.body.block
        for arg in body.args if args is None else args:
            buf = op.ins[arg.index]
            for use in list(arg.uses):
                user = use.operation
                if user in skip:
                    continue
                if isinstance(user, tk.TransposeOp):
                    perm = user.perm_list
                    shape = _shape(buf)
                    lead = len(dims) - len(shape)
                    # result axis k reads input axis perm[k]
                    if lead < 0:
                        self.poison_buffer(buf)
                        self.poison_op(op, space)
                        continue
                    for k, p in enumerate(perm):
                        if shape[p] != 1:
                            it = dims[lead + k]
                            self.link(self.buf_axis(buf, p), self.dim(op, it, space[it]))
                elif isinstance(user, tk.SliceOp | tk.ReshapeOp) or not user.name.startswith("tk."):
                    self.poison_buffer(buf)
                    self.poison_op(op, space)
                else:
                    self.broadcast(op, buf, space, dims)

    def visit(self, op: tile.TileWorkOp) -> None:
        if isinstance(op, tile.GemmOp):
            mm = op.matmul
            m, n = tk.shape_of(mm.result)
            sa = tk.shape_of(mm.lhs)
            ta, tb = mm.transpose_a is not None, mm.transpose_b is not None
            k = sa[0] if ta else sa[1]
            space = (m, n, k)
            if not (isinstance(mm.lhs, BlockArgument) and isinstance(mm.rhs, BlockArgument)):
                self.poison_op(op, space)
                return
            a, b = op.ins[mm.lhs.index], op.ins[mm.rhs.index]
            for axis, d in enumerate((2, 0) if ta else (0, 2)):
                self.link(self.buf_axis(a, axis), self.dim(op, d, space[d]))
            for axis, d in enumerate((1, 2) if tb else (2, 1)):
                self.link(self.buf_axis(b, axis), self.dim(op, d, space[d]))
            self.read_uses(op, space, [0, 1], skip=(mm,))
            for out in op.outs:
                self.broadcast(op, out, space, [0, 1])
        elif isinstance(op, tile.ReduceOp):
            red = op.reduction()
            space = _shape(red.input)
            if isinstance(red, tk.ArgmaxOp):
                self.poison_op(op, space)
                for b in list(op.ins) + list(op.outs):
                    self.poison_buffer(b)
                return
            axes = red.axes_list
            kept = [d for d in range(len(space)) if d not in axes]
            out_dims = list(range(len(space))) if red.keepdim is not None else kept
            # The reduction input is a region argument (maybe through a view op).
            pre = _prologue_values(op)
            body = op.body.block
            for arg in body.args:
                buf = op.ins[arg.index]
                if arg in pre:
                    self._reduce_input(op, buf, arg, space)
                else:  # an epilogue operand, read at the output index (maybe through a view op)
                    self.read_uses(op, space, out_dims, args=[arg])
            for out in op.outs:
                self.broadcast(op, out, space, out_dims)
        else:
            assert isinstance(op, tile.MapOp)
            term = op.body.block.last_op
            space = _shape(term.operands[0]) if term.operands else ()
            dims = list(range(len(space)))
            self.read_uses(op, space, dims)
            for out in op.outs:
                self.broadcast(op, out, space, dims)

    def _reduce_input(self, op: tile.ReduceOp, buf: SSAValue, arg: BlockArgument, space) -> None:
        dims = list(range(len(space)))
        users = [u.operation for u in arg.uses]
        if all(isinstance(u, tk.ReductionOp | tk.ExpandOp) for u in users):
            self.broadcast(op, buf, space, dims)
        elif all(isinstance(u, tk.TransposeOp) for u in users):
            self.read_uses(op, space, dims)
        else:
            self.poison_buffer(buf)
            self.poison_op(op, space)

    def classes(self) -> dict[Axis, list[Axis]]:
        out: dict[Axis, list[Axis]] = {}
        for node in self.sizes:
            out.setdefault(self.uf.find(node), []).append(node)
        return out


def _prologue_values(op: tile.ReduceOp) -> set[SSAValue]:
    """Region arguments that feed the reduction's input (the prologue side)."""
    red = op.reduction()
    seen: set[SSAValue] = set()
    stack = [red.input]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            continue
        stack.extend(v.owner.operands)
    return {v for v in seen if isinstance(v, BlockArgument)}


def tile_ops(kernel: tile.KernelOp) -> list[tuple[int, tile.TileWorkOp]]:
    """(phase index, op) for every tile op in order."""
    out, phase = [], 0
    for op in kernel.block.ops:
        if isinstance(op, tile.SyncOp):
            phase += 1
        elif isinstance(op, tile.TileWorkOp):
            out.append((phase, op))
    return out


def analyse(kernel: tile.KernelOp) -> Analysis:
    an = Analysis(kernel)
    for _, op in tile_ops(kernel):
        an.visit(op)
    return an


# ---------------------------------------------------------------- plans


@dataclass
class Plan:
    """Split classes (by representative) and what they imply."""

    split: frozenset[Axis]
    buffer_split: dict[SSAValue, int]  # root buffer -> split axis (-1: replicated)
    op_split: dict[tile.TileWorkOp, int]  # op -> split iteration dim (-1: none)


def iteration_space(op: tile.TileWorkOp) -> tuple[int, ...]:
    if isinstance(op, tile.GemmOp):
        mm = op.matmul
        m, n = tk.shape_of(mm.result)
        sa = tk.shape_of(mm.lhs)
        return (m, n, sa[0] if mm.transpose_a is not None else sa[1])
    if isinstance(op, tile.ReduceOp):
        return _shape(op.reduction().input)
    term = op.body.block.last_op
    return _shape(term.operands[0]) if term.operands else ()


def is_partial(op: tile.TileWorkOp, split: int) -> bool:
    """Splitting this dimension leaves each block a partial sum (gemm k, reduced axis)."""
    if split < 0:
        return False
    if isinstance(op, tile.GemmOp):
        return split == 2
    if isinstance(op, tile.ReduceOp):
        return split in op.reduction().axes_list
    return False


def make_plan(an: Analysis, chosen: frozenset[Axis]) -> Plan | None:
    buffer_split: dict[SSAValue, int] = {}
    op_split: dict[tile.TileWorkOp, int] = {}
    for node in an.sizes:
        if an.uf.find(node) not in chosen:
            continue
        owner, axis = node
        if isinstance(owner, tile.TileWorkOp):
            if op_split.get(owner, axis) != axis:
                return None
            op_split[owner] = axis
        else:
            if buffer_split.get(owner, axis) != axis:
                return None
            buffer_split[owner] = axis
    for _, op in tile_ops(an.kernel):
        op_split.setdefault(op, -1)
    return Plan(chosen, buffer_split, op_split)


def candidate_plans(an: Analysis) -> list[Plan]:
    classes = an.classes()
    bad = {an.uf.find(p) for p in an.poisoned}
    weight: dict[Axis, int] = {}
    for rep, nodes in classes.items():
        if rep in bad:
            continue
        total = 0
        for owner, _ in nodes:
            if not isinstance(owner, tile.TileWorkOp):
                total += sched.nbytes(owner.type)
        weight[rep] = total
    order = sorted(weight, key=lambda r: -weight[r])
    plans: list[Plan] = [Plan(frozenset(), {}, {op: -1 for _, op in tile_ops(an.kernel)})]
    seen = {frozenset()}
    for first in order:
        chosen: set[Axis] = set()
        for rep in [first] + [r for r in order if r != first]:
            trial = frozenset(chosen | {rep})
            if make_plan(an, trial) is not None:
                chosen.add(rep)
        key = frozenset(chosen)
        if key not in seen:
            seen.add(key)
            plan = make_plan(an, key)
            assert plan is not None
            plans.append(plan)
    return plans


# ---------------------------------------------------------------- placement


@dataclass
class Placement:
    cluster: int
    homes: dict[SSAValue, tuple[int, int]]  # root -> (offset, split axis)
    scratch: dict[tile.TileWorkOp, int]  # partial op -> offset of its fp32 partials
    smem: int
    estimate_us: float
    pitch: dict[SSAValue, int] = field(default_factory=dict)  # root -> row stride of a padded 2-D home


def _local_bytes(v: SSAValue, split: int, cluster: int) -> int:
    return tile.local_bytes(v.type, split, cluster)


def _align(n: int, a: int = tile.SMEM_ALIGNMENT) -> int:
    return align_up(n, a)


def receive_bytes(op: tile.TileWorkOp, cluster: int) -> int:
    """Bytes of the receive buffer of an exchange (tk::exchange): CLUSTER slots of
    each owner's share of the op's fp32 partials."""
    return _align(4 * cluster * ceil_div(_result_elems(op), cluster))


def _result_elems(op: tile.TileWorkOp) -> int:
    if isinstance(op, tile.GemmOp):
        m, n, _ = iteration_space(op)
        return m * n
    return numel(_shape(op.reduction().result))


def state_casts(kernel: tile.KernelOp) -> list[tile.MapOp]:
    """The maps that only cast state (an input the kernel also writes) into a
    temporary: the weights' compute-dtype copies. The step loop can carry them
    from one step to the next (the update writes them) instead of casting again."""
    args, n_in = set(kernel.block.args), kernel.num_inputs.data
    ops = [op for _, op in tile_ops(kernel)]
    written = {sched.root_buffer(v) for o in ops for v in o.outs}

    def source(v: SSAValue) -> SSAValue:
        r = sched.root_buffer(v)  # after this pass the op reads the argument's home
        return r.owner.source if isinstance(r.owner, tile.SmemOp) and r.owner.source is not None else r

    def casts_state(op: tile.TileWorkOp) -> bool:
        if not isinstance(op, tile.MapOp) or len(op.ins) != 1 or len(op.outs) != 1:
            return False
        body = list(op.body.block.ops)
        if len(body) != 2 or not isinstance(body[0], tk.CastOp) or body[0].operands[0] is not op.body.block.args[0]:
            return False
        src = source(op.ins[0])
        return src in args and src.index < n_in and src in written and sched.root_buffer(op.outs[0]) not in args

    return [op for op in ops if casts_state(op)]


def place(kernel: tile.KernelOp, plan: Plan, cluster: int, costs: ResidentCosts,
          carry_casts: bool = False, keep_state: bool = False, narrow: bool = False,
          wide: bool = False) -> Placement | None:
    """Give every read argument and every temporary a shared-memory home, by
    liveness over phases (first-fit, largest first), and price the result.
    Every 2-D home padded first; where that does not fit the budget, only the
    homes a gemm reads (ldmatrix reads eight rows at once: dense rows of an
    even number of 16-byte units put them in one bank group, which made
    classification-adamw-ce's first gemm ~3x slower, perf-log step 32);
    then dense ones (padding only speeds up shared-memory access, residency
    is worth far more).

    With `carry_casts` (target.carry_casts), the casts of state (state_casts) keep
    their homes to the kernel's end, so that the step loop can carry them to the
    next step, where that fits with the same padding (padding first: it is what
    the gemms' speed depends on).

    With `keep_state` (target.keep_state_homes), every state home (an input the
    kernel writes) lives to the kernel's end too where that fits, so that the
    step loop keeps it on chip instead of staging it again from global memory
    (a scalar the step updates early: Adam's powers of the betas).

    With `narrow` (target.pad_narrow_gemm_rows), a padded home a gemm reads whose
    rows are shorter than 16 bytes is padded to 16 (tile.home_pitch), first in
    each padding tier. `wide` (target.exchange_wide_stores): the exchanges'
    remote stores priced as the printer widens them."""
    # The smallest variant first: padding only adds bytes and carrying or
    # keeping a home only lengthens its life, so where the dense homes live
    # in one phase are over the budget, no variant fits (mlp4-adamw-ce prices
    # 17 plans x cluster sizes, each in six variants, and fits none).
    if _over_budget(_homes(kernel, plan, cluster, "none")[0], costs):
        return None
    # Narrow rows padded only within a padding tier that fits without them too
    # (online 64 x 128-256-256-16 on 8 blocks: its [256, 2] slices padded to 8
    # columns pushed every other home back to dense rows).
    narrow_first = (True, False) if narrow else (False,)
    tiers = [(pad, pad_narrow) for pad in ("all", "gemm") for pad_narrow in narrow_first]
    for pad, pad_narrow in [*tiers, ("none", False)]:
        for carry in (True, False) if carry_casts else (False,):
            for keep in (True, False) if keep_state else (False,):
                found = _place(kernel, plan, cluster, costs, pad, carry, keep, pad_narrow, wide)
                if found is not None:
                    return found
    return None


def _over_budget(items: list[tuple[int, int, int, object]], costs: ResidentCosts) -> bool:
    """No placement needs less than the homes live in one phase together: where
    that alone is over the budget, first-fit (quadratic in the homes) cannot
    succeed."""
    phases_live = range(min((lo for _, lo, _, _ in items), default=0), max((hi for _, _, hi, _ in items), default=-1) + 1)
    return max((sum(s for s, lo, hi, _ in items if lo <= p <= hi) for p in phases_live), default=0) > costs.smem_budget


def _homes(kernel: tile.KernelOp, plan: Plan, cluster: int, pad: str, carry: bool = False, keep: bool = False,
           narrow: bool = False) -> tuple[list[tuple[int, int, int, object]], dict[SSAValue, int]]:
    """(bytes, first phase, last phase, key) of every home a block needs (the
    read arguments, the temporaries, the exchanges' receive buffers), and the
    padded homes' pitches. pad: which 2-D homes get padded rows: "all", "gemm"
    (those a tile.gemm reads) or "none"; carry: the casts of state live to the
    last phase; keep: the state's homes do; narrow: a gemm's operands with rows
    under 16 bytes are padded to 16 too (tile.home_pitch)."""
    n_in = kernel.num_inputs.data
    ops = tile_ops(kernel)
    last = ops[-1][0] if ops else 0
    args = set(kernel.block.args)
    # Live phase range of each home: arguments that are read (inputs from the
    # kernel start, since the prologue loads them), and every temporary.
    live: dict[SSAValue, list[int]] = {}

    def touch(r: SSAValue, lo: int, hi: int) -> None:
        span = live.setdefault(r, [lo, hi])
        span[0], span[1] = min(span[0], lo), max(span[1], hi)

    for phase, op in ops:
        for v in op.ins:
            r = sched.root_buffer(v)
            touch(r, 0 if (r in args and r.index < n_in) else phase, phase)
        for v in op.outs:
            r = sched.root_buffer(v)
            if r not in args:
                touch(r, phase, phase)
    # A written argument that is read: its home is written through from the first write on.
    for phase, op in ops:
        for v in op.outs:
            r = sched.root_buffer(v)
            if r in args and r in live:
                touch(r, phase, phase)
    if keep:
        for phase, op in ops:
            for v in op.outs:
                r = sched.root_buffer(v)
                if r in args and r in live and r.index < n_in:
                    touch(r, phase, last)
    if carry:
        casts = state_casts(kernel)
        for phase, op in ops:
            if op in casts:
                touch(sched.root_buffer(op.outs[0]), phase, last)
    # Rows of 2-D homes padded (tile.home_pitch) unless the home is also read
    # through a view of another shape, which assumes dense rows.
    viewed = {sched.root_buffer(op.result) for op in kernel.block.ops if isinstance(op, sched.ViewOp)}
    gemm_reads = {sched.root_buffer(v) for _, op in ops if isinstance(op, tile.GemmOp) for v in op.ins}
    padded = gemm_reads if pad == "gemm" else set(live) if pad == "all" else set()
    pitch: dict[SSAValue, int] = {}
    for r in (r for r in live if r in padded):
        p = None if r in viewed else tile.home_pitch(r.type, plan.buffer_split.get(r, -1), cluster,
                                                          narrow and r in gemm_reads)
        if p is not None:
            pitch[r] = p
    items: list[tuple[int, int, int, object]] = []  # (bytes, lo, hi, key)
    for r, (lo, hi) in live.items():
        size = tile.local_bytes(r.type, plan.buffer_split.get(r, -1), cluster, pitch.get(r))
        items.append((_align(size), lo, hi, r))
    # The receive buffer of an exchange (tk::exchange): CLUSTER slots of each
    # owner's share. Other blocks push into it as soon as they reach the op,
    # while this block may still be anywhere after the previous cluster
    # barrier (the previous exchange, or the kernel start): it stays reserved
    # from there on.
    since = 0
    for phase, op in ops:
        if cluster > 1 and is_partial(op, plan.op_split[op]):
            items.append((receive_bytes(op, cluster), since, phase, op))
            since = phase
    return items, pitch


def _place(kernel: tile.KernelOp, plan: Plan, cluster: int, costs: ResidentCosts, pad: str,
           carry: bool = False, keep: bool = False, narrow: bool = False, wide: bool = False) -> Placement | None:
    """First-fit of `_homes(kernel, plan, cluster, pad, carry, keep, narrow)` (largest first), priced."""
    items, pitch = _homes(kernel, plan, cluster, pad, carry, keep, narrow)
    if _over_budget(items, costs):
        return None
    placed: list[tuple[int, int, int, int]] = []  # (offset, size, lo, hi)
    offsets: dict[object, int] = {}
    for size, lo, hi, key in sorted(items, key=lambda t: -t[0]):
        off = 0
        for o, s, l2, h2 in sorted(placed):
            if lo <= h2 and l2 <= hi and off < o + s and o < off + size:
                off = _align(o + s)
        # re-check against every overlapping range after moving
        moved = True
        while moved:
            moved = False
            for o, s, l2, h2 in placed:
                if lo <= h2 and l2 <= hi and off < o + s and o < off + size:
                    off = _align(o + s)
                    moved = True
        placed.append((off, size, lo, hi))
        offsets[key] = off
    smem = max((o + s for o, s, _, _ in placed), default=0)
    if smem > costs.smem_budget:
        return None
    homes = {k: (offsets[k], plan.buffer_split.get(k, -1)) for _, _, _, k in items if not isinstance(k, tile.TileWorkOp)}
    scratch = {k: v for k, v in offsets.items() if isinstance(k, tile.TileWorkOp)}
    ops = tile_ops(kernel)
    est = estimate(kernel, plan, cluster, homes, costs, ops[-1][0] if ops else 0, pitch, wide)
    return Placement(cluster, homes, scratch, smem, est, pitch)


def exchange_stores(op: tile.TileWorkOp, n: int, cluster: int, homes, pitch: dict[SSAValue, int],
                    wide: bool) -> int:
    """The remote stores a block of `cluster` issues in the exchange of a split
    op's `n` partials, by the printer's rules (tile.pair_pushes, tile.publish_run;
    `wide`: target.exchange_wide_stores): its pushes of the partials other ranks
    own (fragment pairs in one store where a gemm's layout allows), and the
    publish of its own chunk of each replicated home the epilogue stores
    (`homes`: root buffer -> (offset, split); `pitch`: the padded homes' row
    strides) into the other ranks' copies, in runs where the homes' rows allow."""
    chunk = ceil_div(n, cluster)
    pairs = isinstance(op, tile.GemmOp) and tile.pair_pushes(n, iteration_space(op)[1], cluster, wide)
    stores = (n - chunk) // 2 if pairs else n - chunk
    published = [r for r in {sched.root_buffer(v) for v in op.outs} if r in homes and homes[r][1] == -1]
    layouts = []
    for r in published:
        shape = _shape(r)
        rows = (pitch[r],) if r in pitch else tuple(strides(shape)[:-1])
        layouts.append((byte_size(r.type), shape[-1] if shape else 1, rows))
    step = tile.publish_run(n, cluster, layouts, wide)
    for esize, _, _ in layouts:
        if step is None:  # tk::publish: a 32-bit word a store
            stores += (cluster - 1) * ceil_div(chunk * esize, 4)
        else:
            per_run = step * esize // tile.publish_store_bytes(step, esize, wide)
            stores += (cluster - 1) * ceil_div(chunk, step) * per_run
    return stores


def estimate(kernel, plan: Plan, cluster: int, homes, costs: ResidentCosts, last_phase: int,
             pitch: dict[SSAValue, int], wide: bool) -> float:
    n_in = kernel.num_inputs.data
    t = costs.launch_us + (costs.cluster_launch_us if cluster > 1 else 0.0)
    loaded = sum(
        _local_bytes(r, split, cluster)
        for r, (_, split) in homes.items()
        if isinstance(r, BlockArgument) and r.index < n_in
    )
    t += loaded / costs.sm_bytes_per_us
    stored = 0
    for _, op in tile_ops(kernel):
        split = plan.op_split[op]
        space = iteration_space(op)
        local = [(ceil_div(d, cluster) if k == split else d) for k, d in enumerate(space)]
        work = 1
        for d in local:
            work *= d
        t += costs.op_overhead_us
        if isinstance(op, tile.GemmOp):
            mm = op.matmul
            simt = isinstance(tk.element_type_of(mm.result), builtin.Float32Type)
            t += 2 * work / (costs.simt_flop_per_us if simt else costs.mma_flop_per_us)
            t += local[0] * local[1] / costs.elem_ops_per_us  # the epilogue
        else:
            t += work / costs.elem_ops_per_us
        if cluster > 1 and is_partial(op, split):
            n = _result_elems(op)
            stores = exchange_stores(op, n, cluster, homes, pitch, wide)
            t += 2 * costs.cluster_sync_us + stores * costs.dsmem_store_us + n / costs.elem_ops_per_us
        for v in op.outs:
            r = sched.root_buffer(v)
            if isinstance(r, BlockArgument):
                stored += _local_bytes(r, plan.buffer_split.get(r, -1), cluster)
    t += stored / costs.result_store_bytes_per_us
    t += costs.block_sync_us * last_phase
    return t


def grid_estimate_us(kernel: tile.KernelOp, target: TargetOptions) -> float:
    """sched-to-tile's estimate of the grid kernel, calibrated by measurement:
    its mma.sync gemm items weighed as the engine choice weighs them
    (GridCosts.mma_engine_calibration), since grid_calibration is fitted to the
    wgmma kernels (a step whose 10-class head keeps every product on mma.sync,
    64 x 256-256-256-10, measured 57 us against a raw estimate of 12.9; perf-log
    step 121)."""
    from trainkernel.passes.sched_to_tile import estimate_us

    phases = [p for p in kernel.phases() if p]
    launch = target.grid_costs.launch_us
    raw = estimate_us(phases, kernel.grid, target, target.grid_costs.mma_engine_calibration)
    return target.resident_costs.grid_calibration * (raw + launch) if phases else 0.0


def choose(kernel: tile.KernelOp, target: TargetOptions, max_cluster: int = 0,
           carry_casts: bool = False, keep_state: bool = False) -> tuple[Plan, Placement] | None:
    an = analyse(kernel)
    found: list[tuple[Plan, Placement]] = []
    costs, max_cluster = target.resident_costs, max_cluster or target.max_cluster
    for plan in candidate_plans(an):
        for cluster in target.clusters:
            # One block: splitting changes nothing, so only the plan that splits nothing.
            if cluster > max_cluster or (cluster > 1) != bool(plan.split):
                continue
            p = place(kernel, plan, cluster, costs, carry_casts, keep_state, target.pad_narrow_gemm_rows,
                      target.exchange_wide_stores)
            if p is not None:
                found.append((plan, p))
    if not found:
        return None
    # Within the model's resolution (5%), fewer blocks: fewer exchanges and a cheaper launch.
    fastest = min(p.estimate_us for _, p in found)
    return min((f for f in found if f[1].estimate_us <= 1.05 * fastest), key=lambda f: f[1].cluster)


def branchy_element_ops(kernel: tile.KernelOp, plan: Plan, cluster: int) -> int:
    """Element ops of IEEE divisions and square roots one block runs: each
    tile op's local elements (its iteration space, the split axis divided over
    the cluster) times the tk.div/tk.sqrt in its body."""
    total = 0
    for _, op in tile_ops(kernel):
        n = sum(1 for o in op.body.walk() if isinstance(o, tk.DivOp | tk.SqrtOp))
        if n:
            split = plan.op_split[op]
            total += n * numel([ceil_div(d, cluster) if k == split else d
                                for k, d in enumerate(iteration_space(op))])
    return total


def resident_threads_for(kernel: tile.KernelOp, plan: Plan, cluster: int, target: TargetOptions) -> int:
    """The block size of a resident kernel: target.resident_threads, or
    resident_max_threads where the latency of its division and square-root
    element ops, which more warps hide, outweighs a wider block's cost
    (ResidentCosts.branchy_elem_op_us, wider_block_us)."""
    costs, base = target.resident_costs, target.resident_threads
    branchy = branchy_element_ops(kernel, plan, cluster)

    def cost(threads: int) -> float:
        return branchy * costs.branchy_elem_op_us * base / threads + costs.wider_block_us * (threads / base - 1)

    return min((base, target.resident_max_threads), key=cost)


# ---------------------------------------------------------------- rewrite


def make_resident(kernel: tile.KernelOp, plan: Plan, placement: Placement, target: TargetOptions) -> None:
    block = kernel.block
    first = block.first_op
    homes: dict[SSAValue, SSAValue] = {}
    for r, (off, split) in placement.homes.items():
        src = r if isinstance(r, BlockArgument) else None
        home = tile.SmemOp(r.type, off, split, src, placement.pitch.get(r))
        if isinstance(r, BlockArgument):
            block.insert_op_before(home, first)
        else:
            block.insert_op_before(home, r.owner)
        homes[r] = home.result
    # Views of argument homes: rebuild them over the home; views of temps follow the temp.
    view_of: dict[SSAValue, SSAValue] = {}
    for op in list(block.ops):
        if isinstance(op, sched.ViewOp):
            root = sched.root_buffer(op.result)
            if isinstance(root, BlockArgument) and root in homes:
                src = view_of.get(op.source, homes.get(op.source, op.source))
                v = sched.ViewOp(src, op.result.type)
                block.insert_op_after(v, op)
                view_of[op.result] = v.result
    for _, op in tile_ops(kernel):
        for i, v in enumerate(op.ins):
            if v in view_of:
                op.operands[i] = view_of[v]
            elif v in homes and isinstance(v, BlockArgument):
                op.operands[i] = homes[v]
        op.properties["split"] = IntegerAttr(plan.op_split[op], 64)
        if isinstance(op, tile.GemmOp) and op.ksplit > 1:
            # Split-K is the grid kernel's (its workspace is in the arena); a
            # resident kernel splits k over its cluster instead, by the plan.
            op.properties["items"] = IntegerAttr(op.items // op.ksplit, 64)
            del op.properties["ksplit"]
            op.properties.pop("workspace", None)
            op.properties.pop("fixup", None)  # (a cluster fix-up has no workspace)
        if isinstance(op, tile.GemmOp) and op.engine == "wgmma":
            # So is the wgmma engine (TMA from global memory); a resident kernel
            # multiplies from shared memory with mma.sync tiles.
            m, n, _ = iteration_space(op)
            bm, bn, bk = target.gemm_tile(op.mma)
            op.properties.update(tile.config(tile=(bm, bn, bk), items=ceil_div(m, bm) * ceil_div(n, bn)))
            del op.properties["engine"]
        if op in placement.scratch:
            op.properties["scratch"] = IntegerAttr(placement.scratch[op], 64)
    # Temporaries: the arena buffer is replaced by its home.
    for op in list(block.ops):
        if isinstance(op, sched.BufferOp):
            if op.result in homes:
                op.result.replace_all_uses_with(homes[op.result])
            if not op.result.uses:
                op.detach()
                op.erase()
        elif isinstance(op, tile.SyncOp):
            op.properties["scope"] = StringAttr("block")
    kernel.properties["cluster"] = IntegerAttr(placement.cluster, 64)
    kernel.properties.pop("gemm_cluster", None)  # the grid kernel's pairs (its gemms are the cluster's now)
    kernel.properties.pop("fixup_cluster", None)  # and its split-K's clusters
    kernel.properties["grid"] = IntegerAttr(placement.cluster, 64)
    kernel.properties["smem"] = IntegerAttr(placement.smem, 64)
    kernel.properties["arena_bytes"] = builtin.IntAttr(0)


@dataclass(frozen=True)
class TileResidentPass(ModulePass):
    """Make a tile.kernel resident in one cluster when the cost model says it pays.

    `mode=auto` (default) decides by cost; `mode=force` makes it resident
    whenever it fits; `mode=off` leaves it a grid kernel. `carry_casts`
    (target, on, off: as target.carry_casts says, or not) keeps the homes of
    casts of state (state_casts) to the kernel's end where they fit with the
    same padding, for the step loop to carry them from step to step;
    `keep_state` (likewise target.keep_state_homes) the homes of state.
    """

    name = "tile-resident"

    mode: str = "auto"
    max_cluster: int = 0  # 0: the target's
    target: str = DEFAULT.name  # a name of trainkernel.target.TARGETS
    threads: int = 0  # threads per block of a resident kernel; 0: the pass decides (resident_threads_for)
    carry_casts: str = "target"  # target (as target.carry_casts says), on, off
    keep_state: str = "target"  # target (as target.keep_state_homes says), on, off

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        from xdsl.utils.exceptions import DiagnosticException

        if self.mode not in ("auto", "force", "off"):
            raise DiagnosticException(f"tile-resident: mode must be auto, force or off, got {self.mode!r}")
        target = pass_target(self.name, self.target)
        if self.threads and (self.threads % 32 or not 32 <= self.threads <= target.resident_max_threads):
            raise DiagnosticException(
                f"tile-resident: threads must be 0 (the pass decides) or a multiple of 32 in "
                f"[32, {target.resident_max_threads}], got {self.threads}")
        carry = pass_switched_on(self.name, self.target, self.carry_casts, "carry_casts")
        keep = pass_switched_on(self.name, self.target, self.keep_state, "keep_state_homes")
        if self.mode == "off":
            return
        for kernel in list(op.ops):
            if not isinstance(kernel, tile.KernelOp) or kernel.cluster is not None:
                continue
            if tile.largest_extent(kernel) > tile.RESIDENT_MAX_ELEMENTS:
                continue  # resident kernels index in 32 bits (and such a step never fits on chip)
            best = choose(kernel, target, self.max_cluster, carry, keep)
            if best is None:
                continue
            plan, placement = best
            if self.mode == "auto" and placement.estimate_us >= grid_estimate_us(kernel, target):
                continue
            threads = self.threads or resident_threads_for(kernel, plan, placement.cluster, target)
            make_resident(kernel, plan, placement, target)
            kernel.properties["threads"] = IntegerAttr(threads, 64)
