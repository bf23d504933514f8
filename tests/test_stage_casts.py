"""tile-stage-casts (trainkernel/passes/tile_stage_casts.py) and tile.smem_cast: a
resident kernel's phase-0 maps that only cast a staged input become homes the
prologue fills with the cast. What the pass folds and leaves, the verifier's rule
for cast homes, the same bits through the tile interpreter (one block and a
cluster), the printed prologue and step loop. Off by default: on the H200 it made
every resident step 3-9 us slower (perf-log step 45: each cast home's loads wait
before the next home's are issued)."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree
from xdsl.dialects.builtin import MemRefType
from xdsl.utils.exceptions import VerifyException

import trainkernel
from trainkernel import target as T
from trainkernel.dialects import tile
from trainkernel.pipeline import stage_passes
from trainkernel.sched_interpreter import run_program
from trainkernel.tools.cli import problem
from trainkernel.workloads import TWINS, WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _tile_stage import tile_kernel

# Pinned to the target before the switches of perf-log steps 70, 73 and 75-83
# were flipped (test_measured_defaults.py): tk-fuse's input casts leave y's cast
# no map of its own, the form these tests count.
pytestmark = pytest.mark.usefixtures("before_steps_69_83")


@pytest.fixture
def casts_on(variant):
    return variant("stage_casts", stage_casts=True).name


def _captured(name: str):
    w = {**WORKLOADS, **TWINS}[name]
    _, batches = problem(w, torch.bfloat16, "cpu")
    args = (w.init_state(), *batches[0])
    return trainkernel.capture(w.make_step(torch.bfloat16), args), args


def test_off_by_default_and_run_after_tile_resident():
    assert T.DEFAULT.stage_casts is False
    assert "tile-resident{mode=auto},tile-stage-casts," in stage_passes("tile")


@pytest.mark.parametrize("name", ["tiny", "online"])
def test_every_cast_of_a_staged_input_folds(casts_on, name):
    """tiny (one block) and online (a cluster of 16), bf16 batches: phase 0 casts W1, b1,
    W2, b2 down to bf16 and y up to f32; each written home becomes a tile.smem_cast, the
    maps go, and so does y's bf16 home (nothing else reads it); the state's fp32 homes
    stay (the updates read the old values); the first barrier goes with the phase."""
    captured, _ = _captured(name)
    before = tile_kernel(captured)
    after = tile_kernel(captured, casts_on)
    cast_homes = [op for op in after.block.ops if isinstance(op, tile.SmemCastOp)]
    assert sorted(op.source.index for op in cast_homes) == [0, 1, 2, 3, 5]
    assert len(after.phases()) == len(before.phases()) - 1
    assert not [op for op in after.phases()[0] if isinstance(op, tile.MapOp)]
    staged = {op.source.index for op in after.block.ops if isinstance(op, tile.SmemOp) and op.source is not None}
    assert staged == {0, 1, 2, 3, 4}  # y's own home is gone; x (bf16) needs no cast
    homes = lambda k: [op for op in k.block.ops if isinstance(op, tile.Home)]  # noqa: E731
    assert len(homes(after)) == len(homes(before)) - 1


@pytest.mark.parametrize("name", ["tiny", "online", "online-adam"])
def test_the_tile_interpreter_gives_the_same_bits(casts_on, name):
    """The cast homes hold what the maps wrote: with and without the pass, bit-identical
    results (online: the cluster's block-by-block interpreter)."""
    captured, args = _captured(name)
    outs = [run_program(tile_kernel(captured, t), pytree.tree_leaves(args)) for t in (casts_on, None)]
    for a, b in zip(*outs):
        assert a.dtype == b.dtype and torch.equal(a.flatten().view(torch.uint8), b.flatten().view(torch.uint8))


def test_the_verifier_rejects_a_write_to_a_cast_home(casts_on):
    """Nothing but the prologue fills a cast home: an op that writes one is an error."""
    captured, _ = _captured("tiny")
    kernel = tile_kernel(captured, casts_on)
    casts = {op.result.type: op for op in kernel.block.ops if isinstance(op, tile.SmemCastOp)}
    op, i = next((op, i) for op in kernel.block.ops if isinstance(op, tile.TileWorkOp)
                 for i, v in enumerate(op.outs) if v.type in casts)
    op.operands[len(op.ins) + i] = casts[op.outs[i].type].result  # now writes y's cast home (16x8 f32)
    with pytest.raises(VerifyException, match="writes a cast home"):
        kernel.verify()


def test_the_cast_home_op_checks_its_types(casts_on):
    captured, _ = _captured("tiny")
    kernel = tile_kernel(captured, casts_on)
    cast = next(op for op in kernel.block.ops if isinstance(op, tile.SmemCastOp) and op.source.index == 1)
    same = tile.SmemCastOp(cast.source.type, 0, -1, cast.source)
    kernel.block.insert_op_before(same, cast)
    with pytest.raises(VerifyException, match="another element type"):
        same.verify()
    output = kernel.block.args[kernel.num_inputs.data + 1]  # W1's gradient: an output, not an input
    of_output = tile.SmemCastOp(MemRefType(cast.result.type.get_element_type(), output.type.get_shape()), 0, -1, output)
    kernel.block.insert_op_before(of_output, cast)
    with pytest.raises(VerifyException, match="must stage an input"):
        of_output.verify()


def test_the_printer_stages_cast_homes_together_and_restages_them_every_step(monkeypatch, casts_on):
    """tiny's kernel: after the copies, one block loads every cast home (tk::CastRows, each
    sized to its loads a thread) before converting any, so the homes wait one latency
    together (perf-log step 45); every later step does it again (never written through:
    the update stores W1 to global memory, which the next step casts again), while W1's
    fp32 home is kept and written through."""
    import re

    monkeypatch.setitem(T.TARGETS, T.DEFAULT.name, T.TARGETS[casts_on])
    w = WORKLOADS["tiny"]
    src = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source
    later = src[src.index("  if (!tk_first) {"): src.index("  } else {")]
    prologue = src[src.index("  // ---- prologue"): src.index("tk::stage_wait();")]
    for part in (prologue, later):
        block = part[part.index("{ // cast homes"):]
        assert "tk::stage_rows" not in block  # the copies come first
        loads = [m.start() for m in re.finditer(r"tk_c\d+\.load\(", block)]
        stores = [m.start() for m in re.finditer(r"tk_c\d+\.store\(", block)]
        assert len(loads) == len(stores) == 5 and max(loads) < min(stores)
    # x: 16 x 32 fp32, 128 16-byte loads over 256 threads: one a thread; W1: 32 x 64, 512: two.
    assert re.search(r"tk::CastRows<float, 1> tk_c\d+;\n\s+tk_c\d+\.load\(b4,", prologue)
    assert re.search(r"tk::CastRows<float, 2> tk_c\d+;\n\s+tk_c\d+\.load\(b0,", prologue)
    assert "if (tk_more) s" in src  # the fp32 state homes are kept, written through


@needs_nvcc
@pytest.mark.parametrize("name", ["tiny", "online-adam"])
def test_kernels_with_cast_homes_compile_for_sm90(monkeypatch, casts_on, tmp_path, name):
    """Off by default, so the suite's nvcc test never sees tk::CastRows: compile one block
    and one cluster (fp32 and bf16 sources) with the pass on."""
    monkeypatch.setitem(T.TARGETS, T.DEFAULT.name, T.TARGETS[casts_on])
    w = {**WORKLOADS, **TWINS}[name]
    src = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source
    assert "tk::CastRows<" in src
    assert nvcc_errors(src, tmp_path) == ""
