"""target.prefetch_step_inputs: the step loop stages each step's batch during the step
before (ResidentPrinter.plan_prefetched_inputs, perf-log step 66). Each batch home gets
a copy for even and one for odd steps, picked by tk_odd; a step starts copying the next
step's batch (its row of tk_next) into the other parity's copy once its own homes are
staged, so that the next step's staging wait finds the copies done. A home whose bytes
no other home shares keeps them for even steps; one whose bytes a later temporary
reuses gets two copies past the placement. All batch homes or none."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, resident_printer, same_bits_off_and_on
from _variants import suite_source as _source

# Pinned to the target before the switches of perf-log steps 70, 73 and 75-83
# were flipped (test_measured_defaults.py): the printed form these tests read.
pytestmark = pytest.mark.usefixtures("before_steps_69_83")

# An unseen shape whose batch rows are 16-byte units (128 and 16 bytes), odd widths inside.
ODD = WORKLOADS["online"].with_sizes(24, (64, 200, 8))


def _w(name: str):
    return ODD if name == "odd" else name


PREFETCH = "  if (tk_more) {  // the next step's batch, in flight through this step (plan_prefetched_inputs)"


@pytest.fixture
def prefetch_on(target_fields):
    # The pointers the copies read, from tk_next as printed before
    # target.prefetch_step_pointers (tests/test_prefetch_pointers.py).
    target_fields(prefetch_step_inputs=True, prefetch_step_pointers=False)


def _smem(src: str) -> int:
    return int(re.search(r"static constexpr int kSmem = (\d+);", src).group(1))


def test_on_by_default():
    assert T.DEFAULT.prefetch_step_inputs is True
    assert PREFETCH in _source("online")


@pytest.mark.parametrize("sizes", [(33, (100, 300, 7)), (50, (100, 300, 10)), (1, (130, 250, 5))])
def test_none_where_a_batch_row_is_not_16_byte_units(target_fields, sizes):
    """Under the 16-byte rule (target.prefetch_small_units off), rows of 200 or
    260 bytes are copied through registers, not cp.async: a prefetch would only
    move the wait into the step (measured slower, run 33f6709-a). Nothing is
    prefetched: the kernel is the one without. (With 4- and 8-byte cp.async:
    tests/test_prefetch_small_units.py.)"""
    name = "classification" if sizes[1][-1] == 10 else "online"
    w = WORKLOADS[name].with_sizes(sizes[0], sizes[1])
    target_fields(prefetch_step_inputs=False, prefetch_small_units=False)
    off = _source(w)
    target_fields(prefetch_step_inputs=True, prefetch_small_units=False)
    assert _source(w) == off


@pytest.mark.parametrize("shape, split, pitch, cluster, unit", [
    ((64, 128), -1, 136, 16, 16),  # online's x: 256-byte rows, 272-byte pitch
    ((64, 100), -1, 104, 16, 8),   # 200-byte rows
    ((64, 128), -1, 132, 16, 8),   # 264-byte pitch
    ((64, 128), 1, 136, 16, 16),   # 8 columns a rank: 16 bytes
    ((64, 128), 1, 136, 32, 8),    # 4 columns a rank: 8 bytes
    ((64, 128), 0, 136, 16, 16),   # 4 rows a rank
    ((512,), -1, None, 16, 16),
    ((100,), -1, None, 16, 8),
    ((64, 24), 0, None, 16, 16),   # 4 rows of 48 bytes a rank
    ((64, 20), 0, None, 16, 16),   # 4 rows of 40 bytes a rank: 160 bytes
    ((64, 13), 0, None, 16, 8),    # 4 rows of 26 bytes a rank: 104 bytes
    ((49, 2), 0, None, 16, 4),     # 196 bytes in all; 4 rows of 4 bytes a rank
    ((64, 10), -1, 24, 16, 4),     # classification's labels: 20-byte rows
    ((64, 7), -1, 8, 16, 0),       # 14-byte rows: 2-byte units, no cp.async
])
def test_stage_units(shape, split, pitch, cluster, unit):
    """The widest cp.async unit every block's slice allows, not only the whole home's."""
    from types import SimpleNamespace

    from xdsl.dialects.builtin import MemRefType, bf16

    from trainkernel.backend.cuda_target import ResidentPrinter
    home = SimpleNamespace(result=SimpleNamespace(type=MemRefType(bf16, shape)), split_axis=split, pitch_value=pitch)
    assert ResidentPrinter._stage_unit(SimpleNamespace(cluster=cluster), home) == unit


def test_online_stages_the_next_batch_into_the_other_copy(prefetch_on):
    """online: x (its home's bytes its own) keeps them for even steps and gets one
    copy for odd ones; y (whose bytes the squared errors reuse) gets two copies of its
    own; no batch is staged at a later step's start; each copy the next step's row."""
    src = _source("online")
    homes = dict(re.findall(r"__nv_bfloat16\* (s\d+) = \(__nv_bfloat16\*\)\(smem \+ \(tk_odd \? (\d+ : \d+)\)\);",
                            src))
    assert len(homes) == 2
    (y, y_at), (x, x_at) = sorted(homes.items())
    odd_x, even_x = (int(v) for v in x_at.split(" : "))
    odd_y, even_y = (int(v) for v in y_at.split(" : "))
    assert even_x == 0 and min(odd_x, odd_y, even_y) >= 64704  # past the placement and the receive copies
    assert _smem(src) == max(odd_x + 64 * 136 * 2, odd_y + 64 * 24 * 2, even_y + 64 * 24 * 2)
    assert "  if (!tk_first) {" not in src and "  if (tk_first) {\n  // ---- prologue" in src
    block = src[src.index(PREFETCH):].split("\n  }\n", 1)[0]
    assert f"(smem + (tk_odd ? {even_y} : {odd_y})), ((__nv_bfloat16*)tk_from[1]), 64, 16, 16LL, 24);" in block
    assert f"(smem + (tk_odd ? {even_x} : {odd_x})), ((__nv_bfloat16*)tk_from[0]), 64, 128, 128LL, 136);" in block
    assert src.index("  tk::stage_wait();") < src.index(PREFETCH) < src.index("  // ---- phase 0")
    assert "tk_more ? p.step_inputs + (size_t)(tk_s + 1) * 2 : nullptr);" in src


@pytest.mark.parametrize("name", ["online", "online-adam", "tiny", "odd"])
def test_no_copy_overlaps_a_home_it_does_not_belong_to(prefetch_on, name):
    """Each copy a step fills while the step runs is bytes no other home (and no
    other copy, and no receive copy) uses; the block's bytes cover them all."""
    from trainkernel.dialects import tile
    pr, kernel = resident_printer(_w(name))
    assert pr.prefetched
    homes = {op: (op.offset_value, op.offset_value + op.local_bytes(pr.cluster))
             for op in kernel.block.ops if isinstance(op, tile.Home)}
    spans = []
    for home, (even, odd) in pr.prefetched.items():
        size = home.local_bytes(pr.cluster)
        for at in {even, odd}:
            spans.append((at, at + size, home))
    for lo, hi, home in spans:
        assert hi <= pr.smem_bytes <= T.DEFAULT.resident_costs.smem_budget
        for other, (olo, ohi) in homes.items():
            if other is not home:
                assert hi <= olo or ohi <= lo, (home, other)
        for olo, ohi, other in spans:
            if (olo, ohi) != (lo, hi):
                assert hi <= olo or ohi <= lo
        if pr.receive_copies:
            assert all(hi <= r or r + (pr.receive_copies[1] - pr.receive_copies[0]) <= lo for r in pr.receive_copies)


def test_twins_restage_their_written_state_but_prefetch_the_batch(prefetch_on):
    """online-adam: the betas' powers (written by rank 0) are staged at the step's
    start as before; only the batch is staged a step ahead."""
    src = _source("online-adam")
    later = src[src.index("  if (!tk_first) {"):src.index("  } else {")]
    assert later.count("tk::stage_rows(") == 2 and "tk_next" not in later
    assert src[src.index(PREFETCH):].split("\n  }\n", 1)[0].count("tk::stage_rows(") == 2


def test_none_where_the_copies_do_not_fit(target_fields):
    """online's placement and receive copies take 64704 bytes, its batch's copies
    23552 more: with a budget of 80000 none is prefetched."""
    costs = dataclasses.replace(T.DEFAULT.resident_costs, smem_budget=80000)
    target_fields(resident_costs=costs, prefetch_step_inputs=False)
    off = _source("online")
    assert _smem(off) == 64704
    target_fields(resident_costs=costs, prefetch_step_inputs=True)
    assert _source("online") == off


def _fp32_batch_source() -> str:
    import trainkernel
    w = WORKLOADS["online"]
    return trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.float32),
                                        build=False).cuda_source


