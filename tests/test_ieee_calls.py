"""target.ieee_calls: tk.div and tk.sqrt print as calls of out-of-line IEEE functions
(tk::div_rn, tk::sqrt_rn in tk/types.cuh) instead of inline at every element, to cut
ptxas time (perf-log step 53). The same div.rn / sqrt.rn: the same bits. Off by default
until the H200 measures what the calls cost at run time."""

from __future__ import annotations

import re

import pytest
import torch

from trainkernel import target as T

from _nvcc import needs_nvcc, nvcc_errors
from _variants import stepped
from _variants import suite_source as _source


def _inline_ieee(src: str) -> int:
    """Element divisions and square roots printed inline (`const float vN = a / b;`, sqrtf)."""
    return len(re.findall(r"const float v\d+ = [\w\[\]().]+ / [\w\[\]().]+;", src)) + src.count("sqrtf(")


@pytest.fixture
def calls_on(target_fields):
    target_fields(ieee_calls=True)


def test_off_by_default():
    assert T.DEFAULT.ieee_calls is False
    src = _source("mlp4-adamw-ce")
    assert "tk::div_rn(" not in src and _inline_ieee(src) > 0


def test_the_adamw_maps_call_the_ieee_functions(calls_on):
    """mlp4-adamw-ce (a grid kernel): every element division and square root of its
    AdamW maps and cross-entropy is a call; nothing is left inline."""
    src = _source("mlp4-adamw-ce")
    assert src.count("tk::div_rn(") >= 8 and src.count("tk::sqrt_rn(") >= 4
    assert _inline_ieee(src) == 0


@needs_nvcc
@pytest.mark.parametrize("name", ["online-adam", "mlp4-adamw-ce"])
def test_compiles_for_sm90(calls_on, tmp_path, name):
    src = _source(name)
    assert "tk::div_rn(" in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online-adam", "mlp4-adamw-ce"])
def test_the_bits_do_not_change_on_gpu(target_fields, name):
    """Five steps from the same state on the same batches, with the calls and inline:
    the same bits (state and outputs)."""
    runs = []
    for on in (False, True):
        target_fields(ieee_calls=on)
        src, outputs = stepped(name, 5, seed=6)
        assert ("tk::div_rn(" in src) == on
        runs.append(outputs)
    assert all(torch.equal(a, b) for a, b in zip(*runs))
