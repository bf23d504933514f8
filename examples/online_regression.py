"""Online regression: one small batch per step, SGD with momentum on an MLP
with SiLU, Huber loss, through `trainkernel.compile_module`.

    python examples/online_regression.py   # GPU: the kernel; otherwise step.interpret
"""

from __future__ import annotations

import torch
from torch import nn

INPUTS, HIDDEN, OUTPUTS, BATCH = 16, 64, 4, 8


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(INPUTS, HIDDEN), nn.SiLU(), nn.Linear(HIDDEN, OUTPUTS))


def batch(seed: int, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, INPUTS, generator=g)
    y = torch.sin(x[:, :OUTPUTS]) + 0.1 * torch.randn(BATCH, OUTPUTS, generator=g)
    return x.to(device), y.to(device)


def main(steps: int = 10, fixed_batch: bool = False) -> list[float]:
    import trainkernel

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    step = trainkernel.compile_module(model, nn.HuberLoss(delta=0.5), optimizer, example_batch=batch(0, device))
    losses = []
    for s in range(steps):
        x, y = batch(0 if fixed_batch else s, device)
        losses.append(float(step(x, y) if device == "cuda" else step.interpret(x, y)))
    return losses


if __name__ == "__main__":
    for s, loss in enumerate(main()):
        print(f"step {s}: loss {loss:.6f}")
