"""target.grid_carried_casts: a grid kernel's casts of state (the fp32 weights'
compute-dtype copies) carried through a chain of launches (perf-log step 76).
The first launch of a chain casts; every update also stores the cast of the
value it stores when another launch follows; a cast whose reader shares a phase
with the update (the last layer's weight: dh = dy @ W^T) has two copies picked
by the launch's parity; a phase of nothing but carried casts skips its grid
barrier after the first launch. `capture` records its steps as one chain; a
plain call is a chain of one. The results are the bits of separate launches."""

from __future__ import annotations

import re

import pytest
import torch
from torch.utils import _pytree as pytree

import trainkernel
from trainkernel import pipeline
from trainkernel.backend.cuda_target import BodyPrinter, CudaPrinter
from trainkernel.dialects import sched, tile
from trainkernel.ir import parse_module
from trainkernel.util import align_up
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import _workload
from _variants import suite_source as _source

# Each switch against the target before the flips (test_measured_defaults.py: on).
pytestmark = pytest.mark.usefixtures("before_steps_69_83")

FIRST = "if (tk_first)  // a carried cast"
GUARDED_BARRIER = "if (tk_first) {  // the phase's casts run in a chain's first launch alone"
CARRIED_STORE = re.compile(r"if \(tk_more\) (t\d+\w*)\[")
# Grid kernels of shapes the suite's steps do not have (resident off): odd widths, three layers.
ODD = WORKLOADS["small"].with_sizes(33, (100, 300, 7))
DEEP = WORKLOADS["small"].with_sizes(64, (128, 192, 96, 10))


def _compiled(name, dtype=torch.bfloat16, inplace=True, engine="auto", build=False):
    w = _workload(name)
    return trainkernel.compile_training(w.make_step(dtype), w.example_args(dtype=dtype), inplace=inplace,
                                        resident="off", gemm_engine=engine, build=build)


def _printer(compiled) -> CudaPrinter:
    kernel = next(op for op in parse_module(compiled.lowered.stages["tile"]).walk() if isinstance(op, tile.KernelOp))
    printer = CudaPrinter(kernel)
    printer.print()
    return printer


def test_small_carries_its_four_weight_casts(target_fields):
    """small's phase 0 casts W1, b1, W2 and b2: all four run in the first launch
    alone and move past the arena's other bytes; W2's cast (read by dh = dy @ W2^T
    in the phase of W2's update) has two copies and its two products an odd pair
    of tensor maps; each update stores the carried cast when another launch follows."""
    off = _compiled("small")
    target_fields(grid_carried_casts=True)
    on = _compiled("small")
    src, printer = on.cuda_source, _printer(on)
    assert src.count(FIRST) == 4 and GUARDED_BARRIER not in src  # y's cast stays: so does the barrier
    assert len(printer.first_only) == 4 and all(isinstance(op, tile.MapOp) for op in printer.first_only)
    copies = sorted(odd is not None for _, odd in printer.cast_offsets.values())
    assert copies == [False, False, False, True]
    arena = off.meta.arena_bytes
    footprint = sum(sched.arena_footprint(v.type) * (1 if odd is None else 2)
                    for v, (_, odd) in printer.cast_offsets.items())
    assert on.meta.arena_bytes == printer.arena_bytes == align_up(arena, sched.ARENA_ALIGNMENT) + footprint
    assert min(even for even, _ in printer.cast_offsets.values()) >= arena
    assert f"tk_arena_bytes() {{ return {on.meta.arena_bytes}LL; }}" in src
    stores = CARRIED_STORE.findall(src)
    assert len(stores) == 4 and sum(s.endswith("_next") for s in stores) == 1
    assert len(printer.alt_maps) == 2  # h @ W2 and dy @ W2^T read the copy of the launch's parity
    assert src.count("&p.maps[tk_parity ? ") == 4
    assert "extern \"C\" int tk_launch_chain(" in src
    assert "return tk_launch_chain(buffers, arena, grid, stream, 0, 1);" in src


@pytest.mark.parametrize("name", ["small", "mlp4", ODD, DEEP])
def test_with_the_batch_casts_fused_phase_0_runs_once(target_fields, monkeypatch, name):
    """With tk-fuse's input_casts (perf-log step 70) the batch's cast joins its reader,
    phase 0 is the weights' casts alone, and its grid barrier runs in the first launch alone."""
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", True)
    target_fields(grid_carried_casts=True)
    src = _compiled(name).cuda_source
    phase0 = src.split("// ---- phase 0")[1].split("// ---- phase 1")[0]
    maps = phase0.count("{ // tile.map")
    assert maps and phase0.count(FIRST) == maps
    assert GUARDED_BARRIER in phase0
    assert len(CARRIED_STORE.findall(src)) == maps  # one update a weight and a bias each


