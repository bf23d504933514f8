"""target.prefetch_small_units (perf-log step 92): the next step's batch is prefetched
during the step (target.prefetch_step_inputs) also where a batch home's rows are 4- or
8-byte units (classification's 20-byte label rows, 200-byte rows of odd widths): those
homes are copied by tk::stage_input_rows, cp.async of 8 or 4 bytes (.ca), the others
by tk::stage_rows as before. Rows of 2-byte units (14-byte label rows) still keep the
whole batch unprefetched (all or none), and so does the switch off."""

from __future__ import annotations

import pytest
import torch

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on
from _variants import suite_source as _source

PREFETCH = "  if (tk_more) {  // the next step's batch, in flight through this step (plan_prefetched_inputs)"

# Steps whose batch rows are 4- or 8-byte units somewhere (x of 200 bytes, labels of 20).
SMALL_UNITS = {
    "classification": WORKLOADS["classification"],
    "50x100-300-10": WORKLOADS["classification"].with_sizes(50, (100, 300, 10)),
    "16x40-32-10": WORKLOADS["online"].with_sizes(16, (40, 32, 10)),
}
# Steps with a 2-byte-unit batch row (labels of 14 and 10 bytes): never prefetched.
TWO_BYTE_UNITS = {
    "33x100-300-7": WORKLOADS["online"].with_sizes(33, (100, 300, 7)),
    "1x130-250-5": WORKLOADS["online"].with_sizes(1, (130, 250, 5)),
}


def _prefetched(src: str) -> str:
    """The step's copies of the next batch (empty where nothing is prefetched)."""
    if PREFETCH not in src:
        return ""
    return src[src.index(PREFETCH):].split("\n  }\n", 1)[0]


def test_on_by_default():
    assert T.DEFAULT.prefetch_small_units is True
    assert "tk::stage_input_rows(" in _prefetched(_source("classification"))


@pytest.mark.parametrize("name", sorted(SMALL_UNITS))
def test_small_unit_rows_are_prefetched_by_stage_input_rows(target_fields, name):
    """On: every batch home is prefetched, those under 16-byte units by
    tk::stage_input_rows; off: nothing (the 16-byte rule), the kernel of a target
    without prefetch."""
    w = SMALL_UNITS[name]
    target_fields(prefetch_step_inputs=False)
    without = _source(w)
    target_fields(prefetch_small_units=False)
    assert _source(w) == without
    target_fields(prefetch_small_units=True)
    copies = _prefetched(_source(w))
    assert "tk::stage_input_rows(" in copies
    assert "tk_next" not in without


@pytest.mark.parametrize("name", sorted(TWO_BYTE_UNITS))
def test_two_byte_unit_rows_keep_the_batch_unprefetched(target_fields, name):
    w = TWO_BYTE_UNITS[name]
    target_fields(prefetch_step_inputs=False)
    without = _source(w)
    target_fields(prefetch_step_inputs=True, prefetch_small_units=True)
    assert _source(w) == without


@pytest.mark.parametrize("name", ["online", "tiny", "online-adam"])
def test_sixteen_byte_rows_print_as_before(target_fields, name):
    """Where every batch row is a 16-byte unit the switch changes nothing: the same
    stage_rows copies are printed."""
    target_fields(prefetch_small_units=False)
    before = _source(name)
    target_fields(prefetch_small_units=True)
    assert _source(name) == before


def test_grid_kernels_are_untouched(target_fields):
    target_fields(prefetch_small_units=False)
    off = _source("mlp4")
    target_fields(prefetch_small_units=True)
    assert _source("mlp4") == off


@needs_nvcc
@pytest.mark.parametrize("name", sorted(SMALL_UNITS))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_compiles_for_sm90(tmp_path, name, dtype):
    src = _source(SMALL_UNITS[name], dtype=dtype)
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(SMALL_UNITS))
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch over 3 batches, the batch prefetched by 4- and 8-byte
    copies or staged at each step's start: the same state and last outputs."""
    same, sources = same_bits_off_and_on(target_fields, "prefetch_small_units", SMALL_UNITS[name], 7, seed=4,
                                         run=looped)
    assert ["tk::stage_input_rows(" in _prefetched(s) for s in sources] == [False, True]
    assert same


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["classification", "50x100-300-10"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    assert same_bits_off_and_on(target_fields, "prefetch_small_units", SMALL_UNITS[name], 4, seed=2)[0]
