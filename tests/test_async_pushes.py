"""target.exchange_async_pushes: a cluster exchange's pushes are st.async stores that
count their bytes on an mbarrier of the owner (tk::push_async), and the owner waits on
that mbarrier's phase (the step's parity) instead of the exchange's first cluster
barrier, whose release fence ncu found to be half of the exchange's stalls
(tk::exchange_async, perf-log step 67). A block's pushes to itself are plain stores;
the second cluster barrier stays."""

from __future__ import annotations

import re

import pytest
import torch

from trainkernel import target as T
from trainkernel.workloads import TWINS, WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, stepped
from _variants import suite_source as _source

ODD = {"online-33": WORKLOADS["online"].with_sizes(33, (100, 300, 7)),
       "online-1": WORKLOADS["online"].with_sizes(1, (130, 250, 5)),
       "adamw-9": TWINS["mlp4-adamw-ce"].with_sizes(9, (20, 36, 36, 36, 256))}


def _w(name: str):
    return ODD.get(name, name)


@pytest.fixture
def async_on(target_fields):
    target_fields(exchange_async_pushes=True)


def test_off_until_measured():
    assert T.DEFAULT.exchange_async_pushes is False
    assert "push_async" not in _source("online")


def test_online_pushes_asynchronously_and_waits_on_its_mbarrier(async_on, target_fields):
    """One exchange: one mbarrier, initialised by the first step before the block's
    first cluster arrive; the pushes and the exchange name it and the step's parity;
    everything else as without."""
    src = _source("online")
    assert "  __shared__ uint64_t tk_xbar[1];" in src
    init = src.index("  if (tk_first && threadIdx.x == 0) tk::init_exchange_barriers(tk_xbar, 1);")
    assert init < src.index("tk::cluster_arrive();") < src.index("  // ---- phase 0")
    assert "tk::push_async<kCluster>(part, 1024, i * 16 + j, vals[0], rank, tk_xbar + 0); });" in src
    assert "tk::exchange_async<kCluster, tk::SumOp>(part, 1024, rank, tk_xbar + 0, tk_odd, [&](int e, float acc) {" \
        in src
    assert "push_partial" not in src and "tk::exchange<" not in src
    target_fields(exchange_async_pushes=False)
    off = _source("online")
    strip = lambda s: re.sub(r"  (__shared__ uint64_t tk_xbar|if \(tk_first && threadIdx.x == 0\) tk::init_).*\n",  # noqa: E731
                             "", s)
    assert strip(src).replace("push_async", "push_partial").replace("exchange_async", "exchange") \
        .replace(", rank, tk_xbar + 0)", ", rank)").replace(", rank, tk_xbar + 0, tk_odd,", ", rank,") == strip(off)


def test_each_exchange_has_its_own_mbarrier(async_on):
    src = _source(_w("adamw-9"))
    n = src.count("tk::exchange_async<")
    assert n == 3 and f"  __shared__ uint64_t tk_xbar[{n}];" in src
    for i in range(n):
        assert f"tk_xbar + {i}, tk_odd" in src


def test_parity_without_receive_copies(target_fields):
    """tk_odd is passed for the mbarriers' phases even where no receive copy needs it."""
    target_fields(exchange_async_pushes=True, double_receive=False)
    src = _source("online")
    assert "bool tk_more, bool tk_odd) {" in src and "tk_s == 0, tk_more, (tk_s & 1) != 0);" in src


def test_one_block_has_no_exchange(async_on, target_fields):
    on = _source("tiny")
    target_fields(exchange_async_pushes=False)
    assert _source("tiny") == on


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "classification-adamw-ce",
                                  "online-33", "online-1", "adamw-9"])
def test_compiles_for_sm90(async_on, tmp_path, name):
    src = _source(_w(name))
    assert "tk::exchange_async<" in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "classification-adamw-ce",
                                  "online-33", "adamw-9"])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch (the mbarriers' phases alternate step by step): the same
    state and last outputs as with the cluster barrier, bit for bit."""
    runs = []
    for on in (False, True):
        target_fields(exchange_async_pushes=on)
        src, outputs = looped(_w(name), 7, seed=4)
        assert ("push_async" in src) == on
        runs.append(outputs)
    assert all(torch.equal(a, b) for a, b in zip(*runs))


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "online-adam", "online-1"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    runs = []
    for on in (False, True):
        target_fields(exchange_async_pushes=on)
        runs.append(stepped(_w(name), 4, seed=2)[1])
    assert all(torch.equal(a, b) for a, b in zip(*runs))


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "classification"])
def test_with_the_prefetched_batch_on_gpu(target_fields, name):
    """Both prepared switches together (steps 66 and 67): the same bits."""
    runs = []
    for on in (False, True):
        target_fields(exchange_async_pushes=on, prefetch_step_inputs=on)
        runs.append(looped(name, 7, seed=4)[1])
    assert all(torch.equal(a, b) for a, b in zip(*runs))
