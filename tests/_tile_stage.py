"""A captured step through the tk, sched and tile stages' passes (not the
printer), for the tests of the tile passes: the module, or its one kernel."""

from __future__ import annotations

from trainkernel.dialects import tile
from trainkernel.pipeline import run_passes, stage_passes, state_leaves


def tile_module(captured, target=None, inplace=True, grid=0, engine="auto"):
    """A clone of `captured`'s module after every pass up to the tile stage."""
    module = captured.module.clone()
    for stage in ("tk", "sched", "tile"):
        run_passes(module, stage_passes(stage, inplace, state=state_leaves(captured), grid=grid, target=target,
                                        engine=engine))
    return module


def tile_kernel(captured, target=None, inplace=True, grid=0, engine="auto") -> tile.KernelOp:
    """The tile.kernel of `tile_module`."""
    return next(op for op in tile_module(captured, target, inplace, grid, engine).walk() if isinstance(op, tile.KernelOp))
