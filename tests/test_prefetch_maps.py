"""target.prefetch_tensor_maps: a grid kernel asks for the tensor maps of each
phase's wgmma gemms (prefetch.tensormap) before the grid barrier in front of
the phase, as the standalone gemm kernel does at its start, so the phase's
first copies do not also wait for their maps' fetch (perf-log step 81)."""

from __future__ import annotations

import re

import pytest


from _nvcc import needs_nvcc, nvcc_errors
from _variants import same_bits_off_and_on, stepped
from _variants import suite_source as _source

# Each switch against the target before the flips (test_measured_defaults.py: on).
pytestmark = pytest.mark.usefixtures("before_steps_69_83")

PREFETCH = re.compile(r"  tk::hopper::prefetch_maps\((&p\.maps\[\d+\]), (&p\.maps\[\d+\])\);  // phase (\d+)'s\n")
CALL = re.compile(r"grid_gemm_units<[^\n]*?>\((&p\.maps\[\d+\]), (&p\.maps\[\d+\]), ")  # a narrowed gemm nests TileShape<...>


def _phase_of_calls(src: str) -> list[tuple[str, str, int]]:
    out = []
    for phase, text in enumerate(src.split("  // ---- phase ")[1:]):
        out += [(a, b, phase) for a, b in CALL.findall(text)]
    return out


@pytest.mark.parametrize("name", ["small", "mlp4", "mlp4-adamw-ce", "medium"])
def test_every_gemms_maps_are_asked_for_before_its_phase(target_fields, name):
    """One prefetch a gemm, of the maps its call reads, printed before the barrier
    in front of its phase; nothing else changes."""
    off = _source(name)
    target_fields(prefetch_tensor_maps=True)
    on = _source(name)
    asked = [(m.group(1), m.group(2), int(m.group(3)), m.start()) for m in PREFETCH.finditer(on)]
    assert sorted(a[:3] for a in asked) == sorted(_phase_of_calls(on)) and asked
    for *_, phase, at in asked:  # printed in the phase before the gemm's
        assert on.index(f"  // ---- phase {phase - 1}\n") < at < on.index(f"  // ---- phase {phase}\n")
    assert PREFETCH.sub("", on) == off


def test_resident_kernels_are_unchanged(target_fields):
    off = _source("online")
    target_fields(prefetch_tensor_maps=True)
    assert _source("online") == off


@needs_nvcc
def test_builds_for_sm90a(target_fields, tmp_path):
    target_fields(prefetch_tensor_maps=True, grid_carried_casts=True)
    src = _source("small")
    assert "prefetch_maps(&p.maps[tk_parity ? " in src
    assert nvcc_errors(src, tmp_path, host=False) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", "mlp4"])
def test_the_same_bits_on_gpu(target_fields, name):
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, "prefetch_tensor_maps", name, 4, 2, run=stepped)
    assert "prefetch_maps" in src_on and "prefetch_maps" not in src_off
    assert same
