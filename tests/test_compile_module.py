"""`trainkernel.compile_module`: nn.Module + loss + torch.optim, trained in place.

Every case trains 6 steps through `step.interpret` (the CPU interpreter: the
same program the GPU runs) next to eager PyTorch (`zero_grad; backward; step`)
and eager float64; parameters, optimizer buffers and losses must stay within
the tolerance policy (tests/_module_check.py) at every step, the step counts
and optimizer.state keys must equal eager's, and the step is captured once
(hyper-parameters, even under a scheduler, are inputs). Unsupported modules,
losses and optimizers are errors naming them.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))

from _module_check import check_trajectory  # noqa: E402

import trainkernel  # noqa: E402
from trainkernel.frontend.errors import UnsupportedOpError  # noqa: E402
from trainkernel.module import ModuleError  # noqa: E402

HAVE_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").is_file()
STEPS = 6


def _batches(n=STEPS, b=8, i=12, o=4, seed=1, classes=None):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(b, i, generator=g), torch.randn(b, o, generator=g)) for _ in range(n)]


def mlp(act=nn.Tanh, i=12, h=16, o=4, seed=0):
    def make():
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(i, h), act(), nn.Linear(h, h), act(), nn.Linear(h, o))

    return make


class Residual(nn.Module):
    """A user's own module, traced through."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.inp = nn.Linear(12, 16)
        self.blocks = nn.ModuleList([nn.Linear(16, 16) for _ in range(2)])
        self.out = nn.Linear(16, 4)
        self.scale = nn.Parameter(torch.tensor(0.5))

    def forward(self, x):
        h = torch.nn.functional.gelu(self.inp(x))
        for blk in self.blocks:
            h = h + self.scale * torch.tanh(blk(h))
        return self.out(h)


OPTIMIZERS = {
    "sgd": lambda m: torch.optim.SGD(m.parameters(), lr=0.05),
    "sgd_momentum": lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-2),
    "sgd_nesterov": lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.8, nesterov=True),
    "sgd_maximize": lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.5, maximize=True),
    "adam": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2),
    "adam_l2": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    "adam_amsgrad": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, amsgrad=True),
    "adam_lerp_high": lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, betas=(0.3, 0.9)),
    "adamw": lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1),
    "adamw_maximize": lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3, maximize=True),
}


def _assert_passes(lines, passed):
    assert passed, "\n".join(lines)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_trajectory_follows_eager(name):
    lines, passed, _ = check_trajectory(mlp(), nn.MSELoss(), OPTIMIZERS[name], _batches(), {"build": False})
    _assert_passes(lines, passed)


@pytest.mark.parametrize(
    "act", [nn.ReLU, nn.GELU, nn.SiLU, nn.Sigmoid, nn.Softplus, nn.LeakyReLU, nn.ELU, nn.SELU, nn.CELU, nn.ReLU6, nn.Hardtanh]
)
def test_activation_modules(act):
    lines, passed, _ = check_trajectory(mlp(act), nn.MSELoss(), OPTIMIZERS["adamw"], _batches(), {"build": False})
    _assert_passes(lines, passed)


@pytest.mark.parametrize(
    "loss_fn",
    [nn.MSELoss(), nn.L1Loss(), nn.SmoothL1Loss(beta=0.5), nn.HuberLoss(delta=0.7), nn.MSELoss(reduction="sum"),
     lambda out, y: ((out - y) ** 2).sum(dim=1).mean()],
    ids=["mse", "l1", "smooth_l1", "huber", "mse_sum", "python"],
)
def test_losses(loss_fn):
    lines, passed, _ = check_trajectory(mlp(), loss_fn, OPTIMIZERS["sgd_momentum"], _batches(), {"build": False})
    _assert_passes(lines, passed)


@pytest.mark.parametrize(
    "norm", [lambda: nn.LayerNorm(16), lambda: nn.LayerNorm(16, elementwise_affine=False), lambda: nn.RMSNorm(16),
             lambda: nn.RMSNorm(16, eps=1e-5, elementwise_affine=False)],
    ids=["layernorm", "layernorm_plain", "rmsnorm", "rmsnorm_plain"],
)
def test_normalization_layers(norm):
    def make():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(12, 16), norm(), nn.GELU(), nn.Linear(16, 4))

    lines, passed, _ = check_trajectory(make, nn.MSELoss(), OPTIMIZERS["adamw"], _batches(), {"build": False})
    _assert_passes(lines, passed)


def test_bce_with_logits():
    batches = [(x, torch.sigmoid(y)) for x, y in _batches()]
    lines, passed, _ = check_trajectory(mlp(), nn.BCEWithLogitsLoss(), OPTIMIZERS["adam"], batches, {"build": False})
    _assert_passes(lines, passed)


