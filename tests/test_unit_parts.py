"""target.grid_costs.unit_parts (perf-log step 106): wgmma units and reduce items
priced from their measured parts (first operands, K steps, row-walk passes by the
accumulators a thread holds and the bytes the epilogue moves) instead of flops at
a large gemm's rate plus a fixed part. On by default, with block sums and the
mma.sync engine's gemms weighed by 4: it picks the kernels the step-104 probe
measured fastest (step 106's probe: small -0.87, medium -1.85 us a step)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import trainkernel
from trainkernel.dialects import tile
from trainkernel.passes.sched_to_tile import epilogue_bytes
from trainkernel.target import DEFAULT
from trainkernel.workloads import WORKLOADS

from _tile_stage import tile_kernel

COSTS = dataclasses.replace(DEFAULT.grid_costs, unit_parts=True)
PARTS = dataclasses.replace(DEFAULT, grid_costs=dataclasses.replace(COSTS, block_sums=True, mma_engine_calibration=4.0))


def _kernel(name: str, monkeypatch=None, target=None) -> tile.KernelOp:
    w = WORKLOADS[name]
    captured = trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta"))
    if target is not None:
        import trainkernel.target as T

        monkeypatch.setitem(T.TARGETS, T.DEFAULT.name, target)
    return tile_kernel(captured)


def _gemms(kernel: tile.KernelOp) -> list[tuple[tuple[int, int, int], tuple[int, int]]]:
    return [(tile.iteration_space(op), op.tile_shape[:2]) for op in kernel.block.ops if isinstance(op, tile.GemmOp)]


def test_on_as_measured():
    costs = DEFAULT.grid_costs
    assert costs.unit_parts and costs.block_sums and costs.mma_engine_calibration == 4.0


def test_the_epilogue_bytes_an_element():
    """small's gemms: h's bf16 store (2), the logits' fp32 and bf16 stores (6),
    dh's (4), and the two SGD updates (the fp32 weight in and out twice: 12)."""
    gemms = [op for op in _kernel("small").block.ops if isinstance(op, tile.GemmOp)]
    assert [epilogue_bytes(op) for op in gemms] == [2.0, 6.0, 4.0, 12.0, 12.0]


def test_a_unit_prices_its_parts():
    """More K steps, a wider tile, an update in the epilogue, two warpgroups: each
    costs more; a 64-row tile 128 wide pays its crowded passes (4 passes at twice
    the price) and a tile that hands registers back its hand-back."""
    unit = COSTS.wgmma_unit_parts_us
    base = unit(64, 32, 64, 4, 2.0)
    assert unit(64, 32, 64, 8, 2.0) > base and unit(64, 32, 64, 4, 12.0) > base and unit(128, 32, 64, 4, 2.0) > base
    assert unit(64, 128, 64, 0, 2.0) - COSTS.unit_first_cycles * COSTS.cycle_us == pytest.approx(
        4 * 2 * COSTS.row_pass_cycles * COSTS.cycle_us)
    assert unit(128, 256, 64, 0, 2.0) > unit(128, 128, 64, 0, 2.0) + COSTS.wide_unit_cycles * COSTS.cycle_us


def test_the_kernels_it_picks(monkeypatch):
    """With block sums and mma.sync weighed by 4: small's p1 and p2 at 64 x 32 and
    its backward products at 64 x 64 on 128 blocks (the step-104 probe's 16.10 us
    against 17.02); medium's dW2 at 128 x 64 (79.3 against 81.8); mlp4 as it is
    (all 64 x 32). The default target picks the same."""
    for target in (PARTS, None):
        _check_picks(monkeypatch, target)


def _check_picks(monkeypatch, target):
    small = _kernel("small", monkeypatch, target)
    assert [shape for _, shape in _gemms(small)] == [(64, 32), (64, 32), (64, 64), (64, 64), (64, 64)]
    assert small.grid == 128
    medium = dict(_gemms(_kernel("medium", monkeypatch, target)))
    assert medium[(4096, 256, 1024)] == (128, 64) and medium[(1024, 4096, 1024)] == (128, 128)
    assert {shape for _, shape in _gemms(_kernel("mlp4", monkeypatch, target))} == {(64, 32)}
