"""The kernel build cache cannot be fooled, and no shell ever sees a user path.

Regression tests for issue 12 (items 2, 4, 5 and the cache parts of 7), each
a reproducer that failed before `trainkernel.backend.build` was hardened:

- a cache path with shell syntax in it (`$(...)`, backquotes) ran that shell
  code, because nvcc runs its sub-tools through `sh` with the source path (and
  its own temporaries) in the command line;
- a truncated, garbage or foreign `.so` under a key was a "cache hit" (and
  loading the truncated one killed Python with SIGBUS);
- `NVCC_APPEND_FLAGS` / `NVCC_PREPEND_FLAGS` and the host compiler were not in
  the key;
- a cache location that is a file, read-only, full, or holds a newline gave
  a raw OSError / "nvcc printed nothing", and a killed build left a
  `.build-*` folder in the cache forever.

Needs nvcc (not a GPU).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from trainkernel.backend import build as B
from trainkernel.errors import TrainKernelError

pytestmark = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").is_file() and not os.environ.get("CUDA_HOME"),
    reason="nvcc (CUDA toolkit) not found",
)

SOURCE = r"""
#include <cuda_runtime.h>
__global__ void tk_k(float* x) { x[threadIdx.x] += 1.0f; }
extern "C" int tk_launch(void** buffers, void* arena, int grid, void* stream) {
  float* x = (float*)buffers[0];
  void* args[] = {&x};
  return (int)cudaLaunchCooperativeKernel((const void*)tk_k, dim3(grid), dim3(32), args, 0, (cudaStream_t)stream);
}
extern "C" int tk_max_active_blocks_per_sm() { return 1; }
extern "C" int tk_variant_%s() { return 1; }
"""


def src(variant: str) -> str:
    return SOURCE % variant


def debris(root: Path) -> list[str]:
    """Anything in the cache that is not a committed artifact or a lock."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".") or p.suffix not in (".so", ".cu", ".json", ".lock"))


@pytest.fixture
def private_tmp(tmp_path_factory, monkeypatch):
    """A temporary directory of our own for the build's private work folders."""
    d = tmp_path_factory.mktemp("buildtmp")
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------ no shell sees a path


@pytest.mark.parametrize("name", ["c$(touch {marker})", "c`touch {marker}`", "c; touch {marker} #", "a b'c\"d"])
def test_shell_syntax_in_the_cache_path_never_runs(tmp_path, private_tmp, name):
    marker = tmp_path / "PWNED"
    cache = tmp_path / name.format(marker=marker)
    res = B.build(src("shell"), cache_dir=cache)
    assert not marker.exists(), "a shell ran code taken from the cache path"
    assert res.path.is_file() and res.path.parent == cache.resolve()
    lib = ctypes.CDLL(str(res.path))
    assert lib.tk_variant_shell() == 1
    assert debris(cache.resolve()) == []
    assert list(private_tmp.iterdir()) == []  # the private build folder is gone


def test_newline_in_the_cache_path_is_refused_with_one_message(tmp_path):
    cache = tmp_path / "a\nb"
    with pytest.raises(B.CacheError, match=r"control character") as info:
        B.build(src("nl"), cache_dir=cache)
    assert isinstance(info.value, TrainKernelError)
    assert not cache.exists()


# ------------------------------------------------------------ a hit is verified


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_a_damaged_library_is_rebuilt_not_loaded(tmp_path, private_tmp, damage):
    first = B.build(src("dmg"), cache_dir=tmp_path)
    meta = json.loads((tmp_path / f"{first.key}.json").read_text())
    assert meta["sha256"] == _sha(first.path) == first.sha256
    if damage == "truncate":  # the reproducer: `truncate -s 4096` -> SIGBUS on load
        os.truncate(first.path, 4096)
    elif damage == "garbage":
        first.path.write_bytes(b"not an ELF file\n" * 100)
    else:
        first.path.write_bytes(b"")
    again = B.build(src("dmg"), cache_dir=tmp_path)
    assert not again.cached, "a damaged library was taken as a cache hit"
    assert again.path == first.path and _sha(again.path) == again.sha256
    assert ctypes.CDLL(str(again.path)).tk_variant_dmg() == 1
    assert B.build(src("dmg"), cache_dir=tmp_path).cached  # and the repaired one is a hit again
    assert debris(tmp_path) == []


