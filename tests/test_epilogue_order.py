"""Staged gemm epilogues (tk/epilogue.cuh) on the CPU: the Hopper tile's
fragment walk (tk::hopper::apply_epilogue) and its row epilogue through a
shared scratch (frag_to_rows + rows_epilogue, pass by pass; or with the
operands preloaded before the K loop: rows_preload + rows_store_preloaded),
compiled for the host
(tests/device/epilogue_order.cu), loads each in-bounds element once and
stores it once, every load of a chunk before the chunk's stores, and an
in-place SGD update through it gives the per-element form's bits. On the GPU
the same epilogues run in every workload's kernel (tests/test_runtime_cuda.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
INCLUDE = REPO / "trainkernel" / "backend" / "include"
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None)


def _run(tmp_path: Path, *defines: str) -> list[list[str]]:
    if NVCC is None:
        pytest.skip("nvcc not found")
    exe = tmp_path / "epilogue_order"
    cmd = [NVCC, "-std=c++17", "-O2", *defines, "-I", str(INCLUDE), str(REPO / "tests" / "device" / "epilogue_order.cu"),
           "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


def test_staged_epilogue_loads_a_chunk_before_its_stores(tmp_path):
    """The fragment walk and the row walk (by warp): the same loads, stores, chunks and
    bits, and each thread reads only scratch its own warp wrote."""
    out = _run(tmp_path)
    owners = [r for r in out if r[0] == "owner"]
    rows = [r for r in out if r[0] != "owner" and not r[0].startswith("partials")]
    assert [r[1:] for r in owners] == [["64", "ok"], ["128", "ok"], ["256", "ok"]], owners
    assert len(rows) == 96 and {r[0] for r in rows} == {"frag", "rows", "pre", "rows-whole", "pre-whole"}
    for walk, bn, m, n, verdict, *rest in rows:
        assert verdict == "ok", (walk, bn, m, n, rest)
    # Full slabs: 16 elements a chunk with one operand, 8 on the 256-wide tile
    # (its 128 accumulator registers leave room for half), in every walk; the
    # 64-wide tile's operands all preloaded (32 elements, one run).
    runs = {tuple(r[:4]): int(r[-1]) for r in rows}
    for walk in ("frag", "rows", "pre"):
        assert runs[(walk, "128", "64", "128")] == 16 and runs[(walk, "256", "64", "256")] == 8
    assert runs[("frag", "64", "64", "64")] == runs[("rows", "64", "64", "64")] == 16
    assert runs[("pre", "64", "64", "64")] == 32
    # Whole slabs without bounds tests (the consumers' whole tiles): the same loads, stores,
    # chunks and bits as with them.
    for walk in ("rows", "pre"):
        for bn in ("64", "128", "256"):
            assert runs[(walk + "-whole", bn, "64", bn)] == runs[(walk, bn, "64", bn)], (walk, bn)


def test_column_partials_are_each_run_of_16_rows_summed_in_order(tmp_path):
    """tk::hopper::ColumnPartials (tile-column-partials) through the row walks: the staged
    epilogue, the preloaded one (where its operands fit: the 64-wide tile) and a plain
    functor, guarded and whole: each in-bounds run of 16 rows of a column gets the fp32
    sum, in row order, of the values stored there (those bits), and nothing else is
    written (runs wholly below the product, columns past it)."""
    rows = [r for r in _run(tmp_path) if r[0].startswith("partials")]
    walks = {r[0] for r in rows}
    assert walks == {"partials-staged", "partials-staged-whole", "partials-pre", "partials-pre-whole",
                     "partials-plain", "partials-plain-whole"}, walks
    assert len(rows) == 53 and {r[2] for r in rows} >= {"1", "16", "37", "64"}
    for walk, bn, m, n, verdict, *rest in rows:
        assert verdict == "ok", (walk, bn, m, n, rest)


def test_the_probe_knob_makes_it_per_element_again(tmp_path):
    rows = [r for r in _run(tmp_path, "-DTK_EPILOGUE_LOADS_INLINE") if r[0] != "owner" and not r[0].startswith("partials")]
    assert len(rows) == 96 and all(r[4] == "ok" and r[-1] == "1" for r in rows), rows


def _kernel_source(workload) -> str:
    import torch

    import trainkernel

    return trainkernel.compile_training(workload.make_step(torch.bfloat16), workload.example_args(),
                                        build=False).cuda_source


def _builds_for_sm90a(src: str, tmp_path, flags: list[str]) -> None:
    cu = tmp_path / "k.cu"
    cu.write_text(src)
    proc = subprocess.run([NVCC, "-std=c++17", "-O3", "-cubin", "-gencode=arch=compute_90a,code=sm_90a",
                           *flags, "-I", str(INCLUDE), str(cu), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("flags", [[], ["-DTK_NO_ROWS_PRELOAD"], ["-DTK_UNIT_TIMER"], ["-DTK_ROWS_ALWAYS_GUARDED"],
                                   ["-DTK_SPLITK_ACQ_REL=1"]])
def test_a_grid_kernel_builds_with_each_library_switch(tmp_path, flags):
    """The row preload (on by default; -DTK_NO_ROWS_PRELOAD turns it off for the probe),
    step 22's probe (-DTK_ROWS_ALWAYS_GUARDED: every element bounds-tested),
    step 89's split-K fences as fence.acq_rel (-DTK_SPLITK_ACQ_REL=1)
    and the unit timer's build
    (-DTK_UNIT_TIMER, resident_probe --unit-timer): small's kernel, whose 64-wide gemms
    preload one operand an element and one of which is split, compiles for sm_90a each way."""
    if NVCC is None:
        pytest.skip("nvcc not found")
    from trainkernel.workloads import WORKLOADS

    src = _kernel_source(WORKLOADS["small"])
    assert "tk::staged_epilogue" in src and "hopper_gemm.cuh" in src
    _builds_for_sm90a(src, tmp_path, flags)


@pytest.mark.parametrize("flags", [[], ["-DTK_NO_ROWS_PLAIN"]])
def test_load_free_epilogues_build_through_the_row_walk(tmp_path, flags):
    """mlp4-adamw-ce's weight-gradient gemms end in epilogues that read no operand (0.1 g
    and 0.001 g^2 for the AdamW map): the printer gives them as plain (i, j, acc) functors,
    which the Hopper gemm walks by rows like the staged ones (perf-log step 34;
    -DTK_NO_ROWS_PLAIN is the probe's old fragment-order path); it compiles for sm_90a
    either way."""
    if NVCC is None:
        pytest.skip("nvcc not found")
    from trainkernel.workloads import TWINS

    src = _kernel_source(TWINS["mlp4-adamw-ce"])
    assert "tk::hopper::grid_gemm_units" in src and "[&](int i, int j, float acc) {" in src
    _builds_for_sm90a(src, tmp_path, flags)


def test_small_has_no_named_barriers(tmp_path):
    """small's kernel (64-wide wgmma gemms, one of them split) syncs its consumers'
    row epilogue and split-K vote only with __syncwarp: every CTA barrier in its PTX is
    barrier 0 (__syncthreads). By warpgroup, on named barriers, racecheck reported
    hazards on small that it does not now (perf-log step 20)."""
    import re

    if NVCC is None:
        pytest.skip("nvcc not found")
    import torch

    import trainkernel
    from trainkernel.workloads import WORKLOADS

    w = WORKLOADS["small"]
    cu = tmp_path / "small.cu"
    cu.write_text(trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source)
    ptx = tmp_path / "small.ptx"
    proc = subprocess.run([NVCC, "-std=c++17", "-O3", "-ptx", "-gencode=arch=compute_90a,code=sm_90a",
                           "-I", str(INCLUDE), str(cu), "-o", str(ptx)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    barriers = re.findall(r"(?<![\w.])(?:bar|barrier)\.(?:sync|arrive|red)[^;]*;", ptx.read_text())
    named = [b for b in barriers if not re.fullmatch(r"bar\.sync\s+0;", b)]
    assert barriers and named == [], named[:4]
