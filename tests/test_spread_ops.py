"""target.resident_spread_ops: the ops of a resident phase start their work on
different warps (perf-log step 56). Every op's printer hands out its units, rows or
elements from warp 0, so the small ops of a phase queued on the first warps; the
printer rotates each to the warp that keeps the busiest warp least busy. Which warp
computes an element does not change its value, so the kernel's bits do not change."""

from __future__ import annotations

import re

import pytest
import torch

from trainkernel import target as T
from trainkernel.backend import cuda_target

from _nvcc import needs_nvcc, nvcc_errors
from _variants import same_bits_off_and_on
from _variants import suite_source as _source


def _ops(src: str) -> list[tuple[int, str, str, int]]:
    """(phase, kind, its comment's shape text, first warp) of every resident tile op."""
    out, phase, pending = [], 0, None
    for line in src.splitlines():
        if m := re.match(r"  // ---- phase (\d+)", line):
            phase = int(m.group(1))
        elif m := re.match(r"  \{ // tile\.(gemm|reduce|map) (.*)", line):
            pending = [phase, m.group(1), m.group(2), 0]
            out.append(pending)
        elif pending is not None and (m := re.search(r"smem_gemm<kThreads, \d+, [\w:]+(?:, [\w:-]+){3}, (\d+)>", line)):
            pending[3] = int(m.group(1))
        elif pending is not None and (m := re.search(r"\(\(threadIdx\.x \+ (\d+)\) % kThreads\)", line)):
            pending[3] = (_threads(src) - int(m.group(1))) // 32
        elif pending is not None and (m := re.search(r"const int warp = \(\(threadIdx\.x >> 5\) \+ (\d+)\) % (\d+)", line)):
            pending[3] = int(m.group(2)) - int(m.group(1))
    return [tuple(o) for o in out]


def _threads(src: str) -> int:
    return int(re.search(r"static constexpr int kThreads = (\d+);", src).group(1))


@pytest.fixture
def spread_on(target_fields):
    target_fields(resident_spread_ops=True)


def test_on_by_default():
    assert T.DEFAULT.resident_spread_ops is True
    assert any(o[3] for o in _ops(_source("online")))


def test_off_rotates_nothing(target_fields):
    target_fields(resident_spread_ops=False)
    assert all(o[3] == 0 for o in _ops(_source("online")))


def test_online_backward_products_and_sums_take_their_own_warps(spread_on):
    """online (8 warps, a cluster of 16), phase 3: the loss's block sum (every thread,
    a barrier), dh = g @ W2^T (64 x 16 a block: four units, warps 0-3), dW2 = h^T g
    (16 x 16 a block: one unit) and the bias gradient's column sum over 16 outputs
    (one warp's threads). The product moves to warp 4, the sum to warp 5."""
    ops = [o for o in _ops(_source("online")) if o[0] == 3]
    assert [(kind, warp) for _, kind, _, warp in ops] == [("reduce", 0), ("gemm", 0), ("gemm", 4), ("reduce", 5)], ops


def test_ops_filling_every_warp_stay_where_they_are(spread_on):
    """online's phase 4: dW1 (128 x 16 a block: a unit on each of the 8 warps) leaves
    the column sum nowhere better to go than warp 0; phase 0's maps cover every thread."""
    ops = _ops(_source("online"))
    assert all(warp == 0 for phase, _, _, warp in ops if phase in (0, 1, 2, 4)), ops


def test_every_op_start_is_a_warp_of_the_block(spread_on):
    for name in ("classification-adamw-ce", "online-adam", "tiny"):
        src = _source(name)
        warps = _threads(src) // 32
        ops = _ops(src)
        assert all(0 <= o[3] < warps for o in ops), (name, ops)
        assert any(o[3] for o in ops), name


