"""tk-to-sched{sink_sources=true} (pipeline.SINK_SOURCES, perf-log step 79): a
compute without a product that depends on nothing but the arguments (a weight's
cast, a label mask and the count of its valid rows, the optimizer's step
powers) runs in the phase before its first reader instead of as soon as
possible. Phase 0 then holds only what phase 1 reads: the first layer's casts,
which a chain of launches (target.grid_carried_casts) or the step loop carries,
so that phase and its barrier run once. The same computes in other phases: the
same bits."""

from __future__ import annotations

import functools
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

import trainkernel  # noqa: E402
import test_fuse_merge  # noqa: E402
from _nvcc import needs_nvcc, nvcc_errors  # noqa: E402
from _variants import stepped, suite_source  # noqa: E402
from test_lowering import only  # noqa: E402
from trainkernel import pipeline  # noqa: E402
from trainkernel.dialects import sched, tk  # noqa: E402
from trainkernel.pipeline import stage_passes  # noqa: E402
from trainkernel.workloads import TWINS, WORKLOADS  # noqa: E402

NAMES = ["small", "mlp4", "online", "classification", "tiny", "online-adam", "classification-adamw-ce",
         "mlp4-adamw-ce"]


@functools.cache
def problem(name: str, dtype: torch.dtype = torch.bfloat16):
    w = {**WORKLOADS, **TWINS}[name]
    state = w.init_state()
    batches = w.make_batches(2, seed=5, dtype=dtype)
    return state, batches, trainkernel.capture(w.make_step(dtype), (state, *batches[0]))


def lower_stages(captured, sink: bool, monkeypatch) -> dict:
    monkeypatch.setattr(pipeline, "SINK_SOURCES", sink)
    return test_fuse_merge.lower_stages(captured, pipeline.FUSE_MERGE)


def _phases(program: sched.ProgramOp) -> list[list[sched.ComputeOp]]:
    return [[op for op in group if isinstance(op, sched.ComputeOp)] for group in sched.phase_groups(program)]


def _has_product(op: sched.ComputeOp) -> bool:
    return any(isinstance(o, tk.MatmulOp) for o in op.body.walk())


def test_off_until_measured(monkeypatch):
    assert pipeline.SINK_SOURCES is False
    assert stage_passes("sched").startswith("tk-to-sched{inplace=true},")
    monkeypatch.setattr(pipeline, "SINK_SOURCES", True)
    assert stage_passes("sched").startswith("tk-to-sched{inplace=true sink_sources=true},")


@pytest.mark.parametrize("name", NAMES)
def test_phase_0_holds_only_what_phase_1_reads(name, monkeypatch):
    """Every compute of phase 0 writes a buffer a compute of phase 1 reads; the phases
    of the computes with a product do not move, nor does their number."""
    *_, captured = problem(name)
    before, after = (only(lower_stages(captured, flag, monkeypatch)["sched"], sched.ProgramOp)
                     for flag in (False, True))
    old, new = _phases(before), _phases(after)
    assert len(new) == len(old)
    first_reads = {sched.root_buffer(v) for op in new[1] for v in op.ins}
    for op in new[0]:
        assert any(sched.root_buffer(v) in first_reads for v in op.outs), name
    assert len(new[0]) < len(old[0])  # something moved: every step casts a later layer or a label
    gemms = lambda phases: [[str(op.ins) for op in p if _has_product(op)] for p in phases]  # noqa: E731
    assert [len(p) for p in gemms(new)] == [len(p) for p in gemms(old)]


@pytest.mark.parametrize("name", ["small", "online-adam", "classification-adamw-ce", "mlp4-adamw-ce"])
def test_the_same_bits_through_sched_and_tile(name, monkeypatch):
    """Two steps at the sched and tile levels, sunk and as before, each feeding back
    its own state: every result bit for bit the same."""
    state, batches, captured = problem(name)
    before, after = (lower_stages(captured, flag, monkeypatch) for flag in (False, True))
    test_fuse_merge.assert_same_bits(before, after, state, batches, name)


def test_mlp4_adamw_ce_phase_0_runs_once_a_chain(target_fields, monkeypatch):
    """With the batch's cast fused and the casts carried through a chain of launches,
    mlp4-adamw-ce's phase 0 keeps its labels' mask and the step powers as before;
    with the sources sunk it holds the first layer's casts alone and its barrier
    runs in a chain's first launch."""
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", True)
    target_fields(grid_carried_casts=True)
    guarded = "if (tk_first) {  // the phase's casts run in a chain's first launch alone"
    assert guarded not in suite_source("mlp4-adamw-ce")
    monkeypatch.setattr(pipeline, "SINK_SOURCES", True)
    assert guarded in suite_source("mlp4-adamw-ce")


@needs_nvcc
@pytest.mark.parametrize("name", ["mlp4-adamw-ce", "online-adam"])
def test_compiles_for_sm90(name, monkeypatch, tmp_path):
    monkeypatch.setattr(pipeline, "SINK_SOURCES", True)
    assert nvcc_errors(suite_source({**WORKLOADS, **TWINS}[name]), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", "mlp4-adamw-ce", "online-adam", "classification"])
def test_the_same_bits_on_gpu(name, monkeypatch):
    got = []
    for flag in (False, True):
        monkeypatch.setattr(pipeline, "SINK_SOURCES", flag)
        got.append(stepped({**WORKLOADS, **TWINS}[name], 4, 2)[1])
    assert all(torch.equal(a, b) for a, b in zip(*got))
