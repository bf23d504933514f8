"""target.prefetch_bulk_rows (perf-log step 113): the next step's batch homes of 16-byte
units (target.prefetch_step_inputs) copied a row a bulk copy by warp 0's lanes
(tk::stage_rows_bulk), their bytes counted on the mbarrier tk_inbar, which every
later step's staging wait (tk::stage_wait_bulk) waits on in the phase of the step
before; homes of smaller units keep tk::stage_input_rows' cp.async. The copies'
bytes, both parities and the fallbacks are checked on the GPU by
tests/device/test_stage_rows.cu."""

from __future__ import annotations

import re

import pytest

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on, stepped
from _variants import suite_source as _source

# An unseen shape whose batch rows are 16-byte units (128- and 16-byte rows), odd widths inside.
ODD = WORKLOADS["online"].with_sizes(24, (64, 200, 8))
# Batch rows of 200 and 20 bytes: prefetched by 8- and 4-byte cp.async, nothing for a bulk copy.
SMALL_UNITS = WORKLOADS["classification"].with_sizes(50, (100, 300, 10))


def _w(name: str):
    return ODD if name == "odd" else name


def test_off_until_measured():
    assert not T.DEFAULT.prefetch_bulk_rows and T.DEFAULT.prefetch_step_inputs


@pytest.fixture
def bulk_on(target_fields):
    target_fields(prefetch_bulk_rows=True)


def _step_body(src: str) -> str:
    return src[src.index("void tk_step("):src.index('extern "C" __global__')]


def test_rows_of_16_byte_units_go_by_bulk_copies_and_the_others_by_cp_async(bulk_on):
    """classification: x's 512-byte rows by bulk copies, the labels' 20-byte rows by
    4-byte cp.async, one arrival after the last copy, inside the next step's block."""
    body = _step_body(_source("classification"))
    block = body[body.index("if (tk_more) {  // the next step's batch"):]
    block = block[:block.index("\n  }\n")]
    copies = re.findall(r"tk::(stage_(?:rows|input_rows)\w*)\((.*)\);", block)
    assert [name for name, _ in copies] == ["stage_rows_bulk", "stage_input_rows"]
    assert copies[0][1].endswith(", &tk_inbar") and "tk_inbar" not in copies[1][1]
    assert block.rstrip().endswith("tk::stage_bulk_arrive(&tk_inbar);")
    assert body.count("tk::stage_bulk_arrive(") == 1


def test_the_barrier_is_initialised_at_the_first_step_before_the_staging_wait(bulk_on):
    body = _step_body(_source("online"))
    assert "__shared__ uint64_t tk_inbar;" in body
    init = body.index("if (tk_first && threadIdx.x == 0) tk::init_stage_barrier(&tk_inbar);")
    wait = body.index("tk::stage_wait_bulk(&tk_inbar, !tk_first, !tk_odd);")
    assert init < wait < body.index("if (tk_more) {  // the next step's batch")
    assert "tk::stage_wait();" not in body


@pytest.mark.parametrize("name", ["online", "classification", "tiny", "online-adam", "odd"])
def test_every_later_step_waits_for_the_phase_the_step_before_completed(bulk_on, name):
    """The printed wait, stepped through a launch of 9 steps: each step but the first
    waits on the parity of the mbarrier's last phase (the step before's copies: one
    arrival a step that has a next), never on a phase still to come."""
    body = _step_body(_source(_w(name)))
    wait, parity = re.search(r"tk::stage_wait_bulk\(&tk_inbar, (.+?), (.+?)\);", body).groups()
    assert wait == "!tk_first"
    phases = 0  # phases the barrier completed: one a step that prefetched
    steps = 9
    for s in range(steps):
        odd = s % 2 == 1
        if s > 0:
            waited = eval(parity.replace("!", "not ").replace("tk_odd", str(odd)))
            assert phases == s and int(waited) == (phases - 1) % 2
        if s + 1 < steps:
            phases += 1


def test_no_barrier_without_rows_of_16_byte_units(bulk_on):
    src = _source(SMALL_UNITS)
    assert "tk::stage_input_rows(" in src and "tk_next" in src
    assert "tk_inbar" not in src and "tk::stage_wait();" in src


def test_off_prints_cp_async(target_fields):
    target_fields(prefetch_bulk_rows=False)
    src = _source("classification")
    assert "tk_inbar" not in src and "stage_rows_bulk" not in src and "tk::stage_wait();" in src


def test_grid_kernels_are_untouched(target_fields):
    off = _source("small")
    target_fields(prefetch_bulk_rows=True)
    assert _source("small") == off


@needs_nvcc
@pytest.mark.parametrize("name", ["classification", "online-adam", "odd"])
def test_compiles_for_sm90(bulk_on, tmp_path, name):
    src = _source(_w(name))
    assert "stage_rows_bulk" in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "classification", "online-adam", "odd"])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch over 3 batches: both parities of the barrier, twice."""
    same, sources = same_bits_off_and_on(target_fields, "prefetch_bulk_rows", _w(name), 7, seed=5, run=looped)
    assert ["tk_inbar" in s for s in sources] == [False, True]
    assert same


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "classification"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    """A launch a step: no later step, no wait on the barrier."""
    assert same_bits_off_and_on(target_fields, "prefetch_bulk_rows", name, 4, seed=3, run=stepped)[0]
