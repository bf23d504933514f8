"""target.last_step_outputs: the step loop stores the outputs that are not state (the
loss, returned gradients) from its last step alone, so the ops whose results only
those outputs need run in the last step alone (`if (!tk_more)`), and a temporary
that only they read is stored (and published to the cluster) by the last step
alone (plan_last_step_ops, perf-log step 62). Every step's state is the same."""

from __future__ import annotations

import re

import pytest

from trainkernel import target as T
from trainkernel.dialects import sched, tile

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, resident_printer, same_bits_off_and_on
from _variants import suite_source as _source

GUARD = "if (!tk_more)  // only the last step's outputs read it (plan_last_step_ops)"


@pytest.fixture
def last_on(target_fields):
    target_fields(last_step_outputs=True)


def test_on_by_default(target_fields):
    """Measured faster with the same bits (perf-log step 62): on."""
    assert T.DEFAULT.last_step_outputs is True
    assert GUARD in _source("online")
    target_fields(last_step_outputs=False)
    assert GUARD not in _source("online")


def test_online_sums_its_loss_in_the_last_step_alone(before_steps_66_68, last_on):
    """online: the squared errors (an exchange's output, published to every rank) are
    stored and published by the last step alone, and their block sum, the loss, runs
    in the last step alone; the exchange itself and everything else every step."""
    src = _source("online")
    assert src.count(GUARD) == 1
    guarded = src[src.index(GUARD):]
    assert guarded.split("\n", 2)[1].startswith("  { // tile.reduce tk.sum split -1 (block): 1024 elements")
    sq = re.search(r"if \(!tk_more\) (s\d+)\[\(i\)\*20 \+ \(j\)\] = tk::from_float<float>\(v6\);", src)
    assert sq, "the squared errors' store is the last step's"
    assert f"if (!tk_more) tk::at_rank({sq.group(1)}, r)" in src
    assert src.count("tk::exchange<") == 1 and "if (!tk_more)\n  { // tile.gemm" not in src


@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "classification-adamw-ce", "tiny"])
def test_no_op_that_runs_every_step_reads_a_last_step_result(last_on, name):
    """The planner's invariant, checked on the tile IR: nothing a last-step op writes
    is state, an output a later step stages, or read by an op that runs every step;
    every exchange runs every step."""
    pr, kernel = resident_printer(name)
    last = pr.last_step_ops
    assert last, "every step of the suite has a loss that only the last step needs"
    ops = [op for op in kernel.block.ops if isinstance(op, tile.TileWorkOp)]
    written = {pr._buffer_key(v) for op in last for v in op.outs}
    for op in ops:
        if op in last:
            assert not pr._partial(op)
            assert not (written & pr.written_inputs)
        else:
            assert not ({pr._buffer_key(v) for v in op.ins} & written), op.name
    assert all(sched.root_buffer(v) not in pr.through for op in last for v in op.outs)


def test_grid_kernels_are_untouched(last_on, target_fields):
    on = _source("mlp4")
    target_fields(last_step_outputs=False)
    assert _source("mlp4") == on


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "classification-adamw-ce"])
def test_compiles_for_sm90(last_on, tmp_path, name):
    assert nvcc_errors(_source(name), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "online-adam", "classification-adamw-ce"])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch over 3 batches, with and without last-step ops: the same
    state and the same last outputs (the loss included), bit for bit."""
    same, sources = same_bits_off_and_on(target_fields, "last_step_outputs", name, 7, seed=4, run=looped)
    assert [GUARD in s for s in sources] == [False, True]
    assert same
