"""target.constant_extents: where a cluster does not divide a resident gemm's split
dimension, each rank runs the product at its own slice's extent as a compile-time
constant (tk::with_slice_extent: c for the first ranks, the tail for the next, 0
after), as static_slices gives the whole slices theirs (perf-log step 60). The same
products over the same elements: the same bits."""

from __future__ import annotations

import re

import pytest

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import same_bits_off_and_on
from _variants import suite_source as _source

ODD = WORKLOADS["online"].with_sizes(33, (100, 300, 7))
"""300 hidden units over a cluster of 16: slices of 19, the last one 15."""
EMPTY = WORKLOADS["online"].with_sizes(64, (128, 225, 16))
"""225 hidden units over a cluster of 16: slices of 15, rank 15's empty."""

DISPATCH = re.compile(r"tk::with_slice_extent<kCluster, (\d+), (\d+), (\d+)>\(rank, \[&\]\(auto extent\) \{\n"
                      r"    constexpr int kExt = decltype\(extent\)::value;\n"
                      r"    tk::smem_gemm<[^>]*>\(([^,]+), ([^,]+), ([^,]+),")


def test_on_by_default():
    assert T.DEFAULT.constant_extents is True


def test_short_slices_run_constant_instances():
    """Every split product of the odd step takes its extent from the dispatch, with
    slices of 19 for 15 ranks and a tail of 15; the other extents are literals."""
    src = _source(ODD)
    assert "kCluster = 16" in src
    calls = DISPATCH.findall(src)
    assert len(calls) == src.count("tk::smem_gemm<") == 5
    for c, full, tail, *extents in calls:
        assert (c, full, tail) == ("19", "15", "15")
        assert extents.count("kExt") == 1 and all(e == "kExt" or e.isdigit() for e in extents), extents


def test_an_empty_rank_runs_the_empty_instance():
    """Rank 15 of the 225-unit step has nothing to multiply: 15 ranks of 15, no tail."""
    src = _source(EMPTY)
    assert "kCluster = 16" in src
    assert {c[:3] for c in DISPATCH.findall(src)} == {("15", "15", "0")}


def test_the_split_k_product_keeps_its_exchange_outside():
    """A k-split product pushes partials from inside the dispatch; the exchange that
    sums them runs after it, on every rank."""
    src = _source(ODD)
    m = re.search(r"with_slice_extent[^\n]*\n[^\n]*\n    tk::smem_gemm<[^>]*>\(33, 7, kExt,.*?\n    \}\);\n"
                  r"    tk::exchange(_async)?(_published)?<", src, re.S)
    assert m, "the split-k product's dispatch closes before its exchange"


def test_whole_slices_need_no_dispatch():
    """online's 256 hidden units divide over 16: literal extents (static_slices)."""
    assert "with_slice_extent" not in _source("online")


def test_off_keeps_the_run_time_extent(target_fields):
    target_fields(constant_extents=False)
    src = _source(ODD)
    assert "with_slice_extent" not in src
    assert "tk::smem_gemm<kThreads, 1, __nv_bfloat16, 0, 1, false>(33, max(0, min(19, 300 - 19 * rank)), 100," in src


@needs_nvcc
@pytest.mark.parametrize("shape", ["odd", "empty"])
def test_compiles_for_sm90(tmp_path, shape):
    src = _source(ODD if shape == "odd" else EMPTY)
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("shape", ["odd", "empty"])
def test_the_bits_do_not_change_on_gpu(target_fields, shape):
    """Six steps from the same state on the same batches, run-time or constant
    extents: the same bits (state and outputs)."""
    same, sources = same_bits_off_and_on(target_fields, "constant_extents", ODD if shape == "odd" else EMPTY)
    assert ["with_slice_extent" in s for s in sources] == [False, True]
    assert same