def test_custom_module_groups_and_frozen_parameters():
    def make_opt(m):
        m.inp.bias.requires_grad_(False)  # frozen: requires_grad=False
        return torch.optim.Adam(
            [
                {"params": [m.inp.weight, m.scale], "lr": 3e-2},
                {"params": list(m.blocks.parameters()), "weight_decay": 0.05},
                # m.out.* are in no group: not trained
            ],
            lr=1e-2,
        )

    before = {}

    def make():
        m = Residual()
        before.update({n: p.detach().clone() for n, p in m.named_parameters()})
        return m

    lines, passed, step = check_trajectory(make, nn.MSELoss(), make_opt, _batches(), {"build": False})
    _assert_passes(lines, passed)
    assert set(step.frozen) == {"inp.bias", "out.weight", "out.bias"}
    params = dict(step.model.named_parameters())
    for n in step.frozen:
        assert torch.equal(params[n], before[n]), n
    assert not torch.equal(params["scale"], before["scale"])


def test_scheduler_between_steps_needs_no_recompile():
    lrs = [1e-2 * 0.5 ** (t // 2) for t in range(STEPS)]

    def schedule(t, opt):
        for g in opt.param_groups:
            g["lr"] = lrs[t]
            g["betas"] = (0.9 - 0.02 * t, 0.999)

    lines, passed, step = check_trajectory(mlp(), nn.MSELoss(), OPTIMIZERS["adamw"], _batches(), {"build": False},
                                           schedule=schedule)
    _assert_passes(lines, passed)


def test_torch_scheduler_object():
    import copy

    model = mlp()()
    eager = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    eopt = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.3)
    esched = torch.optim.lr_scheduler.StepLR(eopt, step_size=2, gamma=0.3)
    batches = _batches()
    step = trainkernel.compile_module(model, nn.MSELoss(), opt, batches[0], build=False)
    for x, y in batches:
        loss = step.interpret(x, y)
        sched.step()
        eopt.zero_grad()
        eloss = nn.MSELoss()(eager(x), y)
        eloss.backward()
        eopt.step()
        esched.step()
        torch.testing.assert_close(loss, eloss, rtol=1e-5, atol=1e-6)
    for a, b in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.3**3)


def test_changing_the_update_structure_is_an_error():
    model = mlp()()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = trainkernel.compile_module(model, nn.MSELoss(), opt, _batches(1)[0], build=False)
    opt.param_groups[0]["momentum"] = 0.9
    with pytest.raises(ModuleError, match=r"param_groups\[0\] changed momentum .* compile again"):
        step.interpret(*_batches(1)[0])


def test_batch_is_checked():
    model = mlp()()
    step = trainkernel.compile_module(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1),
                                      _batches(1)[0], build=False)
    x, y = _batches(1)[0]
    with pytest.raises(ValueError, match=r"batch\[0\]: expected \(8, 12\) float32, got \(7, 12\) float32"):
        step.interpret(x[:7], y)
    with pytest.raises(TypeError, match="takes 2 batch tensors"):
        step.interpret(x)


def _opt(m):
    return torch.optim.SGD(m.parameters(), lr=0.1)


@pytest.mark.parametrize(
    "model, message",
    [
        (nn.Sequential(nn.Linear(12, 8), nn.BatchNorm1d(8), nn.Linear(8, 4)),
         r"model\.1 \(BatchNorm1d\) holds buffers \(running_mean, running_var, num_batches_tracked\)"),
        (nn.Sequential(nn.Linear(12, 8), nn.Dropout(0.2), nn.Linear(8, 4)), r"model\.1 \(Dropout, p=0.2\) draws random numbers"),
        (nn.Sequential(nn.Linear(12, 8), nn.Softmax(dim=1), nn.Linear(8, 4)),
         r"model\.1 \(Softmax\) is not supported by compile_module; supported layers: "),
    ],
    ids=["batchnorm", "dropout", "softmax"],
)
def test_unsupported_modules_are_named(model, message):
    with pytest.raises(ModuleError, match=message):
        trainkernel.compile_module(model, nn.MSELoss(), _opt(model), _batches(1)[0], build=False)


def test_dropout_zero_and_eval_are_fine():
    model = nn.Sequential(nn.Linear(12, 8), nn.Dropout(0.0), nn.Linear(8, 4))
    trainkernel.compile_module(model, nn.MSELoss(), _opt(model), _batches(1)[0], build=False)
    model = nn.Sequential(nn.Linear(12, 8), nn.Dropout(0.5), nn.Linear(8, 4)).eval()
    trainkernel.compile_module(model, nn.MSELoss(), _opt(model), _batches(1)[0], build=False)


