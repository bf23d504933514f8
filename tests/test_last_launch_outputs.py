"""target.grid_last_launch_outputs: a grid kernel in a chain of launches (capture)
stores the outputs that are not state and that nothing in it reads (the loss, the
returned gradients) in the chain's last launch alone, and runs what only they need
there alone (the loss's sums), as the resident step loop does (perf-log step 83).
capture's outputs are its last step's; a plain call is a chain of one."""

from __future__ import annotations

import re

import pytest
import torch

from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import suite_source as _source

# Each switch against the target before the flips (test_measured_defaults.py: on).
pytestmark = pytest.mark.usefixtures("before_steps_69_83")

GUARD = "if (!tk_more)"
OP_GUARD = "  if (!tk_more)  // only outputs read it: a chain's last launch alone\n"


@pytest.mark.parametrize("name,ops,outputs", [("small", 1, 5), ("medium", 2, 5), ("mlp4", 1, 9)])
def test_the_loss_and_the_gradients_wait_for_the_last_launch(target_fields, name, ops, outputs):
    """small's loss sum, medium's two (rows, then all), mlp4's: last launch alone; every
    output buffer (the loss and each returned gradient) stored by it alone, and the
    squared errors that only the loss reads too; the state's stores untouched."""
    off = _source(name)
    target_fields(grid_last_launch_outputs=True)
    on = _source(name)
    assert on.count(OP_GUARD) == ops
    stored = set(re.findall(r"if \(!tk_more\) (b\d+_out\d+)\[", on))
    assert len(stored) == outputs
    assert re.search(r"if \(!tk_more\) t\d+\[", on)  # the squared errors
    assert not re.search(r"if \(!tk_more\) b\d+\[", on)  # state (b0..b3) every launch
    plain = re.sub(r"if \(!tk_more\)(  // only outputs read it: a chain's last launch alone\n)? ?", "", on)
    assert "tk_launch_chain" in on and plain.count("\n") >= off.count("\n")


def test_staged_and_resident_kernels_print_as_before(target_fields):
    staged = _source("small", inplace=False)
    resident = _source("online")
    target_fields(grid_last_launch_outputs=True)
    assert _source("small", inplace=False) == staged
    assert _source("online") == resident


@needs_nvcc
@pytest.mark.parametrize("fields", [{}, {"grid_carried_casts": True, "full_sum_partials": True}], ids=str)
def test_builds_with_its_launcher(target_fields, tmp_path, fields):
    target_fields(grid_last_launch_outputs=True, **fields)
    assert nvcc_errors(_source("small"), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name,dtype", [("small", torch.bfloat16), ("mlp4", torch.bfloat16),
                                        (WORKLOADS["small"].with_sizes(33, (96, 200, 8)), torch.float16)], ids=str)
def test_a_chain_gives_the_bits_of_separate_launches(target_fields, name, dtype):
    """7 launches in one captured chain, replayed twice, against 14 separate calls with
    the switch off: the state and the last step's outputs bit for bit."""
    from test_grid_carried_casts import _chained, _separate

    _, want = _separate(name, 14, 3, dtype, period=7)
    target_fields(grid_last_launch_outputs=True)
    src, got = _chained(name, 7, 3, dtype, replays=2)
    assert GUARD in src
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))
