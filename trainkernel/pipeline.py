"""The compile pipeline: captured tk module -> tk, sched, tile stages -> CUDA.

One definition, shared by `compile_training` and by anyone reproducing a stage
with `trainkernel-opt`: `pass_pipeline(stage, inplace)` is the exact `-p`
argument, so

    trainkernel-opt step.mlir -p "$(python -c 'from trainkernel.pipeline import pass_pipeline; print(pass_pipeline("tile"))')" -t cuda

prints the same .cu file that `compile_training` builds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, i64
from xdsl.passes import PassPipeline

STAGES = ("tk", "sched", "tile")

# Passes that take the module from the previous stage to this one.
_STAGE_PASSES = {
    "tk": "canonicalize,tk-decompose,canonicalize,cse,dce,tk-fuse-elementwise",
    "sched": "tk-to-sched{{inplace={inplace}}},sched-inplace-state,sched-allocate",
    "tile": "sched-to-tile{{grid={grid}}},tile-resident{{mode={resident}}}",
}


def stage_passes(stage: str, inplace: bool = True, grid: int = 0, resident: str = "auto") -> str:
    """Passes of one stage. `grid=0` lets sched-to-tile's cost model size the grid;
    a forced grid means a grid kernel (no residency). `resident`: auto (the cost
    model decides), force (resident whenever the working set fits) or off."""
    if stage not in _STAGE_PASSES:
        raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    if resident not in ("auto", "force", "off"):
        raise ValueError(f"resident must be auto, force or off, got {resident!r}")
    if grid > 0:
        resident = "off"
    return _STAGE_PASSES[stage].format(inplace=str(inplace).lower(), grid=int(grid), resident=resident)


def pass_pipeline(stage: str = "tile", inplace: bool = True, grid: int = 0, resident: str = "auto") -> str:
    """The `-p` pipeline from a captured module up to and including `stage`."""
    upto = STAGES[: STAGES.index(stage) + 1] if stage in STAGES else None
    if upto is None:
        raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    return ",".join(stage_passes(s, inplace, grid, resident) for s in upto)


def run_passes(module: builtin.ModuleOp, spec: str) -> None:
    from trainkernel.dialects import make_context
    from trainkernel.passes import PASSES

    def verify(_prev, mod, _next) -> None:
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
    stage_seconds: dict[str, float] = field(default_factory=dict)


def annotate_state_updates(f: func.FuncOp, in_spec, out_spec) -> None:
    """Mark each result that is the new value of a parameter with `tk.updates`.

    The convention of `compile_training`: the state is the first argument (a
    pytree of tensors) and the step returns a tuple whose last element has
    exactly the state's structure: the updated state.
    """
    from trainkernel.frontend.errors import CaptureError

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
    n_state = state_spec.num_leaves
    n_out = out_spec.num_leaves
    attrs = list(f.res_attrs.data) if f.res_attrs is not None else [DictionaryAttr({}) for _ in range(n_out)]
    for k in range(n_state):
        r = n_out - n_state + k
        d = dict(attrs[r].data)
        d["tk.updates"] = IntegerAttr(k, i64)
        attrs[r] = DictionaryAttr(d)
    f.res_attrs = builtin.ArrayAttr(attrs)


def _meta(kernel, captured, inplace: bool) -> KernelMeta:
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
        arena_bytes=kernel.arena_bytes.data,
        grid=kernel.grid,
        block=kernel.threads,
        smem_bytes=kernel.smem,
        inplace=inplace,
        phases=len(syncs) + 1,
        grid_barriers=sum(1 for s in syncs if s.scope.data == "grid"),
    )


def lower(captured, inplace: bool = True, grid: int = 0, resident: str = "auto") -> Lowered:
    """Run every stage on a copy of the captured module and print the CUDA."""
    from trainkernel.backend.cuda_target import printer_for
    from trainkernel.dialects import tile
    from trainkernel.ir import print_module

    start = time.perf_counter()
    module = captured.module.clone()
    f = next(op for op in module.ops if isinstance(op, func.FuncOp))
    annotate_state_updates(f, captured.in_spec, captured.out_spec)
    stages: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for stage in STAGES:
        t0 = time.perf_counter()
        run_passes(module, stage_passes(stage, inplace, grid, resident))
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
        meta=_meta(kernel, captured, inplace),
        stage_seconds=seconds,
    )
