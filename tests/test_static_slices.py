"""target.static_slices: where the cluster divides a split dimension, every block's
slice is whole, so a resident kernel needs none of the guards and clamps for a short
or empty slice (`max(0, min(c, size - c * rank))`, `if (c * rank < size)`, the
clamp of the global index); and where a map's items divide its elements, none of
the clamps of elements past its end (perf-log step 58). Where they do not divide,
everything stays. The same arithmetic on the same elements: the same bits."""

from __future__ import annotations

import re

import pytest

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import same_bits_off_and_on
from _variants import suite_source as _source

SHORT_SLICE = re.compile(r"max\(0, min\(\d+, \d+ - \d+ \* rank\)\)|\d+ \* rank < \d+\)|u\dg\d = min\(")
ELEMENT_CLAMP = re.compile(r"const int e\d = min\(base")


ODD = WORKLOADS["online"].with_sizes(33, (100, 300, 7))
"""online at (33, 100-300-7): a cluster of 16 does not divide 300."""


@pytest.fixture
def static_on(target_fields):
    target_fields(static_slices=True)


def test_on_by_default():
    """The H200 measured it faster on every resident step, with the same bits
    (perf-log step 58, run 90c86f4-a)."""
    assert T.DEFAULT.static_slices is True
    assert not SHORT_SLICE.search(_source("online"))


@pytest.mark.parametrize("name", ["online", "classification-adamw-ce", "online-adam"])
def test_whole_slices_print_no_guards(static_on, name):
    """256 and 512 hidden units over a cluster of 16: every slice whole."""
    src = _source(name)
    assert "kCluster = 16" in src
    assert not SHORT_SLICE.search(src), SHORT_SLICE.search(src)


def test_gemm_extents_become_constants(static_on):
    """online's split products take their slice's extent as a constant."""
    src = _source("online")
    calls = re.findall(r"tk::smem_gemm<[^>]*>\(([^,]+), ([^,]+), ([^,]+),", src)
    assert calls and all(a.isdigit() and b.isdigit() and c.isdigit() for a, b, c in calls), calls


def test_divided_maps_drop_the_element_clamp(static_on):
    """online's W1 cast (2048 elements a block, 8 a thread of 256): whole items;
    its 1024-element map of y (4 a thread) too; a 16-element bias map on every thread
    (one item of 256 threads: not divided) keeps its clamp."""
    src = _source("online")
    maps = re.findall(r"// tile\.map split -?\d+: (\d+) elements per block(, on warp \d+)?\n(?:.*\n){0,3}?.*"
                      r"for \(int base = [^;]+; base < \d+; base \+= (\d+) \* (kThreads|32)\) \{\n\s+(.*)\n", src)
    assert maps
    for n, _, u, threads, first in maps:
        t = 256 if threads == "kThreads" else 32
        assert ("min(base" in first) == (int(n) % (int(u) * t) != 0), (n, u, threads, first)


def test_short_slices_keep_their_guards(static_on):
    """300 hidden units over 16 blocks: slices of 19, the last one short (300 - 285 =
    15): its guards and clamps stay."""
    src = _source(ODD)
    assert "kCluster = 16" in src
    assert "max(0, min(19, 300 - 19 * rank))" in src
    assert "19 * rank < 300" in src


def test_off_prints_the_guards(target_fields):
    target_fields(static_slices=False)
    src = _source("online")
    assert "max(0, min(16, 256 - 16 * rank))" in src and ELEMENT_CLAMP.search(src)


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "classification-adamw-ce", "odd"])
def test_compiles_for_sm90(static_on, tmp_path, name):
    src = _source(ODD) if name == "odd" else _source(name)
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "online-adam", "classification-adamw-ce", "odd"])
def test_the_bits_do_not_change_on_gpu(target_fields, name):
    """Six steps from the same state on the same batches, with and without the
    guards: the same bits (state and outputs)."""
    same, _ = same_bits_off_and_on(target_fields, "static_slices", ODD if name == "odd" else name)
    assert same
