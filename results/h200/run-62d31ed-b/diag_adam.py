"""One-off diagnostic (not committed): online-adam's single-launch error against eager,
per leaf and step, with target.step_loop_on_chip on and off (perf-log step 48)."""
import dataclasses, sys
import torch
import torch.utils._pytree as pytree
import trainkernel
from trainkernel import target
from trainkernel.backend import cuda_target
from trainkernel.workloads import TWINS, WORKLOADS
from benchmarks.resident_probe import rel

for name in sys.argv[1:]:
    w = {**WORKLOADS, **TWINS}[name]
    for on in (True, False, True):
        cuda_target.TARGET = dataclasses.replace(target.DEFAULT, step_loop_on_chip=on)
        step = w.make_step(torch.bfloat16)
        s_tk = w.init_state(0, "cuda")
        s_ref = pytree.tree_map(torch.clone, s_tk)
        c = trainkernel.compile_training(step, (s_tk, *w.make_batches(1, seed=1, device="cuda")[0]))
        batches = w.make_batches(4, seed=1, device="cuda")
        names = None
        for i in range(4):
            x, y = batches[i % 4]
            out = c(s_tk, x, y)
            ref = step(s_ref, x, y)
            got, want = pytree.tree_leaves(out), pytree.tree_leaves(ref)
            errs = [rel(a, b) for a, b in zip(got, want)]
            worst = max(range(len(errs)), key=lambda k: errs[k])
            print(f"{name} on_chip={on} step {i}: worst leaf {worst} of {len(errs)} err {errs[worst]:.3e}; "
                  f"leaf shapes/errs {[(tuple(g.shape), f'{e:.1e}') for g, e in zip(got, errs) if e > 1e-5]}", flush=True)
            s_tk, s_ref = out[-1], ref[-1]
