"""The correctness gate: multi-step trajectories against a float64 reference.

Tolerance policy (fixed; documented in docs/benchmarking.md)
------------------------------------------------------------
For every workload the harness computes a float64 reference trajectory of
``steps`` (100) SGD steps from the same initial FP32 parameters on the same
resident batches (step ``t`` uses batch ``t % 4``). Every method then runs its
own trajectory (its own updated parameters feed its next step), and at every
step each output quantity ``q`` (the loss, each gradient, each updated
parameter) gets a normwise relative error against the reference:

    err[t][q] = ||out - ref||_2 / ||ref||_2        (|.| for the scalar loss)

Eager PyTorch with the same compute dtype on the same device defines how much
low-precision drift is legitimate. Per quantity, the allowed error is

    allowed[q] = max(K * max_t eager_err[t][q], FLOOR)      K = 4, FLOOR = 1e-6

and a method passes iff every output is finite and ``err[t][q] <= allowed[q]``
for every step and quantity. Per-quantity maxima over the whole trajectory are
used (not step-by-step bounds) because a single step's error of a scalar is
one random draw: at step 0 eager's loss error can be small by cancellation,
and a per-step bound then fails correct implementations. ``FLOOR`` only keeps
a quantity that eager happens to compute exactly from demanding exactness.

The envelope is only meaningful if eager itself agrees with the reference, so
eager must stay under an absolute ceiling on its loss and parameter errors
(``EAGER_CEILING``: 5e-2 for 16-bit compute, 1e-3 for FP32 compute); if it
does not, the harness (not the methods) is wrong and every method of that
workload is marked failed.

The same envelope is applied to the captured 20-step replay (the very graph
that is timed), replayed once from the initial state: its final parameters,
last loss and last gradients are compared with reference step 19.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

from .workloads import Params, dtype_name

K_EAGER = 4.0
FLOOR = 1e-6
EAGER_CEILING = {"16bit": 5e-2, "fp32": 1e-3}


def policy_dict(compute_dtype: torch.dtype) -> dict:
    return {
        "metric": "normwise relative error ||out - ref||_2 / ||ref||_2 per output tensor per step, vs float64",
        "rule": "err[t][q] <= max(K * max_t eager_err[t][q], floor) for every step t and quantity q; all outputs finite",
        "K": K_EAGER,
        "floor": FLOOR,
        "eager_ceiling": eager_ceiling(compute_dtype),
        "eager_ceiling_applies_to": "loss and updated parameters",
        "compute_dtype": dtype_name(compute_dtype),
        "replay_check": "captured 20-step graph replayed once from the initial state; final params, last loss and grads vs reference step 19, same envelope",
    }


def eager_ceiling(compute_dtype: torch.dtype) -> float:
    return EAGER_CEILING["fp32"] if compute_dtype in (torch.float32, torch.float64) else EAGER_CEILING["16bit"]


def quantity_names(n_params: int) -> List[str]:
    names = []
    for i in range(n_params):
        layer, kind = divmod(i, 2)
        names.append(("W" if kind == 0 else "b") + str(layer + 1))
    return ["loss"] + [f"grad.{n}" for n in names] + [f"param.{n}" for n in names]


# One reference step: (loss, grads, new_params), all float64.
RefStep = Tuple[torch.Tensor, Tuple[torch.Tensor, ...], Tuple[torch.Tensor, ...]]


def reference_trajectory(ref_step: Callable, params: Params, batches: Sequence, steps: int) -> List[RefStep]:
    """The float64 trajectory from ``params`` (cast to float64)."""
    p = tuple(t.detach().to(torch.float64) for t in params)
    out: List[RefStep] = []
    for t in range(steps):
        x, y = batches[t % len(batches)]
        loss, grads, p = ref_step(p, x.to(torch.float64), y.to(torch.float64))
        out.append((loss.detach(), tuple(g.detach() for g in grads), tuple(q.detach() for q in p)))
    return out


def relative_errors(result, ref: RefStep) -> List[float]:
    """Normwise relative errors of one step's (loss, grads, new_params) against
    the reference step, in ``quantity_names`` order. Non-finite outputs and
    structural mismatches give ``inf``."""
    loss, grads, new_params = result
    r_loss, r_grads, r_params = ref
    n = len(r_params)
    if len(grads) != len(r_grads) or len(new_params) != n:
        return [math.inf] * (1 + 2 * n)
    outs = [loss] + list(grads) + list(new_params)
    refs = [r_loss] + list(r_grads) + list(r_params)
    errs = []
    diffs, norms, finite = [], [], []
    for o, r in zip(outs, refs):
        if not isinstance(o, torch.Tensor) or tuple(o.shape) != tuple(r.shape):
            return [math.inf] * len(refs)
        o64 = o.detach().to(device=r.device, dtype=torch.float64)
        diffs.append(torch.linalg.vector_norm(o64 - r))
        norms.append(torch.linalg.vector_norm(r))
        finite.append(torch.isfinite(o64).all())
    # One host transfer per step, not one per tensor.
    stacked = torch.stack([torch.stack(diffs), torch.stack(norms), torch.stack(finite).to(torch.float64)]).cpu().tolist()
    for d, nrm, fin in zip(*stacked):
        if fin < 1.0 or not math.isfinite(d):
            errs.append(math.inf)
        elif nrm == 0.0:
            errs.append(0.0 if d == 0.0 else math.inf)
        else:
            errs.append(d / nrm)
    return errs


def trajectory_errors(fn: Callable, params: Params, batches: Sequence, reference: Sequence[RefStep],
                      *, before_call: Optional[Callable[[], None]] = None) -> List[List[float]]:
    """Run ``fn`` for ``len(reference)`` steps from a private copy of ``params``
    with state feedback, comparing each step's outputs with the reference
    immediately (in-place methods may overwrite their outputs on the next
    call, so nothing is kept). Returns err[t][q]."""
    p = tuple(t.detach().clone() for t in params)
    errors: List[List[float]] = []
    for t, ref in enumerate(reference):
        x, y = batches[t % len(batches)]
        if before_call is not None:
            before_call()
        loss, grads, p = fn(p, x, y)
        grads, p = tuple(grads), tuple(p)
        errors.append(relative_errors((loss, grads, p), ref))
    return errors


def envelope(eager_errors: Sequence[Sequence[float]]) -> List[float]:
    """allowed[q] = max(K * max_t eager_err[t][q], FLOOR)."""
    n_q = len(eager_errors[0])
    return [max(K_EAGER * max(row[q] for row in eager_errors), FLOOR) for q in range(n_q)]


def judge(errors: Sequence[Sequence[float]], allowed: Sequence[float], names: Sequence[str]) -> Dict[str, object]:
    """Apply the envelope; report the worst relative error, the worst
    error/allowed ratio and the first violation."""
    max_err = 0.0
    max_ratio = 0.0
    first = None
    for t, row in enumerate(errors):
        for q, e in enumerate(row):
            ratio = e / allowed[q] if allowed[q] > 0 else math.inf
            if not (e == e):  # NaN
                e, ratio = math.inf, math.inf
            max_err = max(max_err, e)
            max_ratio = max(max_ratio, ratio)
            if first is None and not e <= allowed[q]:
                first = {"step": t, "quantity": names[q], "error": _num(e), "allowed": allowed[q]}
    return {
        "passed": first is None and len(errors) > 0,
        "max_rel_error": _num(max_err),
        "max_error_ratio": _num(max_ratio),
        "first_failure": first,
        "steps": len(errors),
    }


def eager_sanity(eager_errors: Sequence[Sequence[float]], names: Sequence[str],
                 compute_dtype: torch.dtype) -> Dict[str, object]:
    """Does eager agree with the float64 reference well enough for its errors
    to define the envelope?"""
    ceiling = eager_ceiling(compute_dtype)
    worst, worst_name = 0.0, None
    for q, name in enumerate(names):
        if name == "loss" or name.startswith("param."):
            e = max(row[q] for row in eager_errors)
            if worst_name is None or e > worst:
                worst, worst_name = e, name
    ok = all(math.isfinite(e) for row in eager_errors for e in row) and worst <= ceiling
    return {"passed": ok, "ceiling": ceiling, "worst_error": _num(worst), "worst_quantity": worst_name}


def per_quantity_max(errors: Sequence[Sequence[float]], names: Sequence[str]) -> Dict[str, float]:
    return {name: _num(max(row[q] for row in errors)) for q, name in enumerate(names)}


def _num(x: float):
    """JSON has no inf/NaN: encode them as strings."""
    if x != x:
        return "nan"
    if math.isinf(x):
        return "inf"
    return float(x)
