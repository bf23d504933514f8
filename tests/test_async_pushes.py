"""target.exchange_async_pushes: a cluster exchange's pushes are st.async stores that
count their bytes on an mbarrier of the owner (tk::push_async), and the owner waits on
that mbarrier's phase (the step's parity) instead of the exchange's first cluster
barrier, whose release fence ncu found to be half of the exchange's stalls
(tk::exchange_async, perf-log step 67). A block's pushes to itself are plain stores;
the second cluster barrier stays, unless target.exchange_async_publish makes the
publish asynchronous too (step 68, at the end of this file)."""

from __future__ import annotations

import re

import pytest
import torch

from trainkernel import target as T
from trainkernel.workloads import TWINS, WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on
from _variants import suite_source as _source

ODD = {"online-33": WORKLOADS["online"].with_sizes(33, (100, 300, 7)),
       "online-1": WORKLOADS["online"].with_sizes(1, (130, 250, 5)),
       "adamw-9": TWINS["mlp4-adamw-ce"].with_sizes(9, (20, 36, 36, 36, 256))}


def _w(name: str):
    return ODD.get(name, name)


# Step 67's form on its own: the publish, the prefetched batch and the wide stores
# (steps 68, 66 and 118) off.
STEP_67 = dict(exchange_async_publish=False, prefetch_step_inputs=False, exchange_wide_stores=False)


@pytest.fixture
def async_on(target_fields):
    target_fields(exchange_async_pushes=True, **STEP_67)


def test_on_by_default():
    assert T.DEFAULT.exchange_async_pushes is True
    assert "tk::push_async<kCluster>" in _source("online")


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
    target_fields(exchange_async_pushes=False, **STEP_67)
    off = _source("online")
    strip = lambda s: re.sub(r"  (__shared__ uint64_t tk_xbar|if \(tk_first && threadIdx.x == 0\) tk::init_).*\n",  # noqa: E731
                             "", s)
    assert strip(src).replace("push_async", "push_partial").replace("exchange_async", "exchange") \
        .replace(", rank, tk_xbar + 0)", ", rank)").replace(", rank, tk_xbar + 0, tk_odd,", ", rank,") == strip(off)


def test_each_exchange_has_its_own_mbarrier(async_on):
    """(How many exchanges the step has is the cost model's choice: 3 on 4 blocks
    before perf-log step 119, 6 on 8 since.)"""
    src = _source(_w("adamw-9"))
    n = src.count("tk::exchange_async<")
    assert n >= 2 and f"  __shared__ uint64_t tk_xbar[{n}];" in src
    for i in range(n):
        assert f"tk_xbar + {i}, tk_odd" in src


def test_parity_without_receive_copies(target_fields):
    """tk_odd is passed for the mbarriers' phases even where no receive copy needs it."""
    target_fields(exchange_async_pushes=True, double_receive=False, **STEP_67)
    src = _source("online")
    assert "bool tk_more, bool tk_odd) {" in src and "tk_s == 0, tk_more, (tk_s & 1) != 0);" in src


def test_one_block_has_no_exchange(async_on, target_fields):
    on = _source("tiny")
    target_fields(exchange_async_pushes=False, **STEP_67)
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
    same, sources = same_bits_off_and_on(target_fields, "exchange_async_pushes", _w(name), 7, seed=4, run=looped)
    assert ["push_async" in s for s in sources] == [False, True]
    assert same


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "online-adam", "online-1"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    assert same_bits_off_and_on(target_fields, "exchange_async_pushes", _w(name), 4, seed=2)[0]


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "classification"])
def test_with_the_prefetched_batch_on_gpu(target_fields, name):
    """Both prepared switches together (steps 66 and 67): the same bits."""
    fields = ("exchange_async_pushes", "prefetch_step_inputs")
    assert same_bits_off_and_on(target_fields, fields, name, 7, seed=4, run=looped)[0]


# target.exchange_async_publish (perf-log step 68): with the pushes asynchronous, the
# publish too: st.async stores of 32-bit words (an fp32 element, a bf16 pair) into the
# other ranks' copies, counted on each receiver's publish mbarrier; no cluster barrier
# left in the exchange; the kernel ends with one.

@pytest.fixture
def publish_on(target_fields):
    """Step 68's form: the wide stores (step 118, tests/test_exchange_wide_stores.py) off."""
    target_fields(exchange_async_pushes=True, exchange_async_publish=True, exchange_wide_stores=False)


def test_publish_on_by_default_and_nothing_without_async_pushes(target_fields):
    assert T.DEFAULT.exchange_async_publish is True
    assert "tk::exchange_async_published<" in _source("online")
    target_fields(exchange_async_pushes=False, exchange_async_publish=False)
    off = _source("online")
    target_fields(exchange_async_pushes=False, exchange_async_publish=True)
    assert _source("online") == off


def test_online_publishes_pairs_asynchronously(publish_on):
    """online: dy (bf16) in pairs, the squared errors (fp32, the last step's alone)
    an element a store; 6 bytes an element (2 before the last step); two mbarriers."""
    src = _source("online")
    assert "  __shared__ uint64_t tk_xbar[2];" in src and "tk::init_exchange_barriers(tk_xbar, 2);" in src
    assert ("tk::exchange_async_published<kCluster, 2, tk::SumOp>(part, 1024, rank, tk_xbar + 0, tk_xbar + 1, "
            "tk_odd, (!tk_more ? 4u : 0u) + 2u, [&](int e, float acc) {") in src
    copy = src[src.index("// tk::store_async_b32: into the other ranks' copies"):].split("    });\n", 1)[0]
    assert copy.count("if (!tk_more) tk::store_async_b32(&s") == 2 and copy.count("tk::store_async_b32(") == 3
    assert "((j) + 1)]" in copy
    assert "tk::publish" not in src and "tk::at_rank(" not in src
    assert src.count("tk::cluster_sync();") == 1 and src.index("tk::cluster_sync();") > src.index("for (int tk_s")


@pytest.mark.parametrize("name", ["online-33", "online-1"])
def test_no_pairs_no_async_publish(publish_on, name):
    """An odd number of elements (231, 5): a bf16 pair could straddle two owners'
    chunks or rows; the publish keeps tk::publish and the cluster barrier."""
    src = _source(_w(name))
    assert "exchange_async_published" not in src and "tk::exchange_async<kCluster" in src
    assert "publish may still be in flight" not in src


def test_fp32_homes_publish_an_element_a_store(publish_on):
    src = _source("online", dtype=torch.float32)
    assert "tk::exchange_async_published<kCluster, 1, " in src


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "classification-adamw-ce",
                                  "online-33", "adamw-9"])
def test_publish_compiles_for_sm90(publish_on, tmp_path, name):
    assert nvcc_errors(_source(_w(name)), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "classification-adamw-ce", "adamw-9"])
def test_publish_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch, and 4 launches of one step: both switches on against
    both off, bit for bit."""
    fields = ("exchange_async_pushes", "exchange_async_publish")
    assert same_bits_off_and_on(target_fields, fields, _w(name), 7, seed=4, run=looped)[0]
    assert same_bits_off_and_on(target_fields, fields, _w(name), 4, seed=2)[0]
