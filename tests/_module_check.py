"""Trajectory check of a `compile_module` step against eager training, under the
repo's tolerance policy (trainkernel/tools/cli.py): three trajectories from the
same start, each feeding back its own state,

- the compiled step (`step.interpret` on CPU, or `step(...)` on a GPU),
- eager in the same dtype (``zero_grad; loss.backward(); optimizer.step()``),
- eager in float64 (the reference),

and for every quantity (the loss, every parameter, every optimizer buffer,
every step count) the normwise relative error against float64 at every step:
the compiled one must stay within ``max(4 * max_t eager_error, 1e-6)``.
Step counts and the optimizer.state keys must match eager exactly."""

from __future__ import annotations

import copy
import math

import torch

K_EAGER, FLOOR = 4.0, 1e-6


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    o = out.detach().double().cpu()
    r = ref.detach().double().cpu()
    if not bool(torch.isfinite(o).all()):
        return math.inf
    d, n = float(torch.linalg.vector_norm(o - r)), float(torch.linalg.vector_norm(r))
    return (0.0 if d == 0 else math.inf) if n == 0 else d / n


def _clone_optimizer(opt, model, twin):
    """`opt`'s class and groups, over `twin`'s parameters (same names as `model`'s)."""
    by_id = {id(p): n for n, p in model.named_parameters()}
    params = dict(twin.named_parameters())
    groups = [{**{k: v for k, v in g.items() if k != "params"}, "params": [params[by_id[id(p)]] for p in g["params"]]}
              for g in opt.param_groups]
    return type(opt)(groups)


def quantities(model, opt):
    """name -> tensor: parameters, optimizer buffers and step counts, by parameter name."""
    out = {f"param {n}": p for n, p in model.named_parameters()}
    for n, p in model.named_parameters():
        for k, v in opt.state.get(p, {}).items():
            if isinstance(v, torch.Tensor):
                out[f"{k} {n}"] = v
    return out


def check_trajectory(make_model, loss_fn, make_optimizer, batches, compile_kwargs=None, schedule=None,
                     run="interpret", device="cpu"):
    """Returns (report lines, passed). `make_optimizer(model)`; `schedule(t, optimizer)`
    changes hyper-parameters before step t (applied to all three)."""
    import trainkernel

    model = make_model().to(device)
    eager = copy.deepcopy(model)
    ref = copy.deepcopy(model).double()
    opt = make_optimizer(model)
    eopt = _clone_optimizer(opt, model, eager)
    ropt = _clone_optimizer(opt, model, ref)
    step = trainkernel.compile_module(model, loss_fn, opt, batches[0], **(compile_kwargs or {}))
    captured = step.captured
    errs: dict[str, list[float]] = {}
    eager_errs: dict[str, list[float]] = {}
    for t, batch in enumerate(batches):
        if schedule is not None:
            for o in (opt, eopt, ropt):
                schedule(t, o)
        loss = step.interpret(*batch) if run == "interpret" else step(*batch)
        eopt.zero_grad()
        eloss = loss_fn(eager(*batch[:-1]), batch[-1])
        eloss.backward()
        eopt.step()
        ropt.zero_grad()
        rbatch = [b.double() if b.is_floating_point() else b for b in batch]
        rloss = loss_fn(ref(*rbatch[:-1]), rbatch[-1])
        rloss.backward()
        ropt.step()
        got, want, exact = quantities(model, opt), quantities(eager, eopt), quantities(ref, ropt)
        assert got.keys() == want.keys() == exact.keys(), (sorted(got), sorted(want))
        for k in got:
            if k.startswith("step "):
                assert torch.equal(got[k], want[k]), (t, k, got[k], want[k])
                continue
            errs.setdefault(k, []).append(_rel(got[k], exact[k]))
            eager_errs.setdefault(k, []).append(_rel(want[k], exact[k]))
        errs.setdefault("loss", []).append(_rel(loss, rloss))
        eager_errs.setdefault("loss", []).append(_rel(eloss, rloss))
        for p, e in zip(opt.state_dict()["state"].values(), eopt.state_dict()["state"].values()):
            assert list(p) == list(e)
    assert step.captured is captured, "the step was captured again"
    lines, passed = [], True
    for k in errs:
        allowed = max(K_EAGER * max(eager_errs[k]), FLOOR)
        worst = max(errs[k])
        ok = worst <= allowed
        passed &= ok
        lines.append(f"{'ok  ' if ok else 'FAIL'} {k}: {worst:.3g} (eager {max(eager_errs[k]):.3g}, allowed {allowed:.3g})")
    return lines, passed, step
