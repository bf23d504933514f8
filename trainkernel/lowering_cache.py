"""The lowering cache: a captured step's `Lowered` (every stage's IR, the CUDA,
the kernel's buffer table) kept on disk next to the kernels, so that compiling
a step again costs its capture and a file read instead of the pass pipeline
(issue 10.6: warm compile <= 0.2 s; the passes alone took 0.12-0.45 s).

The key is everything the passes read: the captured module's text, the state
structure, the lowering options, the resolved target (every field, so a
target replaced in `trainkernel.target.TARGETS` is a new key), the module-level
switches the passes and printer consult, and a digest of the compiler's own
files (a changed pass is a new key). Code that replaces a function of the
compiler at run time (development probes, tests) cannot be seen in the key:
it sets `ENABLED = False` (the test suite does, apart from this module's
tests).

Entries are JSON files `<cache>/lowered/<key>.json`, written atomically; an
entry that cannot be read or does not parse is a miss and is rewritten. A cache
directory that cannot be used only means no caching here: building the
kernel reports it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Callable

import torch

ENABLED = True
"""Off: every compile runs the passes (set by code that patches the compiler)."""

_FORMAT = "trainkernel-lowered-1"
_SOURCE_SUFFIXES = (".py", ".cuh", ".h")


@functools.lru_cache(maxsize=None)
def compiler_digest() -> str:
    """sha256 of the package's sources and device headers (names and bytes)."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in _SOURCE_SUFFIXES and p.is_file()):
        h.update(str(path.relative_to(root)).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _switches() -> dict[str, str]:
    """Module-level settings the passes and the printer read (probes and the harness set them)."""
    from trainkernel import pipeline
    from trainkernel.backend import cuda_target

    return {
        "fuse_merge": repr(pipeline.FUSE_MERGE),
        "fuse_input_casts": repr(pipeline.FUSE_INPUT_CASTS),
        "sink_sources": repr(pipeline.SINK_SOURCES),
        "phase_timer": repr(cuda_target.PHASE_TIMER),
        "timer_values_per_line": repr(cuda_target.TIMER_VALUES_PER_LINE),
        "final_fence": repr(cuda_target.FINAL_FENCE),
        "column_loads": repr(cuda_target.COLUMN_LOADS),
        "printer_target": repr(cuda_target.TARGET),  # the resident printer's launch settings
    }


def key(captured, options: dict) -> str:
    """The cache key of lowering `captured` with `options` (`pipeline.lower`'s keywords)."""
    from trainkernel.pipeline import state_leaves
    from trainkernel.target import DEFAULT, get_target

    target = get_target(options.get("target") or DEFAULT.name)
    parts = {
        "format": _FORMAT,
        "compiler": compiler_digest(),
        "module": str(captured.module),
        "state": state_leaves(captured),
        "in_spec": str(captured.in_spec),
        "out_spec": str(captured.out_spec),
        "options": {k: repr(v) for k, v in sorted(options.items())},
        "target": repr(target),
        "switches": _switches(),
        "torch": torch.__version__,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _to_json(lowered) -> str:
    d = dataclasses.asdict(lowered)
    for b in d["meta"]["buffers"]:
        b["dtype"] = _dtype_name(b["dtype"])
    return json.dumps({"format": _FORMAT, "lowered": d})


def _from_json(text: str):
    from trainkernel.pipeline import BufferSpec, KernelMeta, Lowered

    data = json.loads(text)
    if data.get("format") != _FORMAT:
        raise ValueError("another format")
    d = data["lowered"]
    meta = dict(d["meta"])
    buffers = []
    for b in meta.pop("buffers"):
        dtype = getattr(torch, b["dtype"])
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"not a dtype: {b['dtype']}")
        buffers.append(BufferSpec(b["role"], int(b["index"]), tuple(b["shape"]), dtype))
    meta["results"] = [tuple(r) for r in meta["results"]]
    return Lowered(
        stages=dict(d["stages"]),
        cuda_source=d["cuda_source"],
        kernel_name=d["kernel_name"],
        pass_seconds=float(d["pass_seconds"]),
        meta=KernelMeta(buffers=buffers, **meta),
        pipeline=d["pipeline"],
        stage_seconds=dict(d["stage_seconds"]),
    )


def _root(cache_dir) -> Path | None:
    from trainkernel.backend.build import CacheError, _cache_root

    try:
        return _cache_root(cache_dir) / "lowered"
    except CacheError:
        return None


def lower_cached(captured, cache_dir, lower: Callable[..., object], **options):
    """(Lowered, hit): the cached lowering of `captured` with `options`, else
    `lower(captured, **options)`, stored for next time. On a hit, `pass_seconds`
    is the lookup's time and `stage_seconds` the passes' times when the entry was made."""
    if not ENABLED:
        return lower(captured, **options), False
    start = time.perf_counter()
    root = _root(cache_dir)
    k = key(captured, options)
    path = root / f"{k}.json" if root is not None else None
    if path is not None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            lowered = _from_json(path.read_text())
            return dataclasses.replace(lowered, pass_seconds=time.perf_counter() - start), True
    lowered = lower(captured, **options)
    if path is not None:
        from trainkernel.backend.build import _write_atomic

        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(path, _to_json(lowered).encode())
    return lowered, False


def clear(cache_dir=None) -> int:
    """Remove every cached lowering of `cache_dir`; returns how many."""
    root = _root(cache_dir)
    n = 0
    if root is not None and root.is_dir():
        for p in root.glob("*.json"):
            with contextlib.suppress(OSError):
                os.unlink(p)
                n += 1
    return n
