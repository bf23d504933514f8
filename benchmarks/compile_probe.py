"""Development probe: cold compile seconds of each step, as the harness measures
them (`compile_training` into a fresh cache directory, in-memory caches warm),
under the nvcc flags the caller sets in ``NVCC_APPEND_FLAGS`` (part of the build
cache's key). Not the benchmark: it isolates a compile-time change for
docs/perf-log.md (issue 10.6). Runs on a machine without a GPU too (build=True).

    NVCC_APPEND_FLAGS='-Xcicc -O1' python -m benchmarks.compile_probe [--repeat N] [spec ...]

A spec is name[:B,I,H,...,O][:dtype] (benchmarks.resident_probe.workload), and
`name/staged` times the staged build. Writes compile_probe.json to $OUT (if set).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

import trainkernel
from benchmarks.resident_probe import workload

DEFAULT = ["tiny", "online", "classification", "small", "mlp4", "medium", "large",
           "mlp4-adamw-ce", "large/staged"]


def cold_seconds(spec: str, root: Path) -> dict[str, float]:
    """compile_seconds of one cold compile of `spec` into a fresh cache under `root`."""
    name, _, mode = spec.partition("/")
    w, dtype = workload(name)
    state = w.init_state(0, "cpu")
    x, y = w.make_batches(1, seed=1, device="cpu", dtype=dtype)[0]
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=root))
    t0 = time.perf_counter()
    compiled = trainkernel.compile_training(w.make_step(dtype), (state, x, y), inplace=mode != "staged",
                                            cache_dir=str(cache), build=True)
    wall = time.perf_counter() - t0
    return {**compiled.compile_seconds, "wall": wall}


def main(specs: list[str], repeat: int) -> None:
    flags = os.environ.get("NVCC_APPEND_FLAGS", "")
    rows = []
    with tempfile.TemporaryDirectory(prefix="tk-compile-probe-") as d:
        cold_seconds(specs[0], Path(d))  # the process warm (imports, nvcc's first start)
        for spec in specs:
            runs = [cold_seconds(spec, Path(d)) for _ in range(repeat)]
            nvcc = [r["nvcc"] for r in runs]
            total = [r["total"] for r in runs]
            rows.append({"spec": spec, "flags": flags, "runs": runs,
                         "nvcc_median": statistics.median(nvcc), "total_median": statistics.median(total)})
            print(f"{spec:24s} flags={flags!r:18s} cold total {statistics.median(total):6.2f} s "
                  f"(nvcc {statistics.median(nvcc):5.2f} s; runs {', '.join(f'{t:.2f}' for t in total)})",
                  flush=True)
    out = os.environ.get("OUT")
    if out:
        path = Path(out) / "compile_probe.json"
        old = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps(old + rows, indent=1))


if __name__ == "__main__":
    args = sys.argv[1:]
    repeat = 2
    if args[:1] == ["--repeat"]:
        repeat, args = int(args[1]), args[2:]
    torch.set_num_threads(1)
    main(args or DEFAULT, repeat)
