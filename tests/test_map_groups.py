"""target.resident_map_groups: a resident map whose items divide its elements, whose
rows divide into runs of four and whose slice needs no guard gives each thread runs
of four consecutive elements (perf-log step 59), so that nvcc loads and stores a
run's operands as vectors. Elsewhere the map prints as before. Which thread computes
an element does not change its value: the same bits."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import trainkernel
from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import same_bits_off_and_on
from _variants import suite_source as _source

RUN = re.compile(r"for \(int base = [^;]+; base < (\d+); base \+= (\d+) \* kThreads\) \{\n\s+const int e0 = 4 \* \(base")


def _w1_map(src: str) -> str:
    """The largest map of the kernel (the W1 update of the twins)."""
    blocks = re.findall(r"  \{ // tile\.map split -?\d+: (\d+) elements per block\n((?:    .*\n)+?)  \}\n", src)
    return max(blocks, key=lambda b: int(b[0]))[1]


@pytest.fixture
def groups_on(target_fields):
    target_fields(static_slices=True, resident_map_groups=True)


def test_off_by_default():
    """The H200 measured it slower on every resident step (perf-log step 59,
    run 90c86f4-a)."""
    assert T.DEFAULT.resident_map_groups is False
    assert not RUN.search(_source("classification-adamw-ce"))


@pytest.mark.parametrize("name,n,u", [("classification-adamw-ce", 8192, 8), ("online-adam", 2048, 4)])
def test_the_update_maps_take_runs_of_four(groups_on, name, n, u):
    """The W1 update a block: n / 4 runs, u / 4 a thread an iteration; a run's
    elements share the first one's index but the innermost (the split column)."""
    w1 = _w1_map(_source(name))
    m = RUN.search(w1)
    assert m and (int(m.group(1)), int(m.group(2))) == (n // 4, u // 4), w1[:300]
    assert "u0g1 + 1)" in w1 and "u0g1 + 3)" in w1 and "u1l0" not in w1


MLP4_ODD = WORKLOADS["mlp4"].with_sizes(9, (20, 36, 36, 12, 5))
"""One block of a 9 x 20-36-36-12-5 mlp4: maps of 720 and 1296 elements, rows of 36."""


def test_a_run_past_the_end_is_skipped_whole(groups_on):
    """Where the items do not divide the map, a run starts clamped to the last whole
    run and is stored only when it starts before the end (n is a multiple of four)."""
    src = _source(MLP4_ODD)
    assert "const int e0 = min(4 * (base + 0 * kThreads), 1292);" in src
    assert "bool ok0 = 4 * (base + 0 * kThreads) < 1296;" in src
    assert "const bool ok3 = ok0;" in src


def test_guarded_slices_and_short_rows_stay_elementwise(target_fields):
    """Without static_slices a split map's slice is guarded: no runs. Rows of ten
    classes (classification-adamw-ce's cross-entropy maps) never make runs."""
    target_fields(static_slices=False, resident_map_groups=True)
    assert not RUN.search(_w1_map(_source("classification-adamw-ce")))
    target_fields(static_slices=True, resident_map_groups=True)
    src = _source("classification-adamw-ce")
    tens = re.findall(r"  \{ // tile\.map split -1: 640 elements per block\n((?:    .*\n)+?)  \}\n", src)
    assert tens and not any(RUN.search(b) for b in tens)


@needs_nvcc
def test_nvcc_loads_the_runs_as_vectors(target_fields, tmp_path):
    """The PTX of classification-adamw-ce's kernel has more 16-byte shared loads with
    runs than without (both with whole slices)."""
    include = Path(trainkernel.__file__).resolve().parent / "backend" / "include"

    def vectors(src: str) -> int:
        cu = tmp_path / "k.cu"
        cu.write_text(src)
        subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-O3", "-ptx", "-I", str(include), str(cu), "-o",
                        str(tmp_path / "k.ptx")], check=True, capture_output=True, timeout=600)
        return len(re.findall(r"ld\.shared\.v4\.f32", (tmp_path / "k.ptx").read_text()))

    # Without the fast paths, whose exact block rereads every element scalar.
    target_fields(static_slices=True, resident_map_groups=True, fast_paths=False)
    on = vectors(_source("classification-adamw-ce"))
    target_fields(static_slices=True, resident_map_groups=False, fast_paths=False)
    off = vectors(_source("classification-adamw-ce"))
    assert on >= off + 10, (on, off)


@needs_nvcc
@pytest.mark.parametrize("name", ["online-adam", "classification-adamw-ce", "online", "mlp4-odd"])
def test_compiles_for_sm90(groups_on, tmp_path, name):
    assert nvcc_errors(_source(MLP4_ODD if name == "mlp4-odd" else name), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "online-adam", "classification-adamw-ce", "mlp4-odd"])
def test_the_bits_do_not_change_on_gpu(target_fields, name):
    """Six steps from the same state on the same batches, with and without runs (whole
    slices either way): the same bits."""
    same, _ = same_bits_off_and_on(target_fields, "resident_map_groups", MLP4_ODD if name == "mlp4-odd" else name,
                                   static_slices=True)
    assert same
