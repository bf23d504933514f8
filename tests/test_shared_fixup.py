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
from _ptxas import ptxas_kernel_rows
from _variants import same_bits_off_and_on, stepped
from _variants import suite_source as _source

# Each switch against the target before the flips (test_measured_defaults.py: on),
# with the fix-ups through L2 (small's logits would otherwise meet in a cluster).
pytestmark = pytest.mark.usefixtures("before_steps_69_83", "splits_through_l2")

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
# target.split_k_tagged_partials (step 103): the partials as tagged 8-byte words
# that the owner polls (no counters or fences), its own from registers too.
SWITCHES = {"split_k_keep_own_partial": "TK_SPLITK_KEEP_OWN", "split_k_tagged_partials": "TK_SPLITK_TAGGED"}


@pytest.mark.parametrize("field", SWITCHES)
@pytest.mark.parametrize("name", ["medium", "small", ODD], ids=str)
def test_a_define_of_kernels_with_a_shared_fix_up(target_fields, name, field):
    define = SWITCHES[field]
    target_fields(split_k_shared_fixup=True, **{field: True})
    src = trainkernel.compile_training(*_args(name), build=False, resident="off").cuda_source
    assert any(split for split, _ in _calls(src))
    assert src.count(f"#define {define} 1\n") == 1
    target_fields(split_k_shared_fixup=False, **{field: True})  # nothing shared: nothing kept, nothing tagged
    assert define not in trainkernel.compile_training(*_args(name), build=False, resident="off").cuda_source


def test_a_resident_kernel_has_no_fix_up_to_tag(target_fields):
    target_fields(split_k_shared_fixup=True, split_k_tagged_partials=True)
    assert "TK_SPLITK_TAGGED" not in _source("online")


@needs_nvcc
@pytest.mark.parametrize("field", SWITCHES)
@pytest.mark.parametrize("name", ["small", ODD], ids=str)
def test_builds_without_a_stack_frame(target_fields, tmp_path, name, field):
    """The kept float4s and the polled words stay in registers (ptxas -v: no stack
    frame, as every kernel of the suite: test_cuda_compile.py)."""
    target_fields(split_k_shared_fixup=True, **{field: True})
    src = trainkernel.compile_training(*_args(name), build=False, resident="off").cuda_source
    rows = ptxas_kernel_rows(src, tmp_path)
    assert rows and not any(r["stack"] for r in rows), rows


def test_the_workspace_holds_a_tagged_word_an_element():
    """tile.gemm_partials_bytes: a wgmma split tile's partials take 8 bytes an
    element whatever the target (tagged or not), so that the printer's target
    never outgrows what the arena's layout gave it."""
    from trainkernel.dialects import tile

    split = [op for op in _tile_kernel("small").block.ops if isinstance(op, tile.GemmOp) and op.ksplit > 1]
    assert split and all(op.engine == "wgmma" for op in split)
    for op in split:
        bm, bn, _ = op.tile_shape
        m, n, _ = tile.iteration_space(op)
        tiles = -(-m // bm) * -(-n // bn)
        assert tile.gemm_partials_bytes(op) == tiles * op.ksplit * bm * bn * 8


def _tile_kernel(name):
    import torch
    from _tile_stage import tile_kernel

    w = WORKLOADS[name]
    return tile_kernel(trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta")))


@pytest.mark.cuda
@pytest.mark.parametrize("field", SWITCHES)
@pytest.mark.parametrize("name", ["medium", "small", ODD], ids=str)
def test_the_same_bits_on_gpu_kept_or_tagged(target_fields, name, field):
    """Four steps, each switch off and on: the same sums in the same order, so
    every output bit-equal. Tagged: the words zeroed by their owner are tagged
    again by the next launch's publishers (four launches of one arena)."""
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, field, name, 4, 2, run=stepped,
                                                   split_k_shared_fixup=True)
    assert SWITCHES[field] in src_on and SWITCHES[field] not in src_off
    assert same
