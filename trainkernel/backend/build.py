"""Compile generated CUDA sources into shared libraries, with a content-addressed cache.

`build(source)` turns one `.cu` text (the CUDA printer's output) into a `.so`
that the runtime loads with ctypes; `build_many(sources)` builds several
variants in parallel (one nvcc process per source, at most ``jobs`` at once).

Flags: ``-O3 -std=c++17 --shared -Xcompiler -fPIC -arch=<arch>`` (an "a" feature set: ``-gencode=arch=compute_90a,code=sm_90a``)
plus ``-I <package>/backend/include`` (the device header library, used as
``#include "tk/tk.cuh"``). The architecture is the visible device's
(``torch.cuda.get_device_capability``) or ``sm_90`` when no GPU is visible, so
a machine without a GPU (CI) compiles for the H200. No ``-lineinfo``: it
leaves the SASS as it is (mlp4's, compared with nvdisasm) but costs cicc and
ptxas ~7% of a cold compile; ``NVCC_APPEND_FLAGS=-lineinfo`` (part of the
cache key) builds with source lines for compute-sanitizer and ncu.

No shell sees a path. nvcc runs its sub-tools through ``sh`` with the source
path, its working directory and ``$TMPDIR`` pasted into the command lines, so
nvcc only ever runs in a private build directory whose path is checked to be
shell-safe (letters, digits, ``_ . + - /``; under ``tempfile.gettempdir()``,
else ``/tmp``), on relative file names (``k0.cu -> k0.so``; include
directories are reached through symlinks ``inc0``, ``inc1``, ...), with
``TMPDIR`` pointing into that directory. We start nvcc with an argument list,
never through a shell. The results are then copied into the cache. Any
cache path without control characters works (``$``, quotes, spaces
included); one with a newline or other control character is refused.

Cache key: sha256 over the source, the full flag list (which holds the
architecture), the nvcc path and ``nvcc --version``, the host compiler nvcc
runs (found from ``nvcc --dryrun``) and its ``--version``, the environment
nvcc and the host compiler read (`KEY_ENVIRONMENT`: ``NVCC_APPEND_FLAGS``,
``NVCC_PREPEND_FLAGS``, ...), and the relative path and contents of every file
under the include directories. Artifacts live in the cache directory:
``cache_dir=`` argument, else ``$TRAINKERNEL_CACHE_DIR``, else
``~/.cache/trainkernel``::

    <key>.cu     the source (kept so profilers can show it under -lineinfo)
    <key>.json   the key's inputs, build log, and the library's sha256
    <key>.so     the library
    <key>.lock   an fcntl lock held while that key is being built

A cache hit is a ``.so`` whose sha256 equals the one ``<key>.json`` recorded
for that key when it was built; anything else (truncated, garbage, another
kernel's library, missing or foreign metadata) is rebuilt under the lock.

Several processes may build the same kernel at once: each takes the key's
lock, re-checks the cache, and only the first compiles. Every file enters the
cache by ``os.replace`` from a temporary file in the same directory (atomic),
metadata before the library, so a reader never sees a partial library and a
crash between the two leaves a mismatch that the next build repairs.
Temporary files carry their host and pid; what a killed build left behind (in
the cache or as a private build directory) is removed by the next build once
that process is gone.

Errors: nvcc failures raise `BuildError` with nvcc's output; an unusable
cache location (a file, read-only, full, not creatable, a control character
in its path) raises `CacheError` (a `BuildError`) naming the directory and the
reason, and leaves nothing behind. Both are `trainkernel.errors.TrainKernelError`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from trainkernel.errors import TrainKernelError
from trainkernel.target import DEFAULT as DEFAULT_TARGET

try:  # POSIX only; see the module docstring for the fallback.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "BuildError",
    "BuildResult",
    "CacheError",
    "KEY_ENVIRONMENT",
    "build",
    "build_many",
    "cache_key",
    "default_arch",
    "default_cache_dir",
    "host_compiler",
    "include_dir",
    "normalize_arch",
    "nvcc_flags",
    "nvcc_path",
    "nvcc_version",
    "toolchain_fingerprint",
    "verify_library",
]

BASE_FLAGS: tuple[str, ...] = ("-O3", "-std=c++17", "--shared", "-Xcompiler", "-fPIC")


def separate_image() -> bool:
    """Build the kernel's device code apart from its host side (the default since
    the GPU suite ran on it, perf-log step 24; ``TRAINKERNEL_SEPARATE_IMAGE=0``
    builds in one piece, as does a machine without binutils' ``ld``).

    One nvcc compiles the source into a cubin (preprocessing, cicc, ptxas) while
    another compiles it with ``-DTK_SEPARATE_IMAGE`` into the host object (the
    launchers, no kernel: cudafe++, gcc); ``ld -r -b binary`` wraps the cubin as
    data and nvcc links both into the library, whose launchers load the image
    with cudaLibraryLoadData (the printer's `kernel_handle`). The host side's
    ~1.1-1.4 s (an empty kernel's nvcc) then runs beside cicc and ptxas instead
    of before and after them. Part of the cache key."""
    return os.environ.get("TRAINKERNEL_SEPARATE_IMAGE", "1") != "0" and shutil.which("ld") is not None


SEPARATE_IMAGE_MARK = "<separate-image>"
"""Stands in the key's flag list for a separate-image build (never passed to nvcc)."""

SEPARATE_IMAGE_GUARD = "defined(TK_SEPARATE_IMAGE)"
"""What a source that can be built apart contains (the printer's kernel guard);
any other source builds in one piece whatever the switch says."""


def _builds_apart(source: str) -> bool:
    return separate_image() and SEPARATE_IMAGE_GUARD in source


CACHE_FORMAT = 2
"""Version of the artifact layout and key recipe (part of the key)."""

KEY_ENVIRONMENT: tuple[str, ...] = (
    "NVCC_APPEND_FLAGS",
    "NVCC_PREPEND_FLAGS",
    "NVCC_CCBIN",
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "LIBRARY_PATH",
)
"""Environment variables that change what nvcc or the host compiler produce."""

_SHELL_SAFE = re.compile(r"^[A-Za-z0-9_./+-]+$")


class BuildError(TrainKernelError, RuntimeError):
    """nvcc (or the build tooling) failed. ``.log`` holds nvcc's output."""

    def __init__(self, message: str, *, log: str = "", command: str = "", source_path: Path | None = None):
        super().__init__(message)
        self.log = log
        self.command = command
        self.source_path = source_path


class CacheError(BuildError):
    """The kernel cache location cannot be used (a file, read-only, full, ...)."""


@dataclasses.dataclass(frozen=True)
class BuildResult:
    """A built library. ``cached`` is True when no compilation was needed;
    ``sha256`` is the library's content hash recorded in the cache."""

    path: Path
    cached: bool
    seconds: float
    key: str = ""
    arch: str = ""
    log: str = ""  # nvcc's warnings, if any (empty on a cache hit)
    sha256: str = ""


# --------------------------------------------------------------------------- toolchain


def include_dir() -> Path:
    """The package's device header library (`trainkernel/backend/include`)."""
    return Path(__file__).resolve().parent / "include"


def nvcc_path() -> str:
    """Path of nvcc: $PATH, then $CUDA_HOME/$CUDA_PATH, then /usr/local/cuda."""
    found = shutil.which("nvcc")
    if found:
        return found
    for env in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(env)
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    if Path("/usr/local/cuda/bin/nvcc").is_file():
        return "/usr/local/cuda/bin/nvcc"
    raise BuildError("nvcc not found: put the CUDA toolkit's bin/ on PATH or set CUDA_HOME")


@functools.lru_cache(maxsize=None)
def _nvcc_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise BuildError(f"cannot run {path}: {exc}") from exc
    if out.returncode != 0:
        raise BuildError(f"`{path} --version` failed:\n{out.stderr or out.stdout}")
    return out.stdout.strip()


def nvcc_version(path: str | None = None) -> str:
    """Full `nvcc --version` text (part of the cache key)."""
    return _nvcc_version(path or nvcc_path())


def normalize_arch(arch: str | int | tuple[int, int] | None) -> str:
    """`None` -> default_arch(); accepts "sm_90", "sm_90a", "90", 90, (9, 0)."""
    if arch is None:
        return default_arch()
    if isinstance(arch, tuple):
        return f"sm_{arch[0]}{arch[1]}"
    text = str(arch).strip().lower()
    if text.startswith("compute_"):
        text = "sm_" + text[len("compute_"):]
    if not text.startswith("sm_"):
        text = "sm_" + text
    digits = text[3:].rstrip("af")
    if not digits.isdigit():
        raise ValueError(f"invalid CUDA architecture {arch!r}; expected e.g. 'sm_90'")
    return text


def wgmma_runs_on(arch: str) -> bool:
    """Whether a device of `arch` runs kernels of the target's wgmma feature set (sm_90a: Hopper)."""
    return arch in (DEFAULT_TARGET.wgmma_arch, DEFAULT_TARGET.wgmma_arch.rstrip("a"))


def arch_for_source(source: str, arch: str) -> str:
    """The architecture to build `source` for on a device of `arch`: a kernel
    that says it requires sm_90a (wgmma gemms: the printer's WGMMA_REQUIRES
    line) gets the "a" feature set of an sm_90 device; on any other device it
    cannot run, which is an error, not a kernel that traps."""
    from trainkernel.backend.cuda_target import WGMMA_REQUIRES

    if WGMMA_REQUIRES not in source:
        return arch
    if wgmma_runs_on(arch):
        return DEFAULT_TARGET.wgmma_arch
    raise BuildError(
        f"this kernel's gemms use wgmma, which only sm_90 (Hopper) runs; the device is {arch}. "
        "Compile it with gemm_engine='mma' (the pass option sched-to-tile{engine=mma}).")


def default_arch() -> str:
    """The visible GPU's architecture, or the default target's (sm_90, the H200) when none is visible."""
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}"
    except Exception:
        pass
    return DEFAULT_TARGET.arch


def nvcc_flags(arch: str | None = None, include_dirs: Sequence[str | os.PathLike] = ()) -> list[str]:
    """The full nvcc flag list (without the input and `-o`). An "a" feature set
    (sm_90a: wgmma kernels) is named by one -gencode, SASS only: `-arch=sm_90a`
    would also run cicc for compute_90 and embed PTX, which nothing JITs (mlp4 on
    the CI machine: 14.1 -> 9.5 s of nvcc)."""
    a = normalize_arch(arch)
    target = f"-gencode=arch=compute_{a[3:]},code={a}" if a.endswith("a") else f"-arch={a}"
    flags = list(BASE_FLAGS) + [target]
    for d in [include_dir(), *include_dirs]:
        flags += ["-I", str(Path(d).resolve())]
    return flags


def default_cache_dir() -> Path:
    env = os.environ.get("TRAINKERNEL_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path("~/.cache/trainkernel").expanduser()


def _env_values() -> tuple[tuple[str, str], ...]:
    return tuple((k, os.environ[k]) for k in KEY_ENVIRONMENT if k in os.environ)


# --------------------------------------------------------------------------- private directories

_HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:24] or "host"


def _tag() -> str:
    """Host and pid of this process, carried by every temporary we create."""
    return f"{_HOST}-{os.getpid()}"


def _tag_is_dead(tag: str) -> bool:
    """True when `tag` names a process of this host that no longer exists."""
    host, _, pid = tag.rpartition("-")
    if host != _HOST or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _private_tmp_root() -> str:
    """A directory with a shell-safe real path to hold private build directories."""
    tried = []
    for cand in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        real = os.path.realpath(cand)
        tried.append(real)
        if _SHELL_SAFE.match(real) and os.path.isdir(real) and os.access(real, os.W_OK | os.X_OK):
            return real
    raise BuildError(
        "no temporary directory with a shell-safe path to run nvcc in (nvcc runs its tools through sh): "
        f"tried {', '.join(map(repr, tried))}; set TMPDIR to a writable directory whose path has only "
        "letters, digits and _ . + - /"
    )


_WORK_DIR = re.compile(r"^tk-build-([A-Za-z0-9]+-\d+)-")
_CACHE_TMP = re.compile(r"^\..+\.([A-Za-z0-9]+-\d+)\.[^.]+\.tmp$")
_STALE_SECONDS = 3600.0


def _sweep_work_dirs(tmp_root: str) -> None:
    """Remove private build directories of dead processes of ours (best effort)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(tmp_root):
            m = _WORK_DIR.match(entry.name)
            if m and _tag_is_dead(m.group(1)):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_uid == os.geteuid():
                        shutil.rmtree(entry.path, ignore_errors=True)


def _sweep_cache(root: Path) -> None:
    """Remove temporaries that dead builds left in the cache (best effort):
    ours once their process is gone, and anything older than an hour
    (including the ``.build-*`` folders of earlier versions)."""
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            if not entry.name.startswith("."):
                continue
            with contextlib.suppress(OSError):
                m = _CACHE_TMP.match(entry.name)
                old = now - entry.stat(follow_symlinks=False).st_mtime > _STALE_SECONDS
                if m and (old or _tag_is_dead(m.group(1))):
                    os.unlink(entry.path)
                elif entry.name.startswith(".build-") and entry.is_dir(follow_symlinks=False) and old:
                    shutil.rmtree(entry.path, ignore_errors=True)


# --------------------------------------------------------------------------- the key


@functools.lru_cache(maxsize=None)
def _host_compiler(nvcc: str, arch: str, env: tuple[tuple[str, str], ...], path_env: str) -> tuple[str, str]:
    """(path, ``--version`` text) of the host compiler nvcc drives, read from
    ``nvcc --dryrun`` (which honours -ccbin, NVCC_CCBIN and the *_FLAGS)."""
    tmp_root = _private_tmp_root()
    with tempfile.TemporaryDirectory(prefix=f"tk-build-{_tag()}-", dir=tmp_root) as d:
        try:
            out = subprocess.run(
                [nvcc, "--dryrun", *BASE_FLAGS, f"-arch={arch}", "-o", "k.so", "k.cu"],
                cwd=d, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                env={**os.environ, "TMPDIR": d},
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise BuildError(f"cannot run `{nvcc} --dryrun`: {exc}") from exc
    word = ""
    for line in (out.stderr + "\n" + out.stdout).splitlines():
        if not line.startswith("#$ "):
            continue
        cmd = line[3:].strip()
        if not cmd or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", cmd):
            continue  # nvcc's variable assignments
        word = cmd.split()[0].strip("\"'")
        break
    if not word:
        # nvcc refused even to plan the build; the real compile reports why.
        return ("unknown", out.stderr.strip() or out.stdout.strip())
    path = word if os.sep in word else (shutil.which(word, path=path_env) or word)
    try:
        ver = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        version = (ver.stdout or ver.stderr).strip()
    except (OSError, subprocess.SubprocessError) as exc:
        version = f"(cannot run {path} --version: {exc})"
    return (path, version)


def host_compiler(nvcc: str | None = None, arch: str | None = None) -> tuple[str, str]:
    """The host compiler nvcc uses now: (path, its ``--version`` output)."""
    return _host_compiler(nvcc or nvcc_path(), normalize_arch(arch), _env_values(), os.environ.get("PATH", ""))


def toolchain_fingerprint(nvcc: str | None = None, arch: str | None = None) -> dict[str, object]:
    """Everything besides source, flags and headers that changes the binary."""
    nvcc = nvcc or nvcc_path()
    cc, cc_version = host_compiler(nvcc, arch)
    return {
        "format": CACHE_FORMAT,
        "nvcc": nvcc,
        "nvcc_version": nvcc_version(nvcc),
        "host_compiler": cc,
        "host_compiler_version": cc_version,
        "env": dict(_env_values()),
    }


def headers_digest(include_dirs: Sequence[Path]) -> str:
    """Every file under the include directories, names and bytes: a kernel
    built against them is stale when any changes."""
    h = hashlib.sha256()
    for i, root in enumerate(include_dirs):
        h.update(f"include dir {i}\0".encode())
        if not root.is_dir():
            continue
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            h.update(str(path.relative_to(root)).encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def cache_key(cuda_source: str, flags: Sequence[str], toolchain: Mapping[str, object], include_dirs: Sequence[Path]) -> str:
    """sha256(source, flags, toolchain fingerprint, header paths and contents)."""
    h = hashlib.sha256()
    parts = (cuda_source, "\0".join(flags), json.dumps(dict(toolchain), sort_keys=True), headers_digest(include_dirs))
    for part in parts:
        h.update(part.encode())
        h.update(b"\x1f")
    return h.hexdigest()


# --------------------------------------------------------------------------- cache helpers


def _cache_root(cache_dir: str | os.PathLike | None) -> Path:
    raw = os.fspath(cache_dir) if cache_dir is not None else os.fspath(default_cache_dir())
    if isinstance(raw, bytes):
        raw = os.fsdecode(raw)
    bad = next((c for c in raw if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise CacheError(
            f"kernel cache directory {raw!r} contains a control character ({bad!r}); refusing it: "
            "choose another directory (cache_dir= or $TRAINKERNEL_CACHE_DIR)"
        )
    root = Path(raw).expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        pass  # reported below
    except OSError as exc:
        raise CacheError(
            f"cannot create the kernel cache directory {root}: {exc.strerror or exc}; "
            "choose a writable directory (cache_dir= or $TRAINKERNEL_CACHE_DIR)"
        ) from exc
    if not root.is_dir():
        blocker = next((p for p in (root, *root.parents) if p.exists()), root)
        where = "" if blocker == root else f" ({blocker} is a file)"
        raise CacheError(
            f"kernel cache location {root} is not a directory{where}; "
            "choose a directory (cache_dir= or $TRAINKERNEL_CACHE_DIR)"
        )
    return root.resolve()


@contextlib.contextmanager
def _cache_io(root: Path) -> Iterator[None]:
    """Report any OSError of a cache write as one CacheError naming the cache."""
    try:
        yield
    except CacheError:
        raise
    except OSError as exc:
        raise CacheError(
            f"cannot write to the kernel cache {root}: {exc.strerror or exc}; "
            "choose a writable directory with space (cache_dir= or $TRAINKERNEL_CACHE_DIR)"
        ) from exc


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """`path` gets `data` or stays as it was: temp file in the same directory,
    then os.replace. The temp file is removed on any failure."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{_tag()}.", suffix=".tmp")
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)  # mkstemp makes 0600; the cache may be shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _verified_sha(root: Path, key: str) -> str | None:
    """The library's sha256 if `<key>.so` is exactly what was built for `key`."""
    try:
        meta = json.loads((root / f"{key}.json").read_text())
        if not isinstance(meta, dict) or meta.get("key") != key or meta.get("format") != CACHE_FORMAT:
            return None
        want = meta.get("sha256")
        if not isinstance(want, str) or _sha256_file(root / f"{key}.so") != want:
            return None
        return want
    except (OSError, ValueError):
        return None


