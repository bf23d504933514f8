"""target.gemm_padded_columns: a resident gemm whose N is not a whole number of
16-column pairs (10 classes) reads its last pair whole where B is stored k-major
(unit stride along n) and its home's rows are padded that far (tk::smem_gemm's
NREAD), and stores only the columns before N: ldmatrix and mma instead of the
scalar path (perf-log step 64). The same mma on the same k order: the same bits."""

from __future__ import annotations

import re

import pytest

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import same_bits_off_and_on
from _variants import suite_source as _source

GEMM = re.compile(r"tk::smem_gemm<kThreads, \d, __nv_bfloat16, ([^>]*)>\(([^,]+), ([^,]+), ([^,]+), "
                  r"[^,]+, (\d+), (\d+), [^,]+, (\d+), (\d+),")
ODD_CLASSES = WORKLOADS["classification"].with_sizes(50, (100, 300, 10))


def _gemms(src: str) -> list[tuple[list[str], tuple[str, str, str], tuple[int, int, int, int]]]:
    return [(m.group(1).split(", "), m.group(2, 3, 4), tuple(int(x) for x in m.group(5, 6, 7, 8)))
            for m in GEMM.finditer(src)]


def test_off_until_measured():
    assert T.DEFAULT.gemm_padded_columns is False
    assert all(len(t) <= 4 for t, _, _ in _gemms(_source("classification")))


@pytest.mark.parametrize("name", ["classification", "classification-adamw-ce"])
def test_ten_classes_take_the_mma_path(target_fields, name):
    """The two products with N = 10 and B k-major (pitch 24) read 24 columns and have
    no scalar path; the one with K = 10 keeps it; the others are unchanged."""
    off = _gemms(_source(name))
    target_fields(gemm_padded_columns=True)
    on = _gemms(_source(name))
    assert [e for _, e, _ in on] == [e for _, e, _ in off]
    for (t_off, (m, n, k), (sam, sak, sbk, sbn)), (t_on, _, _) in zip(off, on):
        if n == "10" and sbn == 1:
            assert t_on[2] == "true" and t_on[-1] == str(sbk) and t_off[2] == "false"
        else:
            assert t_on == t_off, (m, n, k)
    assert any(n == "10" and sbn == 1 for _, (_, n, _), (_, _, _, sbn) in off)
    assert any(k == "10" for _, (_, _, k), _ in off)


def test_steps_without_short_columns_are_untouched(target_fields):
    off = _source("online")
    target_fields(gemm_padded_columns=True)
    assert _source("online") == off


def test_odd_rows_keep_their_run_time_test(target_fields):
    """50 rows: not whole units, so FULL stays false; the units that are whole take
    the mma path at run time (NREAD passed all the same)."""
    target_fields(gemm_padded_columns=True)
    tens = [(t, e) for t, e, (_, _, _, sbn) in _gemms(_source(ODD_CLASSES)) if e[1] == "10" and sbn == 1]
    assert tens and all(t[2] == "false" and t[-1] == "24" for t, _ in tens)


@needs_nvcc
@pytest.mark.parametrize("name", ["classification-adamw-ce", "odd"])
def test_compiles_for_sm90(target_fields, tmp_path, name):
    target_fields(gemm_padded_columns=True)
    assert nvcc_errors(_source(ODD_CLASSES if name == "odd" else name), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["classification", "classification-adamw-ce", "odd", "tiny"])
def test_the_bits_do_not_change_on_gpu(target_fields, name):
    same, _ = same_bits_off_and_on(target_fields, "gemm_padded_columns", ODD_CLASSES if name == "odd" else name)
    assert same
