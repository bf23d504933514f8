"""target.resident_pair_stores: a resident gemm's epilogue stores columns j and j + 1
of a fragment at once (tk::store_pair; tests/device/test_resident_gemm.cu checks the
device side: the same bits, every element once). Off by default until the H200
measures it (perf-log, "Calibrating the resident model")."""

from __future__ import annotations

import re

import pytest
import torch

import trainkernel
from trainkernel import target as T
from trainkernel.workloads import TWINS, WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors


def _source(name: str) -> str:
    w = {**WORKLOADS, **TWINS}[name]
    return trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source


@pytest.fixture
def pairs(target_fields):
    target_fields(resident_pair_stores=True)


def test_off_by_default():
    assert T.DEFAULT.resident_pair_stores is False
    assert "store_pair" not in _source("classification")


def test_the_epilogues_store_pairs_of_columns(before_steps_66_68, pairs):
    """classification's dW1 epilogue: the gradient and the updated W1 (row-major, j the
    unit-stride axis) as pairs, beside the element-by-element store for a last odd
    column; the split contraction's exchange epilogue (stores into every rank) keeps
    its element stores."""
    src = _source("classification")
    # Split on tk_more (the SGD update's stores depend on it: perf-log step 109).
    assert re.search(r"tk::split_on\(tk_more, \[&\]\(auto tk_more, int il, int jl, const float\* va, const float\* vb\) "
                     r"\{\n\s+const int i = il \+ 0, "
                     r"j = jl \+ 32 \* rank;\n\s+if \(!tk_more\) tk::store_pair\(&b7_out1\[\(i\)\*512 \+ \(j\)\], "
                     r"tk::from_float<float>\(va\[0\]\), tk::from_float<float>\(vb\[0\]\)\);\n"
                     r"\s+if \(!tk_more\) tk::store_pair\(&b0\[\(i\)\*512 \+ \(j\)\], ", src)
    exchange = src[src.index("tk::exchange<kCluster"):]
    exchange = exchange[: exchange.index("  }\n")]
    assert "store_pair" not in exchange


@needs_nvcc
@pytest.mark.parametrize("name", ["classification", "online-adam"])
def test_kernels_with_pair_stores_compile_for_sm90(pairs, tmp_path, name):
    src = _source(name)
    assert "tk::store_pair(" in src
    assert nvcc_errors(src, tmp_path) == ""
