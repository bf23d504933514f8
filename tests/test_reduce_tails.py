"""target.batched_reduce_tails: a grid kernel's reductions load each thread's
elements in batches (target.full_reduce_loads, COLUMN_LOADS) and used to take the rest
one at a time, a global round trip each (small's loss leaves 11 a thread,
mlp4's bias-gradient slices of 11 rows are all rest). With the switch the rest
is one more batch, guarded, folded in the same order: the same bits (perf-log
step 75)."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import trainkernel
from trainkernel.backend.cuda_target import CudaPrinter

from _variants import same_bits_off_and_on, stepped
from _variants import suite_source as _source

# Each switch against the target before the flips (test_measured_defaults.py: on).
pytestmark = pytest.mark.usefixtures("before_steps_69_83")

INCLUDE = Path(trainkernel.__file__).resolve().parent / "backend" / "include"
TAIL = "the tail: its loads issued together too (target.batched_reduce_tails)"


def _left(length: int, n: int, stride: int, start: int) -> int:
    """Elements one thread has left after the batched loop, by running it."""
    r = start
    while r + (n - 1) * stride < length:
        r += n * stride
    return len(range(r, length, stride))


def test_tail_is_the_most_any_thread_has_left():
    rng = random.Random(7)
    for _ in range(300):
        length, n, stride = rng.randint(1, 5000), rng.randint(2, 16), rng.choice([32, 128, 256, 384, 512])
        want = max(_left(length, n, stride, t) for t in range(stride))
        assert CudaPrinter._tail(length, n, stride, range(stride)) == want, (length, n, stride)
    assert CudaPrinter._tail(16384, 16, 384, range(384)) == 11  # small's loss


@pytest.mark.parametrize("name,tails", [("small", [11, 14, 14]), ("mlp4", [6, 11, 11, 11, 11]),
                                        ("online", [])])
def test_the_tails_are_batched_and_nothing_else_changes(target_fields, name, tails):
    """small: its loss (16384 elements, 11 left a thread) and its two column sums
    (slices of 22 rows, the last of 14); mlp4: its loss (32768, 6 left) and its
    four bias gradients (slices of 11 rows); online, resident, keeps its reductions.
    On 128-row wgmma tiles (384 threads: these reductions' slices leave tails);
    the 64-row kernels' 256 threads divide small's and mlp4's rows evenly."""
    target_fields(wgmma_consumers=(2,))
    off = _source(name)
    target_fields(wgmma_consumers=(2,), batched_reduce_tails=True)
    on = _source(name)
    sizes = [int(m) for m in re.findall(re.escape(TAIL) + r"\n\s+float tk_v\[(\d+)\];", on)]
    assert sizes == tails
    assert on.count(TAIL) == len(tails)
    if not tails:
        assert on == off
    # each tail replaces one one-at-a-time loop; the batched loops before them stay
    serial = re.compile(r"for \(; r < (?:r1|\d+); (?:\+\+r|r \+= (?:blockDim\.x|32))\) \{")
    assert len(serial.findall(off)) - len(serial.findall(on)) == len(tails)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found")
@pytest.mark.parametrize("name", ["small", "mlp4"])
def test_builds_for_sm90a(target_fields, tmp_path, name):
    target_fields(batched_reduce_tails=True)
    cu = tmp_path / "k.cu"
    cu.write_text(_source(name))
    proc = subprocess.run(["nvcc", "-std=c++17", "-O3", "-cubin", "-gencode=arch=compute_90a,code=sm_90a",
                           "-I", str(INCLUDE), str(cu), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", "mlp4", "medium"])
def test_the_same_bits_on_gpu(target_fields, name):
    # 128-row tiles, where small's and mlp4's reductions have tails (see above).
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, "batched_reduce_tails", name, 4, 2, run=stepped,
                                                   wgmma_consumers=(2,))
    assert TAIL in src_on and TAIL not in src_off
    assert same
