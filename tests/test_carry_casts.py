"""target.carry_casts: the step loop carries the compute-dtype copies of the state
from step to step (perf-log step 52). tile-resident keeps the homes of casts of state
(`state_cast`) to the kernel's end where they fit with the same padding; the printer
runs such a cast in the first step alone and has each update of the state write the
cast of its new value too, when another step follows. Off by default until the H200
measures it."""

from __future__ import annotations

import re

import pytest

from trainkernel import target as T

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on
from _variants import suite_source as _source

# Pinned to the target before the switches of perf-log steps 70, 73 and 75-83
# were flipped (test_measured_defaults.py): the printed form these tests read.
pytestmark = pytest.mark.usefixtures("before_steps_69_83")

CARRIED = "  if (tk_first)  // carried from the previous step (plan_carried_casts)\n"


def _carried(src: str) -> dict[str, str]:
    """cast home -> the state home it is cast from, for each map run in the first step alone."""
    out = {}
    for block in src.split(CARRIED)[1:]:
        block = block[: block.index("\n  }\n")]
        dst = re.search(r"\n\s+if \(ok0\) \{\n\s+(s\d+\w*)\[", block).group(1)
        out[dst] = re.search(r"tk::to_float\((s\d+\w*)\[", block).group(1)
    return out


@pytest.fixture
def carry_on(target_fields):
    target_fields(carry_casts=True)


def test_on_by_default():
    """Measured faster (perf-log step 52, run b366d17-a), so on."""
    assert T.DEFAULT.carry_casts is True
    assert "(tk_first)  // carried" in _source("online")


def test_online_carries_the_casts_its_update_phases_do_not_read(carry_on):
    """online (a cluster of 16): W1's, b1's and b2's bf16 copies are cast in the first
    step only, and each update writes the cast of the new value beside the state home
    it writes through (when another step follows). W2's copy is read by dX's product in
    the phase that updates W2: it is cast every step."""
    src = _source("online")
    carried = _carried(src)
    assert len(carried) == 3
    for cast, state in carried.items():
        pair = re.search(rf"\n\s+if \(tk_more\) {state}\[([^\n]*)\] = tk::from_float<float>\(([^\n]*)\);"
                         rf"\n\s+if \(tk_more\) {cast}\[[^\n]*\] = tk::from_float<__nv_bfloat16>\(\2\);", src)
        assert pair, f"the update of {state} does not write its carried cast {cast}"
    w2 = re.search(r"\{ // tile\.map split 0: 256 elements per block\n", src)
    assert w2 and CARRIED not in src[w2.start() - len(CARRIED) - 1: w2.start() + 1]


def test_no_carry_where_the_homes_do_not_fit_with_their_padding(carry_on):
    """classification-adamw-ce: keeping its casts' homes to the end fits only without
    the padded rows its gemms need: the padding wins, and nothing is carried."""
    src = _source("classification-adamw-ce")
    assert CARRIED not in src
    assert "213152 bytes of shared memory" in src  # the default placement


@needs_nvcc
def test_compiles_for_sm90(carry_on, tmp_path):
    src = _source("classification")
    assert CARRIED in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "online-adam"])
def test_one_launch_of_k_steps_gives_the_same_bits_with_carried_casts_on_gpu(target_fields, name):
    """7 steps in one launch over 3 batches, with carried casts and without: the same
    bits (state and last outputs): the carried copy is the cast the next step would make."""
    same, sources = same_bits_off_and_on(target_fields, "carry_casts", name, 7, seed=4, run=looped)
    assert [CARRIED in s for s in sources] == [False, True]
    assert same