def test_a_foreign_library_under_the_key_is_rebuilt(tmp_path, private_tmp):
    a = B.build(src("mine"), cache_dir=tmp_path)
    b = B.build(src("other"), cache_dir=tmp_path)
    shutil.copyfile(b.path, a.path)  # another kernel's .so under a's key
    again = B.build(src("mine"), cache_dir=tmp_path)
    assert not again.cached
    lib = ctypes.CDLL(str(again.path))
    assert lib.tk_variant_mine() == 1
    assert not hasattr(lib, "tk_variant_other")


def test_missing_or_unreadable_metadata_means_rebuild(tmp_path, private_tmp):
    a = B.build(src("meta"), cache_dir=tmp_path)
    (tmp_path / f"{a.key}.json").unlink()
    assert not B.build(src("meta"), cache_dir=tmp_path).cached
    (tmp_path / f"{a.key}.json").write_text("{not json")
    assert not B.build(src("meta"), cache_dir=tmp_path).cached
    # metadata copied from another key does not vouch for this one
    b = B.build(src("meta2"), cache_dir=tmp_path)
    shutil.copyfile(tmp_path / f"{b.key}.json", tmp_path / f"{a.key}.json")
    shutil.copyfile(b.path, a.path)
    assert not B.build(src("meta"), cache_dir=tmp_path).cached


def test_verify_library_checks_the_recorded_hash(tmp_path, private_tmp):
    res = B.build(src("verify"), cache_dir=tmp_path)
    assert B.verify_library(res)
    os.truncate(res.path, 100)
    assert not B.verify_library(res)


# ------------------------------------------------------------ the key covers the toolchain


@pytest.mark.parametrize("var", ["NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"])
def test_nvcc_environment_flags_are_part_of_the_key(tmp_path, private_tmp, monkeypatch, var):
    monkeypatch.delenv("NVCC_APPEND_FLAGS", raising=False)
    monkeypatch.delenv("NVCC_PREPEND_FLAGS", raising=False)
    plain = B.build(src("env"), cache_dir=tmp_path)
    monkeypatch.setenv(var, "-DTK_EXTRA_DEFINE=1")
    flagged = B.build(src("env"), cache_dir=tmp_path)
    assert not flagged.cached and flagged.key != plain.key
    monkeypatch.delenv(var)
    assert B.build(src("env"), cache_dir=tmp_path).key == plain.key


