"""Helpers of the tests of target variants of the CUDA printer (fields switched with the
`target_fields` fixture): a suite step's source, and its outputs after a few launches."""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree

import trainkernel
from trainkernel.workloads import TWINS, WORKLOADS


def suite_source(name: str, inplace: bool = True) -> str:
    """The CUDA the compiler prints for the bf16 step of a workload or twin (not built)."""
    w = {**WORKLOADS, **TWINS}[name]
    return trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16),
                                        inplace=inplace, build=False).cuda_source


def stepped(name: str, steps: int, seed: int) -> tuple[str, list[torch.Tensor]]:
    """Compile a workload's (or twin's) bf16 step as the target now is and run `steps`
    launches on the GPU from its initial state over three batches drawn with `seed`:
    (the kernel's source, the leaves of the last step's outputs, state included)."""
    w = {**WORKLOADS, **TWINS}[name]
    batches = w.make_batches(3, seed=seed, device="cuda", dtype=torch.bfloat16)
    c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16))
    state = w.init_state(device="cuda")
    for t in range(steps):
        out = c(state, *batches[t % 3])
        state = out[-1]
    torch.cuda.synchronize()
    return c.cuda_source, [x.clone() for x in pytree.tree_leaves(out)]