def verify_library(result: BuildResult) -> bool:
    """True when the library at ``result.path`` still has the content it was built with."""
    try:
        return bool(result.sha256) and _sha256_file(result.path) == result.sha256
    except OSError:
        return False


@contextlib.contextmanager
def _locked(lock_paths: Sequence[Path]) -> Iterator[None]:
    """Exclusive fcntl locks on every path, taken in sorted order (no deadlock)."""
    if fcntl is None:
        yield
        return
    fds: list[int] = []
    try:
        for p in sorted(set(lock_paths)):
            fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        for fd in reversed(fds):
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


# --------------------------------------------------------------------------- running nvcc


@dataclasses.dataclass
class _Job:
    key: str
    source: str
    stem: str  # k0, k1, ...: the file names inside the private build directory
    separate: bool = False  # device code built apart (separate_image)
    failed_command: str = ""  # built apart: the step that failed, as run in the build directory
    returncode: int | None = None
    error: str = ""  # why nvcc could not be started

    @property
    def src_name(self) -> str:
        return f"{self.stem}.cu"

    @property
    def out_name(self) -> str:
        return f"{self.stem}.so"

    @property
    def log_name(self) -> str:
        return f"{self.stem}.log"


def _display_command(nvcc: str, flags: Sequence[str], src: Path, out: Path) -> str:
    """The equivalent command line, for messages (never executed)."""
    return shlex.join([nvcc, *flags, "-o", str(out), str(src)])


