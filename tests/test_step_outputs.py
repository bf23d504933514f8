"""What a step may return: a tuple whose LAST element is the new state.

`(loss, new_state)`, `(loss, grads, new_state)`, `(loss, metrics, new_state)`:
everything before the new state is returned as computed (any pytree), and the
state may carry more than parameters (momentum buffers, a 0-d step counter).
Each kind is captured, run by the CPU interpreter at the tk level and, after
the compile pipeline, at the sched and tile levels, feeding its own new state
back for several steps; every result is compared bit for bit with eager
PyTorch. `compile_training(..., build=False)` accepts each kind through the
real frontend and pipeline, and the kernel it prints compiles with nvcc.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from torch.func import grad_and_value
from torch.utils import _pytree as pytree
from xdsl.dialects import func

import trainkernel
from trainkernel.dialects import sched
from trainkernel.pipeline import run_passes, stage_passes, state_leaves
from trainkernel.sched_interpreter import run_program

HAVE_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").is_file()

STEPS = 4
B, I, H, O = 8, 12, 16, 3


def _mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = torch.relu(x @ w1 + b1)
    return ((h @ w2 + b2 - y) ** 2).mean()


def sgd_loss_new(params, x, y):
    grads, loss = grad_and_value(_mlp_loss)(params, x, y)
    return loss, tuple(p - 0.05 * g for p, g in zip(params, grads))


def momentum_step(state, x, y):
    """SGD with momentum: the state is (params, momentum buffers)."""
    params, bufs = state
    grads, loss = grad_and_value(_mlp_loss)(params, x, y)
    new_bufs = tuple(0.9 * b + g for b, g in zip(bufs, grads))
    new_params = tuple(p - 0.05 * b for p, b in zip(params, new_bufs))
    return loss, grads, (new_params, new_bufs)


def counter_step(state, x, y):
    """A dict state with a 0-d step counter that decays the learning rate, and
    a metrics dict before the new state."""
    params, t = state["params"], state["step"]
    grads, loss = grad_and_value(_mlp_loss)(params, x, y)
    t = t + 1
    lr = 0.1 / (1.0 + 0.5 * t)
    new_params = [p - lr * g for p, g in zip(params, grads)]
    gnorm = sum((g * g).sum() for g in grads)
    return loss, {"grad_sq": gnorm, "lr": lr}, {"params": new_params, "step": t}


def _params(seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = [(I, H), (H,), (H, O), (O,)]
    return tuple(torch.randn(s, generator=g) * 0.3 for s in shapes)


def _state(kind, seed=0):
    p = _params(seed)
    if kind == "loss_new":
        return p
    if kind == "momentum":
        return (p, tuple(torch.zeros_like(t) for t in p))
    return {"params": list(p), "step": torch.zeros(())}


STEPS_BY_KIND = {"loss_new": sgd_loss_new, "momentum": momentum_step, "counter": counter_step}


def _batches(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(B, I, generator=g), torch.randn(B, O, generator=g)) for _ in range(n)]


def _new_state(out):
    return out[-1]


def _assert_equal_trees(got, want, what):
    g_leaves, g_spec = pytree.tree_flatten(got)
    w_leaves, w_spec = pytree.tree_flatten(want)
    assert g_spec == w_spec, what
    for k, (a, b) in enumerate(zip(g_leaves, w_leaves)):
        assert a.dtype == b.dtype and a.shape == b.shape, (what, k)
        assert torch.equal(a, b), f"{what}: leaf {k} differs by {(a - b).abs().max().item():g}"


@pytest.mark.parametrize("kind", list(STEPS_BY_KIND))
def test_interpreter_follows_eager(kind):
    step = STEPS_BY_KIND[kind]
    state = _state(kind)
    x0, y0 = _batches(1)[0]
    captured = trainkernel.capture(step, (state, x0, y0))
    eager_state = interp_state = state
    for t, (x, y) in enumerate(_batches(STEPS)):
        want = step(eager_state, x, y)
        got = trainkernel.interpret(captured, interp_state, x, y)
        _assert_equal_trees(got, want, f"step {t}")
        assert not torch.equal(pytree.tree_leaves(_new_state(got))[0], pytree.tree_leaves(interp_state)[0])
        eager_state, interp_state = _new_state(want), _new_state(got)


def _lower(captured, inplace):
    module = captured.module.clone()
    state = state_leaves(captured)
    levels = {}
    for stage in ("tk", "sched", "tile"):
        run_passes(module, stage_passes(stage, inplace, state=state))
        levels[stage] = module.clone()
    return levels


@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "staged"])
@pytest.mark.parametrize("kind", list(STEPS_BY_KIND))
def test_sched_and_tile_levels_follow_eager(kind, inplace):
    step = STEPS_BY_KIND[kind]
    state = _state(kind)
    x0, y0 = _batches(1)[0]
    captured = trainkernel.capture(step, (state, x0, y0))
    levels = _lower(captured, inplace)
    n_state = len(pytree.tree_leaves(state))
    state_spec = pytree.tree_structure(state)
    for lv in ("sched", "tile"):
        program = next(op for op in levels[lv].ops if isinstance(op, sched.ProgramLikeOp))
        eager_state = lv_state = state
        for t, (x, y) in enumerate(_batches(STEPS)):
            want = step(eager_state, x, y)
            got = run_program(program, pytree.tree_leaves((lv_state, x, y)))
            want_flat = pytree.tree_leaves(want)
            assert len(got) == len(want_flat)
            for k, (a, b) in enumerate(zip(got, want_flat)):
                assert torch.equal(a, b), f"{lv} step {t} result {k}"
            eager_state = _new_state(want)
            lv_state = pytree.tree_unflatten(list(got[-n_state:]), state_spec)


@pytest.mark.parametrize("kind", list(STEPS_BY_KIND))
def test_compile_training_accepts_every_kind(kind, tmp_path):
    step = STEPS_BY_KIND[kind]
    state = pytree.tree_map(lambda t: t.to("meta"), _state(kind))
    x, y = torch.empty(B, I, device="meta"), torch.empty(B, O, device="meta")
    c = trainkernel.compile_training(step, (state, x, y), build=False, cache_dir=tmp_path)
    n_state = len(pytree.tree_leaves(state))
    n_out = len(c.meta.results)
    assert c._new_state_results == list(range(n_out - n_state, n_out))
    # In place, every state leaf's result is the state buffer itself.
    assert c._written_inputs() == list(range(n_state))
    assert "__global__" in c.cuda_source


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc (CUDA toolkit) not found")
def test_counter_step_kernel_compiles(tmp_path):
    state = pytree.tree_map(lambda t: t.to("meta"), _state("counter"))
    x, y = torch.empty(B, I, device="meta"), torch.empty(B, O, device="meta")
    c = trainkernel.compile_training(counter_step, (state, x, y), cache_dir=tmp_path, arch="sm_90")
    assert c.library_path is not None and c.library_path.is_file()


def test_state_mismatch_shows_expected_and_actual(tmp_path):
    params = tuple(t.to("meta") for t in _params())
    x, y = torch.empty(B, I, device="meta"), torch.empty(B, O, device="meta")

    def drops_a_leaf(params, x, y):
        loss, new = sgd_loss_new(params, x, y)
        return loss, new[:3]

    with pytest.raises(ValueError, match=r"expected \(\*, \*, \*, \*\), got \(\*, \*, \*\) \(the whole result is \(\*, \(\*, \*, \*\)\)\)"):
        trainkernel.compile_training(drops_a_leaf, (params, x, y), build=False, cache_dir=tmp_path)

    def bare_state(params, x, y):  # the new state alone: its last leaf is taken for the state
        return sgd_loss_new(params, x, y)[1]

    with pytest.raises(ValueError, match=r"last result \(result\[3\]\) is the new state .*expected \(\*, \*, \*, \*\), got \*"):
        trainkernel.compile_training(bare_state, (params, x, y), build=False, cache_dir=tmp_path)

    def loss_only(params, x, y):
        return sgd_loss_new(params, x, y)[0]

    with pytest.raises(ValueError, match=r"must return a tuple whose last element is the new state"):
        trainkernel.compile_training(loss_only, (params, x, y), build=False, cache_dir=tmp_path)


def test_bool_argument_is_a_clear_error(tmp_path):
    def step(w, x, done):
        return (x @ w).sum(), w.masked_fill(done, 0.0)

    args = (torch.empty(4, 4, device="meta"), torch.empty(2, 4, device="meta"), torch.empty(4, 4, dtype=torch.bool, device="meta"))
    with pytest.raises(ValueError, match=r"^done: bool arguments are not supported by the CUDA backend yet"):
        trainkernel.compile_training(step, args, build=False, cache_dir=tmp_path)
    # The same step as a float mask compiles.
    def float_mask(w, x, done):
        return (x @ w).sum(), w.masked_fill(done != 0, 0.0)

    trainkernel.compile_training(float_mask, (*args[:2], torch.empty(4, 4, device="meta")), build=False, cache_dir=tmp_path)


def test_bool_result_is_a_clear_error(tmp_path):
    # A bool result used to fail in the CUDA printer ("cuda: no C type for i1").
    def step(w, x):
        y = x @ w
        return y.sum(), {"positive": y > 0, "label": y.argmax(1)}, w * 0.5

    args = (torch.empty(4, 4, device="meta"), torch.empty(2, 4, device="meta"))
    with pytest.raises(ValueError, match=r"^result\[1\]\['positive'\]: bool results are not supported by the CUDA "):
        trainkernel.compile_training(step, args, build=False, cache_dir=tmp_path)
    # As a 0/1 float it compiles, beside the int64 argmax.
    def as_float(w, x):
        y = x @ w
        return y.sum(), {"positive": (y > 0).float(), "label": y.argmax(1)}, w * 0.5

    trainkernel.compile_training(as_float, args, build=False, cache_dir=tmp_path)
