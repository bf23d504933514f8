"""target.stage_constant_threads (perf-log step 112; on since step 114's measurement): a resident kernel
defines TK_BLOCK_THREADS, its block size, before tk/resident.cuh, so that the staging
loops (tk::for_each_row_unit) run with a constant thread count; nothing else of the
kernel changes, grid kernels are untouched, and the kernels build for sm_90a. The
copies' bytes are checked on the GPU by tests/device/test_stage_rows.cu (both forms)."""

from __future__ import annotations

import re

import pytest

from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import suite_source as _source

ODD = WORKLOADS["online"].with_sizes(33, (100, 300, 7))


@pytest.mark.parametrize("w", ["tiny", "classification", "online-adam", ODD],
                         ids=["tiny", "classification", "online-adam", "odd"])
def test_the_define_is_the_block_size_and_the_only_change(target_fields, w):
    target_fields(stage_constant_threads=False)
    off = _source(w)
    assert "TK_BLOCK_THREADS" not in off
    target_fields(stage_constant_threads=True)
    on = _source(w)
    threads = int(re.search(r"static constexpr int kThreads = (\d+);", on).group(1))
    line = f"#define TK_BLOCK_THREADS {threads}\n"
    assert on.count(line) == 1 and on.index(line) < on.index('#include "tk/resident.cuh"')
    assert on.replace(line, "") == off


def test_on_as_measured():
    """perf-log "Steps 113 and 114 measured" (run d5182e5-h100-a): no step slower."""
    from trainkernel import target as T
    assert T.DEFAULT.stage_constant_threads


def test_grid_kernels_are_untouched(target_fields):
    target_fields(stage_constant_threads=False)
    off = _source("tiny", resident="off")
    target_fields(stage_constant_threads=True)
    assert _source("tiny", resident="off") == off


@needs_nvcc
def test_kernels_with_the_define_build(target_fields, tmp_path):
    target_fields(stage_constant_threads=True)
    assert nvcc_errors(_source(ODD), tmp_path, host=False) == ""
