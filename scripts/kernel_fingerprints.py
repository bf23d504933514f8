"""sha256 of the CUDA the compiler prints for the suite's kernels (CPU only, no nvcc).

    PYTHONPATH=. python scripts/kernel_fingerprints.py > before.json
    ... refactor ...
    PYTHONPATH=. python scripts/kernel_fingerprints.py --compare before.json

A refactor that must not change code generation (target options, printer
tables) shows as zero differences. Configurations: every workload of
`trainkernel.workloads` in f32, bf16 and f16, in place and staged, with the
resident pass on auto and off; the odd shapes of tests/test_cuda_compile.py;
the AdamW step of each workload (bf16); the harness's training steps
(benchmarks/workloads.py: every workload and twin, bf16, in place); and the
activation kernel of tests/test_activations.py (grid bf16, resident f32).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import trainkernel  # noqa: E402
from trainkernel.pipeline import lower  # noqa: E402
from trainkernel.workloads import COMPUTE_DTYPES, WORKLOADS  # noqa: E402


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _lowered(step, args, inplace=True, resident="auto") -> str:
    return lower(trainkernel.capture(step, args), inplace, resident=resident).cuda_source


def configurations():
    odd = {
        "odd-33x100x300x7": WORKLOADS["tiny"].with_sizes(33, (100, 300, 7)),
        "batch1": WORKLOADS["tiny"].with_sizes(1, (32, 64, 8)),
    }
    for name, w in {**WORKLOADS, **odd}.items():
        for dt, dtype in COMPUTE_DTYPES.items():
            for inplace in (True, False):
                for resident in ("auto", "off"):
                    key = f"{name}/{dt}/{'inplace' if inplace else 'staged'}/resident-{resident}"
                    yield key, lambda w=w, dtype=dtype, inplace=inplace, resident=resident: _lowered(
                        w.make_step(dtype), w.example_args("meta", dtype), inplace, resident
                    )
    for name, w in WORKLOADS.items():
        def adamw(w=w):
            from trainkernel.workloads import adamw_bias_correction

            state = {k: tuple(p.to("meta") for p in v) for k, v in w.init_adamw_state().items()}
            _, x, y = w.example_args("meta", torch.bfloat16)
            bc = tuple(t.to("meta") for t in adamw_bias_correction(1))
            return _lowered(w.make_adamw_step(torch.bfloat16), (state, x, y, bc))

        yield f"{name}/adamw-bf16", adamw
    from benchmarks import workloads as bench

    for name, w in bench.WORKLOADS.items():
        def harness(w=w):
            from torch.utils import _pytree as pytree

            state, batches = bench.make_problem(w, compute_dtype=torch.bfloat16)
            args = pytree.tree_map(lambda t: t.to("meta"), (state, *batches[0]))
            return _lowered(bench.workload_step(w, torch.bfloat16), args)

        yield f"harness/{name}/{'sgd' if w.recipe.optimizer == 'sgd' else w.recipe.name}-bf16", harness
    import test_activations as acts

    for dt, resident in (("bf16", "off"), ("f32", "force")):
        def everything(dt=dt, resident=resident):
            dtype = acts.DTYPES[dt]
            params = tuple(t.to("meta") for t in acts._mlp_state(sizes=(16, 32, 8)))
            x, y = torch.empty(8, 16, dtype=dtype, device="meta"), torch.empty(8, 8, device="meta")
            return _lowered(acts._everything_step(dtype), (params, x, y), True, resident)

        yield f"activations/{dt}/resident-{resident}", everything


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", type=Path, help="a JSON written by an earlier run: print the differences")
    ap.add_argument("--only", default="", help="comma-separated key prefixes")
    args = ap.parse_args(argv)
    prefixes = [p for p in args.only.split(",") if p]
    out: dict[str, str] = {}
    for key, make in configurations():
        if prefixes and not any(key.startswith(p) for p in prefixes):
            continue
        try:
            out[key] = _digest(make())
        except Exception as e:  # a configuration that does not lower is recorded, not fatal
            out[key] = f"error: {type(e).__name__}: {e}"
    if args.compare is None:
        json.dump(out, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    before = json.loads(args.compare.read_text())
    common = sorted(set(before) & set(out))
    changed = [k for k in common if before[k] != out[k]]
    for k in changed:
        print(f"changed {k}: {before[k][:16]} -> {out[k][:16]}")
    for k in sorted(set(out) - set(before)):
        print(f"new     {k}")
    for k in sorted(set(before) - set(out)):
        print(f"gone    {k}")
    print(f"{len(common) - len(changed)} of {len(common)} common configurations byte-identical")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
