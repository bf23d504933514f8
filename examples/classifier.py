"""A classifier trained the way PyTorch users write it: nn.Sequential with
LayerNorm and GELU, cross-entropy with label smoothing, AdamW and a learning-rate
scheduler, through `trainkernel.compile_module` (one kernel per step).

    python examples/classifier.py          # GPU: the kernel; otherwise step.interpret
"""

from __future__ import annotations

import torch
from torch import nn

FEATURES, HIDDEN, CLASSES, BATCH = 32, 128, 10, 64


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.LayerNorm(HIDDEN), nn.GELU(), nn.Linear(HIDDEN, CLASSES))


def batch(seed: int, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, FEATURES, generator=g)
    y = (x[:, :CLASSES].argmax(dim=1) + (x[:, -1] > 1.5).long()) % CLASSES  # a learnable rule
    return x.to(device), y.to(device)


def main(steps: int = 10, fixed_batch: bool = False) -> list[float]:
    import trainkernel

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = make_model().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    step = trainkernel.compile_module(model, loss_fn, optimizer, example_batch=batch(0, device))
    losses = []
    for s in range(steps):
        x, y = batch(0 if fixed_batch else s, device)
        loss = step(x, y) if device == "cuda" else step.interpret(x, y)
        scheduler.step()  # read at the next call: no recompilation
        losses.append(float(loss))
    return losses


if __name__ == "__main__":
    for s, loss in enumerate(main()):
        print(f"step {s}: loss {loss:.6f}")
