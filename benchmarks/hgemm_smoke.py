"""First-contact GPU smoke test of the Hopper GEMM tile, built to diagnose.

``python -m benchmarks.hgemm_smoke [LAYOUT ...]`` runs, for each layout
(NN NT TN TT) in its own process (a trapped kernel kills its CUDA context,
not the others'), every tile shape, both input types, split-K, the cluster
pair and the fallback on small and tail shapes, and prints one line per case:

    OK|BAD layout dtype tile splits MxNxK err/bound path

For a BAD case it adds a probe: A one-hot (A[i, k] = 1 iff k == i % 64) and
B[k, j] = k (exact in bf16), so C[i, j] should be i % 64; it prints which
k each output row actually read, which separates an A-side descriptor or
swizzle error from a B-side one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

LAYOUTS = {"NN": (False, False), "NT": (False, True), "TN": (True, False), "TT": (True, True)}
SHAPES = [(128, 256, 64), (128, 256, 512), (200, 300, 136), (8, 8, 8), (1000, 1000, 1000)]
if os.environ.get("HGEMM_SMOKE_QUICK"):  # under compute-sanitizer: small shapes only
    SHAPES = [(128, 256, 64), (200, 300, 136), (8, 8, 8)]


def _probe(lib, ta, tb, m, n, k, dtype, tile, splits, pair):
    import torch

    i = torch.arange(m, device="cuda")
    kk = torch.arange(k, device="cuda")
    opa = (kk[None, :] == (i[:, None] % min(64, k))).to(dtype)  # m x k
    opb = kk[:, None].expand(k, n).to(dtype).contiguous()  # k x n, value k
    a = opa.t().contiguous() if ta else opa
    b = opb.t().contiguous() if tb else opb
    out = lib.mm(a, b, trans_a=ta, trans_b=tb, out_dtype=torch.float32, tile=tile, splits=splits, pair=pair)
    torch.cuda.synchronize()
    want = (i % min(64, k)).float()[:, None].expand(m, n)
    wrong = (out != want)
    rows = wrong.any(1).nonzero().flatten()[:6].tolist()
    cols = wrong.any(0).nonzero().flatten()[:6].tolist()
    sample = [(r, [round(v, 1) for v in out[r, :8].tolist()]) for r in rows[:3]]
    return f"probe: {int(wrong.sum())} wrong of {m * n}; rows {rows} cols {cols}; row values {sample}"


def run_layout(name: str) -> int:
    import torch

    from benchmarks import hgemm_lib

    ta, tb = LAYOUTS[name]
    lib = hgemm_lib.HGemm(hgemm_lib.build(extra=hgemm_lib.WATCHDOG_FLAGS))
    gen = torch.Generator(device="cuda").manual_seed(1)
    bad = 0
    cases = []
    for dtype in (torch.bfloat16, torch.float16):
        for tile in range(lib.num_tiles):
            for shape in SHAPES:
                cases.append((dtype, tile, 1, shape, False, False))
            cases.append((dtype, tile, 4, (256, 264, 1024), False, False))
            cases.append((dtype, tile, 1, (256, 264, 1024), False, True))  # a cluster pair, one unit each
            cases.append((dtype, tile, 1, (200, 300, 136), False, True))  # tails
        cases.append((dtype, -1, 0, (200, 300, 136), True, False))
    for dtype, tile, splits, (m, n, k), fb, pair in cases:
        a = torch.randn((k, m) if ta else (m, k), generator=gen, device="cuda").to(dtype)
        b = torch.randn((n, k) if tb else (k, n), generator=gen, device="cuda").to(dtype)
        opa, opb = (a.t() if ta else a), (b.t() if tb else b)
        out = torch.full((m, n), float("nan"), device="cuda")
        lib.mm(a, b, trans_a=ta, trans_b=tb, out=out, tile=tile, splits=splits, force_fallback=fb, pair=pair)
        torch.cuda.synchronize()
        ref = opa.float() @ opb.float()
        bound = 2 * k * 2.0**-24 * (opa.float().abs() @ opb.float().abs()) + 1e-30
        r = float(((out - ref).abs() / bound).max().item()) if torch.isfinite(out).all() else float("inf")
        plan = lib.last_plan()
        # A pair asked for is a pair that ran, where the TMA path runs (rows TMA cannot
        # read, as B's 600-byte rows of 200 x 300 x 136 in NN, take the unpaired fallback).
        ok = r <= 1.0 and plan["pair"] == int(pair and plan["path"] == "tma")
        line = (f"{'OK ' if ok else 'BAD'} {name} {str(dtype)[6:]:<8} tile={tile:>2} splits={plan['splits']} "
                f"{m}x{n}x{k} err/bound={r:.3g} path={plan['path']} bn={plan['bn']} pair={plan['pair']}")
        if not ok:
            bad += 1
            try:
                line += "\n    " + _probe(lib, ta, tb, m, n, k, dtype, tile, splits, pair)
            except Exception as exc:  # noqa: BLE001
                line += f"\n    probe failed: {exc}"
        print(line, flush=True)
    return 1 if bad else 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--one":
        return run_layout(argv[1])
    names = argv or list(LAYOUTS)
    # Children print straight to our stdout (every line names its layout), so
    # nothing is lost if an outer timeout kills us.
    procs = {n: subprocess.Popen([sys.executable, "-m", "benchmarks.hgemm_smoke", "--one", n], cwd=REPO)
             for n in names}
    rc = 0
    for n, p in procs.items():
        try:
            p.wait(timeout=int(os.environ.get("HGEMM_SMOKE_TIMEOUT", "45")))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            print(f"TIMEOUT {n}", flush=True)
        print(f"===== {n}: exit {p.returncode}", flush=True)
        rc |= p.returncode != 0
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
