"""CI without a GPU: the CUDA emitted for every workload and odd shape compiles.

For each case below, `trainkernel.pipeline.lower(captured, inplace).cuda_source`
(the exact text `compile_training` builds) is compiled by nvcc for sm_90 (the
H200) with the flags from the task:

    nvcc -std=c++17 -arch=sm_90 -O3 --shared -Xcompiler -fPIC -I trainkernel/backend/include

Cases: every workload at its GPU size in bf16 (the default compute dtype), and
f32 / f16 for the tiny workload and the odd shapes of the GPU suite (B=33,
I=100, H=300, O=7; a batch of 1), plus tiny bf16 lowered out of place. Each
distinct source is compiled once (cases with identical text share a build),
two compiles at a time (`concurrent.futures`, 2 workers: CI has 2 cores); the
whole file takes about a minute and a half there.

Besides exit status 0, the library must export the launcher symbols the
runtime binds with ctypes, and every kernel must be the one the metadata
describes (the `__global__` name). Skipped only where nvcc is absent.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

import trainkernel
from trainkernel.pipeline import lower
from trainkernel.workloads import COMPUTE_DTYPES, WORKLOADS, Workload

NVCC = shutil.which("nvcc") or (
    "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None
)
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not found (CUDA toolkit absent)")

INCLUDE = Path(trainkernel.__file__).resolve().parent / "backend" / "include"
FLAGS = ["-std=c++17", "-arch=sm_90", "-O3", "--shared", "-Xcompiler", "-fPIC", "-I", str(INCLUDE)]
LAUNCHER_SYMBOLS = (
    "tk_launch",
    "tk_num_buffers",
    "tk_arena_bytes",
    "tk_grid",
    "tk_threads",
    "tk_smem_bytes",
    "tk_max_active_blocks_per_sm",
)

ODD = {
    "odd-33x100x300x7": WORKLOADS["tiny"].with_sizes(33, (100, 300, 7)),
    "batch1": WORKLOADS["tiny"].with_sizes(1, (32, 64, 8)),
}


@dataclass(frozen=True)
class Case:
    name: str
    workload: Workload
    dtype: str
    inplace: bool = True

    @property
    def id(self) -> str:
        return f"{self.name}-{self.dtype}" + ("" if self.inplace else "-outofplace")


CASES: list[Case] = (
    [Case(name, w, "bf16") for name, w in WORKLOADS.items()]
    + [Case("tiny", WORKLOADS["tiny"], dt) for dt in ("f32", "f16")]
    + [Case(name, w, dt) for name, w in ODD.items() for dt in ("f32", "bf16", "f16")]
    + [Case("tiny", WORKLOADS["tiny"], "bf16", inplace=False)]
)


@dataclass
class Built:
    returncode: int
    log: str
    symbols: str


def _lower(case: Case):
    step = case.workload.make_step(case.dtype)
    captured = trainkernel.capture(step, case.workload.example_args("meta", COMPUTE_DTYPES[case.dtype]))
    return lower(captured, case.inplace)


def _compile(source: str, workdir: Path) -> Built:
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    src, lib = workdir / f"{digest}.cu", workdir / f"{digest}.so"
    src.write_text(source)
    proc = subprocess.run([NVCC, *FLAGS, str(src), "-o", str(lib)], capture_output=True, text=True)
    symbols = ""
    if proc.returncode == 0 and shutil.which("nm"):
        symbols = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
    return Built(proc.returncode, proc.stdout + proc.stderr, symbols)


@functools.cache
def _all_builds() -> tuple[dict[str, object], dict[str, Built]]:
    """Lower every case, then compile each distinct source once, 2 at a time."""
    lowered = {case.id: _lower(case) for case in CASES}
    unique = {low.cuda_source for low in lowered.values()}
    workdir = Path(tempfile.mkdtemp(prefix="tk-cuda-compile-"))
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futures = {src: pool.submit(_compile, src, workdir) for src in unique}
            built = {src: fut.result() for src, fut in futures.items()}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return lowered, built


@pytest.fixture(scope="module")
def builds():
    return _all_builds()


def test_cases_cover_every_workload_and_odd_shape():
    assert {c.name for c in CASES} >= set(WORKLOADS) | set(ODD)
    for name in ("tiny", *ODD):
        assert {c.dtype for c in CASES if c.name == name} == set(COMPUTE_DTYPES)


def test_sources_are_deduplicated(builds):
    lowered, built = builds
    assert len(built) == len({low.cuda_source for low in lowered.values()}) <= len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_emitted_cuda_compiles_for_sm90(builds, case):
    lowered, built = builds
    low = lowered[case.id]
    result = built[low.cuda_source]
    assert result.returncode == 0, f"nvcc failed for {case.id}:\n{result.log[-4000:]}"
    # The kernel the metadata names is the one in the source; the launcher is
    # exported with C linkage.
    # Grid kernels: __launch_bounds__(threads); resident ones also say 1 block per SM.
    assert re.search(rf"__global__ void __launch_bounds__\({low.meta.block}(, 1)?\) {low.kernel_name}\(", low.cuda_source)
    if result.symbols:
        exported = {line.split()[-1] for line in result.symbols.splitlines() if line.strip()}
        missing = [s for s in LAUNCHER_SYMBOLS if s not in exported]
        assert not missing, f"{case.id}: launcher symbols not exported: {missing}"
    # One grid barrier per phase boundary, or none at all on a single block.
    syncs = low.cuda_source.count("tk::grid_sync();")
    assert syncs == low.meta.grid_barriers <= low.meta.phases - 1
    if low.meta.grid == 1:
        assert syncs == 0