def _relative_flags(flags: Sequence[str], include_dirs: Sequence[Path], work: Path) -> list[str]:
    """`flags` with every include directory replaced by a symlink `incN` inside `work`."""
    links: dict[str, str] = {}
    for i, d in enumerate(include_dirs):
        name = f"inc{i}"
        os.symlink(d, work / name)
        links[str(d)] = name
    out, it = [], iter(flags)
    for f in it:
        if f == "-I":
            d = next(it)
            out += ["-I", links.get(d, d)]
        else:
            out.append(f)
    return out


def _stages(nvcc: str, flags: Sequence[str], job: _Job) -> list[list[tuple[list[str], str]]]:
    """The commands that build `job`, as stages of (argument list, working
    directory relative to the build directory) run together; a stage starts when
    the previous one has succeeded. One nvcc, or for a separate image the device
    cubin beside the host object, then the cubin wrapped as data, then the link."""
    if not job.separate:
        return [[([nvcc, *flags, "-o", job.out_name, job.src_name], ".")]]
    compile_flags = [f for f in flags if f != "--shared"]  # the link's; -fPIC serves the host object
    arch = [f for f in flags if f.startswith(("-gencode", "-arch"))]
    ld = shutil.which("ld") or "ld"
    image = f"{job.stem}.d"
    return [
        [([nvcc, *compile_flags, "-cubin", "-o", f"{image}/image.cubin", job.src_name], "."),
         ([nvcc, *compile_flags, "-DTK_SEPARATE_IMAGE", "-c", "-o", f"{job.stem}.o", job.src_name], ".")],
        # Run where the cubin is, so that its symbols are _binary_image_cubin_*.
        [([ld, "-r", "-b", "binary", "-z", "noexecstack", "-o", "image.o", "image.cubin"], image)],
        [([nvcc, "--shared", "-Xcompiler", "-fPIC", *arch, "-o", job.out_name, f"{job.stem}.o",
           f"{image}/image.o"], ".")],
    ]


