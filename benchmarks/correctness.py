"""The correctness gate: multi-step trajectories against a float64 reference.

Tolerance policy (fixed; documented in docs/benchmarking.md)
------------------------------------------------------------
For every workload the harness computes a float64 reference trajectory of
``steps`` (100) training steps from the same initial FP32 state on the same
resident batches (step ``t`` uses batch ``t % 4``). Every method then runs its
own trajectory (its own new state feeds its next step), and at every step each
output quantity ``q`` (every tensor the step returns: the loss; for SGD each
gradient; each updated parameter and, for Adam, each moment and beta power)
gets a normwise relative error against the reference:

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
that is timed), replayed once from the initial state: its final state and
the last step's other outputs (loss, gradients) are compared with reference
step 19.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from .workloads import dtype_name

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
        "replay_check": "captured 20-step graph replayed once from the initial state; the last step's outputs and the final state vs reference step 19, same envelope",
    }


def eager_ceiling(compute_dtype: torch.dtype) -> float:
    return EAGER_CEILING["fp32"] if compute_dtype in (torch.float32, torch.float64) else EAGER_CEILING["16bit"]


def quantity_names(n_params: int) -> List[str]:
    """The outputs of an SGD step of ``n_params`` parameters (``workloads.quantity_names``
    names any recipe's)."""
    names = []
    for i in range(n_params):
        layer, kind = divmod(i, 2)
        names.append(("W" if kind == 0 else "b") + str(layer + 1))
    return ["loss"] + [f"grad.{n}" for n in names] + [f"param.{n}" for n in names]


# One reference step: every tensor the step returned (its pytree's leaves:
# loss, grads, new state), float64.
RefStep = Tuple[torch.Tensor, ...]


def _f64(t: torch.Tensor) -> torch.Tensor:
    """float64 for floating tensors; class labels (integers) stay as they are."""
    return t.detach().to(torch.float64) if t.is_floating_point() else t


def reference_trajectory(ref_step: Callable, state, batches: Sequence, steps: int) -> List[RefStep]:
    """The float64 trajectory from ``state`` (any pytree of tensors, cast to float64):
    each step's returned leaves, the last element (the new state) fed back."""
    s = pytree.tree_map(_f64, state)
    out: List[RefStep] = []
    for t in range(steps):
        x, y = batches[t % len(batches)]
        result = ref_step(s, _f64(x), _f64(y))
        out.append(tuple(v.detach() for v in pytree.tree_leaves(result)))
        s = result[-1]
    return out


def relative_errors(result, ref: RefStep) -> List[float]:
    """Normwise relative errors of one step's outputs (any pytree: its leaves in
    order, e.g. loss, grads, new params) against the reference step's, in
    ``quantity_names`` order. Non-finite outputs and structural mismatches
    give ``inf``."""
    outs, refs = pytree.tree_leaves(result), list(ref)
    if len(outs) != len(refs):
        return [math.inf] * len(refs)
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


def trajectory_errors(fn: Callable, state, batches: Sequence, reference: Sequence[RefStep],
                      *, before_call: Optional[Callable[[], None]] = None) -> List[List[float]]:
    """Run ``fn`` for ``len(reference)`` steps from a private copy of ``state``
    with state feedback (the last element of what a step returns is the next
    state), comparing each step's outputs with the reference immediately
    (in-place methods may overwrite their outputs on the next call, so nothing
    is kept). Returns err[t][q]."""
    s = pytree.tree_map(lambda t: t.detach().clone(), state)
    errors: List[List[float]] = []
    for t, ref in enumerate(reference):
        x, y = batches[t % len(batches)]
        if before_call is not None:
            before_call()
        result = fn(s, x, y)
        errors.append(relative_errors(result, ref))
        s = result[-1]
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
