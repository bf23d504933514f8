"""target.carried_cast_copies: the step loop carries a cast of state (its
compute-dtype copy) that its own home cannot carry, in two copies the step's
parity picks (perf-log step 73). Without it, a cast whose update shares a phase
with its last reader (the last layer's weight: dh = dy @ W^T and W's update both
follow dy) or whose home's bytes a later temporary reuses runs every step; with
it, the update writes the next step's copy while the step reads the other, and
the cast runs in the first step alone."""

from __future__ import annotations

import dataclasses
import functools
import re

import pytest
import torch

from trainkernel import target as T
from trainkernel.backend import cuda_target
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, resident_printer, same_bits_off_and_on, stepped
from _variants import suite_source as _source

# Each switch against the target before the flips (test_measured_defaults.py: on).
pytestmark = pytest.mark.usefixtures("before_steps_69_83")

CARRIED = "if (tk_first)  // carried from the previous step (plan_carried_casts)"
DEEP = WORKLOADS["online"].with_sizes(64, (128, 256, 256, 16))  # three layers: two weights past the first


@pytest.fixture
def deep_on_8(monkeypatch):
    """DEEP as a cluster of 8, whose homes fill 229 KB a block: a grid kernel by the
    cost model since perf-log step 119 (its exchanges), resident here by force."""
    from conftest import _use_target_fields

    monkeypatch.setattr(T, "DEFAULT", _use_target_fields(monkeypatch, max_cluster=8, clusters=(1, 2, 4, 8)))


def _src(name, **kw) -> str:
    return _source(name, resident="force", **kw) if name is DEEP else _source(name, **kw)


def _smem(src: str) -> int:
    return int(re.search(r"static constexpr int kSmem = (\d+);", src).group(1))


def _copies(src: str) -> dict[str, tuple[int, int]]:
    """cast home -> (even, odd) offsets of its two copies, from the step's pointers."""
    out = {}
    for name, odd, even in re.findall(r"\n  \w+\* (s\d+\w*) = \(\w+\*\)\(smem \+ \(tk_odd \? (\d+) : (\d+)\)\);\n"
                                      r"  \w+\* \1_next = ", src):
        out[name] = (int(even), int(odd))
    return out


def test_online_carries_the_last_weight_in_two_copies(target_fields):
    """online: W2's bf16 copy, read by dh's product in the phase whose dW2 epilogue
    updates W2, gets a second copy past the placement; the update writes the
    next step's copy (when another step follows) beside the state home it writes
    through; the other carried casts keep their homes; nothing else changes."""
    off = _source("online")
    target_fields(carried_cast_copies=True)
    on = _source("online")
    assert off.count(CARRIED) == 3 and on.count(CARRIED) == 4
    copies = _copies(on)
    assert len(copies) == 1
    (name, (even, odd)), = copies.items()
    assert re.search(rf"\n  \w+\* {name} = \(\w+\*\)\(smem \+ {even}\);", off)  # its own home: the even copy
    assert odd == _smem(off) and _smem(on) == odd + 16 * 24 * 2  # 16 rows of 24 bf16 (pitch) past the placement
    assert re.search(rf"\n\s+if \(tk_more\) s\d+\[[^\n]*\] = tk::from_float<float>\(vals\[1\]\);"
                     rf"\n\s+if \(tk_more\) {name}_next\[[^\n]*\] = tk::from_float<__nv_bfloat16>\(vals\[1\]\);", on)
    assert len(re.findall(rf"\b{name}_next\[", on)) == 1  # written by the update alone, read by nobody


@pytest.mark.parametrize("name,before,after", [("classification-adamw-ce", 0, 3), (DEEP, 0, 3), ("tiny", 3, 4),
                                                ("classification", 3, 4)])
def test_casts_carried_in_copies_where_their_homes_cannot(target_fields, request, name, before, after):
    """classification-adamw-ce's cast homes share bytes with later temporaries and
    the three-layer step's (which fill 229 KB a block) too: each gets two copies of
    its own past the placement (where they fit), so they are carried now."""
    if name is DEEP:
        request.getfixturevalue("deep_on_8")
    off = _src(name)
    target_fields(carried_cast_copies=True)
    on = _src(name)
    assert (off.count(CARRIED), on.count(CARRIED)) == (before, after)
    copies = _copies(on)
    assert copies and _smem(on) > _smem(off)
    for even, odd in copies.values():
        assert odd >= _smem(off) and even != odd
    spans = sorted(o for pair in copies.values() for o in pair if o >= _smem(off))
    assert len(spans) == len(set(spans))  # no two copies in the same bytes
    assert _smem(on) <= T.DEFAULT.resident_costs.smem_budget


