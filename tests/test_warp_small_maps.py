"""target.resident_warp_small_maps: where a resident phase has several maps of a few
elements a block, each runs on a warp of its own (perf-log step 51). Off by default
until the H200 measures it. Which thread computes an element does not change its
value, so the kernel's bits do not change."""

from __future__ import annotations

import re

import pytest

from trainkernel import target as T
from trainkernel.backend import cuda_target

from _nvcc import needs_nvcc, nvcc_errors
from _variants import same_bits_off_and_on
from _variants import suite_source as _source


def _maps(src: str) -> list[tuple[int, int, str | None]]:
    """(phase, elements a block, warp or None) of every resident tile.map."""
    out, phase = [], 0
    for line in src.splitlines():
        if m := re.match(r"  // ---- phase (\d+)", line):
            phase = int(m.group(1))
        elif m := re.match(r"  \{ // tile\.map split -?\d+: (\d+) elements per block(?:, on warp (\d+))?", line):
            out.append((phase, int(m.group(1)), m.group(2)))
    return out


@pytest.fixture
def warps_on(target_fields):
    target_fields(resident_warp_small_maps=True)


def test_on_by_default():
    """Measured faster (perf-log step 51, run b366d17-a), so on."""
    assert T.DEFAULT.resident_warp_small_maps is True
    assert ", on warp" in _source("online")


def test_the_small_maps_of_a_phase_take_a_warp_each(warps_on, target_fields):
    """online (256 threads, a cluster of 16): phase 0 casts W1's slice (2048 elements a
    block), W2's (256), y (1024) on every thread, and b1's slice and b2 (16 each) on
    warps 7 and 6; the guard keeps a split map's empty-slice test where a slice can
    be empty (static_slices off; 16 divides 256: none is)."""
    src = _source("online")
    maps = [m for m in _maps(src) if m[0] == 0]
    assert sorted(m[1] for m in maps if m[2] is not None) == [16, 16]
    assert {m[2] for m in maps if m[2] is not None} == {"7", "6"}
    assert all(m[2] is None for m in maps if m[1] > cuda_target.SMALL_MAP_ELEMENTS)
    assert "    if ((threadIdx.x >> 5) == 7)\n    for (int base = (threadIdx.x & 31); " in src
    target_fields(static_slices=False)
    assert "    if ((threadIdx.x >> 5) == 7 && 16 * rank < 256)\n    for (int base = (threadIdx.x & 31); " in _source("online")


def test_a_lone_small_map_keeps_every_thread(warps_on):
    """classification-adamw-ce: phases with one small map (or none) print as before."""
    src = _source("classification-adamw-ce")
    maps = _maps(src)
    by_phase: dict[int, list] = {}
    for m in maps:
        by_phase.setdefault(m[0], []).append(m)
    for phase, ms in by_phase.items():
        small = [m for m in ms if m[1] <= cuda_target.SMALL_MAP_ELEMENTS]
        assert all((m[2] is not None) == (len(small) > 1) for m in small), (phase, ms)
    assert any(m[2] is not None for m in maps)


@needs_nvcc
@pytest.mark.parametrize("name", ["tiny", "classification-adamw-ce"])
def test_compiles_for_sm90(warps_on, tmp_path, name):
    src = _source(name)
    assert ", on warp" in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "online-adam", "classification-adamw-ce"])
def test_the_bits_do_not_change_on_gpu(target_fields, name):
    """Six steps from the same state on the same batches, with small maps on warps and
    without: the same bits (state and outputs)."""
    same, sources = same_bits_off_and_on(target_fields, "resident_warp_small_maps", name)
    assert [", on warp" in s for s in sources] == [False, True]
    assert same
