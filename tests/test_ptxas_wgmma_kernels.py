"""ptxas's verdict on the suite's wgmma kernels (CPU, nvcc only).

The generated grid kernels of the workloads that run the wgmma engine are
compiled to sm_90a cubins with ``-Xptxas -v``, and ptxas must not report what
would slow them without failing the build: a spill or a stack frame (local
memory), setmaxnreg ignored (C7507: the consumers of a 256-wide tile would keep
the launch bound's 168 registers; the standalone kernel had it until
2026-12-05), or wgmma serialized across a call (C7510). Every such line of
ptxas is a performance-loss note ("C75xx"), so any of them fails.
"""

from __future__ import annotations

import concurrent.futures
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

import trainkernel
from _ptxas import parse_ptxas
from trainkernel.pipeline import lower
from trainkernel.workloads import LARGE, TWINS, WORKLOADS

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found (CUDA toolkit absent)")

INCLUDE = Path(trainkernel.__file__).resolve().parent / "backend" / "include"
# Every suite step whose default kernel is on the wgmma engine: 32-, 128- and
# 256-wide tiles (small / mlp4 / mlp4-adamw-ce at 64 x 32, medium at 128 x 128
# with one gemm narrowed to 32, large), and mlp4 on the 64-wide tile the defaults
# no longer choose (its name + "@64": target.wgmma_tiles_n = (64,)).
NAMES = ("small", "mlp4", "medium", "large", "mlp4-adamw-ce", "mlp4@64")


def _source(name: str) -> str:
    base, _, width = name.partition("@")
    w = {**WORKLOADS, "large": LARGE, **TWINS}[base]
    captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta", torch.bfloat16))
    if not width:
        return lower(captured, True).cuda_source
    import trainkernel.target as T

    forced = T.variant(f"ptxas_{width}_wide", wgmma_tiles_n=(int(width),))  # registered while the passes run
    try:
        return lower(captured, True, target=forced.name).cuda_source
    finally:
        T.TARGETS.pop(forced.name, None)


def _ptxas(name: str, src: str, workdir: Path) -> tuple[str, str]:
    name = name.replace("@", "-")
    cu = workdir / f"{name}.cu"
    cu.write_text(src)
    proc = subprocess.run(["nvcc", "-std=c++17", "-O3", "-cubin", "-gencode=arch=compute_90a,code=sm_90a",
                           "-Xptxas", "-v", "-I", str(INCLUDE), str(cu), "-o", str(workdir / f"{name}.cubin")],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{name}: {proc.stderr[-4000:]}"
    return src, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("ptxas-wgmma")
    sources = {name: _source(name) for name in NAMES}  # capture (torch.fx) is not thread-safe
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:  # CI has 2 cores
        return dict(zip(NAMES, pool.map(lambda n: _ptxas(n, sources[n], workdir), NAMES)))


@pytest.mark.parametrize("name", NAMES)
def test_no_local_memory_and_no_performance_loss_note(compiled, name):
    src, log = compiled[name]
    assert "tk::hopper::grid_gemm_units" in src, f"{name} is no longer a wgmma kernel: update NAMES"
    notes = [ln for ln in log.splitlines() if re.search(r"\bC75\d\d\b", ln)]
    assert not notes, f"{name}: ptxas performance-loss notes:\n" + "\n".join(notes)
    rows = parse_ptxas(log)
    assert rows, f"{name}: ptxas listed no kernel"
    bad = [r for r in rows if r["spill_stores"] or r["spill_loads"] or r["stack"]]
    assert not bad, f"{name}: local memory: {bad}"


def test_the_tile_widths_are_all_covered(compiled):
    widths = {re.search(r"TileById<(\d)>", src).group(1) for src, _ in compiled.values()}
    assert widths == {"0", "1", "2", "3"}, widths
