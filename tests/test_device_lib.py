"""Tests of the hand-written CUDA device library (trainkernel/backend/include/tk).

CPU part (runs wherever nvcc exists, no GPU needed):
  * every test program in tests/device/ and every header on its own compiles
    with ``nvcc -std=c++17 -arch=sm_90 -O3 -I trainkernel/backend/include``
    and produces no warning;
  * test_gemm_fragments (host only) emulates ldmatrix + mma.sync on the CPU
    and checks the tensor-core GEMM's lane/fragment index math;
  * ptxas_gemm_instances.cu is compiled with ``-Xptxas -v``; registers and
    spills of every gemm_tile instance are recorded (printed and attached as
    a junit property), not asserted.

GPU part (``@pytest.mark.cuda``): builds the same programs and runs each on
the GPU; it passes when the program exits 0 and prints only ``PASS`` lines.

All compilations run in parallel, once per session (module fixture), into a
temporary directory.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from _ptxas import parse_ptxas

REPO = Path(__file__).resolve().parent.parent
INCLUDE = REPO / "trainkernel" / "backend" / "include"
HEADERS = sorted((INCLUDE / "tk").glob("*.cuh"))
DEVICE_DIR = Path(__file__).resolve().parent / "device"
# Standalone programs: test_*.cu (each has a main).
PROGRAMS = sorted(p.stem for p in DEVICE_DIR.glob("test_*.cu"))
# Programs that need no GPU (host-only emulation): run in the CPU test.
HOST_ONLY = {"test_gemm_fragments"}
GPU_PROGRAMS = [p for p in PROGRAMS if p not in HOST_ONLY]
PTXAS_SOURCE = DEVICE_DIR / "ptxas_gemm_instances.cu"

BASE_FLAGS = ["-std=c++17", "-arch=sm_90", "-O3", "-I", str(INCLUDE)]


def _nvcc() -> str | None:
    return shutil.which("nvcc")


@dataclass
class Build:
    name: str
    cmd: list[str]
    returncode: int
    output: str  # stdout + stderr of nvcc
    artifact: Path


def _compile(name: str, cmd: list[str], artifact: Path) -> Build:
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    return Build(name, cmd, proc.returncode, proc.stdout + proc.stderr, artifact)


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Build]:
    nvcc = _nvcc()
    if nvcc is None:
        pytest.skip("nvcc is not on PATH: cannot compile the CUDA device library tests")
    out = tmp_path_factory.mktemp("tk_device")
    jobs: list[tuple[str, list[str], Path]] = []
    for prog in PROGRAMS:
        exe = out / prog
        jobs.append((prog, [nvcc, *BASE_FLAGS, str(DEVICE_DIR / f"{prog}.cu"), "-o", str(exe)], exe))
    # Each header must compile on its own (self-contained includes).
    for h in HEADERS:
        src = out / f"header_{h.stem}.cu"
        src.write_text(f'#include "tk/{h.name}"\n#include "tk/{h.name}"  // include guard\n')
        obj = out / f"header_{h.stem}.o"
        jobs.append((f"header_{h.stem}", [nvcc, *BASE_FLAGS, "-c", str(src), "-o", str(obj)], obj))
    obj = out / "ptxas_gemm_instances.o"
    jobs.append(
        ("ptxas_gemm_instances", [nvcc, *BASE_FLAGS, "-Xptxas", "-v", "-c", str(PTXAS_SOURCE), "-o", str(obj)], obj)
    )
    # The gemm programs are the slow ones: start them first.
    jobs.sort(key=lambda j: 0 if "gemm" in j[0] else 1)
    workers = max(2, min(len(jobs), os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_compile, *j) for j in jobs]
        results = [f.result() for f in futures]
    return {b.name: b for b in results}


def _assert_clean(b: Build) -> None:
    assert b.returncode == 0, f"{' '.join(b.cmd)}\nfailed:\n{b.output}"
    warnings = [ln for ln in b.output.splitlines() if re.search(r"\bwarning\b", ln, re.IGNORECASE)]
    assert not warnings, f"{b.name}: nvcc warnings:\n{b.output}"


@pytest.mark.parametrize("prog", PROGRAMS)
def test_device_program_compiles(builds, prog):
    _assert_clean(builds[prog])


@pytest.mark.parametrize("header", [h.stem for h in HEADERS])
def test_header_is_self_contained(builds, header):
    _assert_clean(builds[f"header_{header}"])


def _run_program(exe: Path, timeout: float = 600) -> tuple[int, list[str], str]:
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return proc.returncode, lines, proc.stderr


def _check_pass_lines(prog: str, rc: int, lines: list[str], stderr: str) -> None:
    bad = [ln for ln in lines if not ln.startswith("PASS ")]
    detail = "\n".join(bad[:40]) + ("\n--- stderr (tail) ---\n" + stderr[-4000:] if bad or rc else "")
    assert lines, f"{prog} printed no result lines (rc={rc})\n{stderr[-4000:]}"
    assert rc == 0 and not bad, f"{prog}: exit {rc}, {len(bad)} non-PASS lines of {len(lines)}:\n{detail}"


@pytest.mark.parametrize("prog", sorted(HOST_ONLY))
def test_host_emulation(builds, prog):
    b = builds[prog]
    _assert_clean(b)
    rc, lines, stderr = _run_program(b.artifact, timeout=120)
    _check_pass_lines(prog, rc, lines, stderr)




def _demangle_instance(name: str) -> str:
    # _Z13gemm_instanceILi256E13__nv_bfloat16Lb0ELb1EEv... -> NT=256 bf16 NT
    m = re.match(r"_Z13gemm_instanceILi(\d+)E(.*?)Lb([01])ELb([01])E", name)
    if not m:
        return name
    nt, t, ta, tb = m.groups()
    t = {"f": "float", "13__nv_bfloat16": "bf16", "6__half": "f16"}.get(t, t)
    return f"{t} {'T' if ta == '1' else 'N'}{'T' if tb == '1' else 'N'} NT={nt}"


def test_gemm_ptxas_report(builds, record_property):
    b = builds["ptxas_gemm_instances"]
    _assert_clean(b)
    rows = parse_ptxas(b.output)
    # 3 types x 4 transpositions x 2 worker counts.
    assert len(rows) == 24, f"expected 24 gemm instances, ptxas reported {len(rows)}:\n{b.output}"
    report = []
    for r in sorted(rows, key=lambda r: _demangle_instance(r["kernel"])):
        report.append(
            f"{_demangle_instance(r['kernel']):<22} regs={r['registers']:>3} "
            f"spill_stores={r['spill_stores']} spill_loads={r['spill_loads']}"
        )
    text = "\n".join(report)
    print("\ngemm_tile ptxas -v (default tiles, no __launch_bounds__):\n" + text)
    record_property("gemm_ptxas", text)


def _gpu_visible() -> tuple[bool, str]:
    try:
        import torch  # noqa: PLC0415

        if torch.cuda.is_available():
            return True, ""
        torch_reason = "torch.cuda.is_available() is False"
    except Exception as exc:  # torch missing or broken: ask the driver
        torch_reason = f"torch unavailable ({exc})"
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
            if proc.returncode == 0 and "GPU" in proc.stdout:
                return True, ""
        except (OSError, subprocess.SubprocessError):
            pass
    return False, f"no NVIDIA GPU visible: {torch_reason}; nvidia-smi -L did not list a GPU"


@pytest.mark.cuda
@pytest.mark.parametrize("prog", GPU_PROGRAMS)
def test_device_program_runs_on_gpu(builds, prog):
    ok, reason = _gpu_visible()
    if not ok:
        pytest.skip(reason)
    b = builds[prog]
    _assert_clean(b)
    rc, lines, stderr = _run_program(b.artifact)
    _check_pass_lines(prog, rc, lines, stderr)
