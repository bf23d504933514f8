"""nvcc on one generated kernel source (device code to an object file, sm_90), for
the tests of printer variants the suite's nvcc test (test_cuda_compile) never sees."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import trainkernel

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found (CUDA toolkit absent)")


def nvcc_errors(src: str, tmp_path: Path) -> str:
    """nvcc's error output for `src` compiled for sm_90 ("" when it compiles)."""
    cu = tmp_path / "k.cu"
    cu.write_text(src)
    include = Path(trainkernel.__file__).resolve().parent / "backend" / "include"
    out = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-O3", "-c", "-I", str(include), str(cu), "-o",
                          str(tmp_path / "k.o")], capture_output=True, text=True, timeout=600)
    return "" if out.returncode == 0 else out.stderr[-4000:] or f"nvcc exited with {out.returncode}"
