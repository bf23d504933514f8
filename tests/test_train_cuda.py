"""GPU tests (marked `cuda`) of the new ops and of `compile_module`.

1. Every activation, mask op, indexing and placement op (cat, stack, slice/
   select/split backward) of tests/test_activations.py, in
   a 2-layer MLP step of f32 and bf16, compiled (grid and resident kernels)
   and run on the GPU for 20 steps next to eager PyTorch on the same GPU and
   float64: every loss, gradient and parameter within the tolerance policy
   (`max(4 x eager's worst error against float64, 1e-6)`).
2. `compile_module(...)(*batch)`: the trajectory check of
   tests/test_compile_module.py (model.state_dict() and optimizer.state_dict()
   against eager training), with the kernel instead of the interpreter, for
   SGD with momentum, Adam and AdamW with a scheduler, cross-entropy with
   label smoothing, and an embedding model.
"""

from __future__ import annotations

import math
import os
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import grad_and_value
from torch.utils import _pytree as pytree

sys.path.insert(0, os.path.dirname(__file__))

import trainkernel  # noqa: E402
from test_activations import PLACEMENT  # noqa: E402

pytestmark = pytest.mark.cuda

STEPS = 20

ACTS = {
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "softplus": lambda t: F.softplus(t, beta=2.0, threshold=1.0),
    "leaky_relu": lambda t: F.leaky_relu(t, 0.1),
    "elu": F.elu,
    "selu": F.selu,
    "abs": torch.abs,
    "rsqrt": lambda t: torch.rsqrt(t.abs() + 0.5),
    "hardtanh": F.hardtanh,
    "clamp": lambda t: t.clamp(-0.5, 2.0),
    "maximum": lambda t: torch.maximum(t, 0.5 * t),
    "where": lambda t: torch.where(t > 0, t, 0.1 * t),
    "masked_fill": lambda t: t.masked_fill(t < -0.5, 0.25),
    "layer_norm": lambda t: F.layer_norm(t, (t.shape[-1],)),
    "rms_norm": lambda t: F.rms_norm(t, (t.shape[-1],), eps=1e-6),
    "softmax": lambda t: F.softmax(t, dim=-1),
    **PLACEMENT,  # cat, stack and the backward of slice/select/split
}


def _rel(out, ref) -> float:
    o, r = out.detach().double().cpu(), ref.detach().double().cpu()
    if not bool(torch.isfinite(o).all()):
        return math.inf
    n = float(torch.linalg.vector_norm(r))
    d = float(torch.linalg.vector_norm(o - r))
    return (0.0 if d == 0 else math.inf) if n == 0 else d / n


def _mlp_step(act, dtype, lr=0.05):
    def loss_fn(params, x, y):
        w1, b1, w2, b2 = (p.to(dtype) for p in params)
        return ((act(x @ w1 + b1) @ w2 + b2).to(y.dtype) - y).pow(2).mean()

    def step(params, x, y):
        grads, loss = grad_and_value(loss_fn)(params, x, y)
        return loss, grads, tuple(p - lr * g for p, g in zip(params, grads))

    return step


@pytest.mark.parametrize("resident", ["auto", "off"])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("name", list(ACTS))
def test_activation_step_on_gpu(name, dtype, resident, tmp_path):
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    step = _mlp_step(ACTS[name], dt)
    ref_step = _mlp_step(ACTS[name], torch.float64)
    g = torch.Generator().manual_seed(0)
    params = tuple((torch.randn(s, generator=g) * 0.3).cuda() for s in [(64, 128), (128,), (128, 16), (16,)])
    batches = [(torch.randn(64, 64, generator=g).to(dt).cuda(), torch.randn(64, 16, generator=g).cuda()) for _ in range(4)]
    compiled = trainkernel.compile_training(step, (params, *batches[0]), cache_dir=tmp_path, resident=resident,
                                            inplace=False)
    state = {"kernel": params, "eager": params, "ref": tuple(p.double() for p in params)}
    worst: dict[str, list[float]] = {}
    for t in range(STEPS):
        x, y = batches[t % len(batches)]
        got = compiled(state["kernel"], x, y)
        want = step(state["eager"], x, y)
        exact = ref_step(state["ref"], x.double(), y.double())
        for k, (a, b, c) in enumerate(zip(pytree.tree_leaves(got), pytree.tree_leaves(want), pytree.tree_leaves(exact))):
            worst.setdefault(f"kernel {k}", []).append(_rel(a, c))
            worst.setdefault(f"eager {k}", []).append(_rel(b, c))
        state = {"kernel": got[-1], "eager": want[-1], "ref": exact[-1]}
    for k in range(len(pytree.tree_leaves(got))):
        allowed = max(4 * max(worst[f"eager {k}"]), 1e-6)
        assert max(worst[f"kernel {k}"]) <= allowed, (k, max(worst[f"kernel {k}"]), allowed)


def _cuda_batches(n, b=16, i=32, o=8, seed=1, classes=False):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        x = torch.randn(b, i, generator=g).cuda()
        y = torch.randint(0, o, (b,), generator=g).cuda() if classes else torch.randn(b, o, generator=g).cuda()
        out.append((x, y))
    return out


def _mlp(i=32, h=64, o=8, act=nn.GELU, norm=True):
    def make():
        torch.manual_seed(0)
        layers = [nn.Linear(i, h)] + ([nn.LayerNorm(h)] if norm else []) + [act(), nn.Linear(h, o)]
        return nn.Sequential(*layers)

    return make


@pytest.mark.parametrize(
    "case",
    ["sgd_momentum", "adam", "adamw_scheduler", "ce_smooth", "embedding"],
)
def test_compile_module_on_gpu(case):
    from _module_check import check_trajectory

    schedule = None
    loss_fn = nn.MSELoss()
    make = _mlp()
    batches = _cuda_batches(STEPS)
    if case == "sgd_momentum":
        make_opt = lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True)  # noqa: E731
    elif case == "adam":
        make_opt = lambda m: torch.optim.Adam(m.parameters(), lr=1e-3, amsgrad=True)  # noqa: E731
    elif case == "adamw_scheduler":
        make_opt = lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.05)  # noqa: E731

        def schedule(t, opt):
            for g in opt.param_groups:
                g["lr"] = 1e-3 * 0.7 ** (t // 5)
    elif case == "ce_smooth":
        make_opt = lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3)  # noqa: E731
        loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
        batches = _cuda_batches(STEPS, classes=True)
    else:
        from test_compile_module import Embedder

        make = Embedder
        make_opt = lambda m: torch.optim.Adam(m.parameters(), lr=1e-2)  # noqa: E731
        loss_fn = nn.CrossEntropyLoss()
        g = torch.Generator().manual_seed(4)
        batches = [(torch.randint(0, 10, (8,), generator=g).cuda(), torch.randint(0, 3, (8,), generator=g).cuda())
                   for _ in range(STEPS)]
    lines, passed, _ = check_trajectory(make, loss_fn, make_opt, batches, {}, schedule=schedule, run="kernel",
                                        device="cuda")
    assert passed, "\n".join(lines)
