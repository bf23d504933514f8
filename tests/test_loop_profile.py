"""scripts/diag/loop_profile.py's attribution of a kernel's lines to its tile ops (the
device part runs under ncu on the H200; this is the part that reads its output)."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

from _variants import suite_source

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "diag" / "loop_profile.py"
spec = importlib.util.spec_from_file_location("loop_profile", SCRIPT)
loop_profile = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loop_profile)


def test_every_op_of_a_resident_step_owns_its_lines(before_steps_69_83):
    src = suite_source("online").splitlines()
    owner = loop_profile.op_of_line(src)
    ops = [i for i, line in enumerate(src) if "{ // tile." in line]
    assert len(ops) == 13
    for i in ops:
        assert owner[i].startswith("p") and "tile." in owner[i]
        assert src[i].split("// ")[1].split(",")[0].startswith(owner[i].split(" ", 1)[1][:40])
    assert owner[next(i for i, line in enumerate(src) if "tk::stage_rows(" in line)] == "step: pointers and staging"
    assert owner[next(i for i, line in enumerate(src) if "for (int tk_s = 0;" in line)] == \
        "kernel: prologue and step loop"
    first_gemm = next(i for i, line in enumerate(src) if "{ // tile.gemm" in line)
    assert owner[first_gemm] == "p1 tile.gemm 64x256x128 mma.bf16 NN"


def test_a_grid_kernel_names_its_phases_and_grid_barriers():
    src = suite_source("mlp4").splitlines()
    owner = loop_profile.op_of_line(src)
    assert owner[next(i for i, line in enumerate(src) if line.strip() == "tk::grid_sync();")] == "grid barrier"
    labels = {o for o in owner if "tile.gemm" in o}
    assert len({o.split(" ")[0] for o in labels}) >= 4  # products in several phases, told apart


def test_the_cuda_view_sums_samples_per_op(before_steps_66_68, tmp_path, capsys):
    src = suite_source("online")
    (tmp_path / "online.cu").write_text(src)
    lines = src.splitlines()
    with open(tmp_path / "online.cuda.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["#", "Source", "Warp Stall Sampling (All Samples)"])
        for i, line in enumerate(lines, 1):
            w.writerow([i, line, 3 if "tk::exchange<" in line else 1 if "{ // tile." in line else 0])
    loop_profile.report(tmp_path, "online")
    out = capsys.readouterr().out
    assert "online: 16 warp stall samples" in out  # 13 ops, and 3 on the exchange
    assert out.splitlines()[1].split()[:2] == ["25.0%", "4"] and "p2 tile.gemm" in out.splitlines()[1]
