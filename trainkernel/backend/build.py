"""Compile generated CUDA sources into shared libraries, with a content-addressed cache.

`build(source)` turns one `.cu` text (the CUDA printer's output) into a `.so`
that the runtime loads with ctypes; `build_many(sources)` builds several
variants in parallel through one ninja invocation.

Flags: ``-O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -arch=<arch>``
plus ``-I <package>/backend/include`` (the device header library, used as
``#include "tk/tk.cuh"``). The architecture is the visible device's
(``torch.cuda.get_device_capability``) or ``sm_90`` when no GPU is visible, so
a machine without a GPU (CI) compiles for the H200.

Cache. The key is sha256 over the source, the full nvcc flag list (which
holds the architecture), ``nvcc --version`` and the path and contents of every
header under the include directories. Artifacts live in the cache directory:
``cache_dir=`` argument, else ``$TRAINKERNEL_CACHE_DIR``, else
``~/.cache/trainkernel``::

    <key>.cu     the source (kept so -lineinfo / profilers can show it)
    <key>.json   flags, nvcc version, build time
    <key>.so     the library; its presence is what makes a cache hit
    <key>.lock   an fcntl lock held while that key is being built

Several processes may build the same kernel at once: each takes the key's
lock, re-checks the cache, and only the first compiles; nvcc writes into a
private temporary directory inside the cache directory and the result is
moved into place with ``os.replace`` (atomic on one filesystem), so a reader
never sees a partial library. Where fcntl is unavailable the atomic rename
alone still keeps the cache consistent (duplicate work, never a torn file).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

try:  # POSIX only; see the module docstring for the fallback.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "BuildError",
    "BuildResult",
    "build",
    "build_many",
    "cache_key",
    "default_arch",
    "default_cache_dir",
    "include_dir",
    "normalize_arch",
    "nvcc_flags",
    "nvcc_path",
    "nvcc_version",
]

BASE_FLAGS: tuple[str, ...] = ("-O3", "-std=c++17", "--shared", "-Xcompiler", "-fPIC", "-lineinfo")


class BuildError(RuntimeError):
    """nvcc (or the build tooling) failed. ``.log`` holds nvcc's output."""

    def __init__(self, message: str, *, log: str = "", command: str = "", source_path: Path | None = None):
        super().__init__(message)
        self.log = log
        self.command = command
        self.source_path = source_path


@dataclasses.dataclass(frozen=True)
class BuildResult:
    """A built library. ``cached`` is True when no compilation was needed."""

    path: Path
    cached: bool
    seconds: float
    key: str = ""
    arch: str = ""
    log: str = ""  # nvcc's warnings, if any (empty on a cache hit)


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


def _ninja_path() -> str | None:
    found = shutil.which("ninja")
    if found:
        return found
    try:  # the `ninja` PyPI package ships a binary
        import ninja  # type: ignore[import-not-found]

        candidate = Path(ninja.BIN_DIR) / "ninja"
        if candidate.is_file():
            return str(candidate)
    except Exception:
        pass
    return None


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


def default_arch() -> str:
    """The visible GPU's architecture, or sm_90 (the H200) when none is visible."""
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}"
    except Exception:
        pass
    return "sm_90"


def nvcc_flags(arch: str | None = None, include_dirs: Sequence[str | os.PathLike] = ()) -> list[str]:
    """The full nvcc flag list (without the input and `-o`)."""
    flags = list(BASE_FLAGS) + [f"-arch={normalize_arch(arch)}"]
    for d in [include_dir(), *include_dirs]:
        flags += ["-I", str(Path(d).resolve())]
    return flags


