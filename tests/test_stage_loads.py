"""target.stage_loads_in_flight: a resident step's homes whose rows cp.async cannot
copy (not 16-byte units) go through registers; with a count n > 1 the printer
stages them with tk::stage_rows<n>, whose threads issue n loads (8-byte units where
they align) before storing any, instead of a load-then-store loop that waits one
global round trip per iteration (perf-log step 69). Homes of 16-byte units are
copied by cp.async and never batched."""

from __future__ import annotations

import re

import pytest
import torch

from trainkernel import target as T
from trainkernel.workloads import TWINS, WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, resident_printer, same_bits_off_and_on, stepped
from _variants import suite_source as _source

ODD = {"online-33": WORKLOADS["online"].with_sizes(33, (100, 300, 7)),
       "online-1": WORKLOADS["online"].with_sizes(1, (130, 250, 5)),
       "classification-50": WORKLOADS["classification"].with_sizes(50, (100, 300, 10)),
       "online-adam-33": TWINS["online-adam"].with_sizes(33, (100, 300, 7))}


def _w(name: str):
    return ODD.get(name, name)


def test_off_until_measured():
    assert T.DEFAULT.stage_loads_in_flight == 1
    assert "stage_rows<" not in _source(_w("online-33"))


@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "tiny", "online-33",
                                  "classification-50", "online-1"])
def test_every_register_copy_is_batched_and_nothing_else(target_fields, name):
    """Each staging of a home that is not 16-byte units prints stage_rows<8>, each of
    the others stage_rows; nothing else of the kernel changes."""
    from trainkernel.dialects import tile
    off = _source(_w(name))
    target_fields(stage_loads_in_flight=8)
    on = _source(_w(name))
    pr, kernel = resident_printer(_w(name))
    whole = {pr.names[op.result]: pr._stage_unit(op) == 16 for op in kernel.block.ops
             if isinstance(op, tile.Home) and op.source is not None}
    staged = re.findall(r"tk::stage_rows(<8>)?\((s\d+)", on)
    assert staged
    for batched, home in staged:
        assert bool(batched) == (not whole[home]), home
    assert on.replace("stage_rows<8>(", "stage_rows(") == off
    if name in ODD:
        assert "stage_rows<8>" in on


@needs_nvcc
@pytest.mark.parametrize("name", ["online-33", "classification-50", "online-1", "online-adam-33"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float16])
def test_compiles_for_sm90(target_fields, tmp_path, name, dtype):
    target_fields(stage_loads_in_flight=8)
    src = _source(_w(name), dtype=dtype)
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online-33", "classification-50", "online-1", "online-adam-33"])
def test_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch (the batch staged every step) and 4 launches of one
    step (every home staged): n loads a thread against one, bit for bit."""
    for run, steps, seed in ((looped, 7, 4), (stepped, 4, 2)):
        same, (src1, src8) = same_bits_off_and_on(target_fields, "stage_loads_in_flight", _w(name), steps, seed,
                                                  run=run, values=(1, 8))
        assert "stage_rows<8>" in src8 and "stage_rows<" not in src1
        assert same
