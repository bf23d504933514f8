"""target.prefetch_copies_after_work (perf-log step 120): the next step's batch copies
(plan_prefetched_inputs) issued after the barrier that closes the step's first phase
with a product, their pointers loaded at the step's start as before, so that the
pointers' global round trip overlaps that phase instead of every thread waiting for it
before the step's work (ncu of classification, run f6e2188-a: 4.8% of the step's warp
samples on the copies' address arithmetic, long scoreboard). Off by default until
measured."""

from __future__ import annotations

import re

import pytest
import torch

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on, stepped
from _variants import suite_source as _source

ODD = {"classification-50": WORKLOADS["classification"].with_sizes(50, (100, 300, 10)),
       "online-33": WORKLOADS["online"].with_sizes(33, (100, 300, 7))}
COPY = re.compile(r"^    tk::(stage_rows|stage_input_rows)\(\(\w+\*\)\(smem \+ \(tk_odd \? \d+ : \d+\)\), .*$", re.M)


def _w(name: str):
    return ODD.get(name, name)


@pytest.fixture
def late(target_fields):
    target_fields(prefetch_copies_after_work=True)


def _phases(src: str) -> list[str]:
    """The step's text from its staging wait on, cut at each phase's marker."""
    body = src[src.index("  tk::stage_wait();\n"):]
    return re.split(r"\n  // ---- phase \d+\n", body)


def test_off_until_measured(target_fields):
    assert T.DEFAULT.prefetch_copies_after_work is False
    src = _source("classification")
    target_fields(prefetch_copies_after_work=False)
    assert _source("classification") == src and "copied from after a phase's work" not in src


@pytest.mark.parametrize("name", ["classification", "online", "tiny", "online-adam", "classification-50"])
def test_the_copies_follow_the_first_product_phase(late, target_fields, name):
    """The pointers are loaded right after the staging wait, the copies (the same
    statements as without) after the barrier that closes the first phase holding a
    product, and nowhere before it."""
    on = _source(_w(name))
    target_fields(prefetch_copies_after_work=False)
    off = _source(_w(name))
    copies = [m.group(0) for m in COPY.finditer(off)]
    assert copies and [m.group(0) for m in COPY.finditer(on)] == copies
    phases = _phases(on)
    assert re.fullmatch(r"  tk::stage_wait\(\);\n(  if \(tk_first && !tk_more\) tk::cluster_wait\(\);.*\n)?"
                        r"  void\* tk_from\[\d\];  // the next step's pointers.*\n  if \(tk_more\) \{\n"
                        r"(    tk_from\[\d\] = tk_next\[\d\];\n)+  \}", phases[0])
    first = next(k for k, text in enumerate(phases) if "tk::smem_gemm<" in text)
    assert all(COPY.search(text) is None for text in phases[:first])
    tail = phases[first].rsplit("__syncthreads();\n", 1)[1].splitlines()
    assert tail == ["  if (tk_more) {  // the next step's batch, in flight through the rest of this step "
                    "(plan_prefetched_inputs)", *copies, "  }"]


@pytest.mark.parametrize("fields", [dict(prefetch_step_pointers=True), dict(prefetch_bulk_rows=True),
                                    dict(prefetch_step_inputs=False)], ids=str)
def test_nothing_moves_with_pointers_a_step_ahead_bulk_rows_or_no_prefetch(target_fields, fields):
    """Those forms keep their copies where they were: the switch changes nothing."""
    target_fields(**fields)
    off = _source("classification")
    target_fields(prefetch_copies_after_work=True, **fields)
    assert _source("classification") == off


@needs_nvcc
@pytest.mark.parametrize("name", ["classification", "online", "tiny", "online-adam", "classification-50",
                                  "online-33"])
def test_compiles_for_sm90(late, tmp_path, name):
    assert nvcc_errors(_source(_w(name)), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["classification", "online", "tiny", "online-adam", "classification-50"])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch (each step copies the next one's batch): the same state
    and last outputs as with the copies at the step's start, bit for bit."""
    same, sources = same_bits_off_and_on(target_fields, "prefetch_copies_after_work", _w(name), 7, seed=4,
                                         run=looped)
    assert ["copied from after a phase's work" in s for s in sources] == [False, True]
    assert same


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["classification", "tiny"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    assert same_bits_off_and_on(target_fields, "prefetch_copies_after_work", name, 4, seed=2, run=stepped)[0]


@pytest.mark.cuda
def test_f16_gives_the_same_bits_on_gpu(target_fields):
    assert same_bits_off_and_on(target_fields, "prefetch_copies_after_work", "online", 7, seed=4, run=looped,
                                dtype=torch.float16)[0]
