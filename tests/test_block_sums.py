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
from _variants import BEFORE_STEP_106

# The model block sums were first measured in (perf-log step 104): before the parts
# model of step 106, with which they are on by default.
BEFORE = dataclasses.replace(DEFAULT, **BEFORE_STEP_106)
# One block an SM, as the wgmma engine's kernels run (TargetOptions.for_wgmma).
BLOCK_SUMS = dataclasses.replace(BEFORE, grid_costs=dataclasses.replace(BEFORE.grid_costs, block_sums=True),
                                 max_blocks_per_sm=1)


def _phases(kernel: tile.KernelOp) -> list[list[tile.TileWorkOp]]:
    return [ops for ops in kernel.phases() if ops]


@pytest.fixture(scope="module")
def small() -> tile.KernelOp:
    """small's kernel as the model before step 106 picks it (132 blocks, 64 x 32 dW1 units)."""
    import trainkernel.target as T

    w = WORKLOADS["small"]
    T.variant("h200-before-106", base=T.H200, **BEFORE_STEP_106)
    try:
        return tile_kernel(trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta")),
                           target="h200-before-106")
    finally:
        T.TARGETS.pop("h200-before-106", None)


def test_the_busiest_block_is_never_cheaper_than_the_old_bound(small):
    """Its busiest block holds at least its longest op's rounds and at least the mean."""
    for ops in _phases(small):
        for grid in (1, 7, 64, small.grid, 528):
            assert busiest_block_us(ops, grid, BEFORE) >= phase_us(ops, grid, BEFORE) - 1e-9


def test_a_reduce_and_two_units_on_one_block(small):
    """small's last phase: the db1 reduce's 32 items on blocks 0-31, then dW1's
    256 units of 64 x 32 from block 32 on, so blocks 0-23 run the reduce and two
    units (the op timer of perf-log step 103): the busiest block's sum, where
    the old bound took the reduce alone."""
    last = _phases(small)[-1]
    reduce, gemm = last
    assert isinstance(reduce, tile.ReduceOp) and isinstance(gemm, tile.GemmOp)
    assert (reduce.items, gemm.items, small.grid) == (32, 256, 132)
    both = item_cost_us(reduce, BEFORE) + 2 * item_cost_us(gemm, BEFORE)
    assert busiest_block_us(last, small.grid, BEFORE) == pytest.approx(both)
    assert phase_us(last, small.grid, BLOCK_SUMS) == pytest.approx(both)
    assert phase_us(last, small.grid, BEFORE) < both


def test_items_wrap_around_the_grid(monkeypatch):
    """An op's items continue from the block after the previous op's last, modulo
    the grid: 3 items of cost a on 4 blocks (blocks 0-2), then 3 of cost b:
    the second op's items go to blocks 3, 0 and 1, so blocks 0 and 1 hold a + b."""
    import trainkernel.passes.sched_to_tile as S

    class Item:
        def __init__(self, items, cost):
            self.items, self.cost = items, cost

    monkeypatch.setattr(S, "item_cost_us", lambda op, target, mma_weight=1.0: op.cost)
    assert busiest_block_us([Item(3, 1.0), Item(3, 2.0)], 4, DEFAULT) == pytest.approx(3.0)
    assert busiest_block_us([Item(3, 1.0), Item(1, 2.0)], 4, DEFAULT) == pytest.approx(2.0)
    assert busiest_block_us([Item(9, 1.0)], 4, DEFAULT) == pytest.approx(3.0)  # two rounds and one more


def test_on_as_measured():
    """With the parts model (perf-log step 106, run a0555bf-h100-a)."""
    assert DEFAULT.grid_costs.block_sums is True and DEFAULT.grid_costs.wgmma_epilogue_us == 0.0


def test_only_where_a_block_has_its_sm_to_itself(small):
    """A target whose grids may hold several blocks an SM (the mma.sync engine's,
    max_blocks_per_sm 4) keeps the old bound: block sums moved small in fp32 from
    256 blocks to 288, +17 us (step 106's probe)."""
    last = _phases(small)[-1]
    shared = dataclasses.replace(BLOCK_SUMS, max_blocks_per_sm=4)
    assert phase_us(last, small.grid, shared) == pytest.approx(phase_us(last, small.grid, BEFORE))
    assert phase_us(last, small.grid, BLOCK_SUMS) == pytest.approx(busiest_block_us(last, small.grid, BLOCK_SUMS))
    assert phase_us(last, small.grid, BLOCK_SUMS) > phase_us(last, small.grid, shared)


def test_fp32_kernels_keep_their_grids():
    """small and mlp4 in fp32 (mma.sync, several blocks an SM): the grids the model
    before step 106 picks."""
    for name, grid in (("small", 256), ("mlp4", 32)):
        w = WORKLOADS[name]
        k = tile_kernel(trainkernel.capture(w.make_step(torch.float32), w.example_args("meta", torch.float32)))
        assert k.grid == grid, name


def test_the_epilogue_price_grows_with_the_elements_a_thread_holds():
    """grid_costs.wgmma_epilogue_us: per element a consumer thread holds (bn / 2),
    the same at 64 and 128 rows."""
    costs = dataclasses.replace(DEFAULT.grid_costs, wgmma_epilogue_us=0.01)
    assert costs.wgmma_unit_fixed_us(64) - costs.wgmma_unit_fixed_us(32) == pytest.approx(0.16)
    assert DEFAULT.grid_costs.wgmma_unit_fixed_us(64) == DEFAULT.grid_costs.wgmma_unit_fixed_us(32)