def test_no_copy_past_the_budget(target_fields, monkeypatch):
    """Copies go where they fit: with the printer's budget one byte short of online's
    copy, W2's cast is cast every step again, as without copies."""
    off = _source("online")
    target_fields(carried_cast_copies=True)
    printer_target = cuda_target.TARGET
    tight = dataclasses.replace(printer_target.resident_costs, smem_budget=_smem(off) + 16 * 24 * 2 - 1)
    monkeypatch.setattr(cuda_target, "TARGET", dataclasses.replace(printer_target, resident_costs=tight))
    assert _source("online") == off


def test_the_copies_are_planned_before_the_header(target_fields):
    """The printer's own shared-memory size (the launch's) includes the copies."""
    target_fields(carried_cast_copies=True)
    printer, _ = resident_printer("online")
    assert printer.cast_copies and printer.smem_bytes == max(odd for _, odd in printer.cast_copies.values()) + 768


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "classification-adamw-ce", "tiny"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_compiles_for_sm90(target_fields, tmp_path, name, dtype):
    target_fields(carried_cast_copies=True)
    src = _source(name, dtype=dtype)
    assert "_next = " in src
    assert nvcc_errors(src, tmp_path) == ""


@needs_nvcc
def test_the_deeper_step_compiles_for_sm90(deep_on_8, target_fields, tmp_path):
    target_fields(carried_cast_copies=True)
    src = _src(DEEP)
    assert len(_copies(src)) >= 2
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "classification-adamw-ce", DEEP], ids=str)
def test_the_same_bits_on_gpu(target_fields, request, name):
    """7 steps in one launch (the copies alternate) and 4 launches of one step
    (the cast runs every launch): copies on against off, bit for bit."""
    if name is DEEP:
        request.getfixturevalue("deep_on_8")
    resident = "force" if name is DEEP else "auto"
    for run, steps, seed in ((looped, 7, 4), (stepped, 4, 2)):
        same, (src_off, src_on) = same_bits_off_and_on(target_fields, "carried_cast_copies", name, steps, seed,
                                                       run=functools.partial(run, resident=resident))
        assert "_next = " in src_on and "_next = " not in src_off
        assert same


IDLE_BARRIER = "  if (tk_first) __syncthreads();\n  // ---- phase 1\n"


@pytest.mark.parametrize("name", ["online", "tiny", "classification"])
def test_a_phase_of_carried_casts_alone_skips_its_barrier_after_the_first_step(target_fields, monkeypatch, name):
    """With the batch's cast read where it is used (tk-fuse input_casts, perf-log step 70)
    and the copies, phase 0 holds carried casts alone: a middle step runs nothing there,
    and the block barrier that ends it runs in the first step alone (the step's end
    barrier already orders the phases around it). Either switch alone leaves it (and
    the three-layer step, whose first weights' casts stay per step, keeps it)."""
    from trainkernel import pipeline

    target_fields(carried_cast_copies=True)
    assert IDLE_BARRIER not in _source(name)
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", True)
    on = _source(name)
    phase0 = on.split("// ---- phase 0\n")[1].split("// ---- phase 1\n")[0]
    assert phase0.count(CARRIED) >= 2 and IDLE_BARRIER in on
    target_fields(carried_cast_copies=False)
    assert IDLE_BARRIER not in _source(name)


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "classification", "tiny"])
def test_the_idle_barrier_gives_the_same_bits_on_gpu(target_fields, monkeypatch, name):
    """7 steps in one launch with input casts and the copies (phase 0's barrier in the
    first step alone) against the same steps without the copies, bit for bit."""
    from trainkernel import pipeline

    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", True)
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, "carried_cast_copies", name, 7, 4, run=looped)
    assert IDLE_BARRIER in src_on and IDLE_BARRIER not in src_off
    assert same
