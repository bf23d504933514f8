"""scripts/diag/update_map.py (perf-log steps 57-58): the optimizer-update map of a
twin's kernel, taken out into a program of its own, is the map the printer prints
(the largest with a square root) and compiles for sm_90 under each variant."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from _nvcc import needs_nvcc, nvcc_errors

_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "diag" / "update_map.py"
_spec = importlib.util.spec_from_file_location("update_map", _SCRIPT)
update_map = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(update_map)


def test_takes_the_largest_update_map():
    """classification-adamw-ce: W1's AdamW update, 8192 elements a block of 512 threads,
    its state homes and the global buffers it stores at the last step declared."""
    src = update_map.kernel_source("classification-adamw-ce", {})
    block, n, threads, decls = update_map.update_map(src)
    assert (n, threads) == (8192, 512)
    assert "sqrtf(" in block and block.startswith("  { // tile.map split 1: 8192 elements per block")
    assert any(d.endswith("= nullptr;") for d in decls) and any("(smem + " in d for d in decls)


@needs_nvcc
@pytest.mark.parametrize("variant", list(update_map.VARIANTS))
def test_program_compiles(tmp_path, variant):
    prog = update_map.program("online-adam", variant, update_map.VARIANTS[variant])
    assert "int main()" in prog
    assert nvcc_errors(prog, tmp_path) == ""
