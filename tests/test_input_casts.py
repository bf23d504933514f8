"""tk-fuse{input_casts=true} (pipeline.FUSE_INPUT_CASTS, perf-log step 70): a group
that only casts function arguments, read by one other group alone, joins it: the
reader casts the argument where it reads it (a bf16 batch's y.float() inside the
loss gradient's epilogue) instead of a map writing a wider copy for it. The same
op on the same value: bit-exact through the sched and tile levels."""

from __future__ import annotations

import functools
import os
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, os.path.dirname(__file__))

import trainkernel  # noqa: E402
from _nvcc import needs_nvcc, nvcc_errors  # noqa: E402
from _variants import looped, stepped, suite_source  # noqa: E402
import test_fuse_merge  # noqa: E402
from test_lowering import only  # noqa: E402
from tk_program_gen import tk_programs  # noqa: E402
from trainkernel import pipeline  # noqa: E402
from trainkernel.dialects import tile  # noqa: E402
from trainkernel.pipeline import run_passes, stage_passes  # noqa: E402
from trainkernel.workloads import TWINS, WORKLOADS  # noqa: E402

ODD = {"online-33": WORKLOADS["online"].with_sizes(33, (100, 300, 7)),
       "classification-50": WORKLOADS["classification"].with_sizes(50, (100, 300, 10))}


def _w(name: str):
    return ODD.get(name) or {**WORKLOADS, **TWINS}[name]


@functools.cache
def problem(name: str, dtype: torch.dtype = torch.bfloat16):
    w = _w(name)
    step = w.make_step(dtype)
    state = w.init_state()
    batches = w.make_batches(3, seed=5, dtype=dtype)
    captured = trainkernel.capture(step, (state, *batches[0]))
    return state, batches, captured


def lower_stages(captured, input_casts: bool, monkeypatch) -> dict:
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", input_casts)
    return test_fuse_merge.lower_stages(captured, pipeline.FUSE_MERGE)


def test_the_pipeline_asks_for_it(monkeypatch):
    """The pass alone leaves casts alone; the pipeline asks for input_casts as
    pipeline.FUSE_INPUT_CASTS says (on since measured: test_measured_defaults.py)."""
    from trainkernel.passes.tk_fuse import TkFusePass

    assert TkFusePass().input_casts is False
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", False)
    assert stage_passes("tk").endswith(",tk-fuse{merge=maps}")
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", True)
    assert stage_passes("tk").endswith(",tk-fuse{merge=maps input_casts=true}")
    assert stage_passes("tk", merge="none").endswith(",tk-fuse{input_casts=true}")


def _maps(kernel: tile.KernelOp) -> int:
    return sum(isinstance(op, tile.MapOp) for op in kernel.block.ops)


@pytest.mark.parametrize("name, fewer", [("online", 1), ("online-33", 1), ("online-adam", 1), ("tiny", 1),
                                         ("small", 1), ("mlp4", 1), ("classification", 1), ("classification-50", 1)])
def test_the_batch_cast_joins_its_reader(name, fewer, monkeypatch):
    """The steps' y.float() (a bf16 batch of targets) is read by the loss gradient's
    epilogue alone: one map fewer, and no buffer of y in fp32."""
    *_, captured = problem(name)
    off, on = (only(lower_stages(captured, flag, monkeypatch)["tile"], tile.KernelOp) for flag in (False, True))
    assert _maps(off) - _maps(on) == fewer


@pytest.mark.parametrize("name", ["online", "online-33", "online-adam", "tiny", "mlp4", "classification-adamw-ce"])
def test_the_same_bits_through_sched_and_tile(name, monkeypatch):
    """Three steps at the sched and tile levels, absorbed and as before, each feeding
    back its own state: every result bit for bit the same."""
    state, batches, captured = problem(name)
    before, after = (lower_stages(captured, flag, monkeypatch) for flag in (False, True))
    test_fuse_merge.assert_same_bits(before, after, state, batches, name)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=tk_programs(addmm=False))
def test_absorbing_keeps_the_values_of_generated_programs(program):
    """Random tk programs: tk-fuse with and without input_casts interpret to the same
    bits (a tk.fused region runs its ops in order)."""
    from trainkernel.interpreter import interpret
    from trainkernel.ir import parse_module, print_module

    text = print_module(program.module)
    base = parse_module(text)
    run_passes(base, "canonicalize,tk-decompose,tk-legalize-masks,canonicalize,cse,dce")
    outs = []
    for spec in ("tk-fuse{merge=maps}", "tk-fuse{merge=maps input_casts=true}"):
        module = base.clone()
        run_passes(module, spec)
        outs.append(interpret(module, *program.args))
    for a, b in zip(*outs):
        assert torch.equal(a, b) or (a.isnan() == b.isnan()).all() and torch.equal(a[~a.isnan()], b[~b.isnan()]), text


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "classification", "online-33", "tiny", "mlp4"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_compiles_for_sm90(name, dtype, monkeypatch, tmp_path):
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", True)
    assert nvcc_errors(suite_source(_w(name), dtype=dtype), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "classification", "online-33", "tiny", "small", "mlp4"])
def test_the_same_bits_on_gpu(name, monkeypatch):
    """4 launches of one step, and 7 steps in one launch where the step is resident:
    absorbed against as before, bit for bit."""
    for run, steps, seed in ((stepped, 4, 2), (looped, 7, 4)):
        if run is looped and name in ("small", "mlp4"):
            continue  # grid kernels: one launch a step
        got = []
        for flag in (False, True):
            monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", flag)
            got.append(run(_w(name), steps, seed)[1])
        assert len(got[0]) == len(got[1]) and all(torch.equal(a, b) for a, b in zip(*got))
