"""The step loop's cluster barriers (perf-log step 63).

target.keep_state_homes: tile-resident keeps every state home to the kernel's end,
so that the loop keeps the state on chip instead of staging it again (Adam's powers
of the betas, which a first-phase map reads and updates, had their bytes reused).

target.step_block_barrier: a step of a cluster's loop ends with a block barrier
instead of a cluster barrier where no step but the last stores what a later step
stages; each step's first DSMEM push already waits for every block to have started
that step (the split arrive, released, and its wait). Where rank 0 stores a state
scalar that the others stage (kept: first step, stored: last step), only a launch
of one step waits for the cluster right after staging."""

from __future__ import annotations

import pytest
import torch

from trainkernel import target as T

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, stepped
from _variants import suite_source as _source

SGD = ["online", "classification", "tiny"]
TWINS = ["online-adam", "classification-adamw-ce"]
END_BLOCK = "    if (tk_more) __syncthreads();\n  }"
END_CLUSTER = "    if (tk_more) tk::cluster_sync();\n  }"


def test_off_until_measured():
    assert T.DEFAULT.keep_state_homes is False and T.DEFAULT.step_block_barrier is False
    assert END_CLUSTER in _source("online")


@pytest.mark.parametrize("name", SGD)
def test_keeping_state_homes_changes_no_sgd_step(target_fields, name):
    """Their state homes (weights, biases) already live to the end: the same kernel."""
    off = _source(name)
    target_fields(keep_state_homes=True)
    assert _source(name) == off


@pytest.mark.parametrize("name", TWINS)
def test_the_twins_keep_their_powers_of_the_betas(target_fields, name):
    """Staged again every step without keep_state; kept (staged by the first step,
    written through, stored to global memory by the last step alone) with it."""
    def restaged(src: str) -> int:
        again = src[src.index("  if (!tk_first) {"):src.index("  } else {")]
        return again.count("tk::stage_rows(")
    off = _source(name)
    target_fields(keep_state_homes=True)
    on = _source(name)
    assert restaged(on) == restaged(off) - 2
    assert on.count("if (rank == 0 && !tk_more) b") >= off.count("if (rank == 0 && !tk_more) b") + 2


@pytest.mark.parametrize("name", ["online", "classification"])
def test_sgd_steps_end_with_a_block_barrier(target_fields, name):
    target_fields(step_block_barrier=True)
    src = _source(name)
    assert END_BLOCK in src and END_CLUSTER not in src
    assert src.count("tk::cluster_arrive_release();") == 1 and "tk::cluster_arrive();" not in src


def test_one_block_needs_neither(target_fields):
    off = _source("tiny")
    target_fields(step_block_barrier=True, keep_state_homes=True)
    assert _source("tiny") == off


@pytest.mark.parametrize("name", TWINS)
def test_restaged_state_keeps_the_cluster_barriers(target_fields, name):
    """Without keep_state the twins stage their betas' powers again each step, which
    rank 0 stores each step: the prologue's cluster barrier and the loop's stay."""
    off = _source(name)
    target_fields(step_block_barrier=True)
    assert _source(name) == off


@pytest.mark.parametrize("name", TWINS)
def test_kept_state_needs_the_cluster_only_in_a_launch_of_one_step(target_fields, name):
    """Both on: one wait for each arrive on every path: after staging in a launch of
    one step, before the first push in the others."""
    target_fields(step_block_barrier=True, keep_state_homes=True)
    src = _source(name)
    assert END_BLOCK in src
    prologue = src[src.index("tk::cluster_arrive_release();"):]
    assert prologue.startswith("tk::cluster_arrive_release();\n  tk::stage_wait();\n"
                               "  if (tk_first && !tk_more) tk::cluster_wait();")
    assert src.count("tk::cluster_wait();") == 2
    assert "    if (!(tk_first && !tk_more)) tk::cluster_wait();  // every block started" in src
    assert "tk::cluster_sync();\n  // ---- phase 0" not in src


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "online-adam", "classification-adamw-ce"])
def test_compiles_for_sm90(target_fields, tmp_path, name):
    target_fields(step_block_barrier=True, keep_state_homes=True)
    assert nvcc_errors(_source(name), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "classification", "online-adam", "classification-adamw-ce"])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch over 3 batches, both on and both off: the same state and
    last outputs, bit for bit."""
    runs = []
    for on in (False, True):
        target_fields(step_block_barrier=on, keep_state_homes=on)
        runs.append(looped(name, 7, seed=4)[1])
    assert all(torch.equal(a, b) for a, b in zip(*runs))


@pytest.mark.cuda
@pytest.mark.parametrize("name", TWINS)
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    """Six launches of one step each (first and last: rank 0 stores what the others
    staged), both on and both off: the same bits."""
    runs = []
    for on in (False, True):
        target_fields(step_block_barrier=on, keep_state_homes=on)
        runs.append(stepped(name, 6, seed=2)[1])
    assert all(torch.equal(a, b) for a, b in zip(*runs))
