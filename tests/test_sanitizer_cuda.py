"""compute-sanitizer (memcheck, racecheck, synccheck) on generated megakernels.

Runs the tiny, online (resident kernels) and small (a grid kernel on the wgmma
engine: TMA, mbarriers, wgmma) workloads for two steps under each tool and requires
"ERROR SUMMARY: 0 errors". GPU only; skipped where compute-sanitizer is absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "gpu_scripts" / "run_steps.py"


def _sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for base in ("/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer"):
        cand = Path(base) / "compute-sanitizer"
        if cand.exists():
            return str(cand)
    return None


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("workload", ["tiny", "online", "small"])
def test_compute_sanitizer_reports_nothing(tool: str, workload: str, tmp_path):
    sanitizer = _sanitizer()
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not installed")
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    env.setdefault("TRAINKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    # Compile outside the sanitizer first (nvcc under it is slow and irrelevant).
    subprocess.run([sys.executable, str(SCRIPT), workload, "bfloat16", "1"], env=env, check=True,
                   capture_output=True, timeout=300)
    proc = subprocess.run(
        [sanitizer, "--tool", tool, "--error-exitcode", "7", sys.executable, str(SCRIPT), workload, "bfloat16", "2"],
        env=env, capture_output=True, text=True, timeout=600,
    )
    out = proc.stdout + proc.stderr
    print(out[-4000:])
    assert proc.returncode == 0, out[-4000:]
    # memcheck/synccheck close with "ERROR SUMMARY: 0 errors", racecheck with
    # "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)".
    assert "ERROR SUMMARY: 0 errors" in out or "(0 errors, 0 warnings)" in out, out[-4000:]
