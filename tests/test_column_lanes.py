"""target.resident_column_lanes: a resident column reduction (leading axes summed)
with fewer outputs than threads puts each output on a group of lanes that walk its
rows in turn, then a shuffle tree over the group (tk::group_reduce_sum), instead of
a thread an output walking every row (perf-log step 111: classification's bias
gradients, 64 dependent adds on one warp). Another summation order, the same on
every run. Off until measured."""

from __future__ import annotations

import pytest
import torch

from trainkernel import target as T

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, reduce_modes
from _variants import suite_source as _source


def _modes(src: str) -> list[tuple[str, int, int]]:
    """(mode, elements an output, outputs) of every resident tk.sum reduction."""
    return [(m, e, o) for r, m, e, o in reduce_modes(src) if r == "tk.sum"]


@pytest.fixture
def lanes(target_fields):
    target_fields(resident_column_lanes=True)


def test_off_by_default():
    assert T.DEFAULT.resident_column_lanes is False
    assert "(lanes)" not in _source("classification")


def test_the_bias_gradients_go_on_groups_of_lanes(lanes):
    """classification (a cluster of 16, 256 threads): db2 (10 outputs of 64 rows)
    on groups of 16 lanes, db1 (32 outputs a block) on groups of 8; the loss's
    full sum is no column reduction and stays a block's."""
    src = _source("classification")
    modes = _modes(src)
    assert ("lanes", 64, 10) in modes and ("lanes", 64, 32) in modes, modes
    assert "(column)" not in src
    assert "tk::group_reduce_sum<16>(accum)" in src and "tk::group_reduce_sum<8>(accum)" in src
    # The warp's loop: every lane shuffles; only a group's first lane stores.
    assert "if (o < 32 && tk_sub == 0) {" in src


@pytest.mark.parametrize("outputs, rows, expected", [(10, 64, 16), (32, 64, 8), (16, 64, 16), (64, 64, 4),
                                                     (100, 64, 0), (10, 8, 0), (2, 64, 32)])
def test_lanes_an_output(lanes, monkeypatch, outputs, rows, expected):
    """The largest power of two up to 32 with every output on its own group at once
    (256 threads), at least 4, each lane folding at least two elements; else 0, a
    thread an output."""
    from types import SimpleNamespace

    from trainkernel.backend import cuda_target as C
    from trainkernel.dialects import tk

    red = tk.SumOp.__new__(tk.SumOp)
    monkeypatch.setattr(C, "_reduce_axes", lambda op: (red, (rows, outputs), -1, [1], [0]))
    printer = SimpleNamespace(cluster=1, kernel=SimpleNamespace(threads=256), _whole_slices=lambda size: True)
    assert C.ResidentPrinter._column_lanes(printer, None, outputs, rows) == expected


@needs_nvcc
@pytest.mark.parametrize("name", ["tiny", "online", "classification"])
def test_kernels_with_lanes_compile_for_sm90(lanes, tmp_path, name):
    src = _source(name)
    assert "(lanes)" in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "classification", "online-adam"])
def test_lanes_match_the_thread_walk_on_gpu(target_fields, name):
    """7 steps in one launch, lanes off against on: another summation order of the
    bias gradients (fp32 sums of 64 bf16 values, rounded to bf16), so every leaf
    agrees to bf16 rounding, and two runs with lanes on give the same bits."""
    target_fields(resident_column_lanes=False)
    src_off, off = looped(name, 7, 4)
    target_fields(resident_column_lanes=True)
    src_on, on = looped(name, 7, 4)
    _, again = looped(name, 7, 4)
    assert "(lanes)" in src_on and "(lanes)" not in src_off
    assert len(off) == len(on) == len(again)
    for a, b, c in zip(off, on, again):
        assert torch.equal(b, c)
        torch.testing.assert_close(b.float(), a.float(), rtol=2e-2, atol=1e-4)