def test_the_busiest_warp_is_no_busier(spread_on, target_fields):
    """On every resident kernel of the suite, no phase's busiest warp (the printer's
    count) is busier with the rotation than without: the plan only ever lowers it."""
    from trainkernel.backend.cuda_target import ResidentPrinter

    seen = []
    real = ResidentPrinter.plan_spread_ops

    def spy(self, small_maps):
        offsets = real(self, small_maps)
        nwarps = self.kernel.threads // 32
        by_phase: dict[int, list] = {}
        for op, phase in self.phase_of.items():
            by_phase.setdefault(phase, []).append(op)
        for ops in by_phase.values():
            def busiest(rot: dict) -> int:
                load = [0] * nwarps
                for op in ops:
                    cost, _ = self.warp_costs(op, small_maps.get(op))
                    s = rot.get(op, 0)
                    for w in range(nwarps):
                        load[w] += cost[(w - s) % nwarps]
                return max(load)
            seen.append((busiest(offsets), busiest({})))
        return offsets

    ResidentPrinter.plan_spread_ops = spy
    try:
        for name in ("online", "classification", "classification-adamw-ce", "online-adam", "tiny"):
            _source(name)
    finally:
        ResidentPrinter.plan_spread_ops = real
    assert seen and all(new <= old for new, old in seen), seen
    assert any(new < old for new, old in seen)


class _Op:
    """A stand-in tile op: its per-warp cost from warp 0, and whether every thread
    meets a barrier in it."""

    def __init__(self, name: str, cost: list[int], barrier: bool = False):
        self.name, self.cost, self.barrier = name, cost, barrier

    def __repr__(self) -> str:
        return self.name


class _Kernel:
    threads = 256


class _Costs:
    """plan_spread_ops on stand-in ops (the printer's count replaced by their costs)."""

    kernel = _Kernel()

    def __init__(self, *phases: list[_Op]):
        self.phase_of = {op: p for p, ops in enumerate(phases) for op in ops}

    def warp_costs(self, op: _Op, warp):
        return list(op.cost), op.barrier

    def plan(self, small_maps=None) -> dict:
        return cuda_target.ResidentPrinter.plan_spread_ops(self, small_maps or {})


def _first(n: int, each: int = 10) -> list[int]:
    return [each] * n + [0] * (8 - n)


def test_the_plan_packs_small_ops_side_by_side(spread_on):
    """Four ops of 4, 2, 1, 1 warps' work: the biggest keeps warp 0, each next one
    starts where the warps are idle (equals in their phase order); ops of another
    phase are planned apart."""
    a, b, c, d = _Op("a", _first(4)), _Op("b", _first(2)), _Op("c", _first(1)), _Op("d", _first(1))
    e = _Op("e", _first(4))
    assert _Costs([d, b, a, c], [e]).plan() == {b: 4, d: 6, c: 7}


def test_a_barrier_of_every_thread_ends_a_stretch(spread_on):
    """An op where every thread waits (an exchange, a block reduction) levels the
    warps: what follows it balances afresh, not against the work before it."""
    a, b = _Op("a", _first(4)), _Op("b", _first(4))
    assert _Costs([a, b]).plan() == {b: 4}
    x = _Op("x", [5] * 8, barrier=True)
    a, b = _Op("a", _first(4)), _Op("b", _first(4))
    assert _Costs([a, x, b]).plan() == {}


def test_small_maps_keep_their_warps(spread_on):
    """A small map's warp is fixed (plan_small_maps); the others go around it."""
    m = _Op("m", [0] * 7 + [30])
    a = _Op("a", _first(1, 30))
    b = _Op("b", _first(1, 30))
    assert _Costs([m, a, b]).plan({m: 7}) == {b: 1}


def test_nothing_moves_when_off(target_fields):
    target_fields(resident_spread_ops=False)
    assert _Costs([_Op("a", _first(1)), _Op("b", _first(1))]).plan() == {}


def _fp32_source(name: str) -> str:
    return _source(name, dtype=torch.float32)


def test_fp32_products_spell_out_the_modes(spread_on):
    """The fp32 path (tk::smem_gemm's FMA loop) takes the first warp after the modes."""
    src = _fp32_source("tiny")
    assert "tk::smem_gemm<kThreads, 2, float, tk::kLdsmAtRunTime, tk::kLdsmAtRunTime, false, 4>" in src


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "classification-adamw-ce", "tiny-fp32"])
def test_compiles_for_sm90(spread_on, tmp_path, name):
    src = _fp32_source("tiny") if name == "tiny-fp32" else _source(name)
    assert "% kThreads)" in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "online-adam", "classification-adamw-ce", "tiny", "tiny-fp32"])
def test_the_bits_do_not_change_on_gpu(target_fields, name):
    """Six steps from the same state on the same batches, ops spread and not: the same
    bits (state and outputs)."""
    fp32 = name == "tiny-fp32"
    same, _ = same_bits_off_and_on(target_fields, "resident_spread_ops", "tiny" if fp32 else name,
                                   dtype=torch.float32 if fp32 else torch.bfloat16)
    assert same
