"""Tests of the Hopper GEMM tile (trainkernel/backend/include/tk/hopper_gemm.cuh).

CPU part (wherever nvcc exists; no GPU): the launcher library
tests/device/hopper_gemm_lib.cu, which instantiates every shape of the tile
table for both input types and all four transpositions (plus the fallback
kernels), compiles for sm_90a with no warning, no spill and no local-memory
stack; its SASS holds wgmma (HGMMA) and TMA (UTMALDG) (where cuobjdump
exists); a host emulation of the kernel's data path
(tests/device/hopper_gemm_emu.cu) multiplies exactly through the same boxes,
descriptors and fragment map; the planner (``tk_hgemm_plan``, host code of
the same library, callable without a GPU) makes the documented choices.

GPU part (``@pytest.mark.cuda``): the library against ``torch.matmul`` in fp32
on fresh random data at odd and large shapes, every layout, both types, fp32
and 16-bit outputs, beta, forced tile shapes and split counts, the fallback
(operands TMA cannot address, e.g. K odd), poisoned outputs, determinism.

Bounds: the reference is the fp32 product of the same bf16/f16 inputs, so
only the accumulation order differs (fp32 sums of K exact products): the
error of an element is at most about K * 2^-24 * sum_k |a_ik b_kj| (we allow
2 K eps32 |a||b| plus, for a 16-bit output, half an ulp of the output type).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from _ptxas import parse_ptxas

from benchmarks import hgemm_lib

REPO = Path(__file__).resolve().parent.parent

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def _build(tmp_path_factory, extra):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    out = Path(os.environ.get("TK_HGEMM_BUILD_DIR") or tmp_path_factory.mktemp("hgemm"))
    lib = hgemm_lib.build(out, extra=extra, ptxas_verbose=True)
    log = lib.with_suffix(".log")
    return lib, (log.read_text() if log.is_file() else "")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The launcher as production code builds it (no watchdog), compiled once
    with -Xptxas -v (its log kept). $TK_HGEMM_BUILD_DIR reuses a build."""
    return _build(tmp_path_factory, ())





# --------------------------------------------------------------------------- CPU




@needs_nvcc
def test_launcher_compiles_for_sm90a_without_warnings(built, record_property):
    lib, log = built
    assert lib.is_file()
    warnings = [ln for ln in log.splitlines() if re.search(r"\bwarning\b", ln, re.IGNORECASE)]
    assert not warnings, "nvcc/ptxas warnings:\n" + "\n".join(warnings)
    # C7507 is an info line, not a warning: ptxas dropped every setmaxnreg of a
    # kernel, so its consumers stay at the launch bound's registers.
    ignored = [ln for ln in log.splitlines() if "C7507" in ln]
    assert not ignored, "setmaxnreg ignored:\n" + "\n".join(ignored)
    rows = parse_ptxas(log)
    tma = [r for r in rows if "gemm_kernel" in r["kernel"]]
    fallback = [r for r in rows if "fallback_kernel" in r["kernel"]]
    # 3 tile shapes x 2 input types x 4 transpositions, alone and as a cluster
    # pair; 2 x 4 fallback kernels.
    assert len(tma) == 48, f"expected 48 TMA kernels, ptxas listed {len(tma)}"
    assert len(fallback) == 8, f"expected 8 fallback kernels, ptxas listed {len(fallback)}"
    bad = [r for r in tma + fallback if r["spill_stores"] or r["spill_loads"] or r["stack"]]
    assert not bad, f"spills or stack frames (local memory): {bad}"
    record_property("hopper_gemm_ptxas", "\n".join(f"{r['registers']:>4} regs  {r['kernel']}" for r in rows))


@needs_nvcc
def test_sass_uses_wgmma_and_tma(built):
    lib, _ = built
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump is None:
        pytest.skip("cuobjdump is not on PATH")
    sass = subprocess.run([cuobjdump, "--dump-sass", str(lib)], capture_output=True, text=True).stdout
    assert "HGMMA" in sass, "no wgmma (HGMMA) in the SASS"
    assert "UTMALDG" in sass, "no TMA load (UTMALDG) in the SASS"
    assert "sm_90a" in sass


