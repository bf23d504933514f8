"""`tile-stage-casts`: a resident kernel's first-phase casts of staged inputs, done by the prologue.

A step that computes in bf16 from fp32 inputs casts them first: online's x
(64x128) and W1..b2, classification's x (64x256) and W1: the first phase of
their resident kernels is five `tile.map`s that read a staged fp32 home and
write a bf16 one (2.8 k of online's ~16 k cycles a step, 5.4 k of
classification's ~33 k, by the phase timer of run 7e7c441-c), and a block
barrier ends it. The prologue already loads those inputs from global memory;
it can convert them on the way (plain loads in flight together, then
`from_float`, the rounding `tk.cast` does) straight into the bf16 home.

For each `tile.map` of phase 0 of a resident kernel whose body is one
`tk.cast` between f32, f16 and bf16, reading a staged home (`tile.smem stage
%arg` of an input) and writing a home that nothing else writes, of the same
shape and split: the written home becomes `tile.smem_cast %arg` (same offset,
split and pitch) and the map goes. The staged home goes too if nothing else
reads it. A phase left without work loses its barrier. Phase 0 only: nothing
has written any argument or home before it, and the cast home's bytes are
live from phase 0 as the map's output was, so filling them in the prologue
overwrites nothing live. Same bits: the same conversion of the same values.

The step loop restages a cast home every step (it is never written through;
its argument, updated in place, is in global memory by the next step).

Off by default (`target.stage_casts`): its first form, each home's loads then
its conversions, home after home, measured 3-9 us a step slower on every
resident step (perf-log step 45), and its second, every cast home's loads
issued before any conversion (tk::CastRows), still 0.6-11 us slower (step 46).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, MemRefType
from xdsl.passes import ModulePass

from trainkernel.dialects import tile, tk
from trainkernel.target import DEFAULT, pass_switched_on

_FLOATS = Float32Type | Float16Type | BFloat16Type


def _is_cast_map(op: tile.TileWorkOp) -> bool:
    """A map of one input and one output whose body only casts it."""
    if not isinstance(op, tile.MapOp) or len(op.ins) != 1 or len(op.outs) != 1:
        return False
    body = list(op.body.block.ops)
    if len(body) != 2 or not isinstance(body[0], tk.CastOp) or not isinstance(body[1], tk.YieldOp):
        return False
    cast, yld = body
    return cast.operands[0] is op.body.block.args[0] and list(yld.operands) == [cast.results[0]]


def _foldable(kernel: tile.KernelOp, op: tile.MapOp) -> tuple[tile.SmemOp, tile.SmemOp] | None:
    """The staged home a phase-0 cast map reads and the home it writes, if the
    written home can be filled by the prologue instead."""
    src, dst = op.ins[0].owner, op.outs[0].owner
    if not (isinstance(src, tile.SmemOp) and src.source is not None and src.source.index < kernel.num_inputs.data):
        return None
    if not (isinstance(dst, tile.SmemOp) and dst.source is None):
        return None
    st, dt = src.result.type, dst.result.type
    assert isinstance(st, MemRefType) and isinstance(dt, MemRefType)
    if st.get_shape() != dt.get_shape() or src.split_axis != dst.split_axis:
        return None
    if not isinstance(st.get_element_type(), _FLOATS) or not isinstance(dt.get_element_type(), _FLOATS):
        return None
    writers = [o for o in kernel.block.ops if isinstance(o, tile.TileWorkOp) and o is not op
               and any(v is dst.result for v in o.outs)]
    uses = [u.operation for u in dst.result.uses if not isinstance(u.operation, tile.TileWorkOp)]
    return None if writers or uses else (src, dst)


def stage_casts(kernel: tile.KernelOp) -> int:
    """Fold the kernel's foldable phase-0 cast maps into the prologue; how many."""
    folded = 0
    for op in kernel.phases()[0]:
        if not _is_cast_map(op):
            continue
        homes = _foldable(kernel, op)
        if homes is None:
            continue
        src, dst = homes
        cast = tile.SmemCastOp(dst.result.type, dst.offset_value, dst.split_axis, src.source, dst.pitch_value)
        cast.result.name_hint = dst.result.name_hint
        kernel.block.insert_op_before(cast, dst)
        op.detach()
        op.erase()
        dst.result.replace_all_uses_with(cast.result)
        dst.detach()
        dst.erase()
        if not src.result.uses:
            src.detach()
            src.erase()
        folded += 1
    # A phase left without work loses the barrier that ends it.
    work = False
    for op in list(kernel.block.ops):
        if isinstance(op, tile.TileWorkOp):
            work = True
        elif isinstance(op, tile.SyncOp):
            if not work:
                op.detach()
                op.erase()
            work = False
    return folded


@dataclass(frozen=True)
class TileStageCastsPass(ModulePass):
    """Cast staged inputs in a resident kernel's prologue, not in its first phase."""

    name = "tile-stage-casts"

    target: str = DEFAULT.name  # a name of trainkernel.target.TARGETS
    mode: str = "target"  # target (as target.stage_casts says), on, off

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if not pass_switched_on(self.name, self.target, self.mode, "stage_casts"):
            return
        for kernel in list(op.walk()):
            if isinstance(kernel, tile.KernelOp) and kernel.cluster is not None:
                stage_casts(kernel)
