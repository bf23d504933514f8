"""Split-K in grid kernels (sched-to-tile's `split_k`, tile.gemm ksplit/workspace,
the printer's last-arrival fix-up): which gemms split, what the kernel then
holds, and that resident kernels never keep it. The numerics run on the GPU
(tests/test_runtime_cuda.py: every workload against eager, bit-identical reruns)."""

from __future__ import annotations

import dataclasses

import torch

import trainkernel
from trainkernel import target
from trainkernel.dialects import tile
from trainkernel.ir import parse_module
from trainkernel.workloads import WORKLOADS


def _kernel(name: str, resident: str = "auto", engine: str = "mma") -> tuple[tile.KernelOp, str]:
    w = WORKLOADS[name]
    c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False, resident=resident,
                                     gemm_engine=engine)
    module = parse_module(c.ir("tile"))
    return next(op for op in module.ops if isinstance(op, tile.KernelOp)), c.cuda_source


def _gemms(k: tile.KernelOp) -> list[tile.GemmOp]:
    return [op for op in k.block.ops if isinstance(op, tile.GemmOp)]


def test_medium_splits_only_the_gemm_that_leaves_the_grid_idle():
    k, src = _kernel("medium")
    split = [g for g in _gemms(k) if g.ksplit > 1]
    # h @ W2: a 1024x256 output is 64 tiles of 64x64 with K = 4096, alone in its phase.
    assert [(g.ksplit, g.items) for g in split] == [(8, 512)]
    assert all(g.ksplit == 1 for g in _gemms(k) if g not in split)  # the others have 256-1024 tiles
    # The workspace fits the arena (the verifier also keeps it off every buffer).
    ws = split[0].workspace
    assert ws % 16 == 0 and ws + split[0].workspace_bytes() <= k.arena_bytes.data
    assert src.count("tk::split_k_last(") == 1 and "__ldcg(tk_ws" in src


def test_medium_on_the_wgmma_engine_splits_the_same_gemm_in_its_tiles():
    k, src = _kernel("medium", engine="wgmma")
    split = [g for g in _gemms(k) if g.ksplit > 1]
    # 1024x256 in 128x128 tiles: 16 tiles on 132 blocks, K = 4096 in 8 slices of 512.
    assert [(g.ksplit, g.items) for g in split] == [(8, 128)]
    assert all(g.engine == "wgmma" for g in _gemms(k)) and k.grid == 132 and k.threads == 384
    # tk::hopper's own fix-up: partials [tile][slice][128 x 128], then 16 tile counters.
    assert split[0].workspace_bytes() == 16 * 8 * 128 * 128 * 4 + 16 * 4
    assert "split_k_last" not in src and src.count("tk::hopper::grid_gemm_units<") == 5


def test_the_cost_model_picks_the_wgmma_tile_width_per_step(monkeypatch):
    # With both widths offered: medium's products have 128-256 tiles of
    # 128 x 128 on 132 blocks; the 256-wide tile halves them (one wave) and
    # moves fewer operand bytes a flop; small's have 8-16, which 256-wide
    # tiles would leave mostly idle.
    monkeypatch.setitem(target.TARGETS, target.H200.name, dataclasses.replace(target.H200, wgmma_tiles_n=(128, 256)))
    medium, msrc = _kernel("medium", engine="wgmma")
    assert {g.tile_shape for g in _gemms(medium)} == {(128, 256, 64)}
    assert "TileById<0>" in msrc and msrc.count("tk::hopper::grid_gemm_units<") == 5
    split = [g for g in _gemms(medium) if g.ksplit > 1]
    assert [(g.ksplit, g.tile_shape[1]) for g in split] == [(8, 256)]  # h @ W2: 8 tiles, K = 4096
    small, ssrc = _kernel("small", engine="wgmma")
    assert {g.tile_shape for g in _gemms(small)} == {(128, 128, 64)} and "TileById<1>" in ssrc


def test_resident_kernels_drop_split_k(monkeypatch):
    # online's gemms have K = 64-256: split only with slices shorter than the H200's 512.
    monkeypatch.setitem(target.TARGETS, target.H200.name, dataclasses.replace(target.H200, ksplit_min_k=64))
    grid, _ = _kernel("online", resident="off")
    assert any(g.ksplit > 1 for g in _gemms(grid)), "online's grid kernel has gemms of a few tiles"
    res, src = _kernel("online")
    assert res.cluster is not None
    assert all(g.ksplit == 1 and g.workspace is None for g in _gemms(res))
    assert "split_k_last" not in src and res.arena_bytes.data == 0


def test_a_one_block_kernel_never_splits():
    k, _ = _kernel("tiny", resident="off")
    assert k.grid == 1 and all(g.ksplit == 1 for g in _gemms(k))


def test_the_arena_starts_zeroed_for_the_tile_counters():
    w = WORKLOADS["medium"]
    c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False)
    for fresh in (False, True):
        arena = c._arena(torch.device("cpu"), fresh=fresh)
        assert arena.numel() == c.meta.arena_bytes and not arena.any()



def test_the_wgmma_engine_needs_room_for_its_tensor_maps(monkeypatch):
    # Two 128-byte maps a gemm travel in the kernel parameters: past the
    # target's limit the kernel keeps the mma.sync tiles.
    monkeypatch.setitem(target.TARGETS, target.H200.name, dataclasses.replace(target.H200, wgmma_max_gemms=4))
    k, _ = _kernel("medium", engine="auto")  # five gemms
    assert all(g.engine == "mma" for g in _gemms(k)) and k.threads == 128