def default_cache_dir() -> Path:
    env = os.environ.get("TRAINKERNEL_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path("~/.cache/trainkernel").expanduser()


def _cache_root(cache_dir: str | os.PathLike | None) -> Path:
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    return root.resolve()


def _headers_digest(include_dirs: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for root in include_dirs:
        if not root.is_dir():
            continue
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            h.update(str(path.relative_to(root)).encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def cache_key(cuda_source: str, flags: Sequence[str], nvcc_ver: str, include_dirs: Sequence[Path]) -> str:
    """sha256(source, flags, nvcc version, header contents)."""
    h = hashlib.sha256()
    for part in (cuda_source, "\0".join(flags), nvcc_ver, _headers_digest(include_dirs)):
        h.update(part.encode())
        h.update(b"\x1f")
    return h.hexdigest()


# --------------------------------------------------------------------------- cache helpers


def _write_atomic(path: Path, data: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; the cache may be shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _locked(lock_paths: Sequence[Path]) -> Iterator[None]:
    """Exclusive fcntl locks on every path, taken in sorted order (no deadlock)."""
    if fcntl is None:
        yield
        return
    files = []
    try:
        for p in sorted(set(lock_paths)):
            f = open(p, "a+")
            files.append(f)
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        for f in reversed(files):
            with contextlib.suppress(OSError):
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            f.close()


def _ninja_escape(path: str) -> str:
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


@dataclasses.dataclass
class _Job:
    key: str
    source: str
    src_path: Path
    so_path: Path
    tmp_so: Path = dataclasses.field(default_factory=Path)
    log_path: Path = dataclasses.field(default_factory=Path)


def _command(nvcc: str, flags: Sequence[str], src: Path, out: Path) -> list[str]:
    return [nvcc, *flags, "-o", str(out), str(src)]


def _run_ninja(ninja: str, nvcc: str, flags: Sequence[str], jobs: list[_Job], workdir: Path, parallel: int) -> dict[str, bool]:
    flag_text = " ".join(shlex.quote(f) for f in flags).replace("$", "$$")
    lines = [
        "ninja_required_version = 1.3",
        f"nvcc = {shlex.quote(nvcc).replace('$', '$$')}",
        f"flags = {flag_text}",
        "rule nvcc",
        "  command = $nvcc $flags -o $out $in > $log 2>&1 || (rm -f $out; exit 1)",
        "  description = NVCC $out",
        "",
    ]
    for job in jobs:
        lines.append(f"build {_ninja_escape(str(job.tmp_so))}: nvcc {_ninja_escape(str(job.src_path))}")
        lines.append(f"  log = {shlex.quote(str(job.log_path)).replace('$', '$$')}")
    (workdir / "build.ninja").write_text("\n".join(lines) + "\n")
    subprocess.run(
        [ninja, "-C", str(workdir), "-k", "0", "-j", str(parallel)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    return {job.key: job.tmp_so.is_file() for job in jobs}


def _run_direct(nvcc: str, flags: Sequence[str], jobs: list[_Job], parallel: int) -> dict[str, bool]:
    from concurrent.futures import ThreadPoolExecutor

    def one(job: _Job) -> bool:
        with open(job.log_path, "w") as log:
            rc = subprocess.run(_command(nvcc, flags, job.src_path, job.tmp_so), stdout=log, stderr=subprocess.STDOUT).returncode
        return rc == 0 and job.tmp_so.is_file()

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return {job.key: ok for job, ok in zip(jobs, pool.map(one, jobs))}


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
    Raises `BuildError` carrying nvcc's output when compilation fails.
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
    """Compile several sources in parallel (one ninja run); results in input order.

    Identical sources are built once. Every source is attempted; if any fails,
    the successful ones stay cached and one `BuildError` lists every failure.
    """
    start = time.perf_counter()
    arch_s = normalize_arch(arch)
    nvcc = nvcc_path()
    flags = nvcc_flags(arch_s, include_dirs)
    inc = [include_dir(), *(Path(d).resolve() for d in include_dirs)]
    version = nvcc_version(nvcc)
    root = _cache_root(cache_dir)

    keys = [cache_key(src, flags, version, inc) for src in sources]
    unique: dict[str, str] = {}
    for key, src in zip(keys, sources):
        unique.setdefault(key, src)

    def so_path(key: str) -> Path:
        return root / f"{key}.so"

    missing = [k for k in unique if not so_path(k).is_file()]
    built: dict[str, tuple[float, str]] = {}
    failures: list[tuple[_Job, str]] = []
    if missing:
        with _locked([root / f"{k}.lock" for k in missing]):
            # Another process may have finished these while we waited for the lock.
            todo = [k for k in missing if not so_path(k).is_file()]
            if todo:
                built, failures = _compile(todo, unique, root, nvcc, flags, arch_s, version, jobs)
    elapsed = time.perf_counter() - start

    if failures:
        parts = []
        for job, log in failures:
            cmd = shlex.join(_command(nvcc, flags, job.src_path, job.so_path))
            parts.append(f"--- kernel {job.key[:16]} (source: {job.src_path})\ncommand: {cmd}\n{log.strip() or '(nvcc printed nothing)'}")
        first_job, first_log = failures[0]
        raise BuildError(
            f"nvcc failed to compile {len(failures)} of {len(unique)} CUDA source(s) for {arch_s}:\n" + "\n".join(parts),
            log=first_log,
            command=shlex.join(_command(nvcc, flags, first_job.src_path, first_job.so_path)),
            source_path=first_job.src_path,
        )

    results = []
    for key in keys:
        if key in built:
            results.append(BuildResult(so_path(key), False, elapsed, key, arch_s, built[key][1]))
        else:
            results.append(BuildResult(so_path(key), True, elapsed, key, arch_s, ""))
    return results


def _compile(todo, unique, root, nvcc, flags, arch_s, version, parallel):
    work = Path(tempfile.mkdtemp(dir=root, prefix=".build-"))
    try:
        job_list = []
        for key in todo:
            src_path = root / f"{key}.cu"
            _write_atomic(src_path, unique[key])
            job_list.append(_Job(key, unique[key], src_path, root / f"{key}.so", work / f"{key}.so", work / f"{key}.log"))
        parallel = parallel or max(1, min(len(job_list), os.cpu_count() or 1))
        t0 = time.perf_counter()
        ninja = _ninja_path()
        if ninja is not None:
            ok = _run_ninja(ninja, nvcc, flags, job_list, work, parallel)
        else:
            ok = _run_direct(nvcc, flags, job_list, parallel)
        seconds = time.perf_counter() - t0

        built: dict[str, tuple[float, str]] = {}
        failures = []
        for job in job_list:
            log = job.log_path.read_text(errors="replace") if job.log_path.is_file() else ""
            if not ok[job.key]:
                failures.append((job, log))
                continue
            meta = {
                "arch": arch_s,
                "flags": list(flags),
                "nvcc": nvcc,
                "nvcc_version": version,
                "seconds": round(seconds, 3),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "log": log,
            }
            _write_atomic(root / f"{job.key}.json", json.dumps(meta, indent=1))
            os.replace(job.tmp_so, job.so_path)  # the commit point
            built[job.key] = (seconds, log)
        return built, failures
    finally:
        shutil.rmtree(work, ignore_errors=True)