def test_fp32_batches_are_prefetched_as_they_are_staged(prefetch_on):
    """fp32 batches with bf16 compute: the homes hold the fp32 batch (a phase-0 map
    casts it), and their copies are fp32."""
    src = _fp32_batch_source()
    assert "((float*)tk_from[0]), 64, 128, 128LL, 132);" in src


@pytest.mark.parametrize("name", ["online", "tiny", "classification", "odd"])
def test_every_pointer_is_loaded_before_the_first_copy(prefetch_on, target_fields, name):
    """target.prefetch_pointers_first: the next step's input pointers are all read
    from tk_next before any copy (cp.async is a memory barrier to the compiler, so a
    pointer read at its copy waited a second round trip), and the copies read them
    from there; off, each copy reads its own from tk_next. The copies are the same."""
    first = _source(_w(name))
    target_fields(prefetch_pointers_first=False)
    late = _source(_w(name))
    block = first[first.index(PREFETCH):].split("\n  }\n", 1)[0]
    copies = [line for line in block.splitlines() if "tk::stage_" in line]
    loads = [line for line in block.splitlines() if "= tk_next[" in line]
    assert len(loads) == len(copies) == 2
    assert block.index(loads[-1]) < block.index(copies[0])
    assert all("tk_from[" in c and "tk_next" not in c for c in copies)
    late_block = late[late.index(PREFETCH):].split("\n  }\n", 1)[0]
    assert "tk_from" not in late and [c.replace("tk_from[", "tk_next[") for c in copies] == \
        [line for line in late_block.splitlines() if "tk::stage_" in line]
    assert first.replace(block, "") == late.replace(late_block, "")


