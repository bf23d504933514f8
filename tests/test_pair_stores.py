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
from _variants import looped, same_bits_off_and_on


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
    assert "tk::store_pair_aligned(" in src
    assert nvcc_errors(src, tmp_path) == ""


def test_home_pairs_are_one_aligned_store(pairs):
    """Pairs into shared-memory homes are stored as one aligned store (the printer
    proves the alignment: perf-log step 110); pairs into global outputs keep the
    run-time test (a user's tensor may start anywhere)."""
    src = _source("classification")
    assert re.search(r"if \(tk_more\) tk::store_pair_aligned\(&s\d+\[\(i\)\*36 \+ \(\(j\) - 32 \* rank\)\], ", src)
    assert "tk::store_pair(&s" not in src
    assert re.search(r"if \(!tk_more\) tk::store_pair\(&b7_out1\[", src)


def test_put_home_proves_alignment_or_keeps_the_test():
    """_put_home: one aligned store only with an even first column, an even row pitch
    and, for a home split along its columns, an even slice width."""
    from types import SimpleNamespace

    from trainkernel.backend.cuda_target import Place, ResidentBodyPrinter

    def put(place, vals=("a", "b"), even=True):
        return ResidentBodyPrinter._put_home(SimpleNamespace(even_columns=even), place, ["i", "j"], list(vals))

    even = Place("s1", (64, 32), -1, 16, 36)
    assert put(even).startswith("tk::store_pair_aligned(&s1[(i)*36 + (j)], a, b)")
    assert put(even, even=False).startswith("tk::store_pair(&s1[")
    assert put(Place("s1", (64, 32), -1, 16, 37)).startswith("tk::store_pair(&s1[")
    assert put(Place("s1", (64, 32), -1, 16)).startswith("tk::store_pair_aligned(")  # dense rows of 32
    assert put(Place("s1", (64, 10), -1, 16)).startswith("tk::store_pair_aligned(")
    assert put(Place("s1", (64, 9), -1, 16)).startswith("tk::store_pair(")  # odd rows
    assert put(Place("s1", (64, 48), 1, 16, 4)).startswith("tk::store_pair(")  # slices of 3 columns
    assert put(Place("s1", (64, 64), 1, 16, 4)).startswith("tk::store_pair_aligned(")
    assert put(even, vals=("a",)) == "s1[(i)*36 + (j)] = a;"


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "classification", "online-adam"])
def test_pairs_give_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch (the middle steps' aligned home pairs, the last step's
    global pairs): pair stores on against off, bit for bit."""
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, "resident_pair_stores", name, 7, 4, run=looped)
    assert "store_pair" not in src_off and "tk::store_pair" in src_on
    assert same