@pytest.mark.parametrize("kwargs", [{"inplace": False}, {"dtype": torch.float32}])
def test_nothing_to_carry_prints_as_before(target_fields, kwargs):
    """Staged state (the kernel writes the new state elsewhere) and fp32 (no casts)
    carry nothing: the same source, no chain."""
    off = _compiled("small", **kwargs).cuda_source
    target_fields(grid_carried_casts=True)
    assert _compiled("small", **kwargs).cuda_source == off


def test_resident_kernels_print_as_before(target_fields):
    off = _source("online")
    target_fields(grid_carried_casts=True)
    assert _source("online") == off


def test_the_mma_engine_reads_the_parity_copy_by_pointer(target_fields):
    target_fields(grid_carried_casts=True)
    src = _compiled("small", engine="mma").cuda_source
    assert "CUtensorMap" not in src and src.count(FIRST) == 4
    assert re.search(r"(t\d+) = \(__nv_bfloat16\*\)\(p\.arena \+ \(tk_parity \? \d+ : \d+\)\);", src)


def test_an_update_that_does_not_store_the_cast_is_an_error(target_fields, monkeypatch):
    """The printer checks that every carried state's updates stored its cast: a
    store path that forgot it would leave the next launch a stale cast."""
    target_fields(grid_carried_casts=True)
    kernel = next(op for op in parse_module(_compiled("small").lowered.stages["tile"]).walk()
                  if isinstance(op, tile.KernelOp))
    original = BodyPrinter.store_outputs

    def forgetful(self, index, env, skip=None):
        self.next_casts = {}
        return original(self, index, env, skip)

    monkeypatch.setattr(BodyPrinter, "store_outputs", forgetful)
    with pytest.raises(Exception, match="stored its carried cast"):
        CudaPrinter(kernel).print()


@needs_nvcc
@pytest.mark.parametrize("name,dtype,engine", [("small", torch.bfloat16, "auto"), (ODD, torch.float16, "auto"),
                                               ("small", torch.bfloat16, "mma")])
def test_builds_for_sm90a(target_fields, monkeypatch, tmp_path, name, dtype, engine):
    """The kernel and its launcher (host code too: tk_launch_chain) compile."""
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", True)
    target_fields(grid_carried_casts=True)
    src = _compiled(name, dtype, engine=engine).cuda_source
    assert "tk_launch_chain" in src
    assert nvcc_errors(src, tmp_path) == ""


def _chained(name, steps: int, seed: int, dtype=torch.bfloat16, replays: int = 1):
    """`steps` steps recorded by capture (one chain of launches) over three batches,
    replayed `replays` times: (the source, the state and the last step's outputs)."""
    w = _workload(name)
    batches = w.make_batches(3, seed=seed, device="cuda", dtype=dtype)
    c = trainkernel.compile_training(w.make_step(dtype), w.example_args(dtype=dtype), resident="off")
    state = w.init_state(device="cuda")
    program = c.capture(state, *batches[0], steps=steps, batches=batches)
    assert program.launches == steps
    for _ in range(replays):
        program.replay()
    torch.cuda.synchronize()
    return c.cuda_source, [t.clone() for t in pytree.tree_leaves((state, tuple(program.outputs)[:-1]))]


def _separate(name, steps: int, seed: int, dtype=torch.bfloat16, period: int | None = None):
    """Steps as separate calls (each a chain of one); step t reads batch t % period % 3
    (a replayed chain of `period` steps starts again from batch 0)."""
    w = _workload(name)
    batches = w.make_batches(3, seed=seed, device="cuda", dtype=dtype)
    c = trainkernel.compile_training(w.make_step(dtype), w.example_args(dtype=dtype), resident="off")
    state = w.init_state(device="cuda")
    for t in range(steps):
        out = c(state, *batches[t % (period or steps) % 3])
    torch.cuda.synchronize()
    return c.cuda_source, [t.clone() for t in pytree.tree_leaves((state, tuple(out)[:-1]))]


@pytest.mark.cuda
@pytest.mark.parametrize("name,dtype", [("small", torch.bfloat16), ("mlp4", torch.bfloat16), (ODD, torch.float16),
                                        (DEEP, torch.bfloat16)])
def test_a_chain_gives_the_bits_of_separate_launches(target_fields, monkeypatch, name, dtype):
    """7 steps in one captured chain (odd: the last launch stores no casts), replayed
    twice (the second replay's first launch casts the state the first left), against
    14 separate calls with the switch off."""
    _, want = _separate(name, 14, 3, dtype, period=7)
    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", True)
    target_fields(grid_carried_casts=True)
    src, got = _chained(name, 7, 3, dtype, replays=2)
    assert "tk_launch_chain" in src
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))


@pytest.mark.cuda
def test_plain_calls_of_a_chained_kernel_give_the_same_bits(target_fields):
    _, want = _separate("small", 4, 2)
    target_fields(grid_carried_casts=True)
    src, got = _separate("small", 4, 2)
    assert "tk_launch_chain" in src
    assert all(torch.equal(a, b) for a, b in zip(got, want))