@needs_nvcc
def test_header_compiles_without_sm90a():
    """Included under plain -arch=sm_90 (as tk/*.cuh are by generated code),
    the header compiles: the wgmma kernel body is compiled out."""
    src = REPO / "build" / "hgemm_plain_sm90.cu"
    src.parent.mkdir(exist_ok=True)
    src.write_text('#include "tk/hopper_gemm.cuh"\n')
    proc = subprocess.run(
        ["nvcc", "-std=c++17", "-arch=sm_90", "-O3", "-I", str(hgemm_lib.INCLUDE), "-c", str(src),
         "-o", str(src.with_suffix(".o"))], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in (proc.stdout + proc.stderr).lower(), proc.stderr


@needs_nvcc
def test_host_emulation_of_the_data_path(tmp_path):
    """tests/device/hopper_gemm_emu.cu replays the kernel's boxes, stages,
    descriptors, K steps, split-K slices and fragment stores on the CPU
    against the documented TMA swizzle / wgmma canonical layouts / D fragment,
    for every tile shape (both heights, 32 to 256 wide) and layout, tails and
    split-K included."""
    # Built for two consumer warpgroups (128-row tiles, 32 to 256 wide) and for
    # one (64-row tiles, 32 to 128 wide): the checks each build runs.
    for consumers, checks in ((2, 460), (1, 384)):
        exe = tmp_path / f"hopper_gemm_emu{consumers}"
        proc = subprocess.run(
            ["nvcc", "-std=c++17", "-arch=sm_90", "-O3", f"-DTK_WGMMA_CONSUMERS={consumers}", "-I", str(hgemm_lib.INCLUDE),
             "-I", str(REPO / "tests" / "device"), str(REPO / "tests" / "device" / "hopper_gemm_emu.cu"), "-o", str(exe)],
            capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "warning" not in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
        lines = [ln for ln in run.stdout.splitlines() if ln.strip()]
        bad = [ln for ln in lines if not ln.startswith("PASS ")]
        assert run.returncode == 0 and not bad and len(lines) == checks, "\n".join(bad[:20]) or run.stderr[-2000:]


@needs_nvcc
def test_planner_choices(built):
    """choose_plan (host code) on the training-step shapes, 132 SMs."""
    lib = hgemm_lib.HGemm(built[0])
    for m, n, k in [(1024, 4096, 1024), (1024, 256, 4096), (1024, 4096, 256), (4096, 256, 1024),
                    (2048, 8192, 2048), (2048, 2048, 8192), (8192, 2048, 2048), (1, 1, 1)]:
        p = lib.plan(m, n, k)
        assert p["path"] == "tma"
        assert p["bm"] == 128 and p["bn"] in (64, 128, 256)
        assert p["tiles_m"] == -(-m // p["bm"]) and p["tiles_n"] == -(-n // p["bn"])
        assert p["splits"] >= 1 and p["units"] == p["tiles_m"] * p["tiles_n"] * p["splits"]
        assert p["grid"] == min(p["units"], 132)
        kb = -(-k // 64)
        # every slice non-empty, together they cover K exactly once
        assert (p["splits"] - 1) * p["kb_per_split"] < kb <= p["splits"] * p["kb_per_split"]
    # a large output is never split, and uses the largest tile
    big = lib.plan(2048, 8192, 2048)
    assert big["splits"] == 1 and big["bn"] == 256
    # an output of 8 large tiles with a long K is split to fill the SMs
    narrow = lib.plan(1024, 256, 4096)
    assert narrow["units"] >= 64
    # forced choices are honoured
    forced = lib.plan(1024, 256, 4096, tile=1, splits=4)
    assert (forced["bn"], forced["splits"]) == (128, 4)
    # nothing pairs unless asked
    assert all(lib.plan(m, n, k)["pair"] == 0 for m, n, k in [(1024, 4096, 1024), (2048, 8192, 2048)])


@needs_nvcc
def test_cluster_pair_plans(built):
    """choose_plan with pair_req = 1: the plan as without, paired where it has
    an even number of 128-row tiles and no split-K (units 2q, 2q + 1 share B),
    on an even grid; anything else is the unpaired plan."""
    lib = hgemm_lib.HGemm(built[0])
    for m, n, k, splits in [(1024, 4096, 1024, 0), (2048, 8192, 2048, 0), (129, 300, 200, 0), (1024, 256, 4096, 1)]:
        p = lib.plan(m, n, k, splits=splits, pair=True)
        alone = lib.plan(m, n, k, splits=splits)
        assert p["pair"] == 1 and p["splits"] == 1 and p["grid"] % 2 == 0, p
        assert {**p, "pair": 0, "grid": alone["grid"]} == alone
        assert p["grid"] == min(p["units"], 132) // 2 * 2
    assert lib.plan(2048, 8192, 2048, pair=True, sms=131)["grid"] == 130
    for m, n, k, splits in [(300, 256, 256, 0), (128, 64, 64, 0), (1024, 256, 4096, 4), (1024, 256, 4096, 0)]:
        p = lib.plan(m, n, k, splits=splits, pair=True)
        assert p["pair"] == 0 and p == lib.plan(m, n, k, splits=splits), p
        forced = lib.plan(m, n, k, splits=splits, pair=2)  # any plan of two units or more walked as a pair
        assert forced["pair"] == (p["units"] >= 2) and forced["splits"] == p["splits"], forced
        assert forced["grid"] == (p["grid"] // 2 * 2 if forced["pair"] else p["grid"]), forced


@needs_nvcc
def test_cluster_pair_ptx(tmp_path):
    """The pair kernel multicasts B (one TMA copy into both blocks), frees a
    stage on the peer's barrier through mapa with release at cluster scope,
    waits on its own with acquire at cluster scope, and syncs the cluster at
    start and end; the unpaired kernel does none of it."""
    ptx = {}
    for pair in (True, False):
        src, out = tmp_path / f"pair{int(pair)}.cu", tmp_path / f"pair{int(pair)}.ptx"
        src.write_text(
            '#include "tk/hopper_gemm.cuh"\n'
            "namespace hg = tk::hopper;\n"
            "void* kernel() {\n"
            "  return (void*)hg::gemm_kernel<__nv_bfloat16, hg::TileById<0>::type, false, true,\n"
            f"                                hg::StoreEpilogue<__nv_bfloat16>, {str(pair).lower()}>;\n"
            "}\n")
        proc = subprocess.run(["nvcc", "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-I",
                               str(hgemm_lib.INCLUDE), "-ptx", str(src), "-o", str(out)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        ptx[pair] = out.read_text()
    needles = ["multicast::cluster", "mapa.shared::cluster", "mbarrier.arrive.release.cluster.shared::cluster",
               "try_wait.parity.acquire.cluster", "barrier.cluster.arrive", "%cluster_ctarank"]
    for needle in needles:
        assert needle in ptx[True], needle
        assert needle not in ptx[False], needle


# --------------------------------------------------------------------------- GPU


@pytest.fixture(scope="module")
def hg(tmp_path_factory):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    major, _ = torch.cuda.get_device_capability()
    if major != 9:
        pytest.skip("needs a Hopper GPU (sm_90)")
    lib, _ = _build(tmp_path_factory, hgemm_lib.WATCHDOG_FLAGS)
    return hgemm_lib.HGemm(lib)


def _operands(m, n, k, dtype, ta, tb, gen, pad=0):
    """Fresh random op(A), op(B) stored as requested (pad: extra row stride)."""
    import torch

    def make(rows, cols):
        base = torch.randn(rows, cols + pad, generator=gen, device="cuda", dtype=torch.float32)
        return base.to(dtype)[:, :cols]

    a = make(k, m) if ta else make(m, k)
    b = make(n, k) if tb else make(k, n)
    opa = a.t() if ta else a
    opb = b.t() if tb else b
    return a, b, opa, opb


def _check(out, ref, opa, opb, k, out_dtype):
    import torch

    eps32 = 2.0**-24
    scale = (opa.float().abs() @ opb.float().abs())
    bound = 2.0 * max(k, 1) * eps32 * scale + 1e-30
    if out_dtype != torch.float32:
        bound = bound + torch.finfo(out_dtype).eps * ref.abs()
    err = (out.float() - ref).abs()
    assert torch.isfinite(out.float()).all(), "non-finite output (unwritten element?)"
    worst = (err / bound).max().item() if err.numel() else 0.0
    assert worst <= 1.0, f"error {err.max().item():.3e} exceeds bound (ratio {worst:.2f})"
    return worst


SHAPES_ODD = [(1, 1, 1), (17, 33, 65), (127, 255, 129), (1000, 1000, 999), (3, 700, 5)]
SHAPES_TMA = [(8, 8, 8), (17, 40, 72), (127, 264, 136), (1000, 1000, 1000), (129, 65, 4104),
              (1024, 4096, 1024), (256, 512, 64)]
LAYOUTS = [(False, False), (False, True), (True, False), (True, True)]


def _run_case(hg, m, n, k, dtype, ta, tb, out_dtype, seed, **kw):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    a, b, opa, opb = _operands(m, n, k, dtype, ta, tb, gen)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)  # poison
    hg.mm(a, b, trans_a=ta, trans_b=tb, out=out, **kw)
    torch.cuda.synchronize()
    ref = opa.float() @ opb.float()
    return _check(out, ref, opa, opb, k, out_dtype), hg.last_plan()


@pytest.mark.cuda
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("shape", SHAPES_TMA + SHAPES_ODD, ids=lambda s: "x".join(map(str, s)))
def test_matches_torch(hg, shape, layout, dtype_name):
    import torch

    dtype = getattr(torch, dtype_name)
    m, n, k = shape
    ta, tb = layout
    for out_dtype in (torch.float32, dtype):
        _, plan = _run_case(hg, m, n, k, dtype, ta, tb, out_dtype, seed=hash((shape, layout)) & 0xFFFF)
        # TMA needs row strides that are multiples of 8 elements
        rows_ok = all(x % 8 == 0 for x in ((m if ta else k), (k if tb else n)))
        assert plan["path"] == ("tma" if rows_ok else "fallback"), plan


@pytest.mark.cuda
@pytest.mark.parametrize("layout", LAYOUTS, ids=["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("tile", [0, 1, 2])
@pytest.mark.parametrize("splits", [1, 3, 8])
def test_every_tile_and_split(hg, layout, tile, splits):
    import torch

    ta, tb = layout
    # m % 8 == 0: a transposed A's rows (m elements) stay TMA-able; m % 128 != 0 keeps a tail tile
    for m, n, k in [(296, 520, 1000), (128, 256, 64 * 8)]:
        _, plan = _run_case(hg, m, n, k, torch.bfloat16, ta, tb, torch.float32, seed=tile * 10 + splits,
                            tile=tile, splits=splits)
        assert plan["path"] == "tma" and plan["tile"] == tile
        assert plan["splits"] == min(splits, -(-k // 64))


@pytest.mark.cuda
def test_beta_accumulates(hg):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(7)
    for splits in (1, 4):
        for out_dtype in (torch.float32, torch.bfloat16):
            a, b, opa, opb = _operands(200, 136, 512, torch.bfloat16, False, False, gen)
            c0 = torch.randn(200, 136, generator=gen, device="cuda").to(out_dtype)
            c = c0.clone()
            hg.mm(a, b, out=c, beta=0.5, splits=splits)
            ref = opa.float() @ opb.float() + 0.5 * c0.float()
            torch.cuda.synchronize()
            _check(c, ref, opa, opb, 512 + 1, out_dtype)


@pytest.mark.cuda
def test_fallback_matches_and_misaligned(hg):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(3)
    # forced fallback on TMA-able shapes, all layouts
    for ta, tb in LAYOUTS:
        _, plan = _run_case(hg, 300, 264, 136, torch.bfloat16, ta, tb, torch.float32, seed=11, force_fallback=True)
        assert plan["path"] == "fallback"
    # a misaligned base pointer (offset by one element) forces the fallback
    base = torch.randn(1, 64 * 64 + 1, generator=gen, device="cuda").to(torch.bfloat16)
    a = base[0, 1:].view(64, 64)
    b = torch.randn(64, 72, generator=gen, device="cuda").to(torch.bfloat16)
    out = hg.mm(a, b, out_dtype=torch.float32)
    torch.cuda.synchronize()
    assert hg.last_plan()["path"] == "fallback"
    _check(out, a.float() @ b.float(), a, b, 64, torch.float32)
    # K == 0: C = beta * C
    c = torch.ones(5, 8, device="cuda")
    hg.mm(torch.empty(5, 0, device="cuda", dtype=torch.bfloat16),
          torch.empty(0, 8, device="cuda", dtype=torch.bfloat16), out=c, beta=2.0)
    torch.cuda.synchronize()
    assert torch.equal(c, torch.full_like(c, 2.0))


@pytest.mark.cuda
def test_row_stride_padding(hg):
    """Operands with a row stride larger than the row (views of wider tensors)."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(5)
    for ta, tb in LAYOUTS:
        # every row stride (m + 8, n + 8 or k + 8 elements) a multiple of 8: TMA-able in all layouts
        a, b, opa, opb = _operands(136, 200, 264, torch.float16, ta, tb, gen, pad=8)
        out = hg.mm(a, b, trans_a=ta, trans_b=tb, out_dtype=torch.float32)
        torch.cuda.synchronize()
        assert hg.last_plan()["path"] == "tma"
        _check(out, opa.float() @ opb.float(), opa, opb, 264, torch.float32)


@pytest.mark.cuda
def test_deterministic(hg):
    """Same inputs, same bits: with and without split-K, and split-K equal
    across repeated launches (the fixed summation order)."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(9)
    a, b, _, _ = _operands(1024, 256, 4096, torch.bfloat16, False, False, gen)
    for splits in (1, 8):
        outs = [hg.mm(a, b, out_dtype=torch.float32, tile=1, splits=splits) for _ in range(3)]
        torch.cuda.synchronize()
        assert all(torch.equal(outs[0], o) for o in outs[1:])


@pytest.mark.cuda
@pytest.mark.parametrize("layout", LAYOUTS, ids=["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("tile", [0, 1, 2])
def test_cluster_pair_matches_torch(hg, layout, tile):
    """Clusters of two sharing B by multicast: every layout and tile shape, a
    tail in every dimension (an even number of 128-row tiles, the last one
    partial; no split-K: what pairs), several units a block (1024 x 4096 on
    256-wide tiles: 128 units), fp32 and bf16 outputs; the same bits as the
    unpaired kernel (same K order, only the loads differ) and across reruns."""
    import torch

    ta, tb = layout
    for m, n, k in [(392, 520, 1000), (1024, 4096, 1024), (2048, 1000, 136), (136, 64, 64)]:
        for out_dtype in (torch.float32, torch.bfloat16):
            _, plan = _run_case(hg, m, n, k, torch.bfloat16, ta, tb, out_dtype, seed=tile + 17, tile=tile, splits=1,
                                pair=True)
            assert plan["path"] == "tma" and plan["pair"] == 1 and plan["tile"] == tile, plan
    gen = torch.Generator(device="cuda").manual_seed(4)
    a, b, _, _ = _operands(1016, 776, 520, torch.bfloat16, ta, tb, gen)
    paired = [hg.mm(a, b, trans_a=ta, trans_b=tb, out_dtype=torch.float32, tile=tile, splits=1, pair=True)
              for _ in range(2)]
    assert hg.last_plan()["pair"] == 1
    alone = hg.mm(a, b, trans_a=ta, trans_b=tb, out_dtype=torch.float32, tile=tile, splits=1)
    torch.cuda.synchronize()
    assert torch.equal(paired[0], paired[1]) and torch.equal(paired[0], alone)


@pytest.mark.cuda
@pytest.mark.parametrize("layout", LAYOUTS, ids=["NN", "NT", "TN", "TT"])
def test_cluster_pair_walks_any_plan(hg, layout):
    """pair=2: any plan walked as a pair, as the megakernel's paired kernels walk
    every gemm: split-K slices and odd tile-rows (units that do not share B:
    no multicast, idle steps where one unit is shorter or missing, split-K's
    last slice shorter than the others), several units a block; the same bits
    as the unpaired kernel."""
    import torch

    ta, tb = layout
    gen = torch.Generator(device="cuda").manual_seed(8)
    for m, n, k, tile, splits in [(392, 520, 1000, 1, 3), (264, 4096, 520, 2, 1), (1032, 64, 4104, 0, 4),
                                  (136, 72, 200, 2, 2)]:
        a, b, opa, opb = _operands(m, n, k, torch.bfloat16, ta, tb, gen)
        alone = hg.mm(a, b, trans_a=ta, trans_b=tb, out_dtype=torch.float32, tile=tile, splits=splits)
        paired = hg.mm(a, b, trans_a=ta, trans_b=tb, out_dtype=torch.float32, tile=tile, splits=splits, pair=2)
        torch.cuda.synchronize()
        plan = hg.last_plan()
        assert plan["pair"] == 1 and plan["splits"] == min(splits, -(-k // 64)), plan
        assert torch.equal(paired, alone), (m, n, k, tile, splits)
        _check(paired, opa.float() @ opb.float(), opa, opb, k, torch.float32)


@pytest.mark.cuda
def test_cluster_pair_in_a_graph(hg):
    """The pair's cluster launch captured in a CUDA graph and replayed."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(6)
    a, b, opa, opb = _operands(1024, 4096, 1024, torch.bfloat16, False, False, gen)
    out = torch.empty(1024, 4096, device="cuda", dtype=torch.bfloat16)
    hg.mm(a, b, out=out, pair=True)  # first call outside the capture (attributes, occupancy)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        hg.mm(a, b, out=out, pair=True)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert hg.last_plan()["pair"] == 1
    _check(out, opa.float() @ opb.float(), opa, opb, 1024, torch.bfloat16)


@pytest.mark.cuda
def test_large_step_shapes(hg):
    """Every GEMM of the medium and large training steps (benchmarks/gemm.py's list)."""
    import torch

    from benchmarks.gemm import step_gemms

    for g in step_gemms():
        ta, tb = g["trans_a"], g["trans_b"]
        worst, plan = _run_case(hg, g["m"], g["n"], g["k"], torch.bfloat16, ta, tb, torch.bfloat16, seed=1)
        assert plan["path"] == "tma"
