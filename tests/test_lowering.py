"""The lowering keeps the step's values: sched and tile levels vs eager PyTorch.

For every workload of `trainkernel.workloads` (reduced sizes, see CPU_SIZES)
and the odd shapes of the GPU suite (B=33, I=100, H=300, O=7; a batch of 1),
x every compute dtype (f32, bf16, f16) x inplace {True, False}: capture the SGD
step, run the compile pipeline's stages (`run_passes(stage_passes(stage,
state=state_leaves(captured)))` for tk, sched and tile, exactly as
`trainkernel.pipeline.lower` does) and execute the `sched.program` and the
`tile.kernel` with `trainkernel.sched_interpreter.run_program` for 3 steps,
each level feeding its own updated parameters into its next step, on fresh
batches. Every loss, gradient and new parameter is compared with eager
`step(*args)` at every step.

Tolerance: none (bit-identical, NaN == NaN). The buffer interpreter runs the
`tk` bodies with the same PyTorch CPU ops eager runs, in the same order, so
the only way to differ is a lowering bug: a value read before it is written
(the arena starts as NaN bytes), a read of a buffer some other compute of the
same phase overwrites (the interpreter evaluates a phase as concurrent: every
read sees memory as it was when the phase began), an in-place update that
overwrites a parameter still to be read, or two live buffers sharing arena
bytes. Two negative controls below show that such bugs do change the numbers.

Steps whose OLD parameter value is read late (after the new value exists) are
checked in-place too, and their sched IR must keep a `sched.commit`.
"""

from __future__ import annotations

import functools

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.func import grad_and_value
from torch.utils import _pytree as pytree
from xdsl.dialects import builtin
from xdsl.dialects.builtin import IntAttr

import trainkernel
from trainkernel.dialects import sched, tile
from trainkernel.ir import parse_module, print_module
from trainkernel.pipeline import run_passes, stage_passes, state_leaves
from trainkernel.sched_interpreter import run_program
from trainkernel.workloads import COMPUTE_DTYPES, WORKLOADS, Workload, mse_loss

STEPS = 3

# CPU test sizes (B, in, hidden..., out); the GPU sizes are in WORKLOADS.
CPU_SIZES: dict[str, Workload] = {
    "tiny": WORKLOADS["tiny"],  # (16, 32, 64, 8): full size
    "online": WORKLOADS["online"].scaled(1 / 2),  # (32, 64, 128, 8)
    "small": WORKLOADS["small"].scaled(1 / 8),  # (32, 64, 128, 8)
    "medium": WORKLOADS["medium"].scaled(1 / 16),  # (64, 64, 256, 16)
    "classification": WORKLOADS["classification"].scaled(1 / 4),  # (16, 64, 128, 10): classes kept
    "mlp4": WORKLOADS["mlp4"].scaled(1 / 4),  # (32, 64, 64, 64, 64, 64): 4 layers kept
}

# Shapes that are multiples of no tile size (the GPU suite's odd shapes).
ODD_SHAPES: dict[str, Workload] = {
    "odd-33x100x300x7": WORKLOADS["tiny"].with_sizes(33, (100, 300, 7)),
    "batch1": WORKLOADS["tiny"].with_sizes(1, (32, 64, 8)),
    "classification-batch1": WORKLOADS["classification"].with_sizes(1, (64, 128, 10)),
}

CASES = {**CPU_SIZES, **ODD_SHAPES}
DTYPES = list(COMPUTE_DTYPES)  # f32, bf16, f16


# --------------------------------------------------------------------- helpers


