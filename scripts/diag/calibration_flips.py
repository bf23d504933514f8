"""Which steps change kernel (resident or grid) under another grid calibration (CPU only).

    PYTHONPATH=. python scripts/diag/calibration_flips.py --calibrations 4,2 tiny online small:200,520,1000,56 ...

Specs as benchmarks/resident_probe.py takes them (name[:B,I,H,...,O][:bf16|f16|f32]).
For each spec and each value of `ResidentCosts.grid_calibration`, the kernel kind
tile-resident's auto mode prints, with the two estimates it compared (the
resident plan it found, if any fits, and sched-to-tile's grid kernel, scaled by
the calibration). A row whose kind differs between values is a decision that
depends on the calibration (perf-log, "Cost models against the harness at 84ba57a").
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import trainkernel  # noqa: E402
import trainkernel.passes.tile_resident as tile_resident  # noqa: E402
import trainkernel.target as T  # noqa: E402
from benchmarks.resident_probe import workload  # noqa: E402
from trainkernel.pipeline import lower  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibrations", default="4,2", help="comma-separated grid_calibration values")
    ap.add_argument("specs", nargs="+")
    args = ap.parse_args()
    seen: dict[str, float | None] = {}
    choose = tile_resident.choose

    def spy(kernel, target, *a, **k):
        found = choose(kernel, target, *a, **k)
        seen["grid"] = tile_resident.grid_estimate_us(kernel, target)
        seen["resident"] = None if found is None else found[1].estimate_us
        return found

    tile_resident.choose = spy
    base = T.DEFAULT
    flips = 0
    try:
        for spec in args.specs:
            kinds, cells = set(), []
            for cal in (float(c) for c in args.calibrations.split(",")):
                T.DEFAULT = dataclasses.replace(
                    base, resident_costs=dataclasses.replace(base.resident_costs, grid_calibration=cal))
                T.TARGETS[T.DEFAULT.name] = T.DEFAULT
                seen.clear()
                w, dtype = workload(spec)
                src = lower(trainkernel.capture(w.make_step(dtype), w.example_args("meta", dtype)), True).cuda_source
                kind = "resident" if "tk_step(" in src else "grid"
                kinds.add(kind)
                res = seen.get("resident")
                cells.append(f"{cal:g}: {kind} (resident {'-' if res is None else f'{res:.1f}'}, "
                             f"grid {seen.get('grid', 0.0):.1f})")
            flips += len(kinds) > 1
            print(f"{spec:32s} " + " | ".join(cells) + ("  <- depends on it" if len(kinds) > 1 else ""), flush=True)
    finally:
        T.DEFAULT = base
        T.TARGETS[base.name] = base
        tile_resident.choose = choose
    print(f"{flips} of {len(args.specs)} steps change kernel")


if __name__ == "__main__":
    main()
