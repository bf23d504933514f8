"""The examples under examples/ (the README shows them): they run on CPU (the
interpreter) and learn; the RL step follows eager PyTorch; their kernels compile
with nvcc for sm_90."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
import torch
from torch.utils import _pytree as pytree

import trainkernel

ROOT = Path(__file__).resolve().parents[1] / "examples"
HAVE_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").is_file()


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"tk_example_{name}", ROOT / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["rl_policy", "classifier", "online_regression"])
def test_example_runs_and_learns(name):
    if torch.cuda.is_available():
        pytest.skip("on a GPU the examples run the kernel: tests/test_train_cuda.py")
    losses = _load(name).main(steps=12, fixed_batch=True)
    assert all(torch.isfinite(torch.tensor(losses)))
    assert sum(losses[-3:]) < sum(losses[:3])


def test_rl_policy_step_follows_eager():
    ex = _load("rl_policy")
    state = ex.init_state()
    captured = trainkernel.capture(ex.policy_step, (state, *ex.batch(0)))
    ir = str(captured)
    assert "tk.tanh" in ir and "tk.iota" in ir and "tk.max" in ir  # tanh MLP, gather as a one-hot max
    eager_state = interp_state = state
    for s in range(8):
        b = ex.batch(s)
        want = ex.policy_step(eager_state, *b)
        got = trainkernel.interpret(captured, interp_state, *b)
        for a, e in zip(pytree.tree_leaves(got), pytree.tree_leaves(want)):
            torch.testing.assert_close(a, e, rtol=2e-5, atol=1e-6)
        eager_state, interp_state = want[1], got[1]


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not found")
def test_example_kernels_compile(tmp_path):
    ex = _load("rl_policy")
    meta = pytree.tree_map(lambda t: t.to("meta"), (ex.init_state(), *ex.batch(0)))
    rl = trainkernel.compile_training(ex.policy_step, meta, cache_dir=tmp_path, arch="sm_90")
    assert rl.library_path.is_file()
    cl = _load("classifier")
    model = cl.make_model()
    step = trainkernel.compile_module(model, torch.nn.CrossEntropyLoss(label_smoothing=0.1),
                                      torch.optim.AdamW(model.parameters()), cl.batch(0), build=True,
                                      cache_dir=tmp_path, arch="sm_90")
    assert step.build_kernel().library_path.is_file()
