"""Diagnostic (perf-log step 54): which leaves, rows and ranks of online-adam's single
launches differ from eager and from the default target's bits, per target variant.
Run from the tree's root on the GPU: python3 scripts/diag/online_adam_bits.py [NAME [VARIANT]]."""
import dataclasses
import sys

import torch
import torch.utils._pytree as pytree

import trainkernel
from trainkernel import target
from trainkernel.backend import cuda_target
from trainkernel.workloads import TWINS, WORKLOADS

VARIANTS = {
    "default": {},
    "on_chip=0": dict(step_loop_on_chip=False),
    "on_chip=0 pdl=0": dict(step_loop_on_chip=False, programmatic_launch=False),
    "cluster8": dict(clusters=(1, 2, 4, 8)),
    "cluster8 pdl=0": dict(clusters=(1, 2, 4, 8), programmatic_launch=False),
    "warp_maps": dict(resident_warp_small_maps=True),
    "warp_maps pdl=0": dict(resident_warp_small_maps=True, programmatic_launch=False),
}


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def run(name, fields, steps=4, sync_each=False):
    t = dataclasses.replace(target.DEFAULT, **fields)
    target.TARGETS[target.DEFAULT.name] = t
    cuda_target.TARGET = t
    w = {**WORKLOADS, **TWINS}[name]
    step = w.make_step(torch.bfloat16)
    s_tk = w.init_state(0, "cuda")
    s_ref = pytree.tree_map(torch.clone, s_tk)
    batches = w.make_batches(4, seed=1, device="cuda")
    c = trainkernel.compile_training(step, (s_tk, *batches[0]))
    got_steps, ref_steps = [], []
    for i in range(steps):
        x, y = batches[i % 4]
        out = c(s_tk, x, y)
        if sync_each:
            torch.cuda.synchronize()
        ref = step(s_ref, x, y)
        got_steps.append([g.clone() for g in pytree.tree_leaves(out)])
        ref_steps.append([r.clone() for r in pytree.tree_leaves(ref)])
        s_tk, s_ref = out[-1], ref[-1]
    torch.cuda.synchronize()
    return c, got_steps, ref_steps


def where(a, b):
    d = (a != b)
    if d.dim() == 0:
        return "scalar" if bool(d) else ""
    idx = d.nonzero()
    if idx.numel() == 0:
        return ""
    return f"{idx.shape[0]} of {a.numel()} differ; rows {sorted(set(idx[:, 0].tolist()))[:40]}" + (
        f" cols {sorted(set(idx[:, 1].tolist()))[:40]}" if idx.shape[1] > 1 else "")


def main(name, only=None):
    base = None
    for label, fields in VARIANTS.items():
        if only and label not in ("default", only):
            continue
        for sync_each in (False, True) if label in ("on_chip=0", "cluster8") else (False,):
            c, got, ref = run(name, fields, sync_each=sync_each)
            tag = f"{label}{' sync' if sync_each else ''} (cluster {c.meta.grid})"
            if base is None:
                base = got
            for i, (g, r, b) in enumerate(zip(got, ref, base)):
                errs = [rel(a, e) for a, e in zip(g, r)]
                diffs = [(k, where(a, e)) for k, (a, e) in enumerate(zip(g, b)) if not torch.equal(a, e)]
                print(f"{name} {tag} step {i}: worst err {max(errs):.2e}; leaves unlike default: "
                      f"{[(k, tuple(g[k].shape), w) for k, w in diffs][:6]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "online-adam", sys.argv[2] if len(sys.argv) > 2 else None)
