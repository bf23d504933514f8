"""trainkernel.backend.build: nvcc in parallel, content-addressed cache, concurrency.

Needs nvcc (not a GPU); skipped where the CUDA toolkit is absent.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import shutil
from pathlib import Path

import pytest

from trainkernel.backend import build as B

pytestmark = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").is_file() and not os.environ.get("CUDA_HOME"),
    reason="nvcc (CUDA toolkit) not found",
)

TINY = r"""
#include <cuda_runtime.h>
__global__ void tk_tiny(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
extern "C" int tk_launch(void** buffers, void* arena, int grid, void* stream) {
  float* x = (float*)buffers[0];
  int n = 1;
  void* args[] = {&x, &n};
  return (int)cudaLaunchCooperativeKernel((const void*)tk_tiny, dim3(grid), dim3(32), args, 0, (cudaStream_t)stream);
}
extern "C" int tk_max_active_blocks_per_sm() {
  int n = 0;
  cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, tk_tiny, 32, 0);
  return e == cudaSuccess ? n : -(int)e;
}
// variant: %s
"""


def tiny(variant: str = "0") -> str:
    return TINY % variant


def sos(root: Path) -> list[Path]:
    return sorted(root.glob("*.so"))


def test_build_then_cache_hit(tmp_path):
    first = B.build(tiny(), cache_dir=tmp_path)
    assert first.path.is_file() and not first.cached
    assert first.path.parent == tmp_path.resolve()
    assert first.arch == "sm_90" or first.arch == B.default_arch()
    assert first.seconds > 0
    second = B.build(tiny(), cache_dir=tmp_path)
    assert second.cached and second.path == first.path
    assert second.seconds < first.seconds
    # source and metadata kept next to the library; no temporaries left behind
    assert (tmp_path / f"{first.key}.cu").read_text() == tiny()
    assert (tmp_path / f"{first.key}.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_library_exports_the_launch_abi(tmp_path):
    from trainkernel.runtime import KernelLibrary

    lib = KernelLibrary(B.build(tiny(), cache_dir=tmp_path).path)
    assert lib.path.is_file()
    raw = ctypes.CDLL(str(lib.path))
    assert raw.tk_launch and raw.tk_max_active_blocks_per_sm


def test_different_source_or_arch_is_a_different_artifact(tmp_path):
    a = B.build(tiny("a"), cache_dir=tmp_path)
    b = B.build(tiny("b"), cache_dir=tmp_path)
    c = B.build(tiny("a"), arch="sm_80", cache_dir=tmp_path)
    assert len({a.path, b.path, c.path}) == 3
    assert c.arch == "sm_80"


def test_header_contents_are_part_of_the_key(tmp_path):
    inc = tmp_path / "inc"
    (inc / "my").mkdir(parents=True)
    (inc / "my" / "h.cuh").write_text("#define VALUE 1\n")
    src = '#include "my/h.cuh"\n' + tiny("hdr")
    cache = tmp_path / "cache"
    a = B.build(src, cache_dir=cache, include_dirs=[inc])
    assert B.build(src, cache_dir=cache, include_dirs=[inc]).cached
    (inc / "my" / "h.cuh").write_text("#define VALUE 2\n")
    b = B.build(src, cache_dir=cache, include_dirs=[inc])
    assert not b.cached and b.path != a.path


def test_package_headers_are_on_the_include_path(tmp_path):
    header = B.include_dir() / "tk" / "tk.cuh"
    assert header.is_file(), f"{header} is missing from the package"
    res = B.build('#include "tk/tk.cuh"\n' + tiny("tk"), cache_dir=tmp_path)
    assert res.path.is_file()


def test_env_var_and_argument_choose_the_cache_dir(tmp_path, monkeypatch):
    env_dir = tmp_path / "env"
    monkeypatch.setenv("TRAINKERNEL_CACHE_DIR", str(env_dir))
    assert B.default_cache_dir() == env_dir
    res = B.build(tiny("env"))
    assert res.path.parent == env_dir.resolve()
    arg_dir = tmp_path / "arg"
    res2 = B.build(tiny("env"), cache_dir=arg_dir)
    assert res2.path.parent == arg_dir.resolve() and not res2.cached
    monkeypatch.delenv("TRAINKERNEL_CACHE_DIR")
    assert B.default_cache_dir() == Path("~/.cache/trainkernel").expanduser()


def test_compile_error_reports_nvcc_output(tmp_path):
    bad = tiny("bad") + "\nint broken( { return undeclared_identifier_xyz; }\n"
    with pytest.raises(B.BuildError) as info:
        B.build(bad, cache_dir=tmp_path)
    msg = str(info.value)
    assert "nvcc failed" in msg and B.default_arch() in msg
    assert "undeclared_identifier_xyz" in msg and "error" in info.value.log
    assert "command:" in msg and "nvcc" in info.value.command
    assert info.value.source_path is not None and info.value.source_path.is_file()
    assert sos(tmp_path) == []  # nothing committed to the cache


def test_build_many_parallel_and_partial_failure(tmp_path):
    sources = [tiny(f"m{i}") for i in range(3)] + [tiny("m0")]
    results = B.build_many(sources, cache_dir=tmp_path)
    assert [r.path for r in results][0] == results[3].path
    assert len(sos(tmp_path)) == 3 and not any(r.cached for r in results)
    assert all(r.cached for r in B.build_many(sources, cache_dir=tmp_path))

    ok, bad = tiny("m9"), tiny("m10") + "\n#error deliberately broken\n"
    with pytest.raises(B.BuildError) as info:
        B.build_many([ok, bad], cache_dir=tmp_path)
    assert "1 of 2" in str(info.value) and "deliberately broken" in str(info.value)
    assert B.build(ok, cache_dir=tmp_path).cached  # the good one was kept


def _build_in_child(args):
    src, cache, barrier = args
    barrier.wait()
    res = B.build(src, cache_dir=cache)
    return str(res.path), res.cached


def _worker(src, cache, barrier, queue):
    try:
        queue.put(("ok",) + _build_in_child((src, cache, barrier)))
    except BaseException as exc:  # pragma: no cover - reported by the test
        queue.put(("error", repr(exc), False))


def test_concurrent_processes_build_one_artifact(tmp_path):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(4)
    queue = ctx.Queue()
    src = tiny("concurrent")
    procs = [ctx.Process(target=_worker, args=(src, str(tmp_path), barrier, queue)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert all(r[0] == "ok" for r in results), results
    paths = {r[1] for r in results}
    assert len(paths) == 1
    assert sos(tmp_path) == [Path(paths.pop())]
    # the fcntl lock lets exactly one process compile; the others find it cached
    assert sorted(r[2] for r in results) == [False, True, True, True]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_normalize_arch():
    assert B.normalize_arch("sm_90") == "sm_90"
    assert B.normalize_arch("90") == "sm_90"
    assert B.normalize_arch(90) == "sm_90"
    assert B.normalize_arch((8, 6)) == "sm_86"
    assert B.normalize_arch("sm_90a") == "sm_90a"
    assert B.normalize_arch("compute_90") == "sm_90"
    with pytest.raises(ValueError):
        B.normalize_arch("hopper")


def test_a_wgmma_kernel_is_built_for_sm90a_and_only_on_sm90():
    from trainkernel.backend.cuda_target import WGMMA_REQUIRES

    plain, wgmma = "// a kernel\n", f"// a kernel\n{WGMMA_REQUIRES}\n"
    assert B.arch_for_source(plain, "sm_90") == "sm_90" and B.arch_for_source(plain, "sm_80") == "sm_80"
    assert B.arch_for_source(wgmma, "sm_90") == "sm_90a" == B.arch_for_source(wgmma, "sm_90a")
    with pytest.raises(B.BuildError, match="only sm_90 .Hopper. runs; the device is sm_100.*gemm_engine='mma'"):
        B.arch_for_source(wgmma, "sm_100")


def test_an_arch_feature_set_is_one_gencode_without_ptx():
    assert "-gencode=arch=compute_90a,code=sm_90a" in B.nvcc_flags("sm_90a")
    assert not any(f.startswith("-arch") for f in B.nvcc_flags("sm_90a"))


def test_flags():
    flags = B.nvcc_flags("sm_90")
    for f in ("-O3", "-std=c++17", "--shared", "-Xcompiler", "-fPIC", "-arch=sm_90"):
        assert f in flags
    # Source lines only when asked (NVCC_APPEND_FLAGS=-lineinfo): they cost compile time, not code.
    assert "-lineinfo" not in flags
    assert str(B.include_dir()) in flags


def _generated_tiny() -> str:
    import torch

    import trainkernel
    from trainkernel.workloads import WORKLOADS

    w = WORKLOADS["tiny"]
    return trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source


def _symbols(path: Path) -> str:
    """nm's listing of every symbol of `path`, local ones included (exported_symbols
    of test_cuda_compile reads the dynamic ones)."""
    import subprocess

    return subprocess.run(["nm", str(path)], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("nm") is None or shutil.which("ld") is None, reason="binutils (nm, ld) not found")
def test_separate_image_builds_the_device_code_apart(tmp_path, monkeypatch):
    """The separate image (the default; perf-log step 24): a generated kernel's cubin is built
    beside its host side and linked into the library as data; the launchers reach it
    through cudaLibraryLoadData. The library exports the same ABI, holds the cubin (an
    ELF with the kernel's .nv.info section) under a hidden symbol, and has no host stub
    of the kernel; the cache keeps it apart from the one-piece build, and a source
    the printer did not write (no TK_SEPARATE_IMAGE guard) still builds in one piece;
    TRAINKERNEL_SEPARATE_IMAGE=0 builds in one piece."""
    source = _generated_tiny()
    assert B.SEPARATE_IMAGE_GUARD in source
    monkeypatch.setenv("TRAINKERNEL_SEPARATE_IMAGE", "0")
    whole = B.build(source, arch="sm_90", cache_dir=tmp_path)
    monkeypatch.delenv("TRAINKERNEL_SEPARATE_IMAGE")
    assert B.separate_image()
    apart = B.build(source, arch="sm_90", cache_dir=tmp_path)
    assert not apart.cached and apart.key != whole.key
    assert B.build(source, arch="sm_90", cache_dir=tmp_path).cached

    from test_cuda_compile import exported_symbols

    exported = exported_symbols(apart.path)
    for name in ("tk_launch", "tk_max_active_blocks_per_sm", "tk_num_buffers", "tk_arena_bytes", "tk_grid"):
        assert name in exported, name
    assert "_binary_image_cubin_start" not in exported  # hidden: each library binds its own image
    assert "_binary_image_cubin_start" in _symbols(apart.path)
    data = apart.path.read_bytes()
    assert data.count(b"\x7fELF") >= 2 and b".nv.info.tk_tiny_sgd_bf16_kernel" in data
    assert "tk_tiny_sgd_bf16_kernel" in _symbols(whole.path)  # the one-piece build's host stub
    assert "tk_tiny_sgd_bf16_kernel" not in _symbols(apart.path)
    meta = (tmp_path / f"{apart.key}.json").read_text()
    assert B.SEPARATE_IMAGE_MARK in meta

    handwritten = B.build(tiny("apart"), cache_dir=tmp_path)
    monkeypatch.setenv("TRAINKERNEL_SEPARATE_IMAGE", "0")
    assert B.build(tiny("apart"), cache_dir=tmp_path).key == handwritten.key


@pytest.mark.skipif(shutil.which("ld") is None, reason="binutils (ld) not found")
def test_separate_image_failure_names_the_step_and_keeps_nvcc_output(tmp_path, monkeypatch):
    """A kernel that does not compile, built apart: one BuildError with nvcc's message and
    the step that failed (the cubin's nvcc), and nothing installed in the cache."""
    monkeypatch.setenv("TRAINKERNEL_SEPARATE_IMAGE", "1")
    broken = _generated_tiny().replace("__syncthreads();", "__syncthreads(); tk_no_such_function();", 1)
    with pytest.raises(B.BuildError) as err:
        B.build(broken, arch="sm_90", cache_dir=tmp_path)
    text = str(err.value)
    assert "tk_no_such_function" in text and "-cubin" in err.value.command
    assert not list(tmp_path.glob("*.so"))
