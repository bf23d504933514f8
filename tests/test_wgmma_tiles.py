"""The wgmma engine's tile shapes, each forced (target.wgmma_consumers: the
rows, target.wgmma_tiles_n: the width): what the printer emits for it, and on
the GPU, the step it computes against PyTorch (trainkernel.tools.cli's policy).

The 32-wide tile (tk::hopper::TileById<3>) loads B of an N-contiguous product
(x @ W) as one 32 x 64 box with the 64-byte swizzle, the others with the
128-byte one (hopper_gemm.cuh, "Layouts"); a training step has all three
operand layouts (x @ W, dY @ W^T, X^T @ dY), so each step below runs every
layout through the tile. The data path is also emulated on the CPU
(test_hopper_gemm.py::test_host_emulation_of_the_data_path)."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from trainkernel.target import H200, WGMMA_TILES, wgmma_threads
from trainkernel.tools.cli import get_workload

from _variants import BEFORE_STEP_106, suite_source

# (rows, cols): every width at 64 rows (one consumer warpgroup), the widths the
# suite's defaults rarely choose at 128.
SHAPES = [(64, 32), (64, 64), (64, 128), (128, 32), (128, 256)]
# Steps with products of every layout, tails (odd sizes) and f16.
STEPS = [("small", None, torch.bfloat16), ("mlp4", None, torch.bfloat16),
         ("small", (200, 520, 1000, 56), torch.bfloat16), ("mlp4", (64, 256, 256, 256, 40), torch.float16)]


def _force(target_fields, rows: int, cols: int) -> None:
    """The tile, and the wgmma engine: the mma.sync kernel's estimate weighed
    out of the choice (sched-to-tile compares both engines)."""
    costs = dataclasses.replace(H200.grid_costs, mma_engine_calibration=1e3)
    target_fields(wgmma_consumers=(rows // 64,), wgmma_tiles_n=(cols,), grid_costs=costs)


def _step_id(step):
    name, sizes, dtype = step
    return f"{name}{'-' + 'x'.join(map(str, sizes)) if sizes else ''}-{str(dtype)[6:]}"


@pytest.mark.parametrize("rows,cols", SHAPES, ids=lambda v: str(v))
def test_the_forced_tile_is_printed(target_fields, rows, cols):
    """The kernel's tile, its block (a producer warpgroup and a consumer for each
    64 rows) and the device library's height define follow the forced shape."""
    _force(target_fields, rows, cols)
    src = suite_source(get_workload("small"))
    assert f"using TkShape = tk::hopper::TileById<{WGMMA_TILES[cols][0]}>::type;" in src
    assert f"static constexpr int kThreads = {wgmma_threads(rows)};" in src
    assert ("#define TK_WGMMA_CONSUMERS 1" in src) == (rows == 64)
    assert re.findall(r"wgmma (\d+)x(\d+)x64", src) and set(re.findall(r"wgmma (\d+)x(\d+)x64", src)) == {
        (str(rows), str(cols))}


@pytest.mark.cuda
@pytest.mark.parametrize("step", STEPS, ids=_step_id)
@pytest.mark.parametrize("rows,cols", SHAPES, ids=lambda v: str(v))
def test_the_forced_tile_matches_pytorch(target_fields, rows, cols, step):
    from trainkernel.api import compile_training
    from trainkernel.tools.cli import check_workload

    _force(target_fields, rows, cols)
    name, sizes, dtype = step
    w = get_workload(name, sizes)
    # A grid kernel: at batch 64 the cost model makes mlp4 resident (no wgmma).
    c = compile_training(w.make_step(dtype), w.example_args(device="meta", dtype=dtype), resident="off")
    assert f"TileById<{WGMMA_TILES[cols][0]}>" in c.cuda_source
    report = check_workload(w, {torch.bfloat16: "bf16", torch.float16: "f16"}[dtype], steps=30, compiled=c)
    assert report.passed, report.format(verbose=True)


def _widths(src: str) -> list[str]:
    """The tile widths of a printed kernel's gemms, in order."""
    return re.findall(r"wgmma \d+x(\d+)x64", src)


def test_gemm_widths_narrow_only_the_gemm_whose_phase_gains(target_fields):
    """target.wgmma_gemm_widths: medium keeps its 128 x 128 tiles where they fill
    the grid and narrows h @ W2 (1024 x 256: 16 tiles of 128 x 128 on 132 SMs,
    before split-K) to the width of the smallest phase estimate (64 of 64-256, 32
    where it is offered: the default); that gemm prints its tile in the kernel's
    stages and stride. Off: one width. The model before step 106 (the parts
    model narrows dW2 to 64 too: test_unit_parts)."""
    before = BEFORE_STEP_106
    for tiles, narrow in (((64, 128, 256), "64"), ((32, 64, 128, 256), "32")):  # the default's widths: 32
        target_fields(wgmma_gemm_widths=False, wgmma_tiles_n=tiles, **before)
        off = suite_source(get_workload("medium"))
        assert set(_widths(off)) == {"128"}
        target_fields(wgmma_gemm_widths=True, wgmma_tiles_n=tiles, **before)
        on = suite_source(get_workload("medium"))
        widths = _widths(on)
        assert widths.count(narrow) == 1 and set(widths) == {narrow, "128"}, widths
        assert re.search(rf"tile\.gemm 1024x256x4096 [^\n]*wgmma 128x{narrow}x64", on)
        assert f"tk::hopper::TileShape<{narrow}, TkShape::STAGES, TkShape::STAGE_BYTES>" in on
        assert "using TkShape = tk::hopper::TileById<1>::type;" in on


def test_gemm_widths_keep_one_width_beside_a_wide_tile(target_fields):
    """Kernels of 256-wide tiles (large) hand the producer's registers to the
    consumers in every gemm: their gemms keep one width."""
    from trainkernel.workloads import LARGE

    target_fields(wgmma_gemm_widths=True)
    assert set(_widths(suite_source(LARGE))) == {"256"}


@pytest.mark.cuda
@pytest.mark.parametrize("name,widths", [("medium", (64, 128, 256)), ("small", (32, 64, 128, 256))])
def test_mixed_widths_match_pytorch(target_fields, name, widths):
    from trainkernel.api import compile_training
    from trainkernel.tools.cli import check_workload

    target_fields(wgmma_gemm_widths=True, wgmma_tiles_n=widths)
    w = get_workload(name)
    c = compile_training(w.make_step(torch.bfloat16), w.example_args(device="meta", dtype=torch.bfloat16))
    report = check_workload(w, "bf16", steps=10, compiled=c)
    assert report.passed, report.format(verbose=True)