def _run_jobs(nvcc: str, flags: Sequence[str], jobs: list[_Job], work: Path, parallel: int) -> None:
    """Run the commands of every job in `work` (argument lists, no shell); on any
    exception (KeyboardInterrupt included) every command still running is killed."""
    from concurrent.futures import ThreadPoolExecutor

    env = {**os.environ, "TMPDIR": str(work)}
    procs: list[subprocess.Popen] = []
    lock = threading.Lock()
    stopping = threading.Event()

    def one(job: _Job) -> None:
        stages = _stages(nvcc, flags, job)
        if len(stages) > 1:
            (work / f"{job.stem}.d").mkdir()
        with open(work / job.log_name, "wb") as log:
            for stage in stages:
                if stopping.is_set():
                    return
                running = []
                for args, cwd in stage:
                    try:
                        p = subprocess.Popen(args, cwd=work / cwd, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=env)
                    except OSError as exc:
                        job.error = f"cannot run {args[0]}: {exc}"
                        break
                    with lock:
                        procs.append(p)
                    running.append(p)
                codes = [p.wait() for p in running]
                if job.error:
                    return
                failed = [(c, args) for c, (args, _) in zip(codes, stage) if c != 0]
                job.returncode = failed[0][0] if failed else 0
                if failed:
                    if job.separate:
                        job.failed_command = shlex.join(failed[0][1]) + "   (in the private build directory)"
                    return

    pool = ThreadPoolExecutor(max_workers=parallel)
    try:
        for fut in [pool.submit(one, job) for job in jobs]:
            fut.result()
    except BaseException:
        stopping.set()
        with lock:
            for p in procs:
                with contextlib.suppress(OSError):
                    p.kill()
        raise
    finally:
        pool.shutdown(wait=True)


