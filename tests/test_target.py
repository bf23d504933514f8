"""The target options (`trainkernel.target`, issue 8 item 5): one frozen object
holds every machine fact the tile passes, the tile verifier and the printer
use, and the passes take it by name.

- the H200 defaults are the figures the passes used before (the CUDA of every
  suite kernel is unchanged: `scripts/kernel_fingerprints.py --compare`);
- a registered variant changes what the passes produce, fact by fact
  (threads, tile shapes, map chunk, grid limit, grid and resident costs,
  shared-memory budget, cluster sizes), through `trainkernel-opt`'s pass
  options and through `pipeline.lower`;
- `gemm_smem_bytes`, the mirror of tk::gemm_smem_bytes, equals the header's
  value (nvcc, host only), so `gemm_stages` and the tiles agree with the
  device library.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

import trainkernel
from trainkernel import target as T
from trainkernel.dialects import tile
from trainkernel.ir import parse_module, print_module
from trainkernel.pipeline import lower, pass_pipeline, run_passes
from trainkernel.workloads import WORKLOADS

ROOT = Path(__file__).resolve().parents[1]
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None)


def test_h200_defaults_are_the_figures_of_gpu_md():
    h = T.H200
    assert T.DEFAULT is h and T.get_target("h200") is h
    assert (h.arch, h.sms, h.threads, h.max_grid, h.map_chunk) == ("sm_90", 132, 128, 528, 512)
    assert h.gemm_tile("mma.bf16") == (64, 64, 32) and h.gemm_tile("simt.f32") == (64, 64, 16)
    assert (h.smem_per_block, h.smem_alignment, h.max_cluster, h.max_portable_cluster) == (227 * 1024, 16, 16, 8)
    assert h.grid_costs.sync_us("grid") == 1.1 and h.grid_costs.sync_us("block") == 0.05
    assert h.resident_costs.smem_budget == 226 * 1024 and h.resident_costs.grid_calibration == 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.threads = 256  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown target 'b200'; targets are h200"):
        T.get_target("b200")
    with pytest.raises(ValueError, match="threads 100 must be a multiple of 32"):
        T.TargetOptions("bad", threads=100)
    with pytest.raises(ValueError, match="exceed max_cluster"):
        T.TargetOptions("bad", clusters=(1, 32))


def test_the_tile_verifier_reads_the_targets_limits():
    assert tile.SMEM_ALIGNMENT == T.DEFAULT.smem_alignment and tile.MAX_CLUSTER == T.DEFAULT.max_cluster


def _sched(name: str = "tiny", dtype: str = "bf16"):
    """A workload at the sched stage (the tile passes' input), as text."""
    w = WORKLOADS[name]
    captured = trainkernel.capture(w.make_step(dtype), w.example_args("meta"))
    module = captured.module.clone()
    run_passes(module, pass_pipeline("sched", True, state=len(w.param_shapes())))
    return print_module(module)


def _tile(text: str, spec: str):
    module = parse_module(text)
    run_passes(module, spec)
    return next(op for op in module.ops if isinstance(op, tile.KernelOp))


def test_sched_to_tile_takes_threads_tiles_and_chunks_from_the_target(variant):
    text = _sched("online")
    default = _tile(text, "sched-to-tile{engine=mma}")
    variant("wide_blocks", threads=256, map_elems_per_thread=2, reduce_columns=64,
            gemm_tiles=(("mma.bf16", (128, 64, 32)), ("mma.f16", (64, 64, 32)), ("simt.f32", (64, 64, 16))))
    wide = _tile(text, "sched-to-tile{target=wide_blocks engine=mma}")
    assert default.threads == 128 and wide.threads == 256
    gemms = lambda k: [op for op in k.block.ops if isinstance(op, tile.GemmOp)]  # noqa: E731
    assert {op.tile_shape for op in gemms(default)} == {(64, 64, 32)}
    assert {op.tile_shape for op in gemms(wide)} == {(128, 64, 32)}
    maps = lambda k: {op.chunk for op in k.block.ops if isinstance(op, tile.MapOp)}  # noqa: E731
    assert maps(default) == {512} and maps(wide) == {512}  # 128 x 4 and 256 x 2
    cols = lambda k: {op.rows for op in k.block.ops if isinstance(op, tile.ReduceOp)} - {1}  # noqa: E731
    # a column reduction: the target's columns per item (their groups of threads split the rows)
    assert cols(default) == {T.H200.reduce_columns} and cols(wide) == {64}
    assert wide.smem == T.get_target("wide_blocks").gemm_smem_bytes("mma.bf16") > default.smem


def test_sched_to_tile_sizes_the_grid_with_the_targets_costs_and_limit(variant):
    small, tiny = _sched("small"), _sched("tiny")
    assert _tile(small, "sched-to-tile{engine=mma}").grid == T.H200.max_grid  # 528: as many blocks as it may
    assert _tile(tiny, "sched-to-tile").grid == 1  # one block: its barriers are __syncthreads()
    # grid barriers that cost nothing: tiny spreads over blocks
    variant("free_sync", grid_costs=T.GridCosts(grid_sync_us=0.0, block_sync_us=0.0))
    assert _tile(tiny, "sched-to-tile{target=free_sync}").grid > 1
    # grid barriers a thousand times dearer: small runs in one block
    variant("dear_sync", grid_costs=T.GridCosts(grid_sync_us=1000.0))
    assert _tile(small, "sched-to-tile{target=dear_sync engine=mma}").grid == 1
    # a smaller machine: the grid limit follows its SM count
    variant("eight_sms", sms=8)
    assert _tile(small, "sched-to-tile{target=eight_sms engine=mma}").grid == 8 * T.H200.max_blocks_per_sm
    # the wgmma engine: one block per SM at most (small's largest phase has 121
    # items: its maps, fewer than the SMs at 384 x 32 elements an item, take
    # 384 x 16; its gemms 8-16 tiles split in K)
    assert _tile(small, "sched-to-tile{engine=wgmma rows=128 cols=64}").grid == 121 <= T.H200.sms
    assert _tile(small, "sched-to-tile{target=eight_sms engine=wgmma}").grid == 8


def test_tile_resident_takes_costs_budget_and_clusters_from_the_target(variant):
    text = _sched("online")
    default = _tile(text, "sched-to-tile,tile-resident{mode=force}")
    assert default.cluster is not None and default.cluster > 1
    variant("one_block_clusters", clusters=(1,))
    assert _tile(text, "sched-to-tile,tile-resident{mode=force target=one_block_clusters}").cluster in (None, 1)
    variant("no_smem", resident_costs=T.ResidentCosts(smem_budget=1024))
    assert _tile(text, "sched-to-tile,tile-resident{mode=force target=no_smem}").cluster is None
    # auto: a resident kernel is kept only if it beats the calibrated grid estimate
    auto = _tile(text, "sched-to-tile,tile-resident")
    assert auto.cluster is not None
    variant("grid_favoured", resident_costs=T.ResidentCosts(grid_calibration=1e-3))
    assert _tile(text, "sched-to-tile{target=grid_favoured},tile-resident{target=grid_favoured}").cluster is None


def test_lower_names_the_target_in_its_pipeline(variant):
    w = WORKLOADS["tiny"]
    captured = trainkernel.capture(w.make_step("bf16"), w.example_args("meta"))
    default = lower(captured)
    assert "target=" not in default.pipeline  # the default is not spelled out
    assert lower(captured, target="h200").cuda_source == default.cuda_source
    variant("wide_blocks2", threads=256)
    wide = lower(captured, target="wide_blocks2")
    assert "sched-to-tile{grid=0 target=wide_blocks2},tile-resident{mode=auto target=wide_blocks2}" in wide.pipeline
    assert wide.meta.block == 256 and "kThreads = 256" in wide.cuda_source
    with pytest.raises(ValueError, match="unknown target"):
        pass_pipeline("tile", target="nope")


def _device_library_prints(tmp_path, header: str, printfs: list[str], defines: tuple[str, ...] = ()) -> dict[str, str]:
    """Build and run a host program that includes `header` of the device library (nvcc
    `defines`) and runs `printfs` (each printing "name value"); returns {name: value}."""
    src = tmp_path / "probe.cu"
    src.write_text("\n".join(["#include <cstdio>", f'#include "{header}"', "int main() {", *printfs, "  return 0;", "}"]) + "\n")
    exe = tmp_path / "probe"
    include = ROOT / "trainkernel" / "backend" / "include"
    proc = subprocess.run([NVCC, "-std=c++17", "-arch=sm_90", *defines, "-I", str(include), str(src), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return dict(line.split() for line in out.splitlines())


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_gemm_smem_bytes_mirrors_the_device_library(tmp_path):
    types = {"mma.bf16": "__nv_bfloat16", "mma.f16": "__half", "simt.f32": "float"}
    printfs = [f'  printf("{mma} %d\\n", tk::gemm_smem_bytes<{types[mma]}, {bm}, {bn}, {bk}>());'
               for mma, (bm, bn, bk) in T.H200.gemm_tiles]
    got = _device_library_prints(tmp_path, "tk/gemm.cuh", printfs + ['  printf("stages %d\\n", tk::kGemmStages);'])
    assert int(got["stages"]) == T.H200.gemm_stages
    for mma, _ in T.H200.gemm_tiles:
        assert int(got[mma]) == T.H200.gemm_smem_bytes(mma), mma


def test_reduce_columns_must_divide_the_threads():
    with pytest.raises(ValueError, match="reduce_columns 48 must divide threads 128"):
        dataclasses.replace(T.H200, name="bad_columns", reduce_columns=48)


def test_sched_to_tile_splits_k_as_the_target_allows(variant):
    text = _sched("medium")
    splits = lambda k: [op.ksplit for op in k.block.ops if isinstance(op, tile.GemmOp) and op.ksplit > 1]  # noqa: E731
    # 128 x 128 tiles (cols=128: h @ W2 not narrowed) on 132 blocks: 16 tiles, K = 4096
    assert splits(_tile(text, "sched-to-tile{cols=128}")) == [8]
    variant("no_split_k", max_ksplit=1)
    assert splits(_tile(text, "sched-to-tile{target=no_split_k cols=128}")) == []
    variant("split_k_4", max_ksplit=4)
    assert splits(_tile(text, "sched-to-tile{target=split_k_4 cols=128}")) == [4]
    variant("long_slices", ksplit_min_k=2048)  # K = 4096: two slices of 2048 at most
    assert splits(_tile(text, "sched-to-tile{target=long_slices cols=128}")) == [2]


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("consumers", [2, 1])
def test_wgmma_smem_bytes_mirrors_the_device_library(tmp_path, consumers):
    """TargetOptions.wgmma_smem_bytes (the alignment slack, the stages, their mbarriers, the
    row epilogue's scratch) is what tk::hopper::TileShape asks the launch for, with two
    consumer warpgroups (128-row tiles) and one (64-row tiles, at most 128 wide)."""
    from trainkernel.target import WGMMA_TILES
    widths = {bn: tile_id for bn, (tile_id, _stages) in WGMMA_TILES.items() if consumers == 2 or bn <= 128}
    printfs = [f'  printf("{bn} %d\\n", tk::hopper::TileById<{tile_id}>::type::SMEM_BYTES);'
               for bn, tile_id in sorted(widths.items())]
    printfs.append('  printf("bm %d\\n", tk::hopper::TileById<2>::type::BM);')
    got = _device_library_prints(tmp_path, "tk/hopper_gemm.cuh", printfs, (f"-DTK_WGMMA_CONSUMERS={consumers}",))
    assert int(got["bm"]) == 64 * consumers
    for bn in widths:
        assert int(got[str(bn)]) == T.TargetOptions.wgmma_smem_bytes(bn, 64 * consumers) <= 227 * 1024, bn


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("consumers", [2, 1])
def test_split_wgmma_counters_fit_the_workspace(tmp_path, consumers):
    """A split wgmma tile's arrival counters (tk::hopper::kTileWarps: one per consumer
    warp, each voting alone) and its block (tk::hopper::kThreads) are what
    tile.wgmma_tile_warps and TargetOptions.for_wgmma give a tile of that height."""
    from trainkernel.dialects.tile import wgmma_tile_warps
    printfs = ['  printf("warps %d\\n", tk::hopper::kTileWarps);', '  printf("threads %d\\n", tk::hopper::kThreads);']
    got = _device_library_prints(tmp_path, "tk/hopper_gemm.cuh", printfs, (f"-DTK_WGMMA_CONSUMERS={consumers}",))

    class Tile:
        tile_shape = (64 * consumers, 64, 64)

    assert int(got["warps"]) == wgmma_tile_warps(Tile())
    assert int(got["threads"]) == T.H200.for_wgmma(64, consumers).threads


def test_map_items_shrink_only_where_the_map_has_fewer_items_than_sms():
    """Under the wgmma engine (384 threads, 32 elements a thread): a map with fewer items
    than SMs halves its elements a thread, down to map_min_elems_per_thread, while that
    gives it more items; large maps and maps of one item either way keep their size."""
    t = T.H200.for_wgmma()
    assert t.map_chunk_for(1) == 384 * 32  # without a size: the target's item
    assert t.map_chunk_for(1, 256 * 256) == 384 * 16  # mlp4's weights: 6 -> 11 items
    assert t.map_chunk_for(1, 2048 * 8192) == 384 * 32  # large's W1: 1366 items already
    assert t.map_chunk_for(1, 100) == 384 * 32  # one item either way
    assert t.map_chunk_for(1, 8192) == 384 * 16  # one item -> two
    assert t.map_chunk_for(5, 256 * 256) == 384 * 6  # AdamW's five loads: already small items
    floor = dataclasses.replace(t, map_min_elems_per_thread=32)
    assert floor.map_chunk_for(1, 256 * 256) == 384 * 32
