"""target.grid_costs.block_sums (perf-log step 104): a grid kernel's phase priced
as its busiest block's items, dealt as the printed loops deal them (item i of an
op at offset o on block (o + i) % grid), instead of the longer of its longest
op's rounds and its items spread evenly."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import trainkernel
from trainkernel.dialects import tile
from trainkernel.passes.sched_to_tile import busiest_block_us, item_cost_us, phase_us
from trainkernel.target import DEFAULT
from trainkernel.workloads import WORKLOADS

from _tile_stage import tile_kernel

BLOCK_SUMS = dataclasses.replace(DEFAULT, grid_costs=dataclasses.replace(DEFAULT.grid_costs, block_sums=True))


def _phases(kernel: tile.KernelOp) -> list[list[tile.TileWorkOp]]:
    return [ops for ops in kernel.phases() if ops]


@pytest.fixture(scope="module")
def small() -> tile.KernelOp:
    w = WORKLOADS["small"]
    return tile_kernel(trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta")))


def test_the_busiest_block_is_never_cheaper_than_the_old_bound(small):
    """Its busiest block holds at least its longest op's rounds and at least the mean."""
    for ops in _phases(small):
        for grid in (1, 7, 64, small.grid, 528):
            assert busiest_block_us(ops, grid, DEFAULT) >= phase_us(ops, grid, DEFAULT) - 1e-9


def test_a_reduce_and_two_units_on_one_block(small):
    """small's last phase: the db1 reduce's 32 items on blocks 0-31, then dW1's
    256 units of 64 x 32 from block 32 on, so blocks 0-23 run the reduce and two
    units (the op timer of perf-log step 103): the busiest block's sum, where
    the old bound took the reduce alone."""
    last = _phases(small)[-1]
    reduce, gemm = last
    assert isinstance(reduce, tile.ReduceOp) and isinstance(gemm, tile.GemmOp)
    assert (reduce.items, gemm.items, small.grid) == (32, 256, 132)
    both = item_cost_us(reduce, DEFAULT) + 2 * item_cost_us(gemm, DEFAULT)
    assert busiest_block_us(last, small.grid, DEFAULT) == pytest.approx(both)
    assert phase_us(last, small.grid, BLOCK_SUMS) == pytest.approx(both)
    assert phase_us(last, small.grid, DEFAULT) < both


def test_items_wrap_around_the_grid(monkeypatch):
    """An op's items continue from the block after the previous op's last, modulo
    the grid: 3 items of cost a on 4 blocks (blocks 0-2), then 3 of cost b:
    the second op's items go to blocks 3, 0 and 1, so blocks 0 and 1 hold a + b."""
    import trainkernel.passes.sched_to_tile as S

    class Item:
        def __init__(self, items, cost):
            self.items, self.cost = items, cost

    monkeypatch.setattr(S, "item_cost_us", lambda op, target: op.cost)
    assert busiest_block_us([Item(3, 1.0), Item(3, 2.0)], 4, DEFAULT) == pytest.approx(3.0)
    assert busiest_block_us([Item(3, 1.0), Item(1, 2.0)], 4, DEFAULT) == pytest.approx(2.0)
    assert busiest_block_us([Item(9, 1.0)], 4, DEFAULT) == pytest.approx(3.0)  # two rounds and one more


def test_off_by_default():
    assert DEFAULT.grid_costs.block_sums is False and DEFAULT.grid_costs.wgmma_epilogue_us == 0.0


def test_the_epilogue_price_grows_with_the_elements_a_thread_holds():
    """grid_costs.wgmma_epilogue_us: per element a consumer thread holds (bn / 2),
    the same at 64 and 128 rows."""
    costs = dataclasses.replace(DEFAULT.grid_costs, wgmma_epilogue_us=0.01)
    assert costs.wgmma_unit_fixed_us(64) - costs.wgmma_unit_fixed_us(32) == pytest.approx(0.16)
    assert DEFAULT.grid_costs.wgmma_unit_fixed_us(64) == DEFAULT.grid_costs.wgmma_unit_fixed_us(32)
