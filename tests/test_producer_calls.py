"""target.wgmma_producer_calls: a grid kernel's wgmma gemms with tiles up to 128
wide run their producer warpgroup's loop as an out-of-line function
(tk::hopper::produce_units_call), one copy for each layout instead of one
inlined at every gemm: less code for cicc and ptxas (issue 10's cold compile,
perf-log step 74). The consumers' wgmma code stays inline: a call where wgmma
is in flight would serialize the tensor-core pipeline (ptxas's C7510)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import trainkernel
from trainkernel import target as T
from trainkernel.workloads import LARGE

from _variants import same_bits_off_and_on, stepped
from _variants import suite_source as _source

# Pinned to the target before the switches of perf-log steps 70, 73 and 75-83
# were flipped (test_measured_defaults.py), and to the grid model before step 106
# (small's gemms of one width): the printed form these tests read.
pytestmark = pytest.mark.usefixtures("before_steps_69_83", "before_step_106")

INCLUDE = Path(trainkernel.__file__).resolve().parent / "backend" / "include"
CALLS = re.compile(r"grid_gemm_units<[^>]*>\(")


def _template_args(src: str) -> list[int]:
    return [m.group(0).count(",") + 1 for m in CALLS.finditer(src)]


def test_off_until_measured():
    assert T.DEFAULT.wgmma_producer_calls is False
    assert set(_template_args(_source("mlp4-adamw-ce"))) == {5}


@pytest.mark.parametrize("name", ["small", "mlp4", "mlp4-adamw-ce"])
def test_every_narrow_wgmma_gemm_calls_its_producer(target_fields, name):
    off = _source(name)
    target_fields(wgmma_producer_calls=True)
    on = _source(name)
    assert _template_args(on) and set(_template_args(on)) == {6}
    # the sixth argument (kProducerCall) is all that changes
    assert CALLS.sub(lambda m: m.group(0).removesuffix(", true>(") + ">(", on) == off


def test_wide_tiles_keep_their_producer_inline(target_fields):
    """large's 256-wide tiles hand the producer's registers to the consumers
    (setmaxnreg.dec): a call there could need more registers than the producer
    keeps, so they never take it (the header's static_assert says the same)."""
    target_fields(wgmma_producer_calls=True)
    src = _source(LARGE)
    assert "TileById<0>" in src  # 128 x 256
    assert set(_template_args(src)) == {5}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found")
@pytest.mark.parametrize("name", ["small", "mlp4-adamw-ce"])
def test_builds_for_sm90a_without_serialized_wgmma(target_fields, tmp_path, name):
    """The producer's call draws no C7510 ("wgmma ... serialized due to wgmma
    pipeline crossing function boundary"): the consumers' pipeline is intact."""
    target_fields(wgmma_producer_calls=True)
    cu = tmp_path / "k.cu"
    cu.write_text(_source(name))
    proc = subprocess.run(["nvcc", "-std=c++17", "-O3", "-cubin", "-gencode=arch=compute_90a,code=sm_90a",
                           "-Xptxas", "-v", "-I", str(INCLUDE), str(cu), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "produce_units_call" in proc.stdout + proc.stderr  # ptxas -v lists the function it compiled
    assert "serialized" not in proc.stdout + proc.stderr


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", "mlp4-adamw-ce"])
def test_the_same_bits_on_gpu(target_fields, name):
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, "wgmma_producer_calls", name, 4, 2, run=stepped)
    assert set(_template_args(src_on)) == {6} and set(_template_args(src_off)) == {5}
    assert same
