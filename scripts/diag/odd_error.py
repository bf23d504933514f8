"""Where a step's error against eager comes from (perf-log step 60: online at
64 x 128-225-16 showed a relative error of 2.7e-2 against eager bf16 in the probe,
the same with and without constant extents, where other shapes show 1e-7).

For each spec: the resident kernel (auto), the grid kernel (resident off) and eager
in the step's dtype, each against eager in fp32 from the same state over 10 steps:
the relative error of every returned leaf at the last step, and each kernel against
eager in its own dtype. Which leaf, and whether eager bf16 is itself that far from
fp32 (rounding flips of a short sum amplified), is the question.

    python scripts/diag/odd_error.py online:64,128,225,16 online:33,100,300,7
"""

from __future__ import annotations

import sys

import torch
from torch.utils import _pytree as pytree

import trainkernel
from benchmarks.resident_probe import rel, workload


def trajectory(run, state, batches, steps: int = 10):
    outs = None
    for i in range(steps):
        x, y = batches[i % len(batches)]
        outs = run(state, x, y)
        state = outs[-1]
    return pytree.tree_leaves(outs)


def main(specs: list[str]) -> None:
    for spec in specs:
        w, dtype = workload(spec)
        batches = w.make_batches(4, seed=1, device="cuda")
        fresh = lambda: pytree.tree_map(torch.clone, w.init_state(0, "cuda"))  # noqa: E731
        step = w.make_step(dtype)
        runs = {"eager": step, "eager-f32": w.make_step(torch.float32)}
        for mode in ("auto", "off"):
            runs[f"tk-{mode}"] = trainkernel.compile_training(step, (fresh(), *batches[0]), resident=mode)
        leaves = {name: trajectory(run, fresh(), batches) for name, run in runs.items()}
        truth = leaves["eager-f32"]
        for name in ("eager", "tk-auto", "tk-off"):
            vs_truth = [rel(a.float(), b.float()) for a, b in zip(leaves[name], truth)]
            vs_eager = [rel(a.float(), b.float()) for a, b in zip(leaves[name], leaves["eager"])]
            print(f"{spec:24s} {name:8s} vs f32: " + " ".join(f"{e:.1e}" for e in vs_truth))
            print(f"{spec:24s} {name:8s} vs eager: " + " ".join(f"{e:.1e}" for e in vs_eager))


if __name__ == "__main__":
    main(sys.argv[1:])
