"""The compiler's cost models against the harness (issue 9.4): per workload, the
estimates tile-resident compares (the resident plan it would choose, and
sched-to-tile's grid kernel, calibrated) and the harness's measured median,
as a markdown table (CPU only).

    PYTHONPATH=. python scripts/cost_model_table.py [--json results/h200/train_loop.json ...] [--costs 'field=v;...']

Measured: the in-place method (`trainkernel`: a launch a step) and, where it
ran, `trainkernel-capture` (a resident kernel's steps in one launch).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import trainkernel  # noqa: E402
from trainkernel.dialects import tile  # noqa: E402
from trainkernel.passes.tile_resident import choose, grid_estimate_us  # noqa: E402
from trainkernel.pipeline import run_passes, stage_passes, state_leaves  # noqa: E402
from trainkernel.target import DEFAULT  # noqa: E402
from trainkernel.workloads import LARGE, TWINS, WORKLOADS  # noqa: E402


def grid_kernel(w) -> tile.KernelOp:
    """The kernel sched-to-tile makes of `w`'s bf16 in-place step (what tile-resident prices)."""
    captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta", torch.bfloat16))
    module = captured.module.clone()
    for stage in ("tk", "sched"):
        run_passes(module, stage_passes(stage, True, state=state_leaves(captured)), verify_each=False)
    first = stage_passes("tile", True, state=state_leaves(captured)).split("},")[0] + "}"
    run_passes(module, first, verify_each=False)
    return next(op for op in module.walk() if isinstance(op, tile.KernelOp))


def rows(measured: dict[str, dict], target=DEFAULT) -> list[str]:
    out = ["| workload | kernel chosen | resident model µs | grid model µs | measured µs (a launch a step / capture) "
           "| measured / chosen model |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for name, w in {**WORKLOADS, "large": LARGE, **TWINS}.items():
        if name not in measured:
            continue
        kernel = grid_kernel(w)
        best = choose(kernel, target) if tile.largest_extent(kernel) <= tile.RESIDENT_MAX_ELEMENTS else None
        grid = grid_estimate_us(kernel, target)
        res = best[1].estimate_us if best else None
        resident = res is not None and res < grid
        kind = f"resident, cluster {best[1].cluster}" if resident else f"grid, {kernel.grid} blocks"
        model = res if resident else grid
        methods = measured[name]
        inplace = methods.get("trainkernel", {}).get("median_us")
        cap = methods.get("trainkernel-capture", {}).get("median_us")
        meas = f"{inplace:.2f}" + (f" / {cap:.2f}" if cap else "") if inplace else "–"
        ratio = f"{inplace / model:.1f}" if inplace and model else "–"
        res_cell = f"{res:.1f}" if res is not None else "–"
        out.append(f"| {name} | {kind} | {res_cell} | {grid:.1f} | {meas} | {ratio} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", nargs="+", default=[str(ROOT / "results/h200/train_loop.json"),
                                                  str(ROOT / "results/h200/train_loop_twins.json")])
    ap.add_argument("--costs", default="", help="ResidentCosts fields replaced, e.g. "
                    "'result_store_bytes_per_us=18000;elem_ops_per_us=12000' (a calibration to try)")
    args = ap.parse_args()
    measured: dict[str, dict] = {}
    for path in args.json:
        for name, w in json.loads(Path(path).read_text())["workloads"].items():
            measured.setdefault(name, w["methods"])
    changes = {k.strip(): float(v) for k, _, v in (item.partition("=") for item in args.costs.split(";") if item)}
    target = dataclasses.replace(DEFAULT, resident_costs=dataclasses.replace(DEFAULT.resident_costs, **changes))
    print("\n".join(rows(measured, target)))


if __name__ == "__main__":
    main()
