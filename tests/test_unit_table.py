"""scripts/diag/unit_table.py: the unit timer's lines as a table of medians by
target variant, gemm and tile shape."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "diag" / "unit_table.py"
spec = importlib.util.spec_from_file_location("unit_table", SCRIPT)
unit_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(unit_table)

LOG = """\
=== target variant ''
tk-unit 256x64x1024 tile 64x32 unit 0 ksteps 8 first 1264 kloop 3946 fixup 3949 epilogue 698 rows write 89 sync 10 body 442 sync 19
tk-timer small_sgd_bf16 grid 132 p0=7413 p1=116886 ns=268352 at=1
tk-unit 256x64x1024 tile 64x32 unit 0 ksteps 8 first 1084 kloop 3946 fixup 3823 epilogue 712 rows write 89 sync 10 body 456 sync 19
tk-unit 256x64x1024 tile 64x32 unit 0 ksteps 8 first 1094 kloop 3954 fixup 3842 epilogue 685 rows write 76 sync 10 body 442 sync 19
=== target variant 'split_k_tagged_partials=1'
tk-unit 256x64x1024 unit 0 ksteps 8 first 1033 kloop 3934 fixup 2468 epilogue 662 rows write 31 sync 32 body 427 sync 30
"""


def test_medians_by_variant_gemm_and_tile():
    rows = unit_table.read(LOG.splitlines())
    assert [(r["variant"], r["gemm"], r["tile"], r["launches"]) for r in rows] == [
        ("", "256x64x1024", "64x32", 3), ("split_k_tagged_partials=1", "256x64x1024", "?", 1)]
    first = rows[0]
    assert (first["first"], first["kloop"], first["fixup"], first["epilogue"], first["body"]) == (1094, 3946, 3842, 698, 442)
    assert first["kstep"] == pytest.approx(3946 / 8)
    assert "| (as is) | 256x64x1024 | 64x32 | 8 | 1094 | 3946 | 493 | 3842 | 698 | 442 |" in unit_table.render(rows)


def test_a_log_without_units_is_an_error(tmp_path, capsys):
    log = tmp_path / "unit_timer.log"
    log.write_text("=== target variant ''\nnothing timed\n")
    assert unit_table.main([str(log)]) == 1
    assert "no tk-unit lines" in capsys.readouterr().err
