"""target.preissue_ready_operands (perf-log step 93): before the grid barrier in front
of a phase, a grid kernel's producer thread copies the operands of the phase's first
wgmma gemm that no op writes since the last grid barrier into its first unit's stages
(tk::hopper::preissue_operands), and after the barrier only the rest
(tk::hopper::produce_units, from the pipeline state's record). CudaPrinter.plan_preissue
decides which operands, from the tile IR; off by default (measured slower on every grid
step, perf-log step 93)."""

from __future__ import annotations

import re

import pytest
import torch

import trainkernel
from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import _workload
from _variants import suite_source as _source

CALL = re.compile(r"tk::hopper::preissue_operands<[^>]*>\((.*)\);  // phase (\d+)'s ready operands")
# Grid kernels of shapes the suite's steps do not have: a partial tile, three layers.
ODD = WORKLOADS["small"].with_sizes(40, (136, 264, 24))  # rows of whole 16 bytes: the wgmma engine
DEEP = WORKLOADS["small"].with_sizes(64, (128, 192, 96, 16))


def _masks(src: str) -> dict[int, str]:
    """Each phase's preissue mask expression."""
    return {int(phase): args.rsplit(", ", 1)[1] for args, phase in CALL.findall(src)}


def test_off_by_default():
    assert T.DEFAULT.preissue_ready_operands is False
    src = _source("mlp4")
    assert "preissue_operands" not in src and "TK_PREISSUE_READY_OPERANDS" not in src


def test_mlp4_issues_its_weights_before_each_barrier(target_fields):
    """mlp4 (4 layers, every cast carried through a chain): phase 1's x @ W0 takes x
    (the batch) always and W0's cast after the chain's first launch (phase 0 casts it
    there alone); the forward and the backward products of phases 2-7 take their
    weight's cast (B); phase 8's dW0 = x^T @ g takes x (A)."""
    target_fields(preissue_ready_operands=True, wgmma_consumers=(2,))  # the 128-row tiles it was measured on
    src = _source("mlp4")
    assert "#define TK_PREISSUE_READY_OPERANDS 1\n#include \"tk/hopper_gemm.cuh\"" in src
    assert _masks(src) == {1: "(tk_first ? 1u : 3u)", 2: "2u", 3: "2u", 4: "2u", 5: "2u", 6: "2u", 7: "2u", 8: "1u"}


def test_an_operand_written_since_the_last_grid_barrier_waits(target_fields):
    """Without carried casts, phase 0 casts the weights every launch: phase 1's W0
    cast is written in the phase before, so only x goes early."""
    target_fields(preissue_ready_operands=True, grid_carried_casts=False)
    assert _masks(_source("mlp4"))[1] == "1u"


def test_each_call_precedes_its_phase_barrier(target_fields):
    target_fields(preissue_ready_operands=True)
    src = _source("small")
    for m in CALL.finditer(src):
        after = src[m.end():].splitlines()[1:]  # the lines after the call's
        if after[0].startswith("  if (tk_first) {"):  # a barrier of the chain's first launch alone
            after = after[1:]
        assert after[0] == "  tk::hopper::fence_proxy_async_global();"
        assert after[1] == "  tk::grid_sync();"


@pytest.mark.parametrize("fields", [{"gemm_cluster_pairs": True}, {"item_flags": True}])
def test_none_in_kernels_of_cluster_pairs_or_item_flags(target_fields, fields):
    target_fields(preissue_ready_operands=True, split_k_cluster_fixup=False, **fields)  # flags skip clusters
    assert "preissue_operands" not in _source("small")


def test_resident_kernels_print_as_before(target_fields):
    off = _source("online")
    target_fields(preissue_ready_operands=True)
    assert _source("online") == off


@needs_nvcc
@pytest.mark.parametrize("name,dtype", [("small", torch.bfloat16), ("mlp4", torch.bfloat16),
                                        ("medium", torch.bfloat16), (ODD, torch.float16)])
def test_builds_for_sm90a(target_fields, tmp_path, name, dtype):
    target_fields(preissue_ready_operands=True)
    w = _workload(name)
    src = trainkernel.compile_training(w.make_step(dtype), w.example_args(dtype=dtype), resident="off",
                                       build=False).cuda_source
    assert "preissue_operands" in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name,dtype", [("small", torch.bfloat16), ("mlp4", torch.bfloat16),
                                        ("medium", torch.bfloat16), (ODD, torch.float16), (DEEP, torch.bfloat16)])
def test_the_same_bits_on_and_off(target_fields, name, dtype):
    """A captured chain of 7 steps replayed twice, the operands issued early or not:
    the same state and last outputs, bit for bit (the copies' bytes are the same)."""
    from test_grid_carried_casts import _chained

    target_fields(preissue_ready_operands=False)
    _, want = _chained(name, 7, 3, dtype, replays=2)
    target_fields(preissue_ready_operands=True)
    src, got = _chained(name, 7, 3, dtype, replays=2)
    assert "preissue_operands" in src
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))
