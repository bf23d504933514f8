"""ctypes binding of the Hopper GEMM launcher (tests/device/hopper_gemm_lib.cu).

``build()`` compiles the launcher to a shared library with nvcc for sm_90a
(``-gencode=arch=compute_90a,code=sm_90a``: wgmma and setmaxnreg exist only
there); ``HGemm(path)`` loads it and multiplies torch CUDA tensors on torch's
current stream::

    lib = HGemm(build())
    c = lib.mm(a, b)                      # a: M x K, b: K x N
    c = lib.mm(a, b, trans_a=True)        # a stored K x M  (X^T @ dY)
    c = lib.mm(a, b, trans_b=True)        # b stored N x K  (dY @ W^T)
    lib.mm(a, b, out=c, beta=1.0)         # c += a @ b

The same library answers planning questions without a GPU (``plan``), which
the CPU tests use.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional, Sequence

from trainkernel.backend.build import headers_digest

REPO = Path(__file__).resolve().parent.parent
INCLUDE = REPO / "trainkernel" / "backend" / "include"
SOURCE = REPO / "tests" / "device" / "hopper_gemm_lib.cu"

GENCODE = "-gencode=arch=compute_90a,code=sm_90a"
BASE_FLAGS = ("-std=c++17", "-O3", "--shared", "-Xcompiler", "-fPIC", "-lineinfo", GENCODE)
# Every mbarrier wait traps after 4 s instead of hanging: a broken pipeline
# fails the test that ran it, not the whole GPU session.
WATCHDOG_FLAGS = ("-DTK_HOPPER_WATCHDOG=4000000000ull",)

IN_DTYPES = {"bfloat16": 1, "float16": 2}
OUT_DTYPES = {"float32": 0, "bfloat16": 1, "float16": 2}
PATHS = {0: "tma", 1: "fallback", 2: "empty"}
PLAN_FIELDS = ("path", "tile", "bm", "bn", "splits", "kb_per_split", "tiles_m", "tiles_n", "units", "grid", "pair")


def nvcc() -> str:
    found = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None)
    if found is None:
        raise RuntimeError("nvcc not found")
    return found


PARTS = 9  # hopper_gemm_lib.cu: part 0 = the C API, parts 1..8 = one (type, layout) each


def compile_command(obj: Path, part: int, extra: Sequence[str] = WATCHDOG_FLAGS,
                    ptxas_verbose: bool = False) -> list[str]:
    cmd = [nvcc(), *BASE_FLAGS[:2], "-Xcompiler", "-fPIC", "-lineinfo", GENCODE, *extra,
           f"-DTK_HGEMM_PART={part}", "-I", str(INCLUDE), "-c", str(SOURCE), "-o", str(obj)]
    if ptxas_verbose:
        cmd[1:1] = ["-Xptxas", "-v"]
    return cmd


def source_digest(extra: Sequence[str] = WATCHDOG_FLAGS) -> str:
    h = hashlib.sha256()
    h.update(" ".join([*BASE_FLAGS, *extra]).encode())
    h.update(SOURCE.read_bytes())
    h.update(headers_digest([INCLUDE]).encode())  # the kernel cache's rule: any header may be included
    return h.hexdigest()[:16]


def build(out_dir: Optional[os.PathLike] = None, extra: Sequence[str] = WATCHDOG_FLAGS,
          ptxas_verbose: bool = False, jobs: Optional[int] = None) -> Path:
    """Build (or reuse) libtk_hgemm-<digest>.so; returns its path. The log
    (nvcc's and, with ptxas_verbose, ptxas' output of every part) is written
    beside it as libtk_hgemm-<digest>.log.

    The 9 parts compile in parallel (``jobs``, default: the CPU count) and
    link into one library. ``$TK_HGEMM_LIB`` names a prebuilt library to use
    instead.
    """
    pre = os.environ.get("TK_HGEMM_LIB")
    if pre:
        return Path(pre)
    out_dir = Path(out_dir or os.environ.get("TK_HGEMM_BUILD_DIR", REPO / "build" / "hgemm"))
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"libtk_hgemm-{source_digest(extra)}.so"
    log_path = out.with_suffix(".log")
    if out.is_file() and (not ptxas_verbose or log_path.is_file()):
        return out
    tag = f"{os.getpid()}"
    objs = [out_dir / f"{out.stem}.part{i}.{tag}.o" for i in range(PARTS)]
    cmds = [compile_command(o, i, extra, ptxas_verbose) for i, o in enumerate(objs)]
    workers = jobs or max(1, min(PARTS, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        procs = list(pool.map(lambda c: subprocess.run(c, capture_output=True, text=True), cmds))
    tmp = out.with_suffix(f".{tag}.tmp.so")
    link = [nvcc(), "--shared", GENCODE, *map(str, objs), "-o", str(tmp)]
    logs = [f"$ {' '.join(c)}\n{p.stdout}{p.stderr}" for c, p in zip(cmds, procs)]
    failed = [p for p in procs if p.returncode != 0]
    if not failed:
        lp = subprocess.run(link, capture_output=True, text=True)
        logs.append(f"$ {' '.join(link)}\n{lp.stdout}{lp.stderr}")
        if lp.returncode != 0:
            failed.append(lp)
    for o in objs:
        with contextlib.suppress(OSError):
            o.unlink()
    log_path.write_text("\n".join(logs))
    if failed:
        raise RuntimeError("building the Hopper GEMM library failed:\n" + "\n".join(logs)[-20000:])
    os.replace(tmp, out)
    return out


class HGemm:
    """The loaded launcher."""

    def __init__(self, path: os.PathLike):
        self.path = Path(path)
        lib = ctypes.CDLL(str(self.path))
        ll, i, f, vp = ctypes.c_longlong, ctypes.c_int, ctypes.c_float, ctypes.c_void_p
        lib.tk_hgemm.argtypes = [vp, ll, vp, ll, vp, ll, i, i, i, i, i, i, i, f, i, i, i, i, vp]
        lib.tk_hgemm.restype = i
        lib.tk_hgemm_last_plan.argtypes = [ctypes.POINTER(i), ctypes.POINTER(f)]
        lib.tk_hgemm_last_plan.restype = None
        lib.tk_hgemm_plan.argtypes = [i, i, i, i, i, i, i, i, ctypes.POINTER(i), ctypes.POINTER(f)]
        lib.tk_hgemm_plan.restype = None
        lib.tk_hgemm_error.restype = ctypes.c_char_p
        lib.tk_hgemm_num_tiles.restype = i
        self.lib = lib
        self.num_tiles = lib.tk_hgemm_num_tiles()

    @staticmethod
    def _plan_dict(vals, model) -> dict:
        d = dict(zip(PLAN_FIELDS, list(vals)))
        d["path"] = PATHS.get(d["path"], d["path"])
        d["model_us"] = float(model.value)
        return d

    def plan(self, m: int, n: int, k: int, tile: int = -1, splits: int = 0, out_bytes: int = 2,
             sms: int = 132, pair: int = 0) -> dict:
        vals = (ctypes.c_int * len(PLAN_FIELDS))()
        model = ctypes.c_float()
        self.lib.tk_hgemm_plan(m, n, k, tile, splits, out_bytes, sms, int(pair), vals, ctypes.byref(model))
        return self._plan_dict(vals, model)

    def last_plan(self) -> dict:
        vals = (ctypes.c_int * len(PLAN_FIELDS))()
        model = ctypes.c_float()
        self.lib.tk_hgemm_last_plan(vals, ctypes.byref(model))
        return self._plan_dict(vals, model)

    def mm(self, a, b, *, trans_a: bool = False, trans_b: bool = False, out=None, out_dtype=None,
           beta: float = 0.0, tile: int = -1, splits: int = 0, force_fallback: bool = False,
           pair: int = 0):
        """op(a) @ op(b) (+ beta * out) into ``out`` (allocated if None).

        pair: clusters of two blocks sharing B's tiles by TMA multicast, where
        the plan allows it (no split-K, an even number of 128-row tiles);
        ``last_plan()["pair"]`` says whether it ran so. pair=2: the automatic
        plan walked as a pair whatever its units (idle steps, no multicast
        where the two units differ: the megakernel's paired gemms).

        a: M x K (K x M with trans_a), b: K x N (N x K with trans_b); both
        bf16 or both f16, CUDA, unit stride in the last dimension (any row
        stride). out: M x N, fp32 / bf16 / f16, unit last stride.
        """
        import torch

        if a.dtype != b.dtype or str(a.dtype).replace("torch.", "") not in IN_DTYPES:
            raise TypeError(f"inputs must both be bf16 or f16, got {a.dtype} and {b.dtype}")
        if a.dim() != 2 or b.dim() != 2 or a.stride(1) != 1 or b.stride(1) != 1:
            raise ValueError("a and b must be 2-D with unit stride in the last dimension")
        m, k = (a.shape[1], a.shape[0]) if trans_a else (a.shape[0], a.shape[1])
        kb, n = (b.shape[1], b.shape[0]) if trans_b else (b.shape[0], b.shape[1])
        if k != kb:
            raise ValueError(f"inner dimensions differ: op(a) is {m}x{k}, op(b) is {kb}x{n}")
        if out is None:
            out = torch.empty((m, n), dtype=out_dtype or a.dtype, device=a.device)
        if tuple(out.shape) != (m, n) or (n > 1 and out.stride(1) != 1):
            raise ValueError(f"out must be {m}x{n} with unit last stride")
        od = OUT_DTYPES[str(out.dtype).replace("torch.", "")]
        stream = torch.cuda.current_stream(a.device).cuda_stream
        lda = max(a.stride(0), 1) if a.shape[0] > 1 else a.shape[1]
        ldb = max(b.stride(0), 1) if b.shape[0] > 1 else b.shape[1]
        ldc = max(out.stride(0), 1) if m > 1 else n
        rc = self.lib.tk_hgemm(a.data_ptr(), lda, b.data_ptr(), ldb, out.data_ptr(), ldc, m, n, k,
                               IN_DTYPES[str(a.dtype).replace("torch.", "")], int(trans_a), int(trans_b),
                               od, float(beta), int(tile), int(splits), int(force_fallback), int(pair),
                               stream)
        if rc != 0:
            raise RuntimeError(f"tk_hgemm failed ({rc}): {self.lib.tk_hgemm_error().decode()}")
        return out