def assert_bit_equal(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    if not want.is_floating_point():
        assert torch.equal(got, want), what
        return
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[want.element_size()]
    g, w = got.contiguous(), want.contiguous()
    same = (g.view(bits) == w.view(bits)) | (g.isnan() & w.isnan())
    if not bool(same.all()):
        bad = (~same).nonzero()[:4].tolist()
        raise AssertionError(
            f"{what}: {int((~same).sum())} of {same.numel()} elements differ, e.g. at {bad}: "
            f"got {g[~same][:4].tolist()}, want {w[~same][:4].tolist()}"
        )


def lower_stages(captured, inplace: bool) -> dict[str, builtin.ModuleOp]:
    """The captured module after each stage, as `pipeline.lower` runs them."""
    module = captured.module.clone()
    state = state_leaves(captured)
    out: dict[str, builtin.ModuleOp] = {}
    for stage in ("tk", "sched", "tile"):
        run_passes(module, stage_passes(stage, inplace, state=state))
        out[stage] = module.clone()
    return out


def only(module: builtin.ModuleOp, kind):
    found = [op for op in module.ops if isinstance(op, kind)]
    assert len(found) == 1, f"expected one {kind.__name__}, found {len(found)}"
    return found[0]


@functools.cache
def captured_sgd(case: str, dtype: str):
    w = CASES[case]
    step = w.make_step(dtype)
    return w, step, trainkernel.capture(step, w.example_args("meta", COMPUTE_DTYPES[dtype]))


@functools.cache
def stages_of(case: str, dtype: str, inplace: bool):
    _, _, cap = captured_sgd(case, dtype)
    return lower_stages(cap, inplace)


def run_trajectory(step, stages, params, batches, n_state: int, levels=("sched", "tile")):
    """Eager and each level, `len(batches)` steps, each feeding back its own state."""
    state = {"eager": params, **{lv: params for lv in levels}}
    for i, (x, y) in enumerate(batches):
        want = step(state["eager"], x, y)
        want_flat, want_spec = pytree.tree_flatten(want)
        names = [f"result {k}" for k in range(len(want_flat))]
        for lv in levels:
            flat_in, _ = pytree.tree_flatten((state[lv], x, y))
            got = run_program(only(stages[lv], sched.ProgramLikeOp), flat_in)
            assert len(got) == len(want_flat)
            for name, g, e in zip(names, got, want_flat):
                assert_bit_equal(g, e, f"step {i}, {lv} level, {name}")
            state[lv] = tuple(got[len(got) - n_state :])
        state["eager"] = tuple(pytree.tree_leaves(want)[-n_state:])


# --------------------------------------------------------------- every workload


def test_every_workload_is_covered():
    assert set(CPU_SIZES) == set(WORKLOADS)
    for name, w in CPU_SIZES.items():
        assert w.layers == WORKLOADS[name].layers and w.task == WORKLOADS[name].task
    assert ODD_SHAPES["odd-33x100x300x7"].sizes == (33, 100, 300, 7)
    assert ODD_SHAPES["batch1"].batch == 1


@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "outofplace"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_sched_and_tile_match_eager(case, dtype, inplace):
    w, step, _ = captured_sgd(case, dtype)
    stages = stages_of(case, dtype, inplace)
    params = w.init_params(seed=1)
    batches = w.make_batches(STEPS, seed=2, dtype=COMPUTE_DTYPES[dtype])
    run_trajectory(step, stages, params, batches, n_state=len(params))


@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "outofplace"])
@pytest.mark.parametrize("case", ["tiny", "odd-33x100x300x7", "mlp4"])
def test_stage_structure(case, inplace):
    """What the stages promise, checked on real steps (bf16): state results are
    the parameter buffers themselves in place and output buffers otherwise; no
    commit without inplace; phases separated by single barriers, one tile.sync
    per barrier; every compute became one tile op."""
    w, _, cap = captured_sgd(case, "bf16")
    stages = stages_of(case, "bf16", inplace)
    program = only(stages["sched"], sched.ProgramOp)
    kernel = only(stages["tile"], tile.KernelOp)
    n_state = len(w.param_shapes())
    n_in = program.num_inputs.data
    results = program.result_args
    state_results = results[-n_state:]
    commits = [op for op in program.walk() if isinstance(op, sched.CommitOp)]
    if inplace:
        assert state_results == tuple(range(n_state))
    else:
        assert all(r >= n_in for r in state_results)
        assert not commits
        # Parameters are only ever read.
        for op in program.walk():
            if isinstance(op, sched.ComputeOp):
                assert all(sched.root_buffer(v) not in program.block.args[:n_in] for v in op.outs)
    # Structure: phase (barrier phase)*.
    top = [op for op in program.block.ops if isinstance(op, sched.PhaseOp | sched.BarrierOp)]
    assert top and isinstance(top[0], sched.PhaseOp) and isinstance(top[-1], sched.PhaseOp)
    for a, b in zip(top, top[1:]):
        assert isinstance(a, sched.PhaseOp) != isinstance(b, sched.PhaseOp)
    assert all(list(p.body.block.ops) for p in sched.phases(program)), "empty phase left behind"
    barriers = [op for op in top if isinstance(op, sched.BarrierOp)]
    syncs = [op for op in kernel.block.ops if isinstance(op, tile.SyncOp)]
    assert len(syncs) == len(barriers)
    n_work = sum(1 for p in sched.phases(program) for _ in p.body.block.ops)
    assert n_work == sum(1 for op in kernel.block.ops if isinstance(op, tile.TileWorkOp))
    if kernel.cluster is None:
        assert kernel.arena_bytes.data == program.arena_bytes.data >= 0
    else:  # resident: every temporary in shared memory, no global workspace
        assert kernel.arena_bytes.data == 0
        assert not any(isinstance(op, sched.BufferOp) for op in kernel.block.ops)
    # Every stage prints and parses back to the same text.
    for stage in ("tk", "sched", "tile"):
        text = print_module(stages[stage])
        assert print_module(parse_module(text)) == text
        assert print_module(parse_module(print_module(stages[stage], generic=True))) == text