def _failure_reason(job: _Job) -> str:
    if job.error:
        return job.error
    rc = job.returncode
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = "an unknown signal"
        return f"nvcc was killed by signal {-rc} ({name})"
    return f"nvcc exited with status {rc}"


# --------------------------------------------------------------------------- public API


def build(
    cuda_source: str,
    arch: str | int | tuple[int, int] | None = None,
    cache_dir: str | os.PathLike | None = None,
    *,
    include_dirs: Sequence[str | os.PathLike] = (),
) -> BuildResult:
    """Compile one CUDA source to a shared library (or return the cached one).

    ``arch`` defaults to the visible GPU's architecture, else ``sm_90``.
    Raises `BuildError` carrying nvcc's output when compilation fails, and
    `CacheError` when the cache directory cannot be used.
    """
    return build_many([cuda_source], arch=arch, cache_dir=cache_dir, include_dirs=include_dirs)[0]


def build_many(
    sources: Sequence[str],
    arch: str | int | tuple[int, int] | None = None,
    cache_dir: str | os.PathLike | None = None,
    *,
    include_dirs: Sequence[str | os.PathLike] = (),
    jobs: int | None = None,
) -> list[BuildResult]:
    """Compile several sources in parallel; results in input order.

    Identical sources are built once. Every source is attempted; if any fails,
    the successful ones stay cached and one `BuildError` lists every failure.
    """
    arch_s = normalize_arch(arch)
    archs = [arch_for_source(src, arch_s) for src in sources]
    if len(set(archs)) > 1:  # one nvcc flag set per call: build each architecture's sources apart
        results: list[BuildResult | None] = [None] * len(sources)
        for a in sorted(set(archs)):
            idx = [i for i, x in enumerate(archs) if x == a]
            for i, r in zip(idx, build_many([sources[i] for i in idx], a, cache_dir, include_dirs=include_dirs, jobs=jobs)):
                results[i] = r
        return [r for r in results if r is not None]
    arch_s = archs[0] if archs else arch_s
    start = time.perf_counter()
    root = _cache_root(cache_dir)
    nvcc = nvcc_path()
    flags = nvcc_flags(arch_s, include_dirs)
    inc = [include_dir(), *(Path(d).resolve() for d in include_dirs)]
    toolchain = toolchain_fingerprint(nvcc, arch_s)

    keys = [cache_key(src, flags + [SEPARATE_IMAGE_MARK] if _builds_apart(src) else flags, toolchain, inc)
            for src in sources]
    unique: dict[str, str] = {}
    for key, src in zip(keys, sources):
        unique.setdefault(key, src)

    hashes: dict[str, str] = {}
    for k in unique:
        sha = _verified_sha(root, k)
        if sha is not None:
            hashes[k] = sha
    missing = [k for k in unique if k not in hashes]
    built: dict[str, str] = {}  # key -> nvcc log
    failures: list[tuple[_Job, str]] = []
    if missing:
        with _cache_io(root), _locked([root / f"{k}.lock" for k in missing]):
            # Another process may have finished these while we waited for the lock.
            todo = []
            for k in missing:
                sha = _verified_sha(root, k)
                if sha is None:
                    todo.append(k)
                else:
                    hashes[k] = sha
            if todo:
                built, failures = _compile(todo, unique, root, nvcc, flags, inc, arch_s, toolchain, jobs, hashes)
    elapsed = time.perf_counter() - start

    if failures:
        parts = []
        for job, log in failures:
            src_path = root / f"{job.key}.cu"
            cmd = job.failed_command or _display_command(nvcc, flags, src_path, root / f"{job.key}.so")
            parts.append(f"--- kernel {job.key[:16]} (source: {src_path}): {_failure_reason(job)}\n"
                         f"command: {cmd}\n{log.strip() or '(nvcc printed nothing)'}")
        first_job, first_log = failures[0]
        first_src = root / f"{first_job.key}.cu"
        raise BuildError(
            f"nvcc failed to compile {len(failures)} of {len(unique)} CUDA source(s) for {arch_s}:\n" + "\n".join(parts),
            log=first_log,
            command=first_job.failed_command or _display_command(nvcc, flags, first_src, root / f"{first_job.key}.so"),
            source_path=first_src if first_src.is_file() else None,
        )

    results = []
    for key in keys:
        path = root / f"{key}.so"
        if key in built:
            results.append(BuildResult(path, False, elapsed, key, arch_s, built[key], hashes[key]))
        else:
            results.append(BuildResult(path, True, elapsed, key, arch_s, "", hashes[key]))
    return results


