"""CI without a GPU: the CUDA emitted for every workload and odd shape compiles.

For each case below, `trainkernel.pipeline.lower(captured, inplace).cuda_source`
(the exact text `compile_training` builds) is compiled by nvcc for sm_90 (the
H200; sm_90a for wgmma kernels, as the build does) with the build's flags
(`build.nvcc_flags`, those of the task):

    nvcc -std=c++17 -arch=sm_90 -O3 --shared -Xcompiler -fPIC -I trainkernel/backend/include

Cases: every workload at its GPU size in bf16 (the default compute dtype), the
harness's `large` and twins (their kernels are compiled, not interpreted), and
f32 / f16 for the tiny workload and the odd shapes of the GPU suite (B=33,
I=100, H=300, O=7; a batch of 1), plus tiny bf16 lowered out of place. Each
distinct source is compiled once (cases with identical text share a build),
two compiles at a time (`concurrent.futures`, 2 workers: CI has 2 cores); the
whole file takes about a minute and a half there.

Besides exit status 0, the library must export the launcher symbols the
runtime binds with ctypes, every kernel must be the one the metadata
describes (the `__global__` name), and ptxas must report no stack frame for
it (`-Xptxas -v`: nothing of the kernel in local memory). Skipped only where nvcc is absent.
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
from trainkernel.backend.build import arch_for_source, nvcc_flags
from trainkernel.pipeline import lower
from trainkernel.workloads import COMPUTE_DTYPES, LARGE, TWINS, WORKLOADS, Workload

NVCC = shutil.which("nvcc") or (
    "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None
)
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not found (CUDA toolkit absent)")

def flags_for(source: str) -> list[str]:
    """The build's own nvcc flags for `source` on an sm_90 device (sm_90a where its
    gemms use wgmma: `build.arch_for_source`), and ptxas's resource report."""
    return nvcc_flags(arch_for_source(source, "sm_90")) + ["-Xptxas", "-v"]
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
    [Case(name, w, "bf16") for name, w in {**WORKLOADS, "large": LARGE, **TWINS}.items()]
    + [Case("tiny", WORKLOADS["tiny"], dt) for dt in ("f32", "f16")]
    + [Case(name, w, dt) for name, w in ODD.items() for dt in ("f32", "bf16", "f16")]
    + [Case("tiny", WORKLOADS["tiny"], "bf16", inplace=False)]
)


@dataclass
class Built:
    returncode: int
    log: str
    symbols: set[str] | None  # dynamic symbols the library defines; None: no tool to read them
    stack_frames: dict[str, int]  # ptxas -v: bytes of stack frame of each entry function


# ptxas -v: "Compiling entry function 'NAME' for 'sm_90a'" ... "N bytes stack frame"
STACK_FRAME = re.compile(r"Compiling entry function '(\w+)'[^\n]*\n(?:[^\n]*\n)*?[^\n]*?(\d+) bytes stack frame")


def exported_symbols(lib: Path) -> set[str] | None:
    """The dynamic symbols `lib` defines, read with nm, else readelf (None: neither exists)."""
    if shutil.which("nm"):
        out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
        return {line.split()[-1] for line in out.splitlines() if line.strip()}
    if shutil.which("readelf"):
        out = subprocess.run(["readelf", "--dyn-syms", "-W", str(lib)], capture_output=True, text=True, check=True).stdout
        rows = [line.split() for line in out.splitlines()]
        return {r[7].split("@")[0] for r in rows if len(r) >= 8 and r[0][:-1].isdigit() and r[6] != "UND"}
    return None


COMPILED: list[str] = []  # every source handed to nvcc, in call order


def _lower(case: Case):
    step = case.workload.make_step(case.dtype)
    captured = trainkernel.capture(step, case.workload.example_args("meta", COMPUTE_DTYPES[case.dtype]))
    return lower(captured, case.inplace)


def _compile(source: str, workdir: Path) -> Built:
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    src, lib = workdir / f"{digest}.cu", workdir / f"{digest}.so"
    src.write_text(source)
    COMPILED.append(source)
    proc = subprocess.run([NVCC, *flags_for(source), str(src), "-o", str(lib)], capture_output=True, text=True)
    symbols = exported_symbols(lib) if proc.returncode == 0 else set()
    log = proc.stdout + proc.stderr
    frames = {name: int(size) for name, size in STACK_FRAME.findall(log)}
    return Built(proc.returncode, log, symbols, frames)


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
    assert {c.name for c in CASES} >= set(WORKLOADS) | set(ODD) | {"large"} | set(TWINS)
    for name in ("tiny", *ODD):
        assert {c.dtype for c in CASES if c.name == name} == set(COMPUTE_DTYPES)


def test_each_distinct_source_is_compiled_once(builds):
    lowered, built = builds
    sources = {low.cuda_source for low in lowered.values()}
    assert len(COMPILED) == len(set(COMPILED)), "a source was handed to nvcc twice"
    assert set(COMPILED) == sources == set(built)


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
    assert result.symbols is not None, "neither nm nor readelf found: cannot check the exported launcher symbols"
    missing = [s for s in LAUNCHER_SYMBOLS if s not in result.symbols]
    assert not missing, f"{case.id}: launcher symbols not exported: {missing}"
    # No local-memory stack: a kernel whose arrays (a gemm's accumulators) live in
    # local memory runs many times slower (perf-log step 95: medium built at NVVM
    # -O1 had a 1488-byte frame and ran 35x slower, correct).
    assert result.stack_frames.get(low.kernel_name) == 0, f"{case.id}: stack frames {result.stack_frames}"
    # One grid barrier per phase boundary, or none at all on a single block.
    syncs = low.cuda_source.count("tk::grid_sync();")
    assert syncs == low.meta.grid_barriers <= low.meta.phases - 1
    if low.meta.grid == 1:
        assert syncs == 0


@pytest.mark.skipif(not (shutil.which("nm") and shutil.which("readelf")), reason="needs both nm and readelf")
def test_readelf_fallback_reads_the_same_symbols_as_nm(monkeypatch):
    import _ctypes

    lib = Path(_ctypes.__file__)
    with_nm = exported_symbols(lib)
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "nm" else real_which(name))
    assert exported_symbols(lib) == with_nm and with_nm
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert exported_symbols(lib) is None
