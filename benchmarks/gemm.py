"""Benchmark of the Hopper GEMM tile (tk/hopper_gemm.cuh) against torch.matmul (cuBLAS).

The shapes are every matrix product of the training steps ``medium``
(trainkernel.workloads: B=1024, widths 1024-4096-256) and ``large`` (B=2048,
widths 2048-8192-2048), derived from (B, widths): for layer l with fan-in
``i`` and fan-out ``o`` (W stored i x o, a layer is ``h @ W``):

  fwd   h @ W       m=B, n=o, k=i   A row-major, B row-major      (NN)
  dX    dY @ W^T    m=B, n=i, k=o   B transposed (W is N x K)     (NT)   layers > 0
  dW    X^T @ dY    m=i, n=o, k=B   A transposed (X is K x M)     (TN)

Every product is checked against the fp32 product of the same bf16 inputs
before it is timed (a variant that fails is reported, never timed as a
result). Timing: CUDA graphs of ``--calls`` back-to-back products (rotating
over enough input sets that they do not all sit in the 60 MB L2), replayed
``--samples`` times after warm-up, each replay timed with CUDA events; a
sample is the replay time over the calls. Both sides run the same way:
torch.matmul(out=...) into a preallocated bf16 output, the tile with its
automatic plan and a bf16 output (and, where the shape allows, as clusters of
two blocks sharing B by TMA multicast: ``tk_pair``), stored through the row walk that generated
kernels' epilogues use (since 2026-12-05; gemm.json measured before then
stored in fragment order, eight partly used sectors a store). ``--sweep`` also times every (tile shape,
split count) of the table, to refit the planner.

Writes JSON (default results/h200/gemm.json) with, per shape, m, n, k, dtype,
layout, tk_tflops, torch_tflops, ratio_vs_torch (tk over torch throughput:
> 1 is faster), the median / p10 / p90 and every raw sample.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import hgemm_lib  # noqa: E402
from benchmarks.stats import summarize  # noqa: E402

L2_BYTES = 60 * 2**20


def step_workloads() -> list[tuple[str, int, tuple[int, ...]]]:
    from trainkernel.workloads import LARGE, WORKLOADS

    return [(w.name, w.batch, tuple(w.widths)) for w in (WORKLOADS["medium"], LARGE)]


def step_gemms() -> list[dict]:
    """Every GEMM of the medium and large steps (see the module docstring)."""
    out = []
    for step, batch, widths in step_workloads():
        for layer, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
            out.append(dict(name=f"{step}.L{layer}.fwd", m=batch, n=fan_out, k=fan_in, trans_a=False, trans_b=False))
            if layer > 0:
                out.append(dict(name=f"{step}.L{layer}.dX", m=batch, n=fan_in, k=fan_out, trans_a=False, trans_b=True))
            out.append(dict(name=f"{step}.L{layer}.dW", m=fan_in, n=fan_out, k=batch, trans_a=True, trans_b=False))
    for g in out:
        g["layout"] = ("T" if g["trans_a"] else "N") + ("T" if g["trans_b"] else "N")
    return out


def _inputs(g, dtype, sets, gen):
    import torch

    m, n, k = g["m"], g["n"], g["k"]
    res = []
    for _ in range(sets):
        a = torch.randn((k, m) if g["trans_a"] else (m, k), generator=gen, device="cuda").to(dtype)
        b = torch.randn((n, k) if g["trans_b"] else (k, n), generator=gen, device="cuda").to(dtype)
        c = torch.empty(m, n, device="cuda", dtype=dtype)
        res.append((a, b, c))
    return res


def _op(x, trans):
    return x.t() if trans else x


def check(lib, g, a, b, **kw) -> dict:
    """tk vs the fp32 product of the same inputs; bound 2*K*eps32*(|A||B|) + half a bf16 ulp."""
    import torch

    opa, opb = _op(a, g["trans_a"]), _op(b, g["trans_b"])
    out = torch.full((g["m"], g["n"]), float("nan"), device="cuda", dtype=a.dtype)
    lib.mm(a, b, trans_a=g["trans_a"], trans_b=g["trans_b"], out=out, **kw)
    torch.cuda.synchronize()
    ref = opa.float() @ opb.float()
    bound = 2.0 * g["k"] * 2.0**-24 * (opa.float().abs() @ opb.float().abs()) + torch.finfo(a.dtype).eps * ref.abs() + 1e-30
    err = (out.float() - ref).abs()
    finite = bool(torch.isfinite(out.float()).all().item())
    ratio = float((err / bound).max().item())
    rel = float((out.float() - ref).norm().item() / max(ref.norm().item(), 1e-30))
    return {"ok": finite and ratio <= 1.0, "err_over_bound": ratio, "rel_l2": rel, "finite": finite,
            "plan": lib.last_plan()}


def time_graph(fn_list, calls: int, samples: int, warmup: int = 3) -> list[float]:
    """Capture calls x fn (rotating over fn_list), replay; per-call microseconds."""
    import torch

    for f in fn_list:  # eager warm-up (allocations, attributes) outside the capture
        f()
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        for f in fn_list:
            f()
        stream.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            for i in range(calls):
                fn_list[i % len(fn_list)]()
    torch.cuda.synchronize()
    for _ in range(warmup):
        graph.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1000.0 / calls)
    del graph
    return out


def bench_shape(lib, g, dtype, args, gen) -> dict:
    import torch

    m, n, k = g["m"], g["n"], g["k"]
    flop = 2.0 * m * n * k
    per_set = 2 * (m * k + k * n + m * n)
    sets = max(1, min(args.calls, math.ceil(3 * L2_BYTES / per_set)))
    data = _inputs(g, dtype, sets, gen)
    row = dict(g)
    row.update(dtype=str(dtype).replace("torch.", ""), flop=flop, input_sets=sets)

    def tk_fns(**kw):
        return [lambda a=a, b=b, c=c: lib.mm(a, b, trans_a=g["trans_a"], trans_b=g["trans_b"], out=c, **kw)
                for a, b, c in data]

    torch_fns = [lambda a=a, b=b, c=c: torch.matmul(_op(a, g["trans_a"]), _op(b, g["trans_b"]), out=c)
                 for a, b, c in data]

    a0, b0, _ = data[0]
    row["check"] = check(lib, g, a0, b0)
    row["plan"] = row["check"]["plan"]
    # torch's own error against the same reference, for context
    ref = _op(a0, g["trans_a"]).float() @ _op(b0, g["trans_b"]).float()
    tt = torch.matmul(_op(a0, g["trans_a"]), _op(b0, g["trans_b"]))
    row["torch_rel_l2"] = float((tt.float() - ref).norm().item() / max(ref.norm().item(), 1e-30))
    del ref, tt

    t_torch = time_graph(torch_fns, args.calls, args.samples)
    row["torch"] = summarize(t_torch)
    row["torch_samples_us"] = t_torch
    row["torch_tflops"] = flop / row["torch"]["median_us"] / 1e6
    if row["check"]["ok"]:
        t_tk = time_graph(tk_fns(), args.calls, args.samples)
        row["tk"] = summarize(t_tk)
        row["tk_samples_us"] = t_tk
        row["tk_tflops"] = flop / row["tk"]["median_us"] / 1e6
        row["ratio_vs_torch"] = row["tk_tflops"] / row["torch_tflops"]
        # fp32 output (what dW for fp32 master weights wants), auto plan
        c32 = [torch.empty(m, n, device="cuda") for _ in data]
        f32 = [lambda a=a, b=b, c=c: lib.mm(a, b, trans_a=g["trans_a"], trans_b=g["trans_b"], out=c)
               for (a, b, _), c in zip(data, c32)]
        t32 = time_graph(f32, args.calls, max(5, args.samples // 2))
        row["tk_f32out"] = summarize(t32)
        row["tk_f32out_tflops"] = flop / row["tk_f32out"]["median_us"] / 1e6
        # clusters of two sharing B by TMA multicast (not chosen by the planner
        # yet: measured here against the automatic plan, where the shape pairs)
        if lib.plan(m, n, k, pair=True)["pair"]:
            chk = check(lib, g, a0, b0, pair=True)
            pair = {"check": chk, "plan": chk["plan"]}
            if chk["ok"]:
                tp = time_graph(tk_fns(pair=True), args.calls, args.samples)
                pair.update(summary=summarize(tp), samples_us=tp)
                pair["tflops"] = flop / pair["summary"]["median_us"] / 1e6
                pair["ratio_vs_torch"] = pair["tflops"] / row["torch_tflops"]
                pair["speedup_vs_unpaired"] = row["tk"]["median_us"] / pair["summary"]["median_us"]
            row["tk_pair"] = pair
    else:
        row["tk"] = None
        row["tk_tflops"] = None
        row["ratio_vs_torch"] = None
    if args.sweep:
        sweep = []
        kb = -(-k // 64)
        for tile in range(lib.num_tiles):
            for splits in args.sweep_splits:
                if splits > kb:
                    continue
                kw = dict(tile=tile, splits=splits)
                chk = check(lib, g, a0, b0, **kw)
                ent = {"tile": tile, "splits": splits, "plan": chk["plan"], "ok": chk["ok"],
                       "err_over_bound": chk["err_over_bound"]}
                if chk["ok"]:
                    ts = time_graph(tk_fns(**kw)[: args.sweep_calls], args.sweep_calls, args.sweep_samples)
                    ent.update(summarize(ts))
                    ent["tflops"] = flop / ent["median_us"] / 1e6
                sweep.append(ent)
                if splits == 1 and lib.plan(m, n, k, tile=tile, splits=1, pair=True)["pair"]:
                    chk = check(lib, g, a0, b0, pair=True, **kw)
                    ent = {"tile": tile, "splits": 1, "pair": True, "plan": chk["plan"], "ok": chk["ok"],
                           "err_over_bound": chk["err_over_bound"]}
                    if chk["ok"]:
                        ts = time_graph(tk_fns(pair=True, **kw)[: args.sweep_calls], args.sweep_calls,
                                        args.sweep_samples)
                        ent.update(summarize(ts))
                        ent["tflops"] = flop / ent["median_us"] / 1e6
                    sweep.append(ent)
        row["sweep"] = sweep
        good = [e for e in sweep if e.get("ok")]
        if good:
            best = min(good, key=lambda e: e["median_us"])
            row["sweep_best"] = {"tile": best["tile"], "splits": best["splits"], "pair": best.get("pair", False),
                                 "median_us": best["median_us"], "tflops": best["tflops"]}
    del data
    torch.cuda.empty_cache()
    return row


def _git(*cmd) -> str:
    try:
        return subprocess.run(["git", *cmd], cwd=REPO, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _stamp() -> str:
    p = REPO / "build" / "hgemm" / "STAMP"
    return p.read_text().strip() if p.is_file() else ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "results" / "h200" / "gemm.json"))
    ap.add_argument("--calls", type=int, default=20, help="products per graph replay")
    ap.add_argument("--samples", type=int, default=30, help="timed replays per variant")
    ap.add_argument("--sweep", action="store_true", help="also time every (tile, splits) of the table")
    ap.add_argument("--sweep-splits", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--sweep-samples", type=int, default=5)
    ap.add_argument("--sweep-calls", type=int, default=10)
    ap.add_argument("--only", nargs="*", help="substrings of shape names to run")
    ap.add_argument("--lib", help="prebuilt libtk_hgemm .so (default: build / reuse build/hgemm)")
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("benchmarks/gemm.py needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    lib = hgemm_lib.HGemm(args.lib or hgemm_lib.build(extra=()))
    gen = torch.Generator(device="cuda").manual_seed(0)
    gemms = step_gemms()
    if args.only:
        gemms = [g for g in gemms if any(s in g["name"] for s in args.only)]
    rows = []
    t0 = time.time()
    props = torch.cuda.get_device_properties(0)

    def document() -> dict:
        return {
            "benchmark": "gemm",
            "description": "tk/hopper_gemm.cuh vs torch.matmul (cuBLAS), bf16 in / bf16 out, fp32 accumulate",
            # What "the megakernel's tile" means here: its K loop, setmaxnreg split
            # and row-walk epilogue (stores through shared memory, a warp's 32
            # consecutive columns of a row), as generated code runs them.
            "epilogue": "row walk (StoreEpilogue through AnyStoreEpilogue.visit)",
            "device": props.name,
            "sms": props.multi_processor_count,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            # The device machine's copy of the tree may carry stale git metadata (run
            # 91baf12-g recorded the session's first commit): the caller's
            # TRAINKERNEL_COMMIT names what runs, as for benchmarks/train_loop.py.
            "commit": os.environ.get("TRAINKERNEL_COMMIT") or _git("rev-parse", "HEAD") or _stamp(),
            "dirty": None if os.environ.get("TRAINKERNEL_COMMIT") else bool(_git("status", "--porcelain")),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": platform.node(),
            "library": str(lib.path.name),
            "method": {"calls_per_graph": args.calls, "samples": args.samples,
                       "timer": "cuda events around graph replay",
                       "l2_rotation": "input sets >= 3 x 60 MB / bytes per set (capped at calls)",
                       "correctness": "err <= 2 K eps32 |A||B| + eps_bf16 |ref| vs fp32 product, before timing",
                       "sweep": {"splits": args.sweep_splits, "calls": args.sweep_calls,
                                 "samples": args.sweep_samples} if args.sweep else None},
            "wall_s": time.time() - t0,
            "complete": len(rows) == len(gemms),
            "shapes": rows,
        }

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    for g in gemms:
        row = bench_shape(lib, g, torch.bfloat16, args, gen)
        rows.append(row)
        Path(args.out).write_text(json.dumps(document(), indent=1))  # after every shape
        tk = f"{row['tk_tflops']:.0f}" if row["tk_tflops"] else "FAIL"
        print(f"{g['name']:<16} {g['m']:>5}x{g['n']:>5}x{g['k']:>5} {g['layout']}  tk {tk:>5} TF/s  "
              f"torch {row['torch_tflops']:.0f} TF/s  plan bn={row['plan']['bn']} s={row['plan']['splits']}",
              flush=True)
    Path(args.out).write_text(json.dumps(document(), indent=1))
    print("\n| shape | m x n x k | layout | tk TF/s | torch TF/s | tk/torch | plan (bn, splits) | pair TF/s "
          "| sweep best |")
    print("| --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- |")
    for r in rows:
        tk = f"{r['tk_tflops']:.0f}" if r["tk_tflops"] else "FAIL"
        ratio = f"{r['ratio_vs_torch']:.2f}" if r["ratio_vs_torch"] else "-"
        pr = r.get("tk_pair")
        pair = "-" if pr is None else f"{pr['tflops']:.0f}" if pr.get("tflops") else "FAIL"
        sb = r.get("sweep_best")
        sbs = (f"bn={[256, 128, 64][sb['tile']]} s={sb['splits']}{' pair' if sb.get('pair') else ''} "
               f"{sb['tflops']:.0f}" if sb else "-")
        print(f"| {r['name']} | {r['m']}x{r['n']}x{r['k']} | {r['layout']} | {tk} | {r['torch_tflops']:.0f} | {ratio} | "
              f"{r['plan']['bn']}, {r['plan']['splits']} | {pair} | {sbs} |")
    pairs_ok = all(r["tk_pair"]["check"]["ok"] for r in rows if r.get("tk_pair"))
    return 0 if all(r["check"]["ok"] for r in rows) and pairs_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
