"""Development probe: TrainKernel alone, one workload at several forced grids.

Not a benchmark (no baseline, no correctness gate: the harness covers those);
it isolates the grid's effect for docs/perf-log.md. Writes probe.json to $OUT.

    python -m benchmarks.grid_probe
"""
import os, json, torch
import trainkernel
from benchmarks.resident_probe import STEPS, time_program
from trainkernel.workloads import WORKLOADS
out = os.environ.get("OUT", "/tmp")
res = {}
plan = {"tiny": [1, 4, 16], "small": [528, 132], "medium": [528, 132]}
for name, grids in plan.items():
    w = WORKLOADS[name]
    for grid in grids:
        try:
            params = w.init_params(0, "cuda"); batches = w.make_batches(4, seed=1, device="cuda")
            c = trainkernel.compile_training(w.make_step(torch.bfloat16), (params, *batches[0]), grid=grid)
            prog = c.capture(params, *batches[0], steps=STEPS, batches=batches)
            med, s = time_program(prog)
            res[f"{name}/grid{grid}"] = {"median_us": med, "samples": s, "grid": c.meta.grid, **c.stats()}
            print(f"{name:15s} grid={grid:4d} (meta {c.meta.grid:4d}) {med:8.2f} us/step", flush=True)
        except Exception as e:
            print(name, grid, "ERROR", repr(e)[:500], flush=True)
    json.dump(res, open(f"{out}/probe.json", "w"))
