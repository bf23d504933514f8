"""Split-K in grid kernels (sched-to-tile's `split_k`, tile.gemm ksplit/workspace,
the printer's last-arrival fix-up): which gemms split, what the kernel then
holds, and that resident kernels never keep it. The numerics run on the GPU
(tests/test_runtime_cuda.py: every workload against eager, bit-identical reruns)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import trainkernel
from trainkernel import target
from trainkernel.dialects import tile
from trainkernel.ir import parse_module
from trainkernel.workloads import LARGE, WORKLOADS


def _kernel(name, resident: str = "auto", engine: str = "mma") -> tuple[tile.KernelOp, str]:
    w = WORKLOADS[name] if isinstance(name, str) else name
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


def test_medium_on_the_wgmma_engine_splits_the_same_gemm_in_its_tiles(target_fields):
    target_fields(wgmma_gemm_widths=False)  # one width (the narrowed form: test_wgmma_tiles.py)
    k, src = _kernel("medium", engine="wgmma")
    split = [g for g in _gemms(k) if g.ksplit > 1]
    # 1024x256 in 128x128 tiles: 16 tiles on 132 blocks, K = 4096 in 8 slices of 512.
    assert [(g.ksplit, g.items) for g in split] == [(8, 128)]
    assert all(g.engine == "wgmma" for g in _gemms(k)) and k.grid == 132 and k.threads == 384
    # tk::hopper's own fix-up: partials [tile][slice][128 x 128] at 8 bytes an element
    # (room for the tagged fix-up's words), then 8 counters for each of the 16 tiles
    # (one per consumer warp: the split-K vote goes by warp).
    assert split[0].workspace_bytes() == 16 * 8 * 128 * 128 * 8 + 16 * 8 * 4
    assert "split_k_last" not in src and src.count("tk::hopper::grid_gemm_units<") == 5


def test_the_cost_model_picks_the_wgmma_tile_width_per_step():
    # Four widths are offered (the H200's default). large's products have
    # 256-1024 tiles of 128 x 128 on 132 blocks: the 256-wide tile's faster
    # rate pays for its longer fixed part (GridCosts, fitted to the phase
    # timer). medium keeps 128 x 128 for the products that fill the grid and
    # narrows its split h @ W2 alone (sched-to-tile's narrow_wgmma_gemms; perf-log
    # step 101: 88.2 -> 81.4 us). small's and mlp4's products have 2-16 tiles of
    # 128 x 128: narrower and lower tiles give more units (measured small 53.1 ->
    # 38.6 us at 64 wide, 64 rows 20.9 -> 17.9 (step 97), 32 wide mlp4 26.8 ->
    # 22.9 (step 99)). With the parts model (step 106): medium's dW2 at 128 x 64
    # (-2.5 us) and small's backward products at 64 x 64 (its kernel's tile,
    # the forward ones narrowed to 32: -0.9 us).
    assert target.H200.wgmma_tiles_n == (32, 64, 128, 256) and target.H200.wgmma_gemm_widths
    large, lsrc = _kernel(LARGE, engine="wgmma")
    assert {g.tile_shape for g in _gemms(large)} == {(128, 256, 64)}
    assert "TileById<0>" in lsrc and lsrc.count("tk::hopper::grid_gemm_units<") == 5
    # The 256-wide kernel ends with a grid barrier (sched_to_tile.ends_with_grid_sync).
    assert isinstance(list(large.block.ops)[-1], tile.SyncOp)
    for name, bm, bns, tile_id in (("medium", 128, {128, 64, 32}, 1), ("small", 64, {64, 32}, 2), ("mlp4", 64, {32}, 3)):
        k, src = _kernel(name, engine="wgmma")
        assert {g.tile_shape for g in _gemms(k)} == {(bm, bn, 64) for bn in bns} and f"TileById<{tile_id}>" in src, name
        assert k.threads == 128 + 2 * bm and ("#define TK_WGMMA_CONSUMERS 1" in src) == (bm == 64), name
        assert not isinstance(list(k.block.ops)[-1], tile.SyncOp), name


def test_a_final_grid_barrier_by_the_target_rule(monkeypatch):
    # final_grid_sync: "always" ends every grid kernel with one, "never" none
    # (even 256 wide).
    for mode, name, width, want in (("always", "small", (128,), True), ("never", "medium", (256,), False),
                                    ("wide", "medium", (256,), True), ("wide", "medium", (128,), False)):
        monkeypatch.setitem(target.TARGETS, target.H200.name,
                            dataclasses.replace(target.H200, final_grid_sync=mode, wgmma_tiles_n=width))
        k, _ = _kernel(name, engine="wgmma")
        assert isinstance(list(k.block.ops)[-1], tile.SyncOp) == want, (mode, name, width)
    with pytest.raises(Exception, match="final_grid_sync must be never, wide or always"):
        dataclasses.replace(target.H200, final_grid_sync="sometimes")


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


def test_a_gemm_whose_tiles_are_all_whole_drops_the_epilogue_bounds_tests():
    """grid_gemm_units' kWholeTiles (its fifth template argument) is true exactly where
    the product's M and N are multiples of the tile: medium's gemms all are; medium
    resized to other widths (batch 1000) has products with edge tiles, which keep the bounds tests
    (each tile then decides at run time)."""
    import re

    def whole_flags(w):
        k, src = _kernel(w, engine="wgmma")
        shape = r"(?:TkShape|tk::hopper::TileShape<[^>]*>)"  # a narrowed gemm names its own tile
        flags = re.findall(rf"grid_gemm_units<[^,]+, {shape}, (?:true|false), (?:true|false), (true|false)[,>]", src)
        expect = []
        for g in _gemms(k):
            bm, bn, _ = g.tile_shape
            m, n, _ = tile.iteration_space(g)
            expect.append("true" if m % bm == 0 and n % bn == 0 else "false")
        return flags, expect

    flags, expect = whole_flags("medium")
    assert flags == expect == ["true"] * 5
    odd = WORKLOADS["medium"].with_sizes(batch=1000, widths=[1000, 4000, 200])  # rows of whole 16 bytes (TMA)
    flags, expect = whole_flags(odd)
    assert flags == expect and "false" in flags
