"""target.grid_programmatic_launch: a grid kernel's cooperative launch with
programmatic stream serialization too (cudaLaunchKernelEx with both
attributes), the kernel calling tk::launch_dependents and waiting at
tk::wait_prior_grid before its first global access, as resident kernels do
(perf-log step 82)."""

from __future__ import annotations

import re

import pytest
import torch

import trainkernel
from trainkernel import target as T

from _nvcc import needs_nvcc, nvcc_errors
from _variants import same_bits_off_and_on, stepped
from _variants import suite_source as _source

WAIT = "  tk::wait_prior_grid();"


def test_off_until_measured(target_fields):
    assert T.DEFAULT.grid_programmatic_launch is False
    target_fields(split_k_cluster_fixup=False)  # a cooperative launch without clusters
    src = _source("small")
    assert WAIT not in src and "cudaLaunchCooperativeKernel(" in src


@pytest.mark.parametrize("name,fields", [("small", {}), ("medium", {}), ("small", {"grid_carried_casts": True})])
def test_nothing_touches_global_memory_before_the_wait(target_fields, name, fields):
    """Before the wait: the parameters' pointers, the block's index, shared memory and
    the pipeline's barriers only; no buffer or arena element is read or written.
    Every launcher entry point launches with both attributes."""
    target_fields(grid_programmatic_launch=True, **fields)
    src = _source(name)
    body = src[src.index("__global__"):]
    before = body[:body.index(WAIT)]
    assert "tk::launch_dependents();" in before
    assert not re.search(r"\b[bt]\d+\w*\[", before), before
    assert "p.arena +" not in before
    launches = src.count("cudaLaunchKernelExC(&cfg, tk_kernel, args)")
    assert launches == 1 and "cudaLaunchCooperativeKernel(" not in src
    assert "attr[0].val.cooperative = 1;" in src and "programmaticStreamSerializationAllowed = 1;" in src


def test_resident_kernels_are_unchanged(target_fields):
    off = _source("online")
    target_fields(grid_programmatic_launch=True)
    assert _source("online") == off


@needs_nvcc
@pytest.mark.parametrize("engine", ["auto", "mma"])
def test_builds_with_its_launcher(target_fields, tmp_path, engine):
    target_fields(grid_programmatic_launch=True, grid_carried_casts=True)
    from trainkernel.workloads import WORKLOADS

    w = WORKLOADS["small"]
    src = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16),
                                       build=False, gemm_engine=engine).cuda_source
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", "mlp4"])
def test_the_same_bits_on_gpu(target_fields, name):
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, "grid_programmatic_launch", name, 4, 2,
                                                   run=stepped)
    assert WAIT in src_on and WAIT not in src_off
    assert same
