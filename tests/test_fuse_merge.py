"""tk-fuse{merge=maps|epilogues}: merging the groups a pointwise op reads keeps
every value. On the harness's optimizer twins, `maps` makes each Adam/AdamW
update one map (the moments' and the parameter's chains merged), `epilogues`
moves it into the gradient's gemm epilogue; both bit-exact against the
unmerged lowering through the sched and tile levels.
"""

from __future__ import annotations

import functools
import os
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from torch.utils import _pytree as pytree
from xdsl.ir import BlockArgument

sys.path.insert(0, os.path.dirname(__file__))

import trainkernel  # noqa: E402
from benchmarks import workloads as bench  # noqa: E402
from test_lowering import only  # noqa: E402
from tk_program_gen import tk_programs  # noqa: E402
from trainkernel.dialects import sched, tile  # noqa: E402
from trainkernel.pipeline import run_passes, stage_passes, state_leaves  # noqa: E402
from trainkernel.sched_interpreter import run_program  # noqa: E402

MODES = ("maps", "epilogues")


def lower_stages(captured, merge: str):
    module = captured.module.clone()
    state = state_leaves(captured)
    out = {}
    for stage in ("tk", "sched", "tile"):
        run_passes(module, stage_passes(stage, True, state=state, merge=merge))
        out[stage] = module.clone()
    return out


def assert_same_bits(before: dict, after: dict, state, batches, name: str) -> None:
    """The sched and tile levels of two lowerings (`lower_stages`), run over
    `batches` from `state`, each feeding back its own state: every result bit for
    bit the same."""
    n_state = len(pytree.tree_leaves(state))
    spec = pytree.tree_structure(state)
    for lv in ("sched", "tile"):
        st = [state, state]
        for i, batch in enumerate(batches):
            got = [run_program(only(stages[lv], sched.ProgramLikeOp), pytree.tree_leaves((s, *batch)))
                   for stages, s in zip((before, after), st)]
            assert len(got[1]) == len(got[0])
            for k, (a, b) in enumerate(zip(*got)):
                assert torch.equal(a.view(-1).view(torch.int32) if a.dtype == torch.float32 else a,
                                   b.view(-1).view(torch.int32) if b.dtype == torch.float32 else b), \
                    f"{name} step {i}, {lv} level, result {k}"
            st = [pytree.tree_unflatten(list(g[len(g) - n_state:]), spec) for g in got]


@functools.cache
def twin(name: str):
    w = bench.WORKLOADS[name]
    step = bench.workload_step(w, torch.bfloat16)
    state, batches = bench.make_problem(w, compute_dtype=torch.bfloat16, n_batches=3)
    captured = trainkernel.capture(step, (state, *batches[0]))
    return step, state, batches, captured


def counts(kernel: tile.KernelOp) -> dict[str, int]:
    names = [op.name + (f" {op.scope.data}" if isinstance(op, tile.SyncOp) else "") for op in kernel.block.ops]
    return {n: names.count(n) for n in set(names)}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["online-adam", "classification-adamw-ce", "mlp4-adamw-ce"])
def test_merged_groups_give_the_same_bits(name, mode):
    """Three steps through the sched and tile levels, merged and as before, each
    feeding back its own state: every result bit for bit the same (fusion moves
    ops between kernels' stages, never changes what one computes). The levels
    against eager are test_lowering's and test_trajectories' business."""
    step, state, batches, captured = twin(name)
    stages = {m: lower_stages(captured, m) for m in ("none", mode)}
    assert_same_bits(stages["none"], stages[mode], state, batches, name)
    # and the step is one eager would take: the new state within float32 rounding of eager's
    want = pytree.tree_leaves(step(state, *batches[0]))
    first = run_program(only(stages[mode]["tile"], sched.ProgramLikeOp), pytree.tree_leaves((state, *batches[0])))
    for g, e in zip(first, want):
        torch.testing.assert_close(g.float(), e.float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, maps, syncs", [
    # (maps, barriers) without the merge, with merge=maps, with merge=epilogues, for the twins of the harness
    ("online-adam", (15, 11, 6), (6, 5, 4)),
    ("classification-adamw-ce", (26, 18, 14), (11, 10, 10)),
    ("mlp4-adamw-ce", (42, 26, 18), (15, 13, 12)),
])
def test_the_optimizer_updates_merge(before_steps_69_83, name, maps, syncs):
    """The counts of each merge mode alone (tk-fuse's input casts off)."""
    *_, captured = twin(name)
    kernels = [only(lower_stages(captured, m)["tile"], tile.KernelOp) for m in ("none", *MODES)]
    for kernel, n_maps, n_syncs in zip(kernels, maps, syncs):
        c = counts(kernel)
        assert c.get("tile.map", 0) == n_maps and c.get("tile.sync block", 0) + c.get("tile.sync grid", 0) == n_syncs, c
    none, by_maps, by_epilogues = kernels
    # maps: each AdamW parameter update is one map writing the parameter and both moments ...
    def updates(kernel):  # maps writing three of the kernel's arguments in place: the state, the moments
        return [op for op in kernel.block.ops if isinstance(op, tile.MapOp) and len(op.outs) == 3
                and all(isinstance(o, BlockArgument) for o in op.outs)]

    n_params = 2 * (len(bench.WORKLOADS[name].widths) - 1)  # a weight and a bias a layer
    assert len(updates(by_maps)) == n_params and not updates(none)
    # ... and no gemm takes a moment into its epilogue (that is the epilogues mode)
    assert not any(isinstance(op, tile.GemmOp) and len(op.outs) >= 3 for op in by_maps.block.ops)
    assert any(isinstance(op, tile.GemmOp) and len(op.outs) >= 3 for op in by_epilogues.block.ops)


def test_the_pipeline_merges_maps_by_default():
    """The pipeline asks tk-fuse for merge=maps (and input_casts, pipeline.
    FUSE_INPUT_CASTS); the pass alone merges nothing."""
    assert stage_passes("tk").endswith(",tk-fuse{merge=maps input_casts=true}")
    assert stage_passes("tk", merge="none").endswith(",tk-fuse{input_casts=true}")
    from trainkernel.passes.tk_fuse import TkFusePass

    assert TkFusePass().merge == "none"
    with pytest.raises(ValueError, match="merge must be one of none, maps, epilogues"):
        stage_passes("tk", merge="yes")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=tk_programs(addmm=False))
def test_merging_keeps_the_values_of_generated_programs(program):
    """Random tk programs: after decomposition, tk-fuse with and without the merge
    interpret to the same bits (tk.fused regions run their ops in order)."""
    from trainkernel.interpreter import interpret
    from trainkernel.ir import parse_module, print_module

    text = print_module(program.module)
    base = parse_module(text)
    run_passes(base, "canonicalize,tk-decompose,tk-legalize-masks,canonicalize,cse,dce")
    outs = []
    for spec in ("tk-fuse", "tk-fuse{merge=maps}", "tk-fuse{merge=epilogues}"):
        module = base.clone()
        run_passes(module, spec)
        outs.append(interpret(module, *program.args))
    for a, *others in zip(*outs):
        for b in others:
            assert torch.equal(a, b) or (a.isnan() == b.isnan()).all() and torch.equal(a[~a.isnan()], b[~b.isnan()]), text
