"""scripts/diag/calibration_flips.py: per step and grid calibration, the kernel kind
tile-resident's auto mode prints and the two estimates it compared; a step whose
kind changes between calibrations is flagged (perf-log, "Cost models against the
harness at 84ba57a")."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "diag" / "calibration_flips.py"


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_grid_priced_near_zero_takes_the_resident_step():
    """tiny is resident at the default calibration; with the grid priced at a
    thousandth of its estimate the grid kernel wins, and the row says so. small
    has no resident plan that fits: grid at both."""
    out = _run("--calibrations", "4,0.001", "tiny", "small")
    tiny = next(line for line in out.splitlines() if line.startswith("tiny "))
    small = next(line for line in out.splitlines() if line.startswith("small "))
    assert re.search(r"^tiny +4: resident \(resident \d+\.\d, grid \d+\.\d\) \| 0\.001: grid ", tiny), tiny
    assert tiny.endswith("<- depends on it")
    assert "4: grid (resident -," in small and "0.001: grid (resident -," in small
    assert "depends" not in small
    assert out.splitlines()[-1] == "1 of 2 steps change kernel"
