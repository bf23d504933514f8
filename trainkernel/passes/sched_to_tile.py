"""`sched-to-tile`: decide what every CUDA block does.

Each `sched.compute` becomes one tile op by what its body holds:
- a `tk.matmul` -> `tile.gemm`: tensor-core mma.sync tiles for bf16/f16
  (64x64x32), SIMT fp32 tiles (64x64x16) for f32; one work item per output tile;
- a reduction -> `tile.reduce`: one work item per output element, reduced by a
  whole block in a fixed order (deterministic);
- otherwise -> `tile.map`: work items of `chunk` elements.
A `sched.commit` becomes a copying `tile.map`. Phases become runs of tile ops
separated by `tile.sync grid`; inside a phase each op's first work item goes to
the block after the previous op's last one (`offset`), so small independent ops
spread over the grid. The kernel's grid is the largest number of work items any
phase has, or fewer where a cost model (per-item estimates and the measured
cost of a grid barrier) predicts a faster step; with one block every sync is a
block barrier. `grid=N` forces the grid. The runtime clamps it to what fits
co-resident. Shared memory is the largest GEMM pipeline.

Threads, tile shapes, the map chunk, the largest grid and the cost model's
figures are the target's (`trainkernel.target`, option `target=h200`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Block, BlockArgument, Operation, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from trainkernel.dialects import sched, tile, tk
from trainkernel.elements import byte_size, mma_kind
from trainkernel.target import DEFAULT, WGMMA_TILES, TargetOptions, pass_target, wgmma_hands_registers_back, wgmma_tile_supported
from trainkernel.util import align_up, ceil_div, numel


def outputs_per_item(red: tk.ReductionOp, target: TargetOptions) -> int:
    """Outputs per work item of a reduction (tile.reduce `rows`).

    Over leading axes with axes kept after them (a bias gradient: a sum over
    the batch): a column sum, the target's `reduce_columns` columns per item,
    one per lane, the block's thread groups each adding a contiguous slice of
    the rows in order (coalesced and deterministic).

    Over trailing axes with axes kept before them (a loss per sample, a
    softmax's row max): one output per warp of the block where that takes
    fewer dependent load rounds a block than the whole block folding one
    output after another (`row_warps`).

    Anything else (a full reduction to a scalar): one output per item, the
    whole block."""
    position = tile.reduced_axes_position(red.axes_list, len(tk.shape_of(red.input)))
    if position == "leading":
        return 1 if isinstance(red, tk.ArgmaxOp) else target.reduce_columns
    if position == "trailing":
        n_in, n_out = numel(tk.shape_of(red.input)), numel(tk.shape_of(red.result))
        return row_warps(n_out, n_in // max(n_out, 1), target)
    return 1


def row_warps(n_out: int, length: int, target: TargetOptions) -> int:
    """A row reduction's outputs per item: the block's warps (one output
    each, combined by shuffles) or 1 (the whole block, combined through
    shared memory and two block barriers), whichever needs fewer dependent
    load rounds on the busiest block of a full grid. Each thread keeps the
    target's full_reduce_loads in flight either way. large's 2048
    loss rows of 2048 elements: 16 rows a block one after another, 2 rounds
    and a combine each (32), against 2 items of 12 rows at 4 rounds (8)."""
    loads = target.full_reduce_loads
    warps = target.threads // 32
    if warps < 2 or not target.reduce_row_warps:
        return 1
    by_block = ceil_div(n_out, target.sms) * (ceil_div(length, target.threads * loads) + 1)
    by_warp = ceil_div(n_out, target.sms * warps) * ceil_div(length, 32 * loads)
    return warps if by_warp < by_block else 1


def gemm_items(m: int, n: int, bm: int, bn: int) -> int:
    """A gemm's work items before split-K: its output's bm x bn tiles (one at least)."""
    return max(1, ceil_div(m, bm) * ceil_div(n, bn))


def tile_op_for(compute: sched.ComputeOp, offset: int, target: TargetOptions, engine: str = "mma") -> tile.TileWorkOp:
    body = compute.detach_region(compute.body)
    ops = list(body.block.ops)
    matmuls = [op for op in ops if isinstance(op, tk.MatmulOp)]
    reductions = [op for op in ops if isinstance(op, tk.SumOp | tk.MaxOp | tk.ArgmaxOp | tk.MeanOp)]
    ins, outs = list(compute.ins), list(compute.outs)
    if len(matmuls) > 1 or (matmuls and reductions) or len(reductions) > 1:
        raise DiagnosticException("sched-to-tile: a compute may hold one matmul or one reduction")
    if matmuls:
        mm = matmuls[0]
        mma = mma_kind(tk.element_type_of(mm.result))
        bm, bn, bk = target.wgmma_tile if engine == "wgmma" else target.gemm_tile(mma)
        m, n = tk.shape_of(mm.result)
        cfg = tile.config(tile=(bm, bn, bk), mma=mma, items=gemm_items(m, n, bm, bn), offset=offset)
        if engine == "wgmma":
            cfg.update(tile.config(engine="wgmma"))
        return tile.GemmOp(ins, outs, body, cfg)
    if reductions:
        red = reductions[0]
        n_out = numel(tk.shape_of(red.result))
        rows = outputs_per_item(red, target)
        items = ceil_div(n_out, rows)
        cfg = tile.config(items=max(1, items), offset=offset, rows=rows)
        return tile.ReduceOp(ins, outs, body, cfg)
    shapes = {tuple(tk.shape_of(v)) for v in body.block.last_op.operands}
    if len(shapes) > 1:
        raise DiagnosticException(f"sched-to-tile: a pointwise compute writes several shapes {sorted(shapes)}")
    n = numel(shapes.pop() if shapes else ())
    chunk = target.map_chunk_for(sum(1 for v in ins if numel(sched.tensor_type_of(v.type).get_shape()) > 1), n)
    cfg = tile.config(items=max(1, ceil_div(n, chunk)), offset=offset, chunk=chunk)
    return tile.MapOp(ins, outs, body, cfg)


def copy_op(commit: sched.CommitOp, offset: int, target: TargetOptions) -> tile.MapOp:
    t = sched.tensor_type_of(commit.source.type)
    block = Block(arg_types=[t])
    block.add_op(tk.YieldOp(block.args[0]))
    n = numel(t.get_shape())
    chunk = target.map_chunk
    cfg = tile.config(items=max(1, ceil_div(n, chunk)), offset=offset, chunk=chunk)
    return tile.MapOp([commit.source], [commit.target], Region(block), cfg)


# Cost model for sizing the grid: the target's GridCosts (microseconds).


def item_cost_us(op: tile.TileWorkOp, target: TargetOptions, mma_weight: float = 1.0) -> float:
    """One item of `op` on a block; an mma.sync gemm's weighed by `mma_weight`
    (the engine choice's GridCosts.mma_engine_calibration)."""
    costs = target.grid_costs
    if isinstance(op, tile.GemmOp):
        k = tile.iteration_space(op)[2]
        bm, bn, bk = op.tile_shape
        if op.ksplit > 1:
            k = tile.gemm_k_slice(k, op.ksplit, bk)
        if op.engine == "wgmma":
            if costs.unit_parts:
                fixup = 0.0 if op.ksplit < 2 else (
                    costs.cluster_fixup_cycles if op.fixup == "cluster" else costs.l2_fixup_cycles) * costs.cycle_us
                return costs.wgmma_unit_parts_us(bm, bn, bk, ceil_div(k, bk), epilogue_bytes(op)) + fixup
            return costs.wgmma_unit_fixed_us(bn) + 2 * bm * bn * k / costs.gemm_flop_per_us(op.mma, "wgmma", bn, bm)
        return mma_weight * (costs.item_overhead_us + 2 * bm * bn * k / costs.gemm_flop_per_us(op.mma))
    if isinstance(op, tile.ReduceOp):
        red = op.reduction()
        n_in, n_out = numel(tk.shape_of(red.input)), numel(tk.shape_of(red.result))
        elements = (n_in // max(n_out, 1)) * op.rows
        if costs.unit_parts:
            return costs.reduce_parts_us(elements, target.threads // op.rows if op.is_column_sum() else None)
        return costs.item_overhead_us + elements * costs.reduce_us_per_element
    return costs.map_chunk_us


def epilogue_bytes(op: tile.GemmOp) -> float:
    """Bytes an output element's epilogue moves: each output, and each input
    past the two products' operands, shaped like the product (an SGD update's
    fp32 weight in and out and its cast: 10; a plain bf16 store: 2; bias rows
    and column sums count nothing an element)."""
    m, n, _ = tile.iteration_space(op)
    shaped = [v for v in (*list(op.ins)[2:], *op.outs) if numel(v.type.get_shape()) == m * n]
    return float(sum(byte_size(v.type) for v in shaped))


def phase_us(ops: list[tile.TileWorkOp], grid: int, target: TargetOptions, mma_weight: float = 1.0) -> float:
    """A phase's time on `grid` blocks: its busiest block's (`busiest_block_us`,
    target.grid_costs.block_sums), or else its longest op's items in turn or all
    its items spread evenly, whichever is longer."""
    if not ops:
        return 0.0
    # Block sums price each block as if it had an SM to itself: so only where no
    # grid the engine may pick runs two blocks an SM (the wgmma engine's one block
    # an SM). The mma.sync engine's grids reach four blocks an SM, where they
    # moved small in fp32 from 256 blocks to 288 (some SMs then run three),
    # +17 us (perf-log step 106's probe).
    if target.grid_costs.block_sums and target.max_blocks_per_sm == 1:
        return busiest_block_us(ops, grid, target, mma_weight)
    longest = max(ceil_div(op.items, grid) * item_cost_us(op, target, mma_weight) for op in ops)
    spread = sum(op.items * item_cost_us(op, target, mma_weight) for op in ops) / grid
    return max(longest, spread)


def busiest_block_us(ops: list[tile.TileWorkOp], grid: int, target: TargetOptions, mma_weight: float = 1.0) -> float:
    """The phase's items as the printed loops deal them: item i of an op at offset
    o (the items of the ops before it, as `renumber_offsets` numbers them) on
    block (o + i) % grid, each block running its items one after another; the
    busiest block's sum."""
    every, extra, offset = 0.0, [0.0] * grid, 0
    for op in ops:
        cost = item_cost_us(op, target, mma_weight)
        rounds, rest = divmod(op.items, grid)
        every += rounds * cost
        for i in range(rest):
            extra[(offset + i) % grid] += cost
        offset += op.items
    return every + max(extra)


def estimate_us(phases: list[list[tile.TileWorkOp]], grid: int, target: TargetOptions,
                mma_weight: float = 1.0) -> float:
    total = target.grid_costs.sync_us("block" if grid == 1 else "grid") * (len(phases) - 1)
    return total + sum(phase_us(ops, grid, target, mma_weight) for ops in phases)


def choose_grid(phases: list[list[tile.TileWorkOp]], max_grid: int, target: TargetOptions) -> int:
    """The grid with the smallest estimated step time. One block is often best
    for tiny steps: its syncs are __syncthreads() instead of grid barriers."""
    most = max((sum(op.items for op in ops) for ops in phases if ops), default=1)
    candidates = {1, min(most, max_grid)}
    g = 2
    while g < min(most, max_grid):
        candidates.add(g)
        g *= 2
    return min(sorted(candidates), key=lambda g: estimate_us(phases, g, target))


def wgmma_gemm_fits(compute: sched.ComputeOp, mm: tk.MatmulOp) -> bool:
    """Whether the wgmma engine can run this gemm: it multiplies bf16/f16, and
    both operands' rows are whole 16 bytes (TMA) in arena buffers at 16-byte
    offsets."""
    if mma_kind(tk.element_type_of(mm.result)) not in ("mma.bf16", "mma.f16"):
        return False
    for arg in (mm.lhs, mm.rhs):
        if tk.shape_of(arg)[-1] % 8:
            return False
        buf = sched.root_buffer(compute.ins[arg.index]).owner if isinstance(arg, BlockArgument) else None
        if isinstance(buf, sched.BufferOp) and (buf.offset_value or 0) % 16:
            return False
    return True


def _gemm_matmul(compute: sched.ComputeOp) -> tk.MatmulOp | None:
    return next((op for op in compute.body.block.ops if isinstance(op, tk.MatmulOp)), None)


def _gemms(program: sched.ProgramOp) -> list[tuple[sched.ComputeOp, tk.MatmulOp]]:
    """Every gemm of `program`: its compute and its matmul."""
    return [(compute, mm) for compute in program.walk() if isinstance(compute, sched.ComputeOp)
            for mm in compute.body.block.ops if isinstance(mm, tk.MatmulOp)]


def wgmma_fits(program: sched.ProgramOp, target: TargetOptions) -> bool:
    """Whether the wgmma engine can run every gemm of `program`: the target
    has it, there is a gemm, every gemm fits it (`wgmma_gemm_fits`), and
    their tensor maps fit the kernel parameters (`wgmma_max_gemms`)."""
    gemms = _gemms(program)
    return target.wgmma and 0 < len(gemms) <= target.wgmma_max_gemms and all(wgmma_gemm_fits(*g) for g in gemms)


def mma_beside_wgmma(program: sched.ProgramOp, target: TargetOptions) -> set[str]:
    """The mma kinds of the gemms a mixed kernel (target.mixed_gemm_engines)
    runs on mma.sync beside the wgmma pipeline: those whose rows do not fit it
    (a 10-class head's are 20 bytes), where some others fit and their tensor
    maps fit the kernel parameters. Empty: no mixed kernel on offer."""
    gemms = _gemms(program)
    unfit = [mm for compute, mm in gemms if not wgmma_gemm_fits(compute, mm)]
    fitting = len(gemms) - len(unfit)
    if not (target.wgmma and target.mixed_gemm_engines and unfit and 0 < fitting <= target.wgmma_max_gemms):
        return set()
    return {mma_kind(tk.element_type_of(mm.result)) for mm in unfit}


def mixed_smem_fits(target: TargetOptions, bn: int, bm: int, mma_kinds: set[str]) -> bool:
    """Whether the wgmma pipeline of a bm x bn tile and, after it, the largest
    mma.sync tile of `mma_kinds` fit a block's shared memory (a mixed kernel:
    the pipeline keeps its stages and mbarriers from gemm to gemm, and the
    next phase's loads may be in flight into them, so the mma.sync tiles may
    not share them)."""
    extra = max((target.gemm_smem_bytes(k) for k in mma_kinds), default=0)
    return target.wgmma_smem_bytes(bn, bm) + extra <= target.smem_per_block


def lower_program(program: sched.ProgramOp, max_grid: int, grid: int, target: TargetOptions,
                  engine: str = "auto", pairs: bool | None = None) -> tile.KernelOp:
    """The tile kernel of `program`. `engine` auto: the gemm engine (mma.sync
    tiles, or the wgmma one where `wgmma_fits`) with the smaller estimate (the
    mma.sync one weighed by `GridCosts.mma_engine_calibration`);
    wgmma: its tile width (`target.wgmma_tiles_n`) with the smaller estimate.
    `pairs`: a wgmma grid kernel in clusters of two whose gemms walk as pairs
    (None: target.gemm_cluster_pairs)."""
    pairs = target.gemm_cluster_pairs if pairs is None else pairs
    if program.arena_bytes.data < 0:
        raise DiagnosticException("sched-to-tile: run sched-allocate first (the arena has no size)")
    fits = wgmma_fits(program, target)
    beside = mma_beside_wgmma(program, target)  # a mixed kernel's mma.sync kinds (none where all fit)
    mixed = bool(beside)
    if engine == "wgmma" and not (fits or mixed):
        raise DiagnosticException(
            "sched-to-tile: engine=wgmma needs bf16/f16 gemms whose operand rows are whole 16 bytes, "
            f"at most {target.wgmma_max_gemms} of them (their tensor maps travel in the kernel parameters), "
            "and a target with wgmma (or target.mixed_gemm_engines, where some gemms fit)")
    # The mma.sync tiles (unless engine=wgmma) and, where it fits, the wgmma
    # engine at each tile width and height: the cheapest by the cost model. A
    # mixed kernel (the gemms wgmma cannot run on mma.sync) only where both
    # engines' shared memory fits.
    choices = [("mma", 0, 0)] if engine != "wgmma" else []
    if engine != "mma" and (fits or mixed):
        choices += [("wgmma", bn, c) for c in target.wgmma_consumers for bn in target.wgmma_tiles_n
                    if wgmma_tile_supported(64 * c, bn) and mixed_smem_fits(target, bn, 64 * c, beside)]
    if not choices:
        raise DiagnosticException(
            "sched-to-tile: engine=wgmma with gemms on both engines: no wgmma tile leaves room in shared memory "
            "for the mma.sync tiles")
    if len(choices) == 1:
        return _lower(program, max_grid, grid, target, *choices[0], pairs=pairs)[0]
    # The model prices both engines on one relative scale, which measurement
    # does not bear out for mma.sync's gemms (GridCosts.mma_engine_calibration):
    # their items are weighed by it in the estimates compared here (not in the
    # mma.sync kernel's grid, nor in its maps, reductions and barriers, which a
    # one-block kernel of tiny products is mostly made of).
    options = []
    for e, bn, c in choices:
        kernel, estimate = _lower(program.clone(), max_grid, grid, target, e, bn, c, pairs=pairs,
                                  mma_weight=target.grid_costs.mma_engine_calibration)
        options.append((estimate, kernel))
    return min(options, key=lambda o: o[0])[1]


def _lower(program: sched.ProgramOp, max_grid: int, grid: int, target: TargetOptions,
           engine: str, bn: int = 0, consumers: int = 0, pairs: bool = False,
           mma_weight: float = 1.0) -> tuple[tile.KernelOp, float]:
    """The tile kernel of `program` on `engine`, and its estimate with mma.sync
    gemm items weighed by `mma_weight` (lower_program's engine comparison)."""
    if engine == "wgmma":
        target = target.for_wgmma(bn or None, consumers or None)
        max_grid = min(max_grid, target.max_grid)
    body = program.detach_region(program.body)
    block = body.block
    pipeline_smem = target.wgmma_smem_bytes(target.wgmma_tile[1], target.wgmma_tile[0]) if engine == "wgmma" else 0
    mma_smem = 0  # the largest mma.sync tile's (after the pipeline's in a mixed kernel)
    phases: list[list[tile.TileWorkOp]] = []
    syncs: list[tile.SyncOp] = []
    for op in list(block.ops):
        if isinstance(op, sched.BarrierOp):
            sync = tile.SyncOp(op.scope.data)
            syncs.append(sync)
            block.insert_op_before(sync, op)
            op.detach()
            op.erase()
        elif isinstance(op, sched.PhaseOp):
            phases.append([])
            offset = 0
            for inner in list(op.body.block.ops):
                new: Operation
                if isinstance(inner, sched.CommitOp):
                    new = copy_op(inner, offset, target)
                else:
                    assert isinstance(inner, sched.ComputeOp)
                    mm = _gemm_matmul(inner)
                    # A mixed kernel: the gemms the wgmma engine cannot run take mma.sync tiles.
                    own = "mma" if engine == "wgmma" and mm is not None and not wgmma_gemm_fits(inner, mm) else engine
                    new = tile_op_for(inner, offset, target, own)
                    if isinstance(new, tile.GemmOp) and own == "mma":
                        mma_smem = max(mma_smem, target.gemm_smem_bytes(new.mma))
                offset += new.items
                block.insert_op_before(new, op)
                phases[-1].append(new)
            op.detach()
            op.erase()
    phases = [p for p in phases if p]
    smem = pipeline_smem + mma_smem
    # Gemms walk as pairs only where every gemm is on the pipeline.
    pairs = pairs and engine == "wgmma" and not mma_smem
    if grid <= 0:
        grid = choose_grid(phases, max_grid, target) if phases else 1
        if pairs and grid > 2:
            grid -= grid % 2  # whole clusters of two
    pairs = pairs and grid > 1 and grid % 2 == 0  # a forced odd grid runs unpaired
    if engine == "wgmma" and target.wgmma_gemm_widths and not pairs:
        narrow_wgmma_gemms(phases, grid, target)
    if grid > 1:
        narrow_column_sums(phases, grid, target)
    fixup_cluster = cluster_split_k(phases, grid, target, smem) if engine == "wgmma" and not pairs else 0
    if fixup_cluster:  # the fix-ups' barriers and slots after the rest (16-byte aligned)
        smem = align_up(smem, 16) + max(tile.cluster_fixup_bytes(op) for ops in phases for op in ops
                                        if isinstance(op, tile.GemmOp) and op.fixup == "cluster")
    arena = split_k(phases, grid, program.arena_bytes.data, target)
    if pairs:
        for ops in phases:
            renumber_offsets(ops, pairs=True)
    for sync in syncs:
        # One block: a block barrier is enough. Several blocks: only a grid
        # barrier orders phases, whatever scope the schedule asked for.
        sync.properties["scope"] = builtin.StringAttr("block" if grid == 1 else "grid")
    estimate = estimate_us(phases, grid, target, mma_weight) if phases else 0.0
    if grid > 1 and ends_with_grid_sync(engine, target):
        block.add_op(tile.SyncOp("grid"))
        estimate += target.grid_costs.sync_us("grid")
    cfg = tile.config(grid=grid, threads=target.threads, smem=smem)
    if pairs:
        cfg.update(tile.config(gemm_cluster=2))
    if fixup_cluster:
        cfg.update(tile.config(fixup_cluster=fixup_cluster))
    kernel = tile.KernelOp(program.sym_name.data, program.num_inputs.data, program.result_args, body, arena, cfg)
    return kernel, estimate


def ends_with_grid_sync(engine: str, target: TargetOptions) -> bool:
    """Whether a grid kernel ends with one more grid barrier (no block exits
    before the last), by `target.final_grid_sync`: "wide" (the default) for
    kernels whose gemms hand the producer's registers to the consumers (wgmma
    tiles wider than 128). Measured (perf-log step 15, in place, 20-step
    graph): large 1293 -> 891 us, medium 286 -> 187 us on 256-wide tiles; the
    staged kernel and the phase timer's build (which ends with one) never
    showed the loss. Not yet explained: it grows with the weight that the last
    phase updates in place."""
    mode = target.final_grid_sync
    return mode == "always" or (mode == "wide" and engine == "wgmma" and wgmma_hands_registers_back(target.wgmma_tile[1]))


def narrow_wgmma_gemms(phases: list[list[tile.TileWorkOp]], grid: int, target: TargetOptions) -> None:
    """target.wgmma_gemm_widths: each wgmma gemm takes the width (of
    `target.wgmma_tiles_n`, at most its kernel's) with the smallest estimate of
    its phase on `grid` blocks, the kernel's on a tie; a kernel whose tiles
    hand registers back (wider than 128) keeps one width. Before split-K, which
    counts the phases' items."""
    if wgmma_hands_registers_back(target.wgmma_tile[1]):
        return
    for ops in phases:
        changed = False
        for op in (op for op in ops if isinstance(op, tile.GemmOp) and op.engine == "wgmma"):
            bm, bn, bk = op.tile_shape
            m, n = tile.iteration_space(op)[:2]

            def width(w: int) -> float:  # the phase's estimate with `op` w wide (and left so)
                op.properties.update(tile.config(tile=(bm, w, bk), items=gemm_items(m, n, bm, w)))
                return phase_us(ops, grid, target)

            best = min((w for w in target.wgmma_tiles_n if w <= bn and wgmma_tile_supported(bm, w)),
                       key=lambda w: (width(w), -w))
            width(best)
            changed |= best != bn
        if changed:
            renumber_offsets(ops)


def narrow_column_sums(phases: list[list[tile.TileWorkOp]], grid: int, target: TargetOptions) -> None:
    """target.column_sum_widths: each column sum takes the columns an item (of
    those offered that divide the threads) with the smallest estimate of its
    phase on `grid` blocks, the widest on a tie. Before split-K, which counts
    the phases' items."""
    widths = [c for c in target.column_sum_widths if target.threads % c == 0]
    if not widths:
        return
    for ops in phases:
        changed = False
        for op in (op for op in ops if isinstance(op, tile.ReduceOp) and op.is_column_sum()):
            n_out, rows = numel(tk.shape_of(op.reduction().result)), op.rows

            def columns(c: int) -> float:  # the phase's estimate with `op` c columns an item (and left so)
                op.properties.update(tile.config(rows=c, items=ceil_div(n_out, c)))
                return phase_us(ops, grid, target)

            best = min(widths, key=lambda c: (columns(c), -c))
            columns(best)
            changed |= best != rows
        if changed:
            renumber_offsets(ops)


def split_k(phases: list[list[tile.TileWorkOp]], grid: int, arena: int, target: TargetOptions) -> int:
    """Split-K for the gemms of a phase with fewer work items than half the grid
    (medium's h @ W2: 64 tiles, K = 4096, on 528 blocks): `ksplit` K slices per
    tile, as many as the idle blocks allow (at most `target.max_ksplit`, each slice at
    least `target.ksplit_min_k` of K). Each split gemm gets a workspace
    appended to the arena (fp32 partials, tile counters); the phase's items
    and offsets are renumbered. Returns the kernel's arena size."""
    for ops in phases:
        changed = False
        busy = sum(op.items for op in ops)  # the phase's work items: a phase that fills the grid gains nothing
        for op in ops:
            if not isinstance(op, tile.GemmOp) or grid < 2:
                continue
            if op.ksplit > 1:  # cluster_split_k's: its fix-up the cluster's, or (the probe's) the workspace's
                if op.fixup != "cluster":
                    arena = align_up(arena, 16)
                    op.properties.update(tile.config(workspace=arena))
                    arena += op.workspace_bytes()
                continue
            tiles = op.items
            splits = l2_ksplit(op, busy, grid, target)
            if splits < 2:
                continue
            arena = align_up(arena, 16)
            op.properties.update(tile.config(ksplit=splits, workspace=arena, items=tiles * splits))
            arena += op.workspace_bytes()
            changed = True
        if changed:
            renumber_offsets(ops)
    return arena


def l2_ksplit(op: tile.GemmOp, busy: int, grid: int, target: TargetOptions) -> int:
    """The K slices split_k gives whole gemm `op` in a phase of `busy` work items
    on `grid` blocks (1: none): as many as the idle blocks allow, at most
    target.max_ksplit, each at least target.ksplit_min_k of K, none empty."""
    k = tile.iteration_space(op)[2]
    bk = op.tile_shape[2]
    splits = min(grid // busy, target.max_ksplit, k // target.ksplit_min_k) if 2 * busy <= grid else 1
    while splits > 1 and (splits - 1) * tile.gemm_k_slice(k, splits, bk) >= k:
        splits -= 1
    return max(splits, 1)


def cluster_split_k(phases: list[list[tile.TileWorkOp]], grid: int, target: TargetOptions, smem: int) -> int:
    """target.split_k_cluster_fixup: in each phase, the wgmma gemm with the most
    K steps a unit splits K into S slices whose fix-up is the cluster's
    (tile.gemm's fixup = "cluster"): of the S allowed, the one with the
    smallest estimate of the phase (`phase_us`, each unit paying
    GridCosts.cluster_fixup_cycles), 1 (no split) on a tie. Allowed: a power of
    two that divides its tile's consumer warps (each slice owns warps), the
    grid (whole clusters), and at most target.max_cluster blocks, on a grid
    that clusters of S can hold at once (target.cluster_blocks), with slices
    of at least target.cluster_ksplit_min_k of K, none empty, and the phase's
    items (with the gemm's first unit moved to a multiple of S) within the
    grid: one round, a block a unit; and its slots (tile.cluster_fixup_bytes)
    after the kernel's `smem` within a block's. Unsplit here, the gemm is
    priced as split_k would split it through L2 (`l2_ksplit`, each unit paying
    GridCosts.l2_fixup_cycles). Before split_k, whose busy count then
    includes them.
    With target.cluster_fixup_through_l2 (a probe's baseline, and the tests'
    same-bits twin) the same slices meet through split_k's workspace instead.
    Returns the kernel's cluster (the largest S; 0: none, or through L2)."""
    if not target.split_k_cluster_fixup or grid < 2:
        return 0
    cluster = 0
    for ops in phases:
        gemms = [op for op in ops if isinstance(op, tile.GemmOp) and op.engine == "wgmma" and op.ksplit == 1
                 and align_up(smem, 16) + tile.cluster_fixup_bytes(op) <= target.smem_per_block]
        if not gemms:
            continue
        op = max(gemms, key=lambda g: (tile.iteration_space(g)[2], g.items))
        k = tile.iteration_space(op)[2]
        bk = op.tile_shape[2]
        busy = sum(o.items for o in ops)
        tiles = op.items
        allowed = [1]
        s = 2
        while s <= min(tile.wgmma_tile_warps(op), target.max_cluster, 8):
            fits = busy + tiles * (s - 1) + (s - 1) <= grid  # s - 1: the first unit's alignment at most
            fits = fits and grid <= target.blocks_in_clusters(s)  # clusters that fit at once
            if (tile.wgmma_tile_warps(op) % s or grid % s or not fits or k // s < target.cluster_ksplit_min_k
                    or (s - 1) * tile.gemm_k_slice(k, s, bk) >= k):
                break
            allowed.append(s)
            s *= 2

        # No cluster split: the slices split_k would give it through L2 instead.
        l2 = l2_ksplit(op, busy, grid, target)

        def split(s: int, cluster: bool = True) -> float:  # the phase's estimate with `op` so (and left so)
            op.properties.pop("fixup", None)
            op.properties.pop("ksplit", None)
            op.properties.update(tile.config(items=tiles * s))
            if s > 1:
                op.properties.update(tile.config(ksplit=s, **({"fixup": "cluster"} if cluster else {})))
            renumber_offsets(ops)
            return phase_us(ops, grid, target)

        splits = min(allowed, key=lambda s: (split(s) if s > 1 else split(l2, cluster=False), s))
        split(splits)  # 1: whole, for split_k
        if splits < 2:
            continue
        if target.cluster_fixup_through_l2:  # the same slices, through split_k's workspace
            op.properties.pop("fixup")
        else:
            cluster = max(cluster, splits)
    return cluster


def renumber_offsets(ops: list[tile.TileWorkOp], pairs: bool = False) -> None:
    """The offsets of a phase's ops after their items or order changed: each
    op's first item on the block after the previous op's last (split-K,
    tile-reductions-first). `pairs` (a kernel's gemm_cluster, target.gemm_cluster_pairs):
    each gemm's first unit on the next even block, so that a cluster's two
    blocks hold units 2q and 2q + 1 (tiles (m, n) and (m + 1, n) of a gemm
    without split-K, which share B). A gemm whose split-K fix-up is the
    cluster's starts on a multiple of its split (its tile's slices in one cluster)."""
    offset = 0
    for op in ops:
        if pairs and isinstance(op, tile.GemmOp):
            offset += offset % 2
        if isinstance(op, tile.GemmOp) and op.fixup == "cluster":
            offset += -offset % op.ksplit  # a tile's slices in one cluster
        op.properties["offset"] = tile.config(offset=offset)["offset"]
        offset += op.items


@dataclass(frozen=True)
class SchedToTilePass(ModulePass):
    """Lower every sched.program to a tile.kernel (tile shapes, mma kind, grid, smem)."""

    name = "sched-to-tile"

    max_grid: int = 0  # 0: the target's (SMs x max_blocks_per_sm)
    grid: int = 0  # 0: chosen by the cost model; otherwise forced
    target: str = DEFAULT.name  # a name of trainkernel.target.TARGETS
    engine: str = "auto"  # the gemm engine: auto (the cost model), mma (mma.sync tiles) or wgmma
    # a wgmma grid kernel in clusters of two whose gemms walk as pairs: on, off, or
    # as the target says (gemm_cluster_pairs)
    gemm_cluster: str = "target"
    # the wgmma tiles' rows: 0, the cost model's choice among the target's
    # wgmma_consumers (64 rows a consumer warpgroup); 64 or 128 forces one
    rows: int = 0
    # the wgmma tiles' width: 0, the cost model's choice among the target's
    # wgmma_tiles_n; a width of the tile table (WGMMA_TILES) forces it
    cols: int = 0
    # gemms on both engines in one kernel where only some fit wgmma: on, off, or
    # as the target says (mixed_gemm_engines)
    mixed: str = "target"
    # split-K whose slices meet in a thread block cluster (cluster_split_k): on,
    # off, or as the target says (split_k_cluster_fixup)
    cluster_fixup: str = "target"
    # the columns an item a column sum may take, the cost model choosing among
    # them (column_sums=32,16,8); none given: as the target says (column_sum_widths)
    column_sums: tuple[int, ...] = ()

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        target = pass_target(self.name, self.target)
        if self.engine not in ("auto", "mma", "wgmma"):
            raise DiagnosticException(f"sched-to-tile: engine {self.engine!r} is not auto, mma or wgmma")
        if self.rows not in (0, 64, 128):
            raise DiagnosticException(f"sched-to-tile: rows must be 0 (the cost model's), 64 or 128, got {self.rows}")
        if self.rows:
            target = dataclasses.replace(target, wgmma_consumers=(self.rows // 64,))
        if self.cols and self.cols not in WGMMA_TILES:
            raise DiagnosticException(f"sched-to-tile: cols must be 0 (the cost model's) or one of "
                                      f"{', '.join(map(str, sorted(WGMMA_TILES)))}, got {self.cols}")
        if self.cols:
            target = dataclasses.replace(target, wgmma_tiles_n=(self.cols,))
        if self.gemm_cluster not in ("target", "on", "off"):
            raise DiagnosticException(f"sched-to-tile: gemm_cluster must be target, on or off, got {self.gemm_cluster!r}")
        pairs = None if self.gemm_cluster == "target" else self.gemm_cluster == "on"
        if self.mixed not in ("target", "on", "off"):
            raise DiagnosticException(f"sched-to-tile: mixed must be target, on or off, got {self.mixed!r}")
        if self.mixed != "target":
            target = dataclasses.replace(target, mixed_gemm_engines=self.mixed == "on")
        if self.cluster_fixup not in ("target", "on", "off"):
            raise DiagnosticException(
                f"sched-to-tile: cluster_fixup must be target, on or off, got {self.cluster_fixup!r}")
        if self.cluster_fixup != "target":
            target = dataclasses.replace(target, split_k_cluster_fixup=self.cluster_fixup == "on")
        if self.column_sums:
            if any(c < 1 or target.threads % c for c in self.column_sums):
                raise DiagnosticException(f"sched-to-tile: column_sums must divide the {target.threads} threads, "
                                          f"got {','.join(map(str, self.column_sums))}")
            target = dataclasses.replace(target, column_sum_widths=self.column_sums)
        max_grid = self.max_grid or target.max_grid
        for program in list(op.ops):
            if isinstance(program, sched.ProgramOp):
                kernel = lower_program(program, max_grid, self.grid, target, self.engine, pairs)
                op.body.block.insert_op_before(kernel, program)
                program.detach()
                program.erase()