# ------------------------------------------------------ old values read late


def _late_read_step(compute_dtype: torch.dtype, lr: float = 1e-3, wd: float = 1e-2):
    """SGD with weight decay, plus two extra results that read the OLD W1 after
    its gradient (hence its new value) exists: a late elementwise read and a
    late matmul read (the batch shifted by the gradient's mean, re-projected by
    the old W1). Weight decay reads the old value elementwise in the update
    itself (safe in place)."""

    def loss_fn(params, x, y):
        return mse_loss(params, x, y, compute_dtype)

    def step(params, x, y):
        grads, loss = grad_and_value(loss_fn)(params, x, y)
        g1 = grads[0]
        late_dot = (params[0] * g1.sum()).sum()
        cd = compute_dtype
        probe = ((x.to(cd) + g1.mean().to(cd)) @ params[0].to(cd)).to(torch.float32).sum()
        new = tuple(p - lr * (g + wd * p) for p, g in zip(params, grads))
        return loss, late_dot, probe, grads, new

    step.__name__ = "late_read"
    return step


@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "outofplace"])
@pytest.mark.parametrize("case", ["tiny", "odd-33x100x300x7"])
def test_old_parameter_read_late(case, inplace):
    w = CASES[case]
    step = _late_read_step(torch.float32)
    cap = trainkernel.capture(step, w.example_args("meta"))
    stages = lower_stages(cap, inplace)
    program = only(stages["sched"], sched.ProgramOp)
    commits = [op for op in program.walk() if isinstance(op, sched.CommitOp)]
    if inplace:
        # W1 (argument 0) is read after its new value is computed: staged and
        # committed after the last reader, in a phase of its own or later.
        w1 = program.block.args[0]
        assert [c for c in commits if c.target is w1], print_module(stages["sched"])
        phase_of = {op: i for i, p in enumerate(sched.phases(program)) for op in p.body.block.ops}
        for c in commits:
            readers = [
                op
                for op in phase_of
                if op is not c and any(sched.root_buffer(v) is c.target for v in sched.buffers_read(op))
            ]
            assert all(phase_of[r] < phase_of[c] for r in readers)
    else:
        assert not commits
    params = w.init_params(seed=3)
    batches = w.make_batches(STEPS, seed=4)
    run_trajectory(step, stages, params, batches, n_state=len(params))


def test_late_read_in_low_precision_stays_exact():
    """bf16: the late matmul reads the bf16 copy of W1 (made once, early), so
    the update may go in place; values must not change either way."""
    w = CASES["tiny"]
    step = _late_read_step(torch.bfloat16)
    cap = trainkernel.capture(step, w.example_args("meta", torch.bfloat16))
    stages = lower_stages(cap, True)
    params = w.init_params(seed=5)
    run_trajectory(step, stages, params, w.make_batches(STEPS, seed=6, dtype=torch.bfloat16), len(params))


