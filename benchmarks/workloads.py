"""The training-loop workloads: MLPs trained with MSE loss and plain SGD.

Every step is a pure ``torch.func`` function

    step(params, x, y) -> (loss, grads, new_params)

with ``params`` a tuple ``(W1, b1, W2, b2, ...)`` of FP32 master tensors
(``W`` has shape ``(in, out)`` so a layer is ``h @ W + b``). The forward pass
casts the weights to the compute dtype (BF16 by default), runs the matrix
products and bias adds in that dtype, casts the output to FP32 for the loss,
and the SGD update ``p - lr * g`` is done in FP32 on the FP32 gradients that
``grad_and_value`` returns through the casts. The float64 reference is the
same function with ``compute_dtype=master_dtype=torch.float64``.

The five workloads of ``shared/GPU.md`` are 2-layer MLPs
``relu(x @ W1 + b1) @ W2 + b2``; ``mlp4`` is a 4-layer MLP (batch 128, all
widths 256). Regression targets come from a fixed random teacher network of
the same shape, so the loss is meaningful and decreases; the classification
head trains on one-hot targets (the teacher's argmax) with the same MSE loss.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, List, Sequence, Tuple

import torch

Params = Tuple[torch.Tensor, ...]
Batch = Tuple[torch.Tensor, torch.Tensor]
StepFn = Callable[[Params, torch.Tensor, torch.Tensor], Tuple[torch.Tensor, Params, Params]]

DTYPES = {
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
    "fp32": torch.float32,
    "float32": torch.float32,
    "fp64": torch.float64,
    "float64": torch.float64,
}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def parse_dtype(name) -> torch.dtype:
    if isinstance(name, torch.dtype):
        return name
    try:
        return DTYPES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; choose one of {sorted(DTYPES)}") from None


@dataclasses.dataclass(frozen=True)
class Workload:
    """An MLP training problem: ``widths`` = (in, hidden..., out)."""

    name: str
    batch: int
    widths: Tuple[int, ...]
    task: str = "regression"  # or "classification" (one-hot targets)
    lr: float = 0.05
    description: str = ""

    @property
    def layers(self) -> int:
        return len(self.widths) - 1

    def shapes(self) -> List[Tuple[int, ...]]:
        out = []
        for fan_in, fan_out in zip(self.widths[:-1], self.widths[1:]):
            out += [(fan_in, fan_out), (fan_out,)]
        return out

    def flops_per_step(self) -> int:
        """Matrix-product FLOPs of one forward+backward (3 products per layer,
        the first layer's input gradient is not needed)."""
        total = 0
        for i, (a, b) in enumerate(zip(self.widths[:-1], self.widths[1:])):
            products = 2 if i == 0 else 3
            total += products * 2 * self.batch * a * b
        return total

    def scaled(self, cap: int) -> "Workload":
        """A smaller copy for CPU tests: batch and inner widths capped at
        ``cap``; the output width (the number of classes) is kept."""
        widths = tuple(min(w, cap) for w in self.widths[:-1]) + (self.widths[-1],)
        return dataclasses.replace(self, batch=min(self.batch, cap), widths=widths)

    def config(self) -> dict:
        return {
            "batch": self.batch,
            "widths": list(self.widths),
            "layers": self.layers,
            "task": self.task,
            "lr": self.lr,
            "description": self.description,
        }


def _from_package() -> dict:
    """The benchmark's workloads are the package's (trainkernel.workloads: the
    five of GPU.md and the 4-layer MLP), with the harness's learning rate."""
    from trainkernel import workloads as package

    return {
        name: Workload(w.name, w.batch, tuple(w.widths), task=w.task, description=w.description)
        for name, w in package.WORKLOADS.items()
    }


WORKLOADS = _from_package()


def make_step(lr: float, compute_dtype: torch.dtype = torch.bfloat16,
              master_dtype: torch.dtype = torch.float32) -> StepFn:
    """The pure training step for an MLP of any depth (depth = len(params)//2)."""

    # The model and loss are the package's own (trainkernel.workloads), so the
    # harness measures exactly the step the test suite verifies.
    from trainkernel.workloads import mse_loss

    def loss_fn(params: Params, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return mse_loss(params, x, y, compute_dtype, master_dtype)

    def step(params: Params, x: torch.Tensor, y: torch.Tensor):
        grads, loss = torch.func.grad_and_value(loss_fn)(params, x, y)
        new_params = tuple(p - lr * g for p, g in zip(params, grads))
        return loss, grads, new_params

    step.__name__ = f"mlp_sgd_step_{dtype_name(compute_dtype)}"
    return step


def workload_step(workload: Workload, compute_dtype: torch.dtype = torch.bfloat16) -> StepFn:
    return make_step(workload.lr, compute_dtype, torch.float32)


def reference_step(workload: Workload) -> StepFn:
    """The float64 reference: the same step computed entirely in float64."""
    return make_step(workload.lr, torch.float64, torch.float64)


def _init_params(widths: Sequence[int], gen: torch.Generator) -> List[torch.Tensor]:
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        params.append((torch.rand(fan_in, fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound)
        params.append((torch.rand(fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound)
    return params


def _teacher_forward(teacher: Sequence[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    h = x
    n = len(teacher) // 2
    for i in range(n):
        h = h @ teacher[2 * i] + teacher[2 * i + 1]
        if i + 1 < n:
            h = torch.relu(h)
    return h


def make_problem(workload: Workload, *, compute_dtype: torch.dtype = torch.bfloat16,
                 device="cpu", n_batches: int = 4, seed: int = 0) -> Tuple[Params, List[Batch]]:
    """Initial FP32 params and ``n_batches`` resident batches ``(x, y)``.

    Everything is drawn on the CPU from one seeded generator (so every device
    gets the same numbers) and then moved. ``x`` and ``y`` are stored in the
    compute dtype, so the float64 reference sees exactly the values that the
    low-precision methods see.
    """
    gen = torch.Generator().manual_seed(seed)
    params = _init_params(workload.widths, gen)
    teacher = [t * 2.0 for t in _init_params(workload.widths, gen)]  # a sharper teacher
    batches = []
    for _ in range(n_batches):
        x = torch.randn(workload.batch, workload.widths[0], generator=gen, dtype=torch.float64)
        t = _teacher_forward(teacher, x)
        if workload.task == "classification":
            labels = t.argmax(dim=-1)
            y = torch.nn.functional.one_hot(labels, workload.widths[-1]).to(torch.float64)
        else:
            y = t / t.std().clamp_min(1e-6)
        batches.append((x.to(compute_dtype).to(device), y.to(compute_dtype).to(device)))
    params_t = tuple(p.to(torch.float32).to(device).contiguous() for p in params)
    return params_t, batches


def get_workloads(names: Sequence[str] | None = None) -> List[Workload]:
    if not names:
        return list(WORKLOADS.values())
    out = []
    for name in names:
        if name not in WORKLOADS:
            raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
        out.append(WORKLOADS[name])
    return out
