"""The lowering cache (trainkernel.lowering_cache): a second compile of the same
step takes its stages, CUDA and buffer table from disk, identical to a fresh
lowering; anything the passes read that differs is another entry; a damaged
entry is a miss. No GPU, no nvcc (build=False)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from trainkernel import api, lowering_cache, pipeline, target
from trainkernel.workloads import TWINS, WORKLOADS

pytestmark = pytest.mark.lowering_cache


def _compile(name: str, cache_dir, dtype=torch.bfloat16, **kw):
    w = {**WORKLOADS, **TWINS}[name]
    return api.compile_training(w.make_step(dtype), w.example_args("meta", dtype), build=False,
                                cache_dir=cache_dir, **kw)


def _entries(cache_dir) -> list:
    return sorted((cache_dir / "lowered").glob("*.json"))


@pytest.mark.parametrize("name", ["tiny", "mlp4", "online-adam"])
def test_a_second_compile_is_the_first_lowering_read_back(tmp_path, name):
    first = _compile(name, tmp_path)
    second = _compile(name, tmp_path)
    assert not first.lowering_cached and second.lowering_cached
    assert len(_entries(tmp_path)) == 1
    a, b = first.lowered, second.lowered
    assert b.stages == a.stages and b.cuda_source == a.cuda_source and b.pipeline == a.pipeline
    assert b.kernel_name == a.kernel_name and b.meta == a.meta and b.stage_seconds == a.stage_seconds
    assert second.stats() == first.stats()


def test_what_the_passes_read_is_in_the_key(tmp_path, monkeypatch):
    _compile("tiny", tmp_path)
    assert _compile("tiny", tmp_path, dtype=torch.float32).lowering_cached is False  # another module
    assert _compile("tiny", tmp_path, inplace=False).lowering_cached is False  # an option
    assert _compile("tiny", tmp_path, resident="off").lowering_cached is False
    monkeypatch.setattr(pipeline, "FUSE_MERGE", "epilogues")  # a switch
    assert _compile("tiny", tmp_path).lowering_cached is False
    monkeypatch.setattr(pipeline, "FUSE_MERGE", "maps")
    from trainkernel.backend import cuda_target  # a printer switch (as the probes set them)
    default_loads = cuda_target.COLUMN_LOADS
    monkeypatch.setattr(cuda_target, "COLUMN_LOADS", default_loads + 1)
    assert _compile("tiny", tmp_path).lowering_cached is False
    monkeypatch.setattr(cuda_target, "COLUMN_LOADS", default_loads)
    # The printer's target replaced (as the probes do) is a new key too.
    monkeypatch.setattr(cuda_target, "TARGET", dataclasses.replace(cuda_target.TARGET, full_reduce_loads=8))
    assert _compile("tiny", tmp_path).lowering_cached is False
    monkeypatch.setattr(cuda_target, "TARGET", target.DEFAULT)
    # A target replaced under its name (as the probes do) is a new key too.
    monkeypatch.setitem(target.TARGETS, target.H200.name, dataclasses.replace(target.H200, wgmma_tiles_n=(128,)))
    assert _compile("tiny", tmp_path).lowering_cached is False
    monkeypatch.setitem(target.TARGETS, target.H200.name, target.H200)
    assert _compile("tiny", tmp_path).lowering_cached is True
    assert len(_entries(tmp_path)) == 8


def test_the_compiler_digest_covers_passes_and_headers():
    digest = lowering_cache.compiler_digest()
    assert len(digest) == 64
    # Names it covers (a changed pass or device header is a new key).
    from pathlib import Path
    root = Path(lowering_cache.__file__).parent
    assert (root / "passes").is_dir() and (root / "backend" / "include" / "tk" / "hopper_gemm.cuh").is_file()


@pytest.mark.parametrize("damage", ["", "{not json", '{"format": "another"}', '{"format": "trainkernel-lowered-1"}'])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path, damage):
    first = _compile("tiny", tmp_path)
    (entry,) = _entries(tmp_path)
    entry.write_text(damage)
    again = _compile("tiny", tmp_path)
    assert not again.lowering_cached and again.cuda_source == first.cuda_source
    assert json.loads(entry.read_text())["format"] == "trainkernel-lowered-1"
    assert _compile("tiny", tmp_path).lowering_cached


def test_an_unusable_cache_dir_only_means_no_caching(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    c = _compile("tiny", blocker)  # build=False: nothing reports the cache; the lowering still works
    assert not c.lowering_cached and "tk_tiny" in c.cuda_source


def test_disabled_it_neither_reads_nor_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(lowering_cache, "ENABLED", False)
    assert not _compile("tiny", tmp_path).lowering_cached
    assert not _compile("tiny", tmp_path).lowering_cached
    assert _entries(tmp_path) == [] if (tmp_path / "lowered").exists() else True


def test_clear_removes_the_entries(tmp_path):
    _compile("tiny", tmp_path)
    assert lowering_cache.clear(tmp_path) == 1 and _entries(tmp_path) == []