def test_none_where_a_batch_home_is_a_cast(target_fields):
    """With target.stage_casts, x's home casts on load (tile.smem_cast), which a
    cp.async cannot do: nothing is prefetched (all or none)."""
    target_fields(stage_casts=True, prefetch_step_inputs=True)
    src = _fp32_batch_source()
    assert "tk::CastRows" in src and "tk_next" not in src


def test_grid_kernels_are_untouched(target_fields):
    off = _source("mlp4")
    target_fields(prefetch_step_inputs=True)
    assert _source("mlp4") == off


def test_the_launch_facts_take_the_printers_bytes(prefetch_on):
    import trainkernel
    w = WORKLOADS["online"]
    c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16), build=False)
    assert c.meta.smem_bytes == _smem(c.cuda_source) > 64704


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "online-adam", "tiny", "odd"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_compiles_for_sm90(prefetch_on, tmp_path, name, dtype):
    src = _source(_w(name), dtype=dtype)
    assert "tk_next" in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "online-adam", "odd"])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch over 3 batches (the next step's batch differs from this
    one's), prefetched or not: the same state and last outputs, bit for bit."""
    same, sources = same_bits_off_and_on(target_fields, "prefetch_step_inputs", _w(name), 7, seed=4, run=looped)
    assert ["tk_next" in s for s in sources] == [False, True]
    assert same


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "online-adam"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    assert same_bits_off_and_on(target_fields, "prefetch_step_inputs", name, 4, seed=2)[0]

