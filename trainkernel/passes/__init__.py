"""Registry of every pass `trainkernel-opt` and the compile pipeline can run.

Factories import lazily so that listing passes costs nothing. The opt driver
and `trainkernel.pipeline` both read `PASSES`; a pass is one file under
`trainkernel/passes/`, named after what it does.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    import trainkernel.passes.tk_canonicalize  # noqa: F401  (registers the tk patterns with the dialect)

    return CanonicalizePass


def _cse() -> type[ModulePass]:
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

    return CommonSubexpressionElimination


def _dce() -> type[ModulePass]:
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    return DeadCodeElimination


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "canonicalize": _canonicalize,
    "cse": _cse,
    "dce": _dce,
}


def _local(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def factory() -> type[ModulePass]:
        import importlib

        return getattr(importlib.import_module(f"trainkernel.passes.{module}"), cls)

    return factory


# Project passes: name -> (module under trainkernel/passes, class name).
_PROJECT_PASSES: dict[str, tuple[str, str]] = {
    "tk-mark-state-updates": ("tk_mark_state_updates", "TkMarkStateUpdatesPass"),
    "tk-decompose": ("tk_decompose", "TkDecomposePass"),
    "tk-legalize-masks": ("tk_legalize_masks", "TkLegalizeMasksPass"),
    "tk-split-reductions": ("tk_split_reductions", "TkSplitReductionsPass"),
    "tk-fuse": ("tk_fuse", "TkFusePass"),
    "tk-to-sched": ("tk_to_sched", "TkToSchedPass"),
    "sched-inplace-state": ("sched_inplace_state", "SchedInplaceStatePass"),
    "sched-allocate": ("sched_allocate", "SchedAllocatePass"),
    "sched-to-tile": ("sched_to_tile", "SchedToTilePass"),
    "tile-resident": ("tile_resident", "TileResidentPass"),
    "tile-stage-casts": ("tile_stage_casts", "TileStageCastsPass"),
    "tile-column-partials": ("tile_column_partials", "TileColumnPartialsPass"),
    "tile-reductions-first": ("tile_reductions_first", "TileReductionsFirstPass"),
    "tile-row-local": ("tile_row_local", "TileRowLocalPass"),
    "tile-item-flags": ("tile_item_flags", "TileItemFlagsPass"),
}

for _name, (_module, _cls) in _PROJECT_PASSES.items():
    PASSES[_name] = _local(_module, _cls)
