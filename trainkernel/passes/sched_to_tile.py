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
phase has (capped at `max_grid`; the runtime clamps it to what fits
co-resident), its shared memory the largest GEMM pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from trainkernel.dialects import sched, tile, tk

THREADS = 128
"""Threads per block: the GEMM tiles are written for 4 warps (2x2 warp tiles)."""

GEMM_TILES = {"mma.bf16": (64, 64, 32), "mma.f16": (64, 64, 32), "simt.f32": (64, 64, 16)}
STAGES = 3  # cp.async pipeline depth of tk::gemm_tile
MAP_CHUNK = THREADS * 4


def gemm_smem_bytes(mma: str) -> int:
    """Mirror of tk::gemm_smem_bytes: STAGES x (A tile + B tile), rows padded by 16 B."""
    bm, bn, bk = GEMM_TILES[mma]
    elem = 4 if mma == "simt.f32" else 2
    pad = 16 // elem
    # The larger of the two layouts (k-contiguous or m-contiguous) per operand.
    a = max(bm * (bk + pad), bk * (bm + pad))
    b = max(bn * (bk + pad), bk * (bn + pad))
    return STAGES * (a + b) * elem


def mma_kind(element_type) -> str:
    if isinstance(element_type, BFloat16Type):
        return "mma.bf16"
    if isinstance(element_type, Float16Type):
        return "mma.f16"
    if isinstance(element_type, Float32Type):
        return "simt.f32"
    raise DiagnosticException(f"sched-to-tile: no matmul kernel for element type {element_type}")


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def tile_op_for(compute: sched.ComputeOp, offset: int) -> tile.TileWorkOp:
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
        bm, bn, bk = GEMM_TILES[mma]
        m, n = tk.shape_of(mm.result)
        items = max(1, _ceil(m, bm) * _ceil(n, bn))
        cfg = tile.config(tile=(bm, bn, bk), mma=mma, items=items, offset=offset)
        return tile.GemmOp(ins, outs, body, cfg)
    if reductions:
        red = reductions[0]
        rows = 1
        for d in tk.shape_of(red.result):
            rows *= d
        cfg = tile.config(items=max(1, rows), offset=offset, rows=1)
        return tile.ReduceOp(ins, outs, body, cfg)
    shapes = {tuple(tk.shape_of(v)) for v in body.block.last_op.operands}
    if len(shapes) > 1:
        raise DiagnosticException(f"sched-to-tile: a pointwise compute writes several shapes {sorted(shapes)}")
    n = 1
    for d in shapes.pop() if shapes else ():
        n *= d
    cfg = tile.config(items=max(1, _ceil(n, MAP_CHUNK)), offset=offset, chunk=MAP_CHUNK)
    return tile.MapOp(ins, outs, body, cfg)


def copy_op(commit: sched.CommitOp, offset: int) -> tile.MapOp:
    t = sched.tensor_type_of(commit.source.type)
    block = Block(arg_types=[t])
    block.add_op(tk.YieldOp(block.args[0]))
    n = 1
    for d in t.get_shape():
        n *= d
    cfg = tile.config(items=max(1, _ceil(n, MAP_CHUNK)), offset=offset, chunk=MAP_CHUNK)
    return tile.MapOp([commit.source], [commit.target], Region(block), cfg)


def lower_program(program: sched.ProgramOp, max_grid: int) -> tile.KernelOp:
    if program.arena_bytes.data < 0:
        raise DiagnosticException("sched-to-tile: run sched-allocate first (the arena has no size)")
    body = program.detach_region(program.body)
    block = body.block
    grid, smem = 1, 0
    for op in list(block.ops):
        if isinstance(op, sched.BarrierOp):
            block.insert_op_before(tile.SyncOp(op.scope.data), op)
            op.detach()
            op.erase()
        elif isinstance(op, sched.PhaseOp):
            offset = 0
            for inner in list(op.body.block.ops):
                new: Operation
                if isinstance(inner, sched.CommitOp):
                    new = copy_op(inner, offset)
                else:
                    assert isinstance(inner, sched.ComputeOp)
                    new = tile_op_for(inner, offset)
                    if isinstance(new, tile.GemmOp):
                        smem = max(smem, gemm_smem_bytes(new.mma))
                offset += new.items
                block.insert_op_before(new, op)
            grid = max(grid, offset)
            op.detach()
            op.erase()
    cfg = tile.config(grid=min(grid, max_grid), threads=THREADS, smem=smem)
    return tile.KernelOp(
        program.sym_name.data, program.num_inputs.data, program.result_args, body, program.arena_bytes.data, cfg
    )


@dataclass(frozen=True)
class SchedToTilePass(ModulePass):
    """Lower every sched.program to a tile.kernel (tile shapes, mma kind, grid, smem)."""

    name = "sched-to-tile"

    max_grid: int = 132 * 4

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for program in list(op.ops):
            if isinstance(program, sched.ProgramOp):
                kernel = lower_program(program, self.max_grid)
                op.body.block.insert_op_before(kernel, program)
                program.detach()
                program.erase()
