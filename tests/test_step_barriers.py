"""The step loop's cluster barriers (perf-log step 63).

target.keep_state_homes: tile-resident keeps every state home to the kernel's end,
so that the loop keeps the state on chip instead of staging it again (Adam's powers
of the betas, which a first-phase map reads and updates, had their bytes reused).

target.step_block_barrier: a step of a cluster's loop ends with a block barrier
instead of a cluster barrier where no step but the last stores what a later step
stages; each step's first DSMEM push already waits for every block to have started
that step (the split arrive, released, and its wait). Where rank 0 stores a state
scalar that the others stage (kept: first step, stored: last step), only a launch
of one step waits for the cluster right after staging.

target.double_receive: the first exchange of a step gets two receive buffers, used
by even and odd steps, past the placement's bytes, so that only the first step
waits for every block to have started before its first push."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from trainkernel import target as T

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on
from _variants import suite_source as _source

SGD = ["online", "classification", "tiny"]
TWINS = ["online-adam", "classification-adamw-ce"]
END_BLOCK = "    if (tk_more) __syncthreads();\n  }"
END_CLUSTER = "    if (tk_more) tk::cluster_sync();\n  }"


def test_defaults(target_fields):
    """Measured (perf-log steps 63 and 65): the block barrier and the two receive
    buffers faster with the same bits, on; keeping the state homes no faster alone,
    faster on the twins with input casts and cast copies ("Steps 69-83 measured"), on."""
    assert T.DEFAULT.step_block_barrier is True and T.DEFAULT.double_receive is True
    assert T.DEFAULT.keep_state_homes is True
    assert END_BLOCK in _source("online")
    target_fields(step_block_barrier=False)
    assert END_CLUSTER in _source("online")


@pytest.mark.parametrize("name", SGD)
def test_keeping_state_homes_changes_no_sgd_step(target_fields, name):
    """Their state homes (weights, biases) already live to the end: the same kernel."""
    off = _source(name)
    target_fields(keep_state_homes=True)
    assert _source(name) == off


@pytest.mark.parametrize("name", TWINS)
def test_the_twins_keep_their_powers_of_the_betas(before_steps_66_68, target_fields, name):
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
    target_fields(step_block_barrier=True, double_receive=False)
    src = _source(name)
    assert END_BLOCK in src and END_CLUSTER not in src
    assert src.count("tk::cluster_arrive_release();") == 1 and "tk::cluster_arrive();" not in src


def test_one_block_needs_neither(target_fields):
    target_fields(step_block_barrier=False, double_receive=False)
    off = _source("tiny")
    target_fields(step_block_barrier=True, keep_state_homes=True, double_receive=True)
    assert _source("tiny") == off


@pytest.mark.parametrize("name", TWINS)
def test_restaged_state_keeps_the_cluster_barriers(target_fields, name):
    """Without keep_state the twins stage their betas' powers again each step, which
    rank 0 stores each step: the prologue's cluster barrier and the loop's stay."""
    target_fields(step_block_barrier=False, keep_state_homes=False)
    off = _source(name)
    target_fields(step_block_barrier=True, keep_state_homes=False)
    assert _source(name) == off


@pytest.mark.parametrize("name", TWINS)
def test_kept_state_needs_the_cluster_only_in_a_launch_of_one_step(target_fields, name):
    """Both on: one wait for each arrive on every path: after staging in a launch of
    one step, before the first push in the others."""
    target_fields(step_block_barrier=True, keep_state_homes=True, double_receive=False)
    src = _source(name)
    assert END_BLOCK in src
    prologue = src[src.index("tk::cluster_arrive_release();"):]
    assert prologue.startswith("tk::cluster_arrive_release();\n  tk::stage_wait();\n"
                               "  if (tk_first && !tk_more) tk::cluster_wait();")
    assert src.count("tk::cluster_wait();") == 2
    assert "    if (!(tk_first && !tk_more)) tk::cluster_wait();  // every block started" in src
    assert "tk::cluster_sync();\n  // ---- phase 0" not in src


def test_online_alternates_two_receive_buffers(before_steps_66_68, target_fields):
    """56512 bytes placed, then two 4 KiB copies of the first exchange's receive
    buffer (16 ranks x 64 partials); the step's parity picks one; only the first step
    arrives and waits; with step_block_barrier a step has the exchange's two cluster
    barriers alone. The kernel's launch facts say the bytes the kernel asks for."""
    import trainkernel
    from trainkernel.workloads import WORKLOADS
    target_fields(double_receive=True, step_block_barrier=True)
    w = WORKLOADS["online"]
    c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16), build=False)
    src = c.cuda_source
    assert "static constexpr int kSmem = 64704;" in src and c.meta.smem_bytes == 64704
    assert "bool tk_more, bool tk_odd) {" in src and "tk_s == 0, tk_more, (tk_s & 1) != 0);" in src
    assert "float* part = (float*)(smem + (tk_odd ? 60608 : 56512));" in src
    assert "  if (tk_first) tk::cluster_arrive();" in src and "    if (tk_first) tk::cluster_wait();" in src
    assert END_BLOCK in src and src.count("tk::cluster_sync()") == 0


def test_no_second_copy_where_it_does_not_fit(target_fields):
    costs = dataclasses.replace(T.DEFAULT.resident_costs, smem_budget=60000)
    target_fields(resident_costs=costs, double_receive=False)
    off = _source("online")
    target_fields(resident_costs=costs, double_receive=True)
    assert _source("online") == off


@pytest.mark.parametrize("name", TWINS)
def test_no_second_copy_where_rank_0_stores_what_others_stage(target_fields, name):
    target_fields(double_receive=False)
    off = _source(name)
    target_fields(double_receive=True)
    assert _source(name) == off


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "online-adam", "classification-adamw-ce"])
def test_compiles_for_sm90(target_fields, tmp_path, name):
    target_fields(step_block_barrier=True, keep_state_homes=True, double_receive=True)
    assert nvcc_errors(_source(name), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "classification", "online-adam", "classification-adamw-ce"])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch over 3 batches, all three on and all off: the same state
    and last outputs, bit for bit."""
    assert same_bits_off_and_on(target_fields, ("step_block_barrier", "keep_state_homes", "double_receive"), name, 7, seed=4, run=looped)[0]


@pytest.mark.cuda
@pytest.mark.parametrize("name", TWINS + ["online"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    """Six launches of one step each (first and last: rank 0 stores what the others
    staged), both on and both off: the same bits."""
    assert same_bits_off_and_on(target_fields, ("step_block_barrier", "keep_state_homes", "double_receive"), name, 6, seed=2)[0]
