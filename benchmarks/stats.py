"""Statistics for the benchmark harness: percentiles, summaries, bootstrap
intervals and baseline selection. Pure Python (no numpy, no torch) so that it
is trivially testable and gives the same numbers everywhere."""

from __future__ import annotations

import math
import random
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

BOOTSTRAP_DRAWS = 2000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95

TRAINKERNEL_PREFIX = "trainkernel"


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) with linear interpolation between
    order statistics (numpy's default, "linear")."""
    if not samples:
        raise ValueError("percentile of no samples")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} outside [0, 100]")
    xs = sorted(float(s) for s in samples)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    frac = pos - lo
    return xs[lo] + (xs[hi] - xs[lo]) * frac


def median(samples: Sequence[float]) -> float:
    return percentile(samples, 50.0)


def summarize(samples_us: Sequence[float]) -> Dict[str, object]:
    """median / p10 / p90 of per-step samples (microseconds), raw samples kept."""
    samples = [float(s) for s in samples_us]
    if not samples:
        return {"median_us": None, "p10_us": None, "p90_us": None, "samples_us": []}
    return {
        "median_us": median(samples),
        "p10_us": percentile(samples, 10.0),
        "p90_us": percentile(samples, 90.0),
        "samples_us": samples,
    }


def bootstrap_speedup(baseline_us: Sequence[float], candidate_us: Sequence[float], *,
                      draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED,
                      confidence: float = CONFIDENCE) -> Dict[str, object]:
    """Speedup of ``candidate`` over ``baseline``: median(baseline) / median(candidate)
    (> 1 means the candidate is faster), with a percentile-bootstrap interval:
    both sample sets are resampled with replacement ``draws`` times from one
    ``random.Random(seed)``, so the interval is deterministic."""
    if not baseline_us or not candidate_us:
        raise ValueError("bootstrap needs samples on both sides")
    b = [float(s) for s in baseline_us]
    c = [float(s) for s in candidate_us]
    rng = random.Random(seed)
    ratios: List[float] = []
    for _ in range(draws):
        rb = [b[rng.randrange(len(b))] for _ in b]
        rc = [c[rng.randrange(len(c))] for _ in c]
        ratios.append(median(rb) / median(rc))
    alpha = (1.0 - confidence) / 2.0
    return {
        "value": median(b) / median(c),
        "ci95": [percentile(ratios, 100.0 * alpha), percentile(ratios, 100.0 * (1.0 - alpha))],
        "draws": draws,
        "seed": seed,
        "confidence": confidence,
        "definition": "median(best_baseline samples) / median(best TrainKernel samples); > 1 means TrainKernel is faster",
    }


def is_trainkernel(name: str, record: Optional[Mapping] = None) -> bool:
    if record is not None and record.get("family") == "trainkernel":
        return True
    return name.startswith(TRAINKERNEL_PREFIX)


def _timed_and_correct(record: Mapping) -> bool:
    return bool(record.get("correct")) and record.get("median_us") is not None and bool(record.get("samples_us"))


def select_best_baseline(methods: Mapping[str, Mapping]) -> Optional[str]:
    """The fastest (lowest median) method that passed its correctness check and
    is not a TrainKernel method; None if there is none. Ties go to the name
    that sorts first, so the choice is deterministic."""
    best = None
    for name in sorted(methods):
        rec = methods[name]
        if is_trainkernel(name, rec) or not _timed_and_correct(rec):
            continue
        if best is None or rec["median_us"] < methods[best]["median_us"]:
            best = name
    return best


def select_best_trainkernel(methods: Mapping[str, Mapping]) -> Optional[str]:
    """The fastest correct TrainKernel method (in-place or staged), or None."""
    best = None
    for name in sorted(methods):
        rec = methods[name]
        if not is_trainkernel(name, rec) or not _timed_and_correct(rec):
            continue
        if best is None or rec["median_us"] < methods[best]["median_us"]:
            best = name
    return best


def compare(methods: Mapping[str, Mapping], **bootstrap_kw) -> Dict[str, object]:
    """best_baseline, best_trainkernel and the speedup (None where either
    side has no correct, timed method)."""
    base = select_best_baseline(methods)
    tk = select_best_trainkernel(methods)
    speedup = None
    if base is not None and tk is not None:
        speedup = bootstrap_speedup(methods[base]["samples_us"], methods[tk]["samples_us"], **bootstrap_kw)
    return {"best_baseline": base, "best_trainkernel": tk, "speedup": speedup}


def finite_max(values: Iterable[float]) -> float:
    out = 0.0
    for v in values:
        if v != v:  # NaN
            return math.inf
        out = max(out, v)
    return out


TWIN_TARGET = 0.9
"""A twin (another loss and optimizer on the same model) should keep at least
this share of its SGD/MSE twin's speedup, measured in the same run."""


def twin_comparisons(workloads: Mapping[str, Mapping], target: float = TWIN_TARGET) -> Dict[str, Dict[str, object]]:
    """For every workload of a run that is a twin (``config.twin_of``): its
    speedup, its partner's, and ``kept`` = twin's speedup / partner's speedup
    with a conservative interval from the two 95% intervals ([low/high,
    high/low]); ``met`` says whether ``kept >= target``. Where the partner did
    not run, or either side has no speedup (no correct TrainKernel or
    baseline), ``kept`` and ``met`` are None and ``why`` says so."""
    out: Dict[str, Dict[str, object]] = {}
    for name, w in workloads.items():
        of = (w.get("config") or {}).get("twin_of")
        if not of:
            continue
        partner = workloads.get(of)
        sp = w.get("speedup")
        psp = partner.get("speedup") if partner is not None else None
        rec: Dict[str, object] = {
            "twin_of": of,
            "speedup": sp["value"] if sp else None,
            "twin_of_speedup": psp["value"] if psp else None,
            "target": target,
            "kept": None,
            "kept_ci95": None,
            "met": None,
            "why": None,
        }
        if partner is None:
            rec["why"] = f"{of} did not run in this run"
        elif sp is None or psp is None:
            rec["why"] = f"no speedup for {name if sp is None else of} (no correct TrainKernel or baseline timing)"
        else:
            kept = sp["value"] / psp["value"]
            (lo, hi), (plo, phi) = sp["ci95"], psp["ci95"]
            rec.update(kept=kept, kept_ci95=[lo / phi, hi / plo], met=kept >= target)
        out[name] = rec
    return out
