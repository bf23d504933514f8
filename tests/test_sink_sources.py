"""tk-to-sched{sink_sources=true} (pipeline.SINK_SOURCES, perf-log step 79): a
compute without a product that depends on nothing but the arguments (a weight's
cast, a label mask and the count of its valid rows, the optimizer's step
powers; not a cast, which the chain or the step loop carries) that phase 1 does
not read leaves phase 0 for the earliest later phase, where that moves no other
compute (perf-log step 84; step 79's first form sank each to the phase before
its first reader). Phase 0 then holds only what phase 1 reads and casts, which
a chain of launches (target.grid_carried_casts) or the step loop carries, so
that phase and its barrier run once. The same computes in other phases: the
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
from _variants import BEFORE_STEP_106, BEFORE_STEPS_99_101, stepped, suite_source  # noqa: E402
from test_lowering import only  # noqa: E402
from trainkernel import pipeline  # noqa: E402
from trainkernel.dialects import sched, tk  # noqa: E402
from trainkernel.passes.tk_to_sched import only_casts  # noqa: E402
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
    """Every compute of phase 0 writes a buffer a compute of phase 1 reads, or only
    casts (carried casts stay: perf-log step 84); the phases of the computes with a
    product do not move, nor does their number. The twins' labels' mask and step
    powers leave phase 0; the SGD steps' phase 0 is casts already."""
    *_, captured = problem(name)
    before, after = (only(lower_stages(captured, flag, monkeypatch)["sched"], sched.ProgramOp)
                     for flag in (False, True))
    old, new = _phases(before), _phases(after)
    assert len(new) == len(old)
    first_reads = {sched.root_buffer(v) for op in new[1] for v in op.ins}
    for op in new[0]:
        assert only_casts(op.body) or any(sched.root_buffer(v) in first_reads for v in op.outs), name
    moved = len(new[0]) < len(old[0])
    assert moved == (name in TWINS), name
    gemms = lambda phases: [[str(op.ins) for op in p if _has_product(op)] for p in phases]  # noqa: E731
    assert [len(p) for p in gemms(new)] == [len(p) for p in gemms(old)]


@pytest.mark.parametrize("name", ["small", "online-adam", "classification-adamw-ce", "mlp4-adamw-ce"])
def test_the_same_bits_through_sched_and_tile(name, monkeypatch):
    """Two steps at the sched and tile levels, sunk and as before, each feeding back
    its own state: every result bit for bit the same."""
    state, batches, captured = problem(name)
    before, after = (lower_stages(captured, flag, monkeypatch) for flag in (False, True))
    test_fuse_merge.assert_same_bits(before, after, state, batches, name)


def _sources(phases: list[list[sched.ComputeOp]]) -> set[sched.ComputeOp]:
    """The computes without a product that read only arguments or what such computes write."""
    made: set = set()
    out = set()
    for op in (op for p in phases for op in p):  # phase order is a topological order
        if not _has_product(op) and all(not isinstance(r := sched.root_buffer(v), sched.BufferOp) or r in made
                                        for v in op.ins):
            out.add(op)
            made.update(sched.root_buffer(v) for v in op.outs)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_nothing_but_sources_moves(name, monkeypatch):
    """Every compute that is not such a source keeps its phase."""
    *_, captured = problem(name)
    before, after = (_phases(only(lower_stages(captured, flag, monkeypatch)["sched"], sched.ProgramOp))
                     for flag in (False, True))
    key = lambda p, op: (p, [o.name for o in op.body.walk()], [str(v.type) for v in (*op.ins, *op.outs)])  # noqa: E731
    fixed = lambda phases: sorted(key(i, op) for i, p in enumerate(phases) for op in p  # noqa: E731
                                  if op not in _sources(phases))
    assert fixed(after) == fixed(before)


def test_mlp4_adamw_ce_phase_0_runs_once_a_chain(target_fields, monkeypatch):
    """With the batch's cast fused and the casts carried through a chain of launches,
    mlp4-adamw-ce's phase 0 keeps its labels' mask and the step powers as before;
    with the sources sunk it holds casts alone and its barrier runs in a chain's
    first launch; the cross-entropy's phases keep their block barriers (the
    kernel's grid barriers: the same ten)."""
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", True)
    target_fields(grid_carried_casts=True)
    guarded = "if (tk_first) {  // the phase's casts run in a chain's first launch alone"
    before = suite_source("mlp4-adamw-ce")
    assert guarded not in before and before.count("tk::grid_sync();") == 10
    monkeypatch.setattr(pipeline, "SINK_SOURCES", True)
    after = suite_source("mlp4-adamw-ce")
    assert guarded in after and after.count("tk::grid_sync();") == 10


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


def test_the_engine_choice_weighs_mma_by_its_calibration(target_fields, monkeypatch):
    """Step 84 measured: sunk, mlp4-adamw-ce's estimates put mma.sync 0.1% under wgmma
    and the kernel ran 1.9x slower on it. GridCosts.mma_engine_calibration (1.0, the
    model as it is, until measured where it changes kernels: perf-log step 85) weighs
    the mma.sync estimate: at 1.4 the sunk kernel keeps the wgmma engine."""
    import dataclasses

    from trainkernel import target as T

    monkeypatch.setattr(pipeline, "SINK_SOURCES", True)
    # 4 with the parts model (perf-log steps 106 and 108).
    assert T.DEFAULT.grid_costs.mma_engine_calibration == 4.0
    # On 128-row wgmma tiles of one width among 64-256 (_variants.BEFORE_STEPS_99_101)
    # and the model before step 106, the choice step 84 measured (with 64-row or
    # 32-wide tiles the wgmma estimate is lower and the calibration changes nothing here).
    before = BEFORE_STEP_106
    target_fields(wgmma_consumers=(2,), **BEFORE_STEPS_99_101, **before)
    assert "wgmma" not in suite_source("mlp4-adamw-ce")
    target_fields(wgmma_consumers=(2,), **BEFORE_STEPS_99_101, split_k_tagged_partials=False,
                  grid_costs=dataclasses.replace(before["grid_costs"], mma_engine_calibration=1.4))
    assert "wgmma" in suite_source("mlp4-adamw-ce")