def test_dropping_a_needed_commit_changes_the_numbers():
    """Negative control: write W1 in place despite its late readers (what an
    unsound sched-inplace-state would do) and the interpreter sees the damage."""
    w = CASES["tiny"]
    step = _late_read_step(torch.float32)
    cap = trainkernel.capture(step, w.example_args("meta"))
    stages = lower_stages(cap, True)
    module = stages["sched"].clone()
    program = only(module, sched.ProgramOp)
    commit = next(c for c in program.walk() if isinstance(c, sched.CommitOp) and c.target is program.block.args[0])
    staged = commit.source
    commit.detach()
    commit.erase()
    staged.replace_all_uses_with(program.block.args[0])
    staged.owner.detach()
    staged.owner.erase()
    module.verify()  # still a valid program: no phase hazard, only a late read
    params = w.init_params(seed=3)
    ((x, y),) = w.make_batches(1, seed=4)
    want = pytree.tree_leaves(step(params, x, y))
    got = run_program(program, pytree.tree_leaves((params, x, y)))
    assert any(not torch.equal(g, e) for g, e in zip(got, want))


def test_unsafe_arena_reuse_changes_the_numbers():
    """Negative control: put every arena buffer at offset 0 (reuse with
    overlapping live ranges) and the interpreter's real byte arena shows it."""
    w = CASES["tiny"]
    _, step, _ = captured_sgd("tiny", "bf16")
    module = stages_of("tiny", "bf16", True)["sched"].clone()
    program = only(module, sched.ProgramOp)
    for op in program.block.ops:
        if isinstance(op, sched.BufferOp):
            op.properties["offset"] = IntAttr(0)
    params = w.init_params(seed=1)
    ((x, y),) = w.make_batches(1, seed=2, dtype=torch.bfloat16)
    want = pytree.tree_leaves(step(params, x, y))
    got = run_program(program, pytree.tree_leaves((params, x, y)))
    assert any(not torch.equal(g, e) for g, e in zip(got, want))


# ------------------------------------------------------------- random shapes


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batch=st.integers(1, 40),
    widths=st.lists(st.integers(1, 70), min_size=2, max_size=4),
    dtype=st.sampled_from(DTYPES),
    inplace=st.booleans(),
)
def test_random_shapes_match_eager(batch, widths, dtype, inplace):
    w = WORKLOADS["tiny"].with_sizes(batch, widths)
    step = w.make_step(dtype)
    cap = trainkernel.capture(step, w.example_args("meta", COMPUTE_DTYPES[dtype]))
    stages = lower_stages(cap, inplace)
    params = w.init_params(seed=7)
    run_trajectory(step, stages, params, w.make_batches(2, seed=8, dtype=COMPUTE_DTYPES[dtype]), len(params))


# ------------------------------------------------------------ known bugs


def _lower_text(text: str, passes: str) -> builtin.ModuleOp:
    module = parse_module(text)
    run_passes(module, passes)
    return module


def test_reshape_of_an_already_returned_value_is_written():
    text = """
    func.func @f(%x: tensor<2x4xf32>) -> (tensor<1x4xf32>, tensor<4xf32>) {
      %s = tk.sum %x axes [0] keepdim : tensor<2x4xf32> -> tensor<1x4xf32>
      %r = tk.reshape %s : tensor<1x4xf32> -> tensor<4xf32>
      func.return %s, %r : tensor<1x4xf32>, tensor<4xf32>
    }
    """
    module = _lower_text(text, "tk-to-sched,sched-allocate")
    x = torch.arange(8.0).reshape(2, 4)
    got = run_program(module, [x])
    assert_bit_equal(got[0], x.sum(0, keepdim=True), "result 0")
    assert_bit_equal(got[1], x.sum(0), "result 1")


