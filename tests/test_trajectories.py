"""Captured steps, run by the CPU interpreter, follow eager PyTorch's trajectory.

For every workload of `trainkernel.workloads` (reduced sizes where the CPU is
slow, see CPU_SIZES) and every compute dtype (f32, bf16, f16): capture the SGD
step once from meta tensors, then run 10 steps twice, eagerly and through
`trainkernel.interpret`, each feeding its own new params into the next step,
on fresh random batches (one new batch per step, in the compute dtype, as the
benchmark harness stores them). Every loss, every gradient and every updated
parameter is compared at every step.

Tolerance: none. The comparison is `torch.equal` (bit-identical, 0 ulp). The
interpreter executes each `tk` op with the PyTorch CPU op that eager itself
runs for the corresponding aten op, on the same dtypes and in the same order
(casts, bf16/f16 matmuls with f32 accumulation inside torch.mm, reductions,
the scalar rules of the tk contract), so there is no rounding difference to
allow for; any difference at all is a bug in capture or interpreter, and with
state fed back it would grow over the 10 steps rather than hide. (Only ops
that capture rewrites, such as alpha != 1 or decomposed softmax/mse_loss, can
differ from eager by an ulp; the workloads use none of them: see
tests/test_capture.py for those, with their tolerances.)

The AdamW example step (dict state, 0-d bias-correction inputs, sqrt/div) is
checked the same way on the tiny workload.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils import _pytree as pytree

import trainkernel
from trainkernel.workloads import COMPUTE_DTYPES, WORKLOADS, adamw_bias_correction

interpreter = pytest.importorskip("trainkernel.interpreter", reason="trainkernel.interpreter not available")

STEPS = 10

# CPU test sizes (B, in, hidden..., out); the GPU sizes are in WORKLOADS.
CPU_SIZES = {
    "tiny": WORKLOADS["tiny"],  # (16, 32, 64, 8): full size
    "online": WORKLOADS["online"],  # (64, 128, 256, 16): full size
    "small": WORKLOADS["small"].scaled(1 / 4),  # (64, 128, 256, 16)
    "medium": WORKLOADS["medium"].scaled(1 / 16),  # (64, 64, 256, 16)
    "classification": WORKLOADS["classification"].scaled(1 / 2),  # (32, 128, 256, 10): classes kept
    "mlp4": WORKLOADS["mlp4"].scaled(1 / 4),  # (32, 64, 64, 64, 64, 64): 4 layers kept
}


def test_every_workload_is_covered():
    assert set(CPU_SIZES) == set(WORKLOADS)
    for name, w in CPU_SIZES.items():
        assert w.layers == WORKLOADS[name].layers and w.task == WORKLOADS[name].task


def _assert_same(step_index: int, eager, interp, names):
    e_leaves, e_spec = pytree.tree_flatten(eager)
    i_leaves, i_spec = pytree.tree_flatten(interp)
    assert e_spec == i_spec
    for name, e, i in zip(names, e_leaves, i_leaves, strict=True):
        assert e.dtype == i.dtype and e.shape == i.shape, (step_index, name)
        if not torch.equal(e, i):
            diff = (e.double() - i.double()).abs().max().item()
            pytest.fail(f"step {step_index}: {name} differs from eager by up to {diff:g} (expected bit-identical)")


@pytest.mark.parametrize("dtype", list(COMPUTE_DTYPES))
@pytest.mark.parametrize("name", list(CPU_SIZES))
def test_sgd_trajectory_matches_eager(name, dtype):
    w = CPU_SIZES[name]
    step = w.make_step(dtype)
    compute = COMPUTE_DTYPES[dtype]
    captured = trainkernel.capture(step, w.example_args(device="meta", dtype=compute))

    eager_params = interp_params = w.init_params(seed=0)
    batches = w.make_batches(STEPS, seed=1, dtype=compute)
    for t, (x, y) in enumerate(batches):
        eager = step(eager_params, x, y)
        interp = trainkernel.interpret(captured, interp_params, x, y)
        _assert_same(t, eager, interp, captured.result_names)
        loss, grads, new_params = interp
        assert loss.dtype == torch.float32 and loss.dim() == 0 and torch.isfinite(loss)
        assert all(g.dtype == torch.float32 for g in grads)
        # the state really moves, so feeding it back is exercised
        assert any(not torch.equal(p, q) for p, q in zip(new_params, interp_params))
        eager_params, interp_params = eager[2], new_params


@pytest.mark.parametrize("dtype", list(COMPUTE_DTYPES))
def test_adamw_trajectory_matches_eager(dtype):
    w = CPU_SIZES["tiny"]
    step = w.make_adamw_step(dtype)
    compute = COMPUTE_DTYPES[dtype]
    state = w.init_adamw_state(seed=0)
    x0, y0 = w.make_batches(1, dtype=compute)[0]
    captured = trainkernel.capture(step, (state, x0, y0, adamw_bias_correction(1)))
    assert "tk.sqrt" in str(captured) and "tk.div" in str(captured)

    eager_state = interp_state = state
    for t, (x, y) in enumerate(w.make_batches(STEPS, seed=2, dtype=compute), start=1):
        bc = adamw_bias_correction(t)
        eager = step(eager_state, x, y, bc)
        interp = trainkernel.interpret(captured, interp_state, x, y, bc)
        _assert_same(t, eager, interp, captured.result_names)
        eager_state, interp_state = eager[1], interp[1]