def test_host_compiler_is_part_of_the_key(tmp_path, private_tmp, monkeypatch):
    real = shutil.which("gcc")
    if real is None:
        pytest.skip("no gcc on PATH")
    plain = B.build(src("host"), cache_dir=tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "gcc"
    # Same compiler, another identity: what a different host compiler looks like to the key.
    wrapper.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then {real} --version; echo "(wrapped)"; exit 0; fi\n'
                       f'exec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    other = B.build(src("host"), cache_dir=tmp_path)
    assert not other.cached and other.key != plain.key
    meta = json.loads((tmp_path / f"{other.key}.json").read_text())
    assert meta["host_compiler"] == str(wrapper) and "(wrapped)" in meta["host_compiler_version"]


# ------------------------------------------------------------ unusable cache locations


def test_cache_dir_that_is_a_file(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(B.CacheError, match=r"is not a directory"):
        B.build(src("file"), cache_dir=f)
    with pytest.raises(B.CacheError, match=r"is not a directory"):
        B.build(src("file"), cache_dir=f / "sub")
    assert f.read_text() == "x"


def _fail_writes_under(monkeypatch, root: Path, err: int, on: str = "open"):
    """Make every write into `root` fail with `err` (what a read-only or full
    filesystem does), at open (EROFS, EACCES) or at write (ENOSPC)."""
    root = root.resolve()

    def inside(path) -> bool:
        try:
            return Path(os.fsdecode(path)).resolve().is_relative_to(root)
        except (TypeError, ValueError):
            return False

    if on == "open":
        real_open = os.open

        def fake_open(path, flags, *args, **kw):
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and inside(path):
                raise OSError(err, os.strerror(err), os.fsdecode(path))
            return real_open(path, flags, *args, **kw)

        monkeypatch.setattr(os, "open", fake_open)
    else:
        real_write = os.write

        def fake_write(fd, data):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                target = ""
            if target and inside(target):
                raise OSError(err, os.strerror(err))
            return real_write(fd, data)

        monkeypatch.setattr(os, "write", fake_write)


@pytest.mark.parametrize("err", [errno.EROFS, errno.EACCES])
def test_read_only_cache_gives_one_message_and_no_debris(tmp_path, private_tmp, monkeypatch, err):
    cache = tmp_path / "ro"
    cache.mkdir()
    _fail_writes_under(monkeypatch, cache, err)
    with pytest.raises(B.CacheError, match=os.strerror(err)) as info:
        B.build(src("ro"), cache_dir=cache)
    assert str(cache) in str(info.value) and "TRAINKERNEL_CACHE_DIR" in str(info.value)
    assert debris(cache) == [] and not list(cache.glob("*.so"))
    assert list(private_tmp.iterdir()) == []


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only directories")
def test_really_read_only_cache_directory(tmp_path, private_tmp):
    cache = tmp_path / "ro"
    cache.mkdir()
    cache.chmod(0o555)
    try:
        with pytest.raises(B.CacheError, match="Permission denied"):
            B.build(src("ro2"), cache_dir=cache)
    finally:
        cache.chmod(0o755)


def test_a_read_only_cache_still_serves_its_hits(tmp_path, private_tmp, monkeypatch):
    res = B.build(src("rohit"), cache_dir=tmp_path)
    _fail_writes_under(monkeypatch, tmp_path, errno.EROFS)
    hit = B.build(src("rohit"), cache_dir=tmp_path)
    assert hit.cached and hit.path == res.path


def test_full_disk_gives_one_message_and_no_debris(tmp_path, private_tmp, monkeypatch):
    cache = tmp_path / "full"
    cache.mkdir()
    _fail_writes_under(monkeypatch, cache, errno.ENOSPC, on="write")
    with pytest.raises(B.CacheError, match="No space left on device"):
        B.build(src("full"), cache_dir=cache)
    assert debris(cache) == [] and not list(cache.glob("*.so"))
    assert list(private_tmp.iterdir()) == []


def test_cache_that_cannot_be_created(tmp_path, monkeypatch):
    parent = tmp_path / "p"
    parent.mkdir()
    _fail_writes_under(monkeypatch, parent, errno.EACCES)
    real_mkdir = os.mkdir

    def fake_mkdir(path, *a, **kw):
        if Path(os.fsdecode(path)).resolve().is_relative_to(parent.resolve()):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
        return real_mkdir(path, *a, **kw)

    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    with pytest.raises(B.CacheError, match=r"cannot create the kernel cache directory .*Permission denied"):
        B.build(src("mk"), cache_dir=parent / "missing" / "cache")


# ------------------------------------------------------------ interrupted builds


def test_interrupted_build_leaves_no_debris(tmp_path, private_tmp, monkeypatch):
    real_run = subprocess.run

    def interrupted(cmd, *a, **kw):
        if "--version" not in cmd and "--dryrun" not in cmd:
            raise KeyboardInterrupt
        return real_run(cmd, *a, **kw)

    monkeypatch.setattr(subprocess, "run", interrupted)
    monkeypatch.setattr(subprocess, "Popen", _popen_interrupted(subprocess.Popen))
    with pytest.raises(KeyboardInterrupt):
        B.build(src("int"), cache_dir=tmp_path)
    assert debris(tmp_path) == [] and not list(tmp_path.glob("*.so"))
    assert list(private_tmp.iterdir()) == []


def _popen_interrupted(real):
    class P(real):  # type: ignore[misc, valid-type]
        def __init__(self, cmd, *a, **kw):
            if "--version" not in cmd and "--dryrun" not in cmd:
                raise KeyboardInterrupt
            super().__init__(cmd, *a, **kw)

    return P


def _killed_mid_build(cache: str, tmp: str) -> None:  # runs in a child process
    tempfile.tempdir = tmp
    real_run = subprocess.run
    real_popen = subprocess.Popen

    def die(cmd, *a, **kw):
        if "--version" not in cmd and "--dryrun" not in cmd:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_run(cmd, *a, **kw)

    class DiePopen(real_popen):  # type: ignore[misc, valid-type]
        def __init__(self, cmd, *a, **kw):
            if "--version" not in cmd and "--dryrun" not in cmd:
                os.kill(os.getpid(), signal.SIGKILL)
            super().__init__(cmd, *a, **kw)

    subprocess.run = die
    subprocess.Popen = DiePopen
    B.build(src("killed"), cache_dir=cache)


def test_a_killed_build_leaves_no_debris_once_the_next_build_ran(tmp_path, private_tmp):
    """SIGKILL runs no cleanup: nothing the dead build left in the cache (or
    its private build folder) survives the next build in that cache."""
    cache = tmp_path / "cache"
    child = mp.get_context("spawn").Process(target=_killed_mid_build, args=(str(cache), str(private_tmp)))
    child.start()
    child.join(120)
    assert child.exitcode == -signal.SIGKILL
    B.build(src("next"), cache_dir=cache)
    assert debris(cache) == []
    assert list(private_tmp.iterdir()) == []


def test_killed_nvcc_is_reported_as_such(tmp_path, private_tmp, monkeypatch):
    """An nvcc that dies from a signal says so (not 'nvcc printed nothing')."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = B.nvcc_path()
    fake = bindir / "nvcc"
    fake.write_text(f'#!/bin/sh\ncase "$*" in *--version*|*--dryrun*) exec {real} "$@";; esac\nkill -9 $$\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert B.nvcc_path() == str(fake)
    cache = tmp_path / "cache"
    with pytest.raises(B.BuildError, match=r"nvcc was killed by signal 9 \(SIGKILL\)"):
        B.build(src("sig"), cache_dir=cache)
    assert debris(cache) == [] and not list(cache.glob("*.so"))
    assert list(private_tmp.iterdir()) == []


# ------------------------------------------------------------ loading re-checks the hash


def test_a_library_damaged_after_the_build_is_rebuilt_before_loading(tmp_path, private_tmp, monkeypatch):
    """`CompiledTrainingStep` checks the library against its hash right before
    loading it, so a file damaged since `build()` is rebuilt, never loaded."""
    import torch

    import _fake_pipeline as fake
    import trainkernel.runtime as runtime
    from trainkernel.api import compile_training

    fake.install(monkeypatch)
    params, x, y = fake.mlp_args()
    c = compile_training(fake.mlp_step(), (params, x, y), cache_dir=tmp_path, arch="sm_90")
    path = c.library_path
    os.truncate(path, 4096)
    loaded = []

    class Lib:
        def __init__(self, p):
            self.path = Path(p)

        def num_buffers(self):
            return None

    def fake_load(p):
        loaded.append(_sha(Path(p)))
        return Lib(p)

    monkeypatch.setattr(runtime, "load_library", fake_load)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    c._library(torch.device("cuda", 0))
    res = c._build_result("sm_90")
    assert not res.cached and res.path == path
    assert loaded == [res.sha256] == [_sha(path)]
