"""target.prefetch_step_pointers: the pointers the next step's batch is prefetched from
(target.prefetch_step_inputs), read one step ahead (ResidentPrinter.plan_prefetched_inputs,
perf-log step 107). Step s loads its thread's pointer of step s + 2's row (tk_after) as it
starts and leaves it in tk_rows[s % 2] after its last phase; step s + 1's prefetch reads its
row from there (a launch's first step from tk_next, in global memory). Without it every
thread waited for a global round trip per pointer before its copies.

target.prefetch_pointer_copies (perf-log step 125): the same rows a step ahead, copied by
an 8-byte cp.async a pointer into tk_rows beside the next step's batch copies (the next
staging wait covers them) instead of a load held in a register through the step."""

from __future__ import annotations

import re

import pytest

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on, stepped
from _variants import suite_source as _source

# An unseen shape whose batch rows are 16-byte units, odd widths inside.
ODD = WORKLOADS["online"].with_sizes(24, (64, 200, 8))


def _w(name: str):
    return ODD if name == "odd" else name


def test_off_as_measured():
    """perf-log step 107 (run aefe117-h100-b): tiny +0.22, classification +0.24 µs a step."""
    assert not T.DEFAULT.prefetch_step_pointers and T.DEFAULT.prefetch_step_inputs


MODES = {"loads": dict(prefetch_step_pointers=True), "copies": dict(prefetch_pointer_copies=True)}


@pytest.fixture(params=list(MODES))
def pointers_on(request, target_fields):
    """The printed form under test: the pointer rows on, loaded or copied."""
    target_fields(**MODES[request.param])
    return request.param


def _slot_plan(src: str) -> tuple[str, str, str]:
    """The slot expressions the step reads step s + 1's row from and writes step s + 2's to,
    and the row the loop passes as tk_after."""
    read = re.search(r"void\* const\* tk_row = tk_first \? tk_next : tk_rows\[(tk_odd \? \d : \d)\];", src)
    write = re.search(r"if \(tk_after && threadIdx\.x < \d+\) (?:tk_rows\[(tk_odd \? \d : \d)\]\[threadIdx\.x\] = "
                      r"tk_after_ptr;|tk::cp_async_ca<8>\(&tk_rows\[(tk_odd \? \d : \d)\]\[threadIdx\.x\], "
                      r"&tk_after\[threadIdx\.x\]\);)", src)
    after = re.search(r", (tk_s \+ 2 < p\.steps \? p\.step_inputs \+ \(size_t\)\(tk_s \+ 2\) \* \d+ : nullptr)\);", src)
    assert read and write and after, "the pointer rows' read, write and loop argument"
    return read.group(1), write.group(1) or write.group(2), after.group(1)


def _slot(expr: str, odd: bool) -> int:
    """`tk_odd ? a : b` at a step of parity `odd`."""
    a, b = (int(v) for v in re.fullmatch(r"tk_odd \? (\d) : (\d)", expr).groups())
    return a if odd else b


@pytest.mark.parametrize("name", ["online", "classification", "tiny", "online-adam", "odd"])
def test_every_step_after_the_first_reads_the_row_of_the_step_after_it(pointers_on, name):
    """The printed slots, stepped through a launch of 9 steps: the row each step's
    prefetch reads is the next step's, written by the step before it (a barrier ends
    every step), and a step never writes the slot it reads."""
    src = _source(_w(name))
    read, write, _ = _slot_plan(src)
    slots: dict[int, int] = {}  # slot -> the step whose row it holds
    steps = 9
    for s in range(steps):
        odd = s % 2 == 1
        if s + 1 < steps and s > 0:  # tk_more and not tk_first: the row comes from tk_rows
            assert slots.get(_slot(read, odd)) == s + 1
        if s + 2 < steps:  # tk_after is step s + 2's row
            assert _slot(write, odd) != _slot(read, odd)
            slots[_slot(write, odd)] = s + 2


def test_the_loads_come_before_the_prologue_and_the_store_after_the_last_phase(target_fields):
    target_fields(**MODES["loads"])
    src = _source("classification")
    body = src[src.index("void tk_step("):src.index("extern \"C\" __global__")]
    load = body.index("void* const tk_after_ptr = tk_after && threadIdx.x < 2 ? tk_after[threadIdx.x] : nullptr;")
    assert load < body.index("tk::stage_wait();")
    last_phase = body.rindex("// ---- phase")
    store = body.index("tk_rows[tk_odd ? 1 : 0][threadIdx.x] = tk_after_ptr;")
    assert store > last_phase and "// ---- phase" not in body[store:]
    assert "__shared__ void* tk_rows[2][2];" in body


def test_the_copies_go_with_the_next_batch_and_hold_no_register(target_fields):
    """prefetch_pointer_copies: step s + 2's row copied after the next batch's copies,
    inside the staging of the next step (after this step's wait); nothing loaded into
    a register, nothing stored at the step's end."""
    target_fields(**MODES["copies"])
    src = _source("classification")
    body = src[src.index("void tk_step("):src.index("extern \"C\" __global__")]
    copy = body.index("if (tk_after && threadIdx.x < 2) tk::cp_async_ca<8>(&tk_rows[tk_odd ? 1 : 0][threadIdx.x], "
                      "&tk_after[threadIdx.x]);")
    assert body.index("tk::stage_wait();") < body.index("tk::stage_input_rows(") < copy < body.index("// ---- phase 0")
    assert "tk_after_ptr" not in body


def test_off_reads_tk_next(target_fields):
    target_fields(prefetch_step_pointers=False)
    src = _source("online")
    assert "tk_rows" not in src and "tk_after" not in src
    assert "tk_from[0] = tk_next[0];" in src and "((__nv_bfloat16*)tk_from[0])" in src  # prefetch_pointers_first


@pytest.mark.parametrize("mode", list(MODES))
def test_none_without_prefetched_inputs(target_fields, mode):
    target_fields(prefetch_step_inputs=False, **MODES[mode])
    src = _source("online")
    assert "tk_rows" not in src and "tk_after" not in src and "tk_next" not in src


def test_grid_kernels_are_untouched(pointers_on):
    assert "tk_rows" not in _source("small")


@needs_nvcc
@pytest.mark.parametrize("name", ["classification", "online-adam", "tiny"])
def test_compiles_for_sm90(pointers_on, tmp_path, name):
    src = _source(name)
    assert "tk_rows" in src
    assert nvcc_errors(src, tmp_path) == ""


FIELDS = {"loads": "prefetch_step_pointers", "copies": "prefetch_pointer_copies"}


@pytest.mark.cuda
@pytest.mark.parametrize("mode", list(FIELDS))
@pytest.mark.parametrize("name", ["tiny", "online", "classification", "online-adam", "odd"])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name, mode):
    """7 steps in one launch over 3 batches (each step's next batch differs from its
    own): the pointers read a step ahead or in the prologue, the same bits."""
    same, sources = same_bits_off_and_on(target_fields, FIELDS[mode], _w(name), 7, seed=4, run=looped)
    assert ["tk_rows" in s for s in sources] == [False, True]
    assert same


@pytest.mark.cuda
@pytest.mark.parametrize("mode", list(FIELDS))
@pytest.mark.parametrize("name", ["online", "classification"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name, mode):
    assert same_bits_off_and_on(target_fields, FIELDS[mode], name, 4, seed=2, run=stepped)[0]
