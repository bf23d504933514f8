"""The compile pipeline: captured tk module -> tk, sched, tile stages -> CUDA.

One definition, shared by `compile_training` and by anyone reproducing a stage
with `trainkernel-opt`. Everything between the captured module and the `.cu`
file is a registered pass, and `lower` runs exactly the passes of
`pass_pipeline(...)`, so `CompiledTrainingStep.pipeline` (that string) given
to `trainkernel-opt` on the captured text prints `compiled.cuda_source`:

    trainkernel inspect tiny --stage captured > tiny.mlir
    trainkernel-opt tiny.mlir -p "$(trainkernel inspect tiny --stage pipeline)" -t cuda

The first pass, `tk-mark-state-updates{state=N}`, marks the last N results as
the new values of the first N arguments (N = the state's leaves, see
`state_leaves`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import builtin
from xdsl.passes import PassPipeline

STAGES = ("tk", "sched", "tile")

# Passes that take the module from the previous stage to this one.
_STAGE_PASSES = {
    "tk": "tk-mark-state-updates{{state={state}}},canonicalize,tk-decompose,tk-split-reductions,tk-legalize-masks,canonicalize,cse,dce,tk-fuse{fuse}",
    "sched": "tk-to-sched{{inplace={inplace}{sink}}},sched-inplace-state,sched-allocate",
    "tile": "sched-to-tile{{grid={grid}{target}{engine}}},tile-resident{{mode={resident}{target}}},tile-stage-casts{target_only},"
            "tile-column-partials{target_only},tile-reductions-first{target_only},tile-row-local{target_only},"
            "tile-item-flags{target_only}",
}


# tk-fuse's merge mode (none, maps, epilogues): maps, an optimizer update one
# map (perf-log steps 26 and 28); the harness's --fuse-merge sets another for
# an experiment.
FUSE_MERGE = "maps"
# tk-fuse's input_casts: a group that only casts arguments (a bf16 batch's
# y.float()) joins the one group that reads it (perf-log step 70). Measured
# (runs 7000e65-a/c): part of every step's gain of that session: on. The
# probe's --merge labels MODE+casts set it.
FUSE_INPUT_CASTS = True
# tk-to-sched's sink_sources: a compute that reads only arguments and that
# phase 1 does not read leaves phase 0 where that moves nothing else (perf-log
# step 84; step 79's first form, sunk to the phase before its first reader, was
# refuted). Off until measured; the probe's target variants take sink_sources=1.
SINK_SOURCES = False


def stage_passes(
    stage: str, inplace: bool = True, grid: int = 0, resident: str = "auto", state: int = 0, target: str | None = None,
    engine: str = "auto", merge: str | None = None,
) -> str:
    """Passes of one stage. `state`: how many leading arguments are the state (their
    new values are the last results; 0: none). `grid=0` lets sched-to-tile's cost
    model size the grid; a forced grid means a grid kernel (no residency).
    `resident`: auto (the cost model decides), force (resident whenever the
    working set fits) or off. `target`: a name of `trainkernel.target.TARGETS`
    for the tile passes (None or the default target's name: the passes' default,
    not spelled out). `engine`: the grid kernel's gemm engine, auto (the cost
    model; not spelled out), mma or wgmma. `merge`: tk-fuse's merge mode
    (None: FUSE_MERGE; "none" is not spelled out)."""
    from trainkernel.target import DEFAULT, get_target
    if stage not in _STAGE_PASSES:
        raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    if resident not in ("auto", "force", "off"):
        raise ValueError(f"resident must be auto, force or off, got {resident!r}")
    if grid > 0:
        resident = "off"
    if engine not in ("auto", "mma", "wgmma"):
        raise ValueError(f"engine must be auto, mma or wgmma, got {engine!r}")
    if target is not None:
        get_target(target)  # an unknown name fails here, with the list of targets
    spelled = "" if target in (None, DEFAULT.name) else f" target={target}"
    return _STAGE_PASSES[stage].format(
        inplace=str(inplace).lower(), grid=int(grid), resident=resident, state=int(state), target=spelled,
        target_only=f"{{{spelled.strip()}}}" if spelled else "",
        engine="" if engine == "auto" else f" engine={engine}",
        fuse=_fuse_options(FUSE_MERGE if merge is None else merge, FUSE_INPUT_CASTS),
        sink=" sink_sources=true" if SINK_SOURCES else "",
    )


def _fuse_options(merge: str, input_casts: bool = False) -> str:
    from trainkernel.passes.tk_fuse import MERGE_MODES
    if merge not in MERGE_MODES:
        raise ValueError(f"merge must be one of {', '.join(MERGE_MODES)}, got {merge!r}")
    options = ([] if merge == "none" else [f"merge={merge}"]) + (["input_casts=true"] if input_casts else [])
    return f"{{{' '.join(options)}}}" if options else ""


def pass_pipeline(
    stage: str = "tile", inplace: bool = True, grid: int = 0, resident: str = "auto", state: int = 0,
    target: str | None = None, engine: str = "auto",
) -> str:
    """The `-p` pipeline from a captured module up to and including `stage`."""
    upto = STAGES[: STAGES.index(stage) + 1] if stage in STAGES else None
    if upto is None:
        raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    return ",".join(stage_passes(s, inplace, grid, resident, state, target, engine) for s in upto)


VERIFY_EACH_PASS = os.environ.get("TRAINKERNEL_VERIFY_EACH_PASS", "0") == "1"
"""`lower` (compile_training's path) verifies the module once a stage, after its
last pass; TRAINKERNEL_VERIFY_EACH_PASS=1 verifies after every pass, as
`run_passes` does by default and `trainkernel-opt` always does. Verifying a
tile.kernel runs the kernel contract (every op's accesses, hazards, liveness):
after each of the ~20 passes it was ~40% of mlp4-adamw-ce's lowering (issue 10.6)."""


def run_passes(module: builtin.ModuleOp, spec: str, verify_each: bool = True) -> None:
    """Run the `-p` pipeline `spec` on `module` and verify it after every pass
    (`verify_each`, and before the first), or only after the last."""
    from trainkernel.dialects import make_context
    from trainkernel.passes import PASSES

    def verify(_prev, mod, next_pass) -> None:
        if verify_each or next_pass is None:
            mod.verify()

    PassPipeline.parse_spec(PASSES, spec, verify).apply(make_context(), module)


@dataclass(frozen=True)
class BufferSpec:
    role: str  # "input" or "output"
    index: int  # flat input index, or flat result index
    shape: tuple[int, ...]
    dtype: Any  # torch.dtype


@dataclass
class KernelMeta:
    buffers: list[BufferSpec]
    results: list[tuple[str, int]]  # per flat result: ("buffer", launcher argument position)
    arena_bytes: int
    grid: int
    block: int
    smem_bytes: int
    inplace: bool
    phases: int
    grid_barriers: int


@dataclass
class Lowered:
    stages: dict[str, str]
    cuda_source: str
    kernel_name: str
    pass_seconds: float
    meta: KernelMeta
    pipeline: str  # the exact `-p` pass list that produced the stages
    stage_seconds: dict[str, float] = field(default_factory=dict)


def state_leaves(captured) -> int:
    """How many leading arguments are the state, by `compile_training`'s convention:
    the state is the first argument (a pytree of tensors) and the step returns a
    tuple whose last element has exactly the state's structure (the updated state).
    Raises CaptureError for a step that does not follow it."""
    from trainkernel.frontend.errors import CaptureError

    in_spec, out_spec = captured.in_spec, captured.out_spec
    in_children = in_spec.children()
    if not in_children:
        raise CaptureError("the step takes no arguments: the state (parameters) must be its first argument")
    state_spec = in_children[0]
    if out_spec.type not in (tuple, list) or out_spec.num_children == 0:
        raise CaptureError("the step must return a tuple whose last element is the updated state")
    new_state_spec = out_spec.children()[-1]
    if new_state_spec != state_spec:
        raise CaptureError(
            "the step's last result must have the structure of its first argument (the updated state); "
            f"got {new_state_spec} for state {state_spec}"
        )
    return state_spec.num_leaves


def _meta(kernel, captured, inplace: bool, smem_bytes: int | None = None, arena_bytes: int | None = None) -> KernelMeta:
    """The kernel's launch facts; `smem_bytes`, `arena_bytes`: the printed
    kernel's, where the printer adds to the placement's
    (ResidentPrinter.plan_receive_copies) or to the arena's
    (CudaPrinter.plan_chained_casts)."""
    from trainkernel.dialects import tile
    from trainkernel.elements import torch_dtype

    n_in = kernel.num_inputs.data
    results = list(kernel.result_args)
    buffers: list[BufferSpec] = []
    for pos, arg in enumerate(kernel.block.args):
        shape = tuple(arg.type.get_shape())
        dtype = torch_dtype(arg.type.get_element_type())
        if pos < n_in:
            buffers.append(BufferSpec("input", pos, shape, dtype))
        else:
            buffers.append(BufferSpec("output", results.index(pos), shape, dtype))
    syncs = [op for op in kernel.block.ops if isinstance(op, tile.SyncOp)]
    return KernelMeta(
        buffers=buffers,
        results=[("buffer", r) for r in results],
        arena_bytes=kernel.arena_bytes.data if arena_bytes is None else arena_bytes,
        grid=kernel.grid,
        block=kernel.threads,
        smem_bytes=kernel.smem if smem_bytes is None else smem_bytes,
        inplace=inplace,
        phases=len(syncs) + 1,
        grid_barriers=sum(1 for s in syncs if s.scope.data == "grid"),
    )


def lower(captured, inplace: bool = True, grid: int = 0, resident: str = "auto", target: str | None = None,
          engine: str = "auto") -> Lowered:
    """Run every stage on a copy of the captured module and print the CUDA
    (`target`, `engine`: see `stage_passes`)."""
    from trainkernel.backend.cuda_target import printer_for
    from trainkernel.dialects import tile
    from trainkernel.ir import print_module

    start = time.perf_counter()
    module = captured.module.clone()
    state = state_leaves(captured)
    stages: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for stage in STAGES:
        t0 = time.perf_counter()
        run_passes(module, stage_passes(stage, inplace, grid, resident, state, target, engine),
                   verify_each=VERIFY_EACH_PASS)
        seconds[stage] = time.perf_counter() - t0
        stages[stage] = print_module(module)
    kernel = next(op for op in module.ops if isinstance(op, tile.KernelOp))
    printer = printer_for(kernel)
    source = printer.print()
    return Lowered(
        stages=stages,
        cuda_source=source,
        kernel_name=printer.kname,
        pass_seconds=time.perf_counter() - start,
        meta=_meta(kernel, captured, inplace, getattr(printer, "smem_bytes", None), printer.arena_bytes),
        pipeline=pass_pipeline("tile", inplace, grid, resident, state, target, engine),
        stage_seconds=seconds,
    )
