"""The training-loop workloads: the package's (``trainkernel.workloads``), with the
harness's learning rate and data.

Every workload is an MLP of ``trainkernel.workloads`` trained by its recipe,
one pure ``torch.func`` step written once, in the package:

- the six SGD + MSE workloads (the five of ``shared/GPU.md`` and ``mlp4``):
  ``step(params, x, y) -> (loss, grads, new_params)``, ``params`` a tuple
  ``(W1, b1, W2, b2, ...)`` of FP32 master tensors; the forward pass casts the
  weights to the compute dtype (BF16 by default), the loss is FP32, the SGD
  update ``p - lr * g`` FP32 (learning rate 0.05 here);
- their twins (``trainkernel.workloads.TWINS``): the same model trained with
  AdamW + cross-entropy on class labels (``classification-adamw-ce``,
  ``mlp4-adamw-ce``) or Adam + MSE (``online-adam``),
  ``step(state, x, y) -> (loss, new_state)`` with the optimizer's state
  (moments, running beta powers) in ``state`` (learning rate 1e-3). Each
  twin's speedup is compared with its SGD/MSE twin's in the same run.

The float64 reference of a workload is the same step with every dtype float64
(``Workload.reference_step``). Regression targets come from a fixed random
teacher network of the same shape, so the loss is meaningful and decreases;
the classification heads train on the teacher's argmax (one-hot rows for MSE,
class labels for cross-entropy).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, List, Sequence, Tuple

import torch

from trainkernel import elements
from trainkernel import workloads as package
from trainkernel.workloads import Workload, make_sgd_step

Params = Tuple[torch.Tensor, ...]
Batch = Tuple[torch.Tensor, torch.Tensor]
StepFn = Callable[..., tuple]

SGD_LR = 0.05
"""The harness's SGD learning rate (the Adam twins keep the package's 1e-3)."""


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def parse_dtype(name) -> torch.dtype:
    """A dtype from a torch dtype or a spelling (`bf16`, `fp16`, `float32`, `fp64`, ...: `trainkernel.elements`)."""
    if isinstance(name, torch.dtype):
        return name
    e = elements.from_name(name)
    if e is None or not e.torch.is_floating_point:
        choices = sorted(n for e in elements.ELEMENTS if e.torch.is_floating_point for n in (e.name, *e.aliases))
        raise ValueError(f"unknown dtype {name!r}; choose one of {choices}")
    return e.torch


def _harness(w: Workload) -> Workload:
    return dataclasses.replace(w, lr=SGD_LR) if w.recipe.optimizer == "sgd" else w


WORKLOADS = {name: _harness(w) for name, w in {**package.WORKLOADS, "large": package.LARGE, **package.TWINS}.items()}
"""The package's six workloads, the GEMM-bound `large`, then the twins."""


def twins_of(name: str) -> List[str]:
    return [n for n, w in WORKLOADS.items() if w.twin_of == name]


def make_step(lr: float, compute_dtype: torch.dtype = torch.bfloat16,
              master_dtype: torch.dtype = torch.float32) -> StepFn:
    """The SGD + MSE step of an MLP of any depth (`trainkernel.workloads.make_sgd_step`)."""
    step = make_sgd_step(lr, compute_dtype, master_dtype)
    step.__name__ = f"mlp_sgd_step_{dtype_name(compute_dtype)}"
    return step


def workload_step(workload: Workload, compute_dtype: torch.dtype = torch.bfloat16) -> StepFn:
    """The step the methods run (the package's, for the workload's recipe). The
    SGD + MSE steps keep the harness's name `mlp_sgd_step_<dtype>` (the kernel
    is named after it), so their CUDA stays that of earlier measured runs."""
    step = workload.make_step(compute_dtype)
    if workload.recipe == package.SGD_MSE:
        step.__name__ = step.__qualname__ = f"mlp_sgd_step_{dtype_name(compute_dtype)}"
    return step


def reference_step(workload: Workload) -> StepFn:
    """The float64 reference: the same step computed entirely in float64."""
    return workload.reference_step()


def quantity_names(workload: Workload) -> List[str]:
    """Every leaf a step returns, in order: loss, (SGD) grads, the new state."""
    return workload.recipe.output_names(workload.param_names())


def make_problem(workload: Workload, *, compute_dtype: torch.dtype = torch.bfloat16,
                 device="cpu", n_batches: int = 4, seed: int = 0):
    """The initial state (FP32 parameters, wrapped in the recipe's optimizer
    state) and ``n_batches`` resident batches ``(x, y)``.

    Everything is drawn on the CPU from one seeded generator (so every device
    gets the same numbers) and then moved; a workload and its twins get the
    same parameters and inputs. ``x`` (and float ``y``) are stored in the
    compute dtype, so the float64 reference sees exactly the values that the
    low-precision methods see; class labels are int64.
    """
    gen = torch.Generator().manual_seed(seed)
    params = package.init_mlp_params(workload.widths, gen, torch.float64)
    teacher = [t * 2.0 for t in package.init_mlp_params(workload.widths, gen, torch.float64)]  # a sharper teacher
    batches = []
    for _ in range(n_batches):
        x = torch.randn(workload.batch, workload.widths[0], generator=gen, dtype=torch.float64)
        y = workload.targets(package.mlp_forward(teacher, x, torch.float64), compute_dtype, device)
        batches.append((x.to(compute_dtype).to(device), y))
    params_t = tuple(p.to(torch.float32).to(device).contiguous() for p in params)
    return workload.recipe.init_state(params_t), batches


def get_workloads(names: Sequence[str] | None = None, with_twins: bool = False) -> List[Workload]:
    """The named workloads (all of them by default); `with_twins` adds each
    one's twins and the SGD/MSE twin of each twin named, so every twin runs
    next to its partner (the comparison needs both in one run)."""
    if not names:
        return list(WORKLOADS.values())
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise ValueError(f"unknown workload {unknown[0]!r}; choose from {', '.join(WORKLOADS)}")
    chosen = list(dict.fromkeys(names))
    if with_twins:
        for name in list(chosen):
            partner = WORKLOADS[name].twin_of
            chosen += [n for n in ([partner] if partner else []) + twins_of(name) if n not in chosen]
    return [WORKLOADS[n] for n in WORKLOADS if n in chosen]  # canonical order