def _compile(todo, unique, root, nvcc, flags, inc, arch_s, toolchain, parallel, hashes):
    """Compile `todo` keys in a private directory and install them in the cache.
    Fills `hashes`; returns ({key: log} built, [(job, log)] failed)."""
    _sweep_cache(root)
    tmp_root = _private_tmp_root()
    _sweep_work_dirs(tmp_root)
    try:
        work = Path(tempfile.mkdtemp(prefix=f"tk-build-{_tag()}-", dir=tmp_root))
    except OSError as exc:
        raise BuildError(f"cannot create a private build directory in {tmp_root}: {exc.strerror or exc}") from exc
    try:
        job_list = [_Job(key, unique[key], f"k{i}", _builds_apart(unique[key])) for i, key in enumerate(todo)]
        try:
            rel_flags = _relative_flags(flags, inc, work)
            for job in job_list:
                (work / job.src_name).write_text(job.source)
        except OSError as exc:
            raise BuildError(f"cannot write to the private build directory {work}: {exc.strerror or exc}") from exc
        parallel = parallel or max(1, min(len(job_list), os.cpu_count() or 1))
        t0 = time.perf_counter()
        _run_jobs(nvcc, rel_flags, job_list, work, parallel)
        seconds = time.perf_counter() - t0

        built: dict[str, str] = {}
        failures = []
        for job in job_list:
            log_path = work / job.log_name
            log = log_path.read_text(errors="replace") if log_path.is_file() else ""
            out = work / job.out_name
            if job.returncode != 0 or not out.is_file():
                failures.append((job, log))
                with contextlib.suppress(OSError):  # kept for the user to look at; best effort
                    _write_atomic(root / f"{job.key}.cu", job.source.encode())
                continue
            data = out.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            meta = {
                **toolchain,
                "key": job.key,
                "sha256": sha,
                "arch": arch_s,
                "flags": list(flags) + ([SEPARATE_IMAGE_MARK] if job.separate else []),
                "seconds": round(seconds, 3),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "log": log,
            }
            _write_atomic(root / f"{job.key}.cu", job.source.encode())
            _write_atomic(root / f"{job.key}.json", json.dumps(meta, indent=1).encode())
            _write_atomic(root / f"{job.key}.so", data, mode=0o755)  # the commit point
            hashes[job.key] = sha
            built[job.key] = log
        return built, failures
    finally:
        shutil.rmtree(work, ignore_errors=True)