def test_inplace_state_sees_a_parameter_reaching_a_matmul_through_a_pointwise_op():
    text = """
    sched.program @p(%w: memref<4x4xf32>, %g: memref<4x4xf32>) inputs 2 results [0] arena -1 {
      %s = sched.buffer : memref<4x4xf32>
      sched.phase {
        sched.compute ins(%w, %g : memref<4x4xf32>, memref<4x4xf32>) outs(%s : memref<4x4xf32>) {
        ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
          %n = tk.neg %a : tensor<4x4xf32>
          %m = tk.matmul %n, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
          %r = tk.sub %a, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
          tk.yield %r : tensor<4x4xf32>
        }
      }
      sched.barrier grid
      sched.phase {
        sched.commit %s to %w : memref<4x4xf32>
      }
    }
    """
    module = _lower_text(text, "sched-inplace-state")
    assert any(isinstance(op, sched.CommitOp) for op in module.walk()), print_module(module)


def test_sched_allocate_on_a_tile_kernel():
    module = stages_of("tiny", "bf16", True)["tile"].clone()
    arena = only(module, tile.KernelOp).arena_bytes.data
    run_passes(module, "sched-allocate")  # re-allocating the same liveness: same or better
    assert 0 <= only(module, tile.KernelOp).arena_bytes.data <= arena


def test_block_barrier_in_a_multi_block_kernel():
    text = """
    sched.program @p(%x: memref<4096xf32>, %o: memref<4096xf32>) inputs 1 results [1] arena 16384 {
      %t = sched.buffer offset 0 : memref<4096xf32>
      sched.phase {
        sched.compute ins(%x : memref<4096xf32>) outs(%t : memref<4096xf32>) {
        ^bb0(%a: tensor<4096xf32>):
          %e = tk.exp %a : tensor<4096xf32>
          tk.yield %e : tensor<4096xf32>
        }
      }
      sched.barrier block
      sched.phase {
        sched.compute ins(%t : memref<4096xf32>) outs(%o : memref<4096xf32>) {
        ^bb0(%a: tensor<4096xf32>):
          %r = tk.reshape %a : tensor<4096xf32> -> tensor<64x64xf32>
          %u = tk.transpose %r perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
          %v = tk.reshape %u : tensor<64x64xf32> -> tensor<4096xf32>
          tk.yield %v : tensor<4096xf32>
        }
      }
    }
    """
    module = _lower_text(text, "sched-to-tile{grid=8}")
    kernel = only(module, tile.KernelOp)
    assert kernel.grid > 1
    assert all(s.scope.data == "grid" for s in kernel.block.ops if isinstance(s, tile.SyncOp))


def test_lower_verifies_each_stage_and_opt_each_pass(monkeypatch):
    """compile_training's `lower` verifies the module after each stage's last pass
    (pipeline.VERIFY_EACH_PASS off: per-pass verification of the tile kernel's contract was
    ~40% of mlp4-adamw-ce's lowering), `run_passes` by default after every pass: a pass that
    leaves invalid IR is caught either way, at the pass or at the stage's end; both ways give
    the same kernel."""
    from xdsl.utils.exceptions import VerifyException

    from trainkernel import pipeline
    from trainkernel.dialects import tile
    from trainkernel.pipeline import lower, run_passes

    w = WORKLOADS["small"]
    captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta"))
    assert pipeline.VERIFY_EACH_PASS is False
    by_stage = lower(captured)
    monkeypatch.setattr(pipeline, "VERIFY_EACH_PASS", True)
    assert lower(captured).cuda_source == by_stage.cuda_source
    # A tile kernel made invalid (a block barrier between a gemm and its reader in a grid
    # kernel): caught before the first pass and, without per-pass checks, after the last.
    module = captured.module.clone()
    for stage in ("tk", "sched", "tile"):
        run_passes(module, pipeline.stage_passes(stage, state=pipeline.state_leaves(captured)))
    kernel = next(op for op in module.walk() if isinstance(op, tile.KernelOp))
    sync = next(op for op in kernel.block.ops if isinstance(op, tile.SyncOp))
    sync.properties["scope"] = type(sync.scope)("block")
    for each in (True, False):
        with pytest.raises(VerifyException, match="row-local region"):
            run_passes(module, "tile-reductions-first", verify_each=each)
