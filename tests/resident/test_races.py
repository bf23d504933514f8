"""Regression tests from the review of the resident kernels (2026-12-01): cross-block ordering of global memory in a resident cluster kernel.

Every block stages a replicated input home from global memory in its
prologue; rank 0 alone stores a replicated op's result to global memory. When
that result is an in-place update of a replicated, staged argument and no
cluster barrier (the first of a tk::exchange) lies between the prologue and the store,
nothing orders rank 0's store after the other blocks' cp.async loads: a block
that starts late stages the *updated* value and computes its slices from it.
The partitioned interpreter aliases every staged home to its argument, so it
cannot show this."""
from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))

import pytest
import torch
from torch.func import grad_and_value

from trainkernel.dialects import sched, tile
from trainkernel.passes.tile_resident import is_partial
from _helpers import compile_tile


def unordered_inplace_stores(kernel):
    """(op, argument) pairs: a replicated in-place store that no cluster barrier separates from the prologue."""
    if (kernel.cluster or 1) == 1:
        return []
    staged = {op.source: op for op in kernel.block.ops if isinstance(op, tile.SmemOp) and op.source is not None}
    n_in = kernel.num_inputs.data
    barrier_seen = False
    out = []
    for op in kernel.block.ops:
        if not isinstance(op, tile.TileWorkOp):
            continue
        partial = is_partial(op, op.split)
        for v in op.outs:
            r = sched.root_buffer(v)
            home = staged.get(r)
            if home is None or r.index >= n_in or home.split_axis >= 0:
                continue
            # a partial op stores after the first barrier of its exchange
            if not (barrier_seen or partial):
                out.append((op.name, r.name_hint or str(r.index)))
        barrier_seen |= partial
    return out


def _running_stat_step(state, x, y):
    """An MLP whose input is centred by a running mean kept in the state
    (BatchNorm-style buffer), updated in place from the batch."""
    w1, b1, w2, b2, running = state
    xc = x - running

    def loss_fn(p):
        w1, b1, w2, b2 = p
        h = torch.relu(xc @ w1 + b1)
        return ((h @ w2 + b2 - y) ** 2).mean()

    g, l = grad_and_value(loss_fn)((w1, b1, w2, b2))
    new = tuple(p - 0.01 * gg for p, gg in zip((w1, b1, w2, b2), g))
    return l, (*g, torch.zeros_like(running)), (*new, 0.9 * running + 0.1 * x.mean(0))


@pytest.mark.parametrize("keep_state", [False, True], ids=["restaged", "kept"])
def test_inplace_store_of_a_replicated_staged_argument_is_ordered_after_every_prologue(target_fields, keep_state):
    """Restaged state homes: a cluster barrier right after the prologue. Kept ones
    (target.keep_state_homes): the store is the last step's alone, after the earlier
    steps' exchanges, and a launch of one step waits for the cluster before it."""
    target_fields(keep_state_homes=keep_state)
    I, H, O, B = 32, 256, 8, 16
    state = (torch.zeros(I, H), torch.zeros(H), torch.zeros(H, O), torch.zeros(O), torch.zeros(I))
    c, module, kernel = compile_tile(_running_stat_step, (state, torch.zeros(B, I), torch.zeros(B, O)))
    assert kernel.cluster and kernel.cluster > 1
    from trainkernel.backend.cuda_target import ResidentPrinter

    # The IR has such a store; the printer must then order it with a cluster
    # barrier right after the prologue.
    bad = unordered_inplace_stores(kernel)
    assert bad, "the probe step no longer has an unordered replicated in-place store"
    src = ResidentPrinter(kernel).print()
    if keep_state:
        assert re.search(r"if \(rank == 0 && !tk_more\) b\d+\[", src), f"rank 0 stores {bad} in every step"
        assert "tk::stage_wait();\n  if (tk_first && !tk_more) tk::cluster_wait();" in src, (
            f"a one-step launch: rank 0 stores {bad} while other blocks may still be staging it")
    else:
        assert "tk::stage_wait();\n  tk::cluster_sync();" in src, (
            f"rank 0 stores {bad} before any cluster barrier while other blocks may still be staging it"
        )


def test_no_prologue_barrier_where_an_exchange_orders_the_stores():
    """Control: online's replicated in-place stores (b2) come after the split
    h @ W2 exchange, which already orders them: no extra barrier (0.3 us)."""
    from trainkernel.backend.cuda_target import ResidentPrinter
    from _helpers import workload

    *_, kernel, _ = workload("online", None, torch.bfloat16)
    assert kernel.cluster == 16 and unordered_inplace_stores(kernel) == []
    src = ResidentPrinter(kernel).print()
    step = src[src.index("void tk_step("): src.index('extern "C" __global__')]
    assert "tk::cluster_sync();" not in step
    # Between steps a block barrier (target.step_block_barrier): each step's first push
    # waits for the cluster on its own. The one cluster barrier ends the kernel
    # (target.exchange_async_publish): no block leaves while another's publish may
    # still be storing into it.
    assert "    if (tk_more) __syncthreads();" in src
    assert src.count("tk::cluster_sync();") == 1 and src.index("tk::cluster_sync();") > src.index("for (int tk_s")
