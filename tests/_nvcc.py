"""nvcc on one generated kernel source (device code to an object file, sm_90), for
the tests of printer variants the suite's nvcc test (test_cuda_compile) never sees."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import trainkernel

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found (CUDA toolkit absent)")


def nvcc_errors(src: str, tmp_path: Path, host: bool = True) -> str:
    """nvcc's error output for `src` compiled for sm_90, or sm_90a where its gemms use
    wgmma (backend.build.arch_for_source), to an object file with its launchers, or
    with `host=False` to the device's cubin alone ("" when it compiles)."""
    from trainkernel.backend.build import arch_for_source

    cu = tmp_path / "k.cu"
    cu.write_text(src)
    include = Path(trainkernel.__file__).resolve().parent / "backend" / "include"
    arch = arch_for_source(src, "sm_90")
    target = f"-gencode=arch=compute_{arch[3:]},code={arch}" if arch.endswith("a") else f"-arch={arch}"
    kind = ["-c", "-Xcompiler", "-fPIC"] if host else ["-cubin"]
    out = subprocess.run(["nvcc", "-std=c++17", target, "-O3", *kind, "-I", str(include), str(cu), "-o",
                          str(tmp_path / "k.o")], capture_output=True, text=True, timeout=600)
    return "" if out.returncode == 0 else out.stderr[-4000:] or f"nvcc exited with {out.returncode}"
