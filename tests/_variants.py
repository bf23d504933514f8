"""Helpers of the tests of target variants of the CUDA printer (fields switched with the
`target_fields` fixture): a suite step's source, and its outputs after a few launches."""

from __future__ import annotations

import re

import torch
from torch.utils import _pytree as pytree

import dataclasses

import trainkernel
from trainkernel.target import H200
from trainkernel.workloads import TWINS, WORKLOADS, Workload


# The wgmma tile choice before perf-log steps 99 and 101 (measured on an H100, on):
# one width a kernel, among 64, 128 and 256. Tests of earlier steps that name
# units, grids or split-K pin these fields.
BEFORE_STEPS_99_101 = dict(wgmma_tiles_n=(64, 128, 256), wgmma_gemm_widths=False)

# The grid model and split-K fix-up before perf-log steps 105-106 were flipped on
# (step 108: parts-priced wgmma units, block sums, mma.sync gemms weighed by 4,
# tagged partials). Tests of other mechanisms that name tiles, grids or widths pin
# these fields (the `before_step_106` fixture, or target_fields / variant).
BEFORE_STEP_106 = dict(
    grid_costs=dataclasses.replace(H200.grid_costs, unit_parts=False, block_sums=False, mma_engine_calibration=1.0),
    split_k_tagged_partials=False)


def reduce_modes(src: str) -> list[tuple[str, str, int, int]]:
    """(reduction, mode, elements an output, outputs) of every resident tile.reduce of
    a printed kernel, from the comment the printer opens it with."""
    return [(r, m, int(e), int(o)) for r, m, e, o in re.findall(
        r"// tile\.reduce (tk\.\w+) split -?\d+ \((\w+)\): (\d+) elements into each of (\d+) outputs", src)]


def _workload(name: str | Workload) -> Workload:
    return name if isinstance(name, Workload) else {**WORKLOADS, **TWINS}[name]


def suite_source(name: str | Workload, inplace: bool = True, dtype: torch.dtype = torch.bfloat16,
                 resident: str = "auto") -> str:
    """The CUDA the compiler prints for the step of a workload or twin (or a Workload
    of other sizes) in `dtype` (not built), resident as `resident` says."""
    w = _workload(name)
    return trainkernel.compile_training(w.make_step(dtype), w.example_args(dtype=dtype),
                                        inplace=inplace, build=False, resident=resident).cuda_source


def stepped(name: str | Workload, steps: int, seed: int,
            dtype: torch.dtype = torch.bfloat16, resident: str = "auto") -> tuple[str, list[torch.Tensor]]:
    """Compile a workload's (or twin's, or a Workload's) step in `dtype` as the target
    now is (resident as `resident` says) and run `steps` launches on the GPU from its
    initial state over three batches drawn with `seed`: (the kernel's source, the
    leaves of the last step's outputs, state included)."""
    w = _workload(name)
    batches = w.make_batches(3, seed=seed, device="cuda", dtype=dtype)
    c = trainkernel.compile_training(w.make_step(dtype), w.example_args(dtype=dtype), resident=resident)
    state = w.init_state(device="cuda")
    for t in range(steps):
        out = c(state, *batches[t % 3])
        state = out[-1]
    torch.cuda.synchronize()
    return c.cuda_source, [x.clone() for x in pytree.tree_leaves(out)]


def same_bits_off_and_on(target_fields, field: str | tuple[str, ...], name: str | Workload, steps: int = 6,
                         seed: int = 2, dtype: torch.dtype = torch.bfloat16, run=None, values=(False, True),
                         **fixed) -> tuple[bool, list[str]]:
    """`run` (`stepped`, or `looped`: the steps in one launch) with the target field
    `field` (or each of several) off, then on (`values`: those two settings; the
    other fields `fixed`): whether every leaf of the two runs' outputs is
    bit-equal, and the two sources."""
    fields = (field,) if isinstance(field, str) else field
    runs = []
    for on in values:
        target_fields(**fixed, **dict.fromkeys(fields, on))
        runs.append((run or stepped)(name, steps, seed, dtype))
    (src_off, off), (src_on, on_) = runs
    return len(off) == len(on_) and all(torch.equal(a, b) for a, b in zip(off, on_)), [src_off, src_on]


def looped(name: str | Workload, steps: int, seed: int,
           dtype: torch.dtype = torch.bfloat16, resident: str = "auto") -> tuple[str, list[torch.Tensor]]:
    """Compile a workload's step as the target now is (resident as `resident` says)
    and run `steps` steps in ONE launch (the step loop of `capture(steps=...)`) over
    three batches drawn with `seed`: (the kernel's source, the state and the last
    step's other outputs)."""
    w = _workload(name)
    batches = w.make_batches(3, seed=seed, device="cuda", dtype=dtype)
    c = trainkernel.compile_training(w.make_step(dtype), w.example_args(dtype=dtype), resident=resident)
    state = w.init_state(device="cuda")
    program = c.capture(state, *batches[0], steps=steps, batches=batches)
    assert program.launches == 1
    program.replay()
    torch.cuda.synchronize()
    return c.cuda_source, [t.clone() for t in pytree.tree_leaves((state, tuple(program.outputs)[:-1]))]


def resident_printer(name: str | Workload, dtype: torch.dtype = torch.bfloat16):
    """The ResidentPrinter of a workload's (or twin's) kernel after printing it, and
    the tile.kernel it printed: the printer's plans, as the target now is."""
    from trainkernel.backend.cuda_target import ResidentPrinter, printer_for
    from trainkernel.dialects import tile
    from trainkernel.ir import parse_module

    w = _workload(name)
    c = trainkernel.compile_training(w.make_step(dtype), w.example_args(dtype=dtype), build=False)
    kernel = next(op for op in parse_module(c.lowered.stages["tile"]).walk() if isinstance(op, tile.KernelOp))
    printer = printer_for(kernel)
    assert isinstance(printer, ResidentPrinter)
    printer.print()
    return printer, kernel