def test_unsupported_optimizers_and_losses_are_named():
    model = mlp()()
    with pytest.raises(ModuleError, match=r"optimizer RMSprop is not supported by compile_module; supported: torch\.optim\.SGD"):
        trainkernel.compile_module(model, nn.MSELoss(), torch.optim.RMSprop(model.parameters()), _batches(1)[0], build=False)
    with pytest.raises(ModuleError, match=r"loss_fn \(KLDivLoss\) is not supported"):
        trainkernel.compile_module(model, nn.KLDivLoss(), _opt(model), _batches(1)[0], build=False)
    other = nn.Linear(3, 3)
    with pytest.raises(ModuleError, match=r"param_groups\[0\] holds a tensor of shape \(3, 3\) that is not a parameter"):
        trainkernel.compile_module(model, nn.MSELoss(), torch.optim.SGD(other.parameters(), lr=0.1), _batches(1)[0], build=False)
    opt = _opt(model)
    model(_batches(1)[0][0]).sum().backward()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.step()
    with pytest.raises(ModuleError, match="already holds state"):
        trainkernel.compile_module(model, nn.MSELoss(), opt, _batches(1)[0], build=False)


class UsesErf(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 4)

    def forward(self, x):
        return torch.erf(self.fc(x))  # erf-line


def test_unsupported_op_in_a_custom_module_names_the_line():
    model = UsesErf()
    with pytest.raises(UnsupportedOpError, match=r"test_compile_module\.py:\d+: error: unsupported op aten\.erf\.default") as info:
        trainkernel.compile_module(model, nn.MSELoss(), _opt(model), _batches(1)[0], build=False)
    assert "torch.erf(self.fc(x))" in str(info.value)


def test_compile_path_lowers_and_shows_the_kernel(tmp_path):
    model = mlp(nn.GELU)()
    step = trainkernel.compile_module(model, nn.MSELoss(), torch.optim.AdamW(model.parameters()), _batches(1)[0],
                                      build=False, cache_dir=tmp_path)
    compiled = step.build_kernel()
    assert "__global__" in compiled.cuda_source and "erff(" in compiled.cuda_source
    # In place: every trained parameter and every Adam moment is a state buffer the kernel writes.
    n_state = 3 * len(step.trained)
    assert compiled._written_inputs() == list(range(n_state))
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="model's parameters are on cpu"):
            step(*_batches(1)[0])


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not found")
def test_module_kernel_compiles_with_nvcc(tmp_path):
    model = mlp(nn.SiLU)()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    step = trainkernel.compile_module(model, nn.HuberLoss(), opt, _batches(1)[0], build=True, cache_dir=tmp_path,
                                      arch="sm_90")
    assert step.build_kernel().library_path.is_file()


def test_the_check_catches_a_wrong_update(monkeypatch):
    """Negative control: a 1% error in Adam's step size fails the tolerance check."""
    import trainkernel.module as module

    real = module.adam_hyper

    def wrong(group, step):
        h = real(group, step)
        h["neg_step_size"] *= 1.01
        return h

    monkeypatch.setattr(module, "adam_hyper", wrong)
    lines, passed, _ = check_trajectory(mlp(), nn.MSELoss(), OPTIMIZERS["adam"], _batches(), {"build": False})
    assert not passed, "\n".join(lines)


def _class_batches(n=STEPS, b=8, i=12, c=4, seed=2, probs=False, ignore=None):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        x = torch.randn(b, i, generator=g)
        if probs:
            t = torch.softmax(torch.randn(b, c, generator=g), dim=1)
        else:
            t = torch.randint(0, c, (b,), generator=g)
            if ignore is not None:
                t[::3] = ignore
        out.append((x, t))
    return out


@pytest.mark.parametrize(
    "loss_fn, kw",
    [
        (nn.CrossEntropyLoss(), {}),
        (nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=2), {"ignore": 2}),
        (nn.CrossEntropyLoss(label_smoothing=0.05), {"probs": True}),
        (nn.CrossEntropyLoss(reduction="sum"), {}),
        (nn.NLLLoss(), {}),
    ],
    ids=["ce", "ce_smooth_ignore", "ce_probs", "ce_sum", "nll"],
)
def test_classification_losses(loss_fn, kw):
    def make():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(12, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 4))

    fn = loss_fn
    if isinstance(loss_fn, nn.NLLLoss):
        fn = lambda out, t: loss_fn(torch.log_softmax(out, dim=1), t)  # noqa: E731
    lines, passed, _ = check_trajectory(make, fn, OPTIMIZERS["adamw"], _class_batches(**kw), {"build": False})
    _assert_passes(lines, passed)


class Embedder(nn.Module):
    """Token ids -> embedding -> tanh MLP (a model whose input is int64)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(10, 6, padding_idx=0)
        self.fc = nn.Linear(6, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, ids):
        return self.head(torch.tanh(self.fc(self.embed(ids))))


def test_embedding_model():
    g = torch.Generator().manual_seed(4)
    batches = [(torch.randint(0, 10, (8,), generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(STEPS)]
    lines, passed, _ = check_trajectory(Embedder, nn.CrossEntropyLoss(), OPTIMIZERS["adam"], batches, {"build": False})
    _assert_passes(lines, passed)
