"""target.split_k_shared_fixup: a split-K gemm's fix-up shared by the tile's
slices (tk::hopper::splitk_shared_fixup, perf-log step 80). Each slice stores
its partial, waits until every slice has, and sums the row walk's passes it
owns (pass i to slice i % splits) in slice order: the same additions per
element as the last-arrival fix-up, so the same bits, with the tile's reads
spread over its slices' blocks instead of one."""

from __future__ import annotations

import re

import pytest

import trainkernel
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _ptxas import parse_ptxas
from _variants import same_bits_off_and_on, stepped
from _variants import suite_source as _source

# Each switch against the target before the flips (test_measured_defaults.py: on).
pytestmark = pytest.mark.usefixtures("before_steps_69_83")

# A narrowed gemm's shape argument nests a template (tk::hopper::TileShape<32, ...>).
CALL = re.compile(r"// tile\.gemm [^\n]*?(, split-K: \d+ slices of \d+)?\n[^\n]*\n\s*tk::hopper::grid_gemm_units<([^\n]*?)>\(")
# small at odd sizes: its second product (130 x 24, K = 2048) splits K 4 ways over
# edge tiles (a 2-row m-tile; 24 of a 64-wide tile's columns: one pass of two
# with columns, slices 1-3 own none)
ODD = WORKLOADS["small"].with_sizes(130, (264, 2048, 24))


def _calls(src: str) -> list[tuple[bool, int]]:
    """(split, template arguments) of every wgmma gemm call."""
    return [(bool(m.group(1)), _top_level_arguments(m.group(2))) for m in CALL.finditer(src)]


def _top_level_arguments(args: str) -> int:
    depth, n = 0, 1
    for ch in args:
        depth += {"<": 1, ">": -1}.get(ch, 0)
        n += ch == "," and depth == 0
    return n


@pytest.mark.parametrize("name", ["medium", "small"])
def test_only_split_gemms_share_their_fix_up(target_fields, name):
    off = _calls(_source(name))
    target_fields(split_k_shared_fixup=True)
    on = _calls(_source(name))
    assert [s for s, _ in on] == [s for s, _ in off] and any(s for s, _ in on)
    assert all(n == (7 if split else 5) for split, n in on)


def test_resident_kernels_are_unchanged(target_fields):
    off = _source("online")
    target_fields(split_k_shared_fixup=True)
    assert _source("online") == off


@needs_nvcc
@pytest.mark.parametrize("name,fields", [("medium", {}), ("small", {"full_sum_partials": True}),
                                         (ODD, {"wgmma_producer_calls": True})], ids=str)
def test_builds_for_sm90a(target_fields, tmp_path, name, fields):
    """With column partials on the split gemm's epilogue (small's loss) and with the
    producer as a call (both template arguments spelled out)."""
    target_fields(split_k_shared_fixup=True, **fields)
    src = trainkernel.compile_training(*_args(name), build=False, resident="off").cuda_source
    assert any(split and n == 7 for split, n in _calls(src))
    assert nvcc_errors(src, tmp_path, host=False) == ""


def _args(name):
    import torch

    w = WORKLOADS[name] if isinstance(name, str) else name
    return w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16)


@pytest.mark.cuda
@pytest.mark.parametrize("name,fixed", [("medium", {}), ("small", {}), ("small", {"full_sum_partials": True}),
                                        (ODD, {})], ids=str)
def test_the_same_bits_on_gpu(target_fields, name, fixed):
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, "split_k_shared_fixup", name, 4, 2, run=stepped,
                                                   **fixed)
    assert any(split and n == 7 for split, n in _calls(src_on))
    assert same


# target.split_k_keep_own_partial (perf-log step 102): under the shared fix-up a
# slice sums the passes it owns from its own registers and stores only the others.
KEEP = dict(split_k_shared_fixup=True, split_k_keep_own_partial=True)


@pytest.mark.parametrize("name", ["medium", "small", ODD], ids=str)
def test_keep_own_is_a_define_of_kernels_with_a_shared_fix_up(target_fields, name):
    target_fields(**KEEP)
    src = trainkernel.compile_training(*_args(name), build=False, resident="off").cuda_source
    assert any(split for split, _ in _calls(src))
    assert src.count("#define TK_SPLITK_KEEP_OWN 1\n") == 1
    target_fields(split_k_shared_fixup=False, split_k_keep_own_partial=True)  # nothing shared, nothing kept
    assert "TK_SPLITK_KEEP_OWN" not in trainkernel.compile_training(*_args(name), build=False,
                                                                    resident="off").cuda_source


@needs_nvcc
@pytest.mark.parametrize("name", ["small", ODD], ids=str)
def test_keep_own_builds_without_a_stack_frame(target_fields, tmp_path, name):
    """The kept float4s stay in registers (ptxas -v: no stack frame, as every
    kernel of the suite: test_cuda_compile.py)."""
    import subprocess

    from trainkernel.backend.build import arch_for_source, nvcc_flags

    target_fields(**KEEP)
    src = trainkernel.compile_training(*_args(name), build=False, resident="off").cuda_source
    cu = tmp_path / "k.cu"
    cu.write_text(src)
    out = subprocess.run(["nvcc", *nvcc_flags(arch_for_source(src, "sm_90")), "-Xptxas", "-v", "-cubin", str(cu),
                          "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    rows = parse_ptxas(out.stdout + out.stderr)
    assert rows and not any(r["stack"] for r in rows), rows


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["medium", "small", ODD], ids=str)
def test_keep_own_gives_the_same_bits_on_gpu(target_fields, name):
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, "split_k_keep_own_partial", name, 4, 2,
                                                   run=stepped, split_k_shared_fixup=True)
    assert "TK_SPLITK_KEEP_OWN" in src_on and "TK_SPLITK_KEEP_OWN" not in src_off
    assert same
