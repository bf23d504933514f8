"""A model check of the cluster pair's synchronization (tk/hopper_gemm.cuh,
"The cluster pair"; perf-log step 87), CPU only.

Two blocks of a cluster, each a producer and a consumer, run the kernel's
protocol over a sequence of gemms (the megakernel's: one pipeline position
kept from gemm to gemm, the producer running ahead) against a model of the
hardware's mbarriers (PTX ISA: an arrival count and a transaction count per
phase; a phase completes when both reach zero; `try_wait.parity` sees the
phase of that parity completed) and of TMA copies that land at any later
time, a multicast one in both blocks, each completing its bytes on the
barrier at the same offset in every destination. A random scheduler
interleaves every runnable actor, many times. Checked: nobody waits forever
(no deadlock); no copy lands in a stage whose previous data a consumer is
still reading (wgmma keeps one group in flight: the current stage and the
one before); every stage a consumer reads holds its own unit's A and the B
of its K step (its own, or its peer's multicast of the same boxes), all of
it. The walk (pair_step, work_unit) is ported from the header; the host
emulation (tests/device/hopper_gemm_emu.cu) checks the header's own walk.
The same model with the pair's rules broken (rank 0 not waiting for rank 1's
consumers, or rank 1 expecting only its own A) must fail: the model sees
what it is meant to.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

A_BYTES, B_BYTES = 3, 5  # any two sizes: only their sums matter to the barriers
GROUP_M = 16  # kGroupM


@dataclass(frozen=True)
class Gemm:
    tiles_m: int
    tiles_n: int
    splits: int
    kb_total: int

    @property
    def kb_per_split(self) -> int:
        return -(-self.kb_total // self.splits)

    @property
    def units(self) -> int:
        return self.tiles_m * self.tiles_n * self.splits

    def unit(self, u: int) -> tuple[int, int, int, int]:
        """work_unit: (tile row, tile column, kb0, kb1)."""
        tile, split = divmod(u, self.splits)
        per_group = GROUP_M * self.tiles_n
        g, in_group = divmod(tile, per_group)
        first_m = g * GROUP_M
        rows = min(self.tiles_m - first_m, GROUP_M)
        kb0 = split * self.kb_per_split
        return first_m + in_group % rows, in_group // rows, kb0, min(kb0 + self.kb_per_split, self.kb_total)


def pair_steps(g: Gemm, first: int, peer_first: int, stride: int):
    """pair_step over the walk: (own unit or None, steps, multicast) a step."""
    k = 0
    while True:
        u, v = first + k * stride, peer_first + k * stride
        if u >= g.units and v >= g.units:
            return
        mine = g.unit(u) if u < g.units else None
        theirs = g.unit(v) if v < g.units else None
        steps = max(w[3] - w[2] if w else 0 for w in (mine, theirs))
        multicast = mine is not None and theirs is not None and mine[1] == theirs[1] and mine[2:] == theirs[2:]
        yield mine, steps, multicast
        k += 1


@dataclass
class Barrier:
    count: int
    pending: int = 0
    tx: int = 0
    completed: int = 0  # phases completed

    def __post_init__(self):
        self.pending = self.count

    def _check(self):
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.count

    def arrive(self, expect_tx: int = 0):
        assert self.pending > 0, "more arrivals than the barrier's count in one phase"
        self.tx += expect_tx
        self.pending -= 1
        self._check()

    def complete_tx(self, nbytes: int):
        self.tx -= nbytes
        self._check()

    def done(self, parity: int) -> bool:
        """try_wait.parity: the phase of this parity has completed (the current one has the other)."""
        return (self.completed & 1) != parity


@dataclass
class Block:
    rank: int
    full: list
    empty: list
    data: list  # per stage: {"A": tag, "B": tag} of the copies that landed last
    reading: set = field(default_factory=set)  # stages whose wgmma may still read


class Model:
    """Two blocks' producers and consumers as generators that yield "wait" while
    blocked and "step" after a move; copies in flight land when the scheduler
    picks them. A tag names a copy's use: (the block's step number, operand,
    gemm, tile, K step); both blocks of a pair are at the same step number
    whenever one multicasts (the lockstep)."""

    def __init__(self, gemms, stride, offset, stages, seed, pair_waits_peer=True, rank1_expects_b=True,
                 symmetric=True):
        self.rng = random.Random(seed)
        self.gemms, self.stride, self.stages = gemms, stride, stages
        self.pair_waits_peer, self.rank1_expects_b, self.symmetric = pair_waits_peer, rank1_expects_b, symmetric
        waits = [pair_waits_peer and (symmetric or rank == 0) for rank in (0, 1)]  # on the peer's consumers
        self.blocks = [Block(rank, [Barrier(1) for _ in range(stages)],
                             [Barrier(8 * (2 if waits[rank] else 1)) for _ in range(stages)],
                             [{} for _ in range(stages)]) for rank in (0, 1)]
        self.firsts = [(-offset) % stride, (1 - offset) % stride]
        self.copies: list = []  # in flight: (rank, stage, operand, tag, bytes)

    def _walk(self, rank):
        """(step number, gemm, own unit or None, index in the pair step, own K steps, multicast) a K step."""
        n = 0
        for gi, g in enumerate(self.gemms):
            for mine, steps, multicast in pair_steps(g, self.firsts[rank], self.firsts[1 - rank], self.stride):
                own = mine[3] - mine[2] if mine else 0
                for i in range(steps):
                    yield n, gi, mine, i, own, multicast
                    n += 1

    def producer(self, rank):
        b = self.blocks[rank]
        for n, gi, mine, i, own, multicast in self._walk(rank):
            stage, phase = n % self.stages, (n // self.stages) & 1
            while not b.empty[stage].done(phase ^ 1):
                yield "wait"
            if i < own:
                kb = mine[2] + i
                gets_b = rank == 0 or not multicast or self.rank1_expects_b
                b.full[stage].arrive(A_BYTES + (B_BYTES if gets_b else 0))
                self.copies.append((rank, stage, "A", (n, gi, mine[0], mine[1], kb), A_BYTES))
                if not multicast:
                    self.copies.append((rank, stage, "B", (n, gi, mine[1], kb), B_BYTES))
                elif rank == 0:  # one copy, landing in both blocks
                    self.copies += [(dst, stage, "B", (n, gi, mine[1], kb), B_BYTES) for dst in (0, 1)]
            else:
                b.full[stage].arrive()  # an idle step: the phase without data
            yield "step"

    def _release(self, rank, stage):
        self.blocks[rank].reading.discard(stage)
        for _ in range(8):  # each consumer warp's leader
            self.blocks[rank].empty[stage].arrive()
            if self.pair_waits_peer and (self.symmetric or rank == 1):  # through mapa, on the peer's barrier
                self.blocks[1 - rank].empty[stage].arrive()

    def consumer(self, rank):
        """consume_units: one wgmma group in flight (wait_group 1 frees the step
        before), the unit's last stage freed after wait_group 0, then the idle steps."""
        b = self.blocks[rank]
        prev = None
        for n, gi, mine, i, own, _ in self._walk(rank):
            stage, phase = n % self.stages, (n // self.stages) & 1
            if i == own and prev is not None:  # the unit's K loop is over
                self._release(rank, prev)
                prev = None
            while not b.full[stage].done(phase):
                yield "wait"
            if i < own:
                kb = mine[2] + i
                want = {"A": (n, gi, mine[0], mine[1], kb), "B": (n, gi, mine[1], kb)}
                assert b.data[stage] == want, f"rank {rank} step {n} reads {b.data[stage]}, not {want}"
                b.reading.add(stage)
                if prev is not None:
                    self._release(rank, prev)
                prev = stage
                if i == own - 1:  # wait_group 0 at the unit's end
                    self._release(rank, prev)
                    prev = None
            else:
                self._release(rank, stage)
            yield "step"

    def _land(self, copy):
        rank, stage, operand, tag, nbytes = copy
        b = self.blocks[rank]
        assert stage not in b.reading, f"a copy lands in rank {rank}'s stage {stage} while wgmma reads it"
        b.data[stage] = {**b.data[stage], operand: tag}
        b.full[stage].complete_tx(nbytes)

    def run(self, max_moves=500000):
        live = [self.producer(0), self.producer(1), self.consumer(0), self.consumer(1)]
        for _ in range(max_moves):
            if not live and not self.copies:
                return
            pick = self.rng.randrange(len(live) + len(self.copies))
            if pick >= len(live):
                self._land(self.copies.pop(pick - len(live)))
                continue
            try:
                next(live[pick])
            except StopIteration:
                live.pop(pick)
                continue
            if not self.copies and live and all(self._blocked(a) for a in list(live)):
                raise AssertionError("deadlock: every actor waits and no copy is in flight")
        raise AssertionError("no end after max_moves")

    @staticmethod
    def _blocked(actor) -> bool:
        """One more move of a waiting actor changes nothing: it waits again."""
        try:
            return next(actor) == "wait"
        except StopIteration:
            return False


GEMM_SEQUENCES = [
    # medium-like: pairs share B (even tile-rows, no split), then split-K, then odd tile-rows
    [Gemm(8, 4, 1, 6), Gemm(2, 1, 3, 7), Gemm(3, 2, 1, 5)],
    # a unit per block or fewer, a last slice shorter, tiles that straddle the grid
    [Gemm(2, 2, 1, 3), Gemm(1, 1, 4, 9), Gemm(4, 3, 2, 4)],
]


@pytest.mark.parametrize("seq", range(len(GEMM_SEQUENCES)))
@pytest.mark.parametrize("stride,offset", [(2, 0), (6, 0), (6, 3), (4, 1)])
@pytest.mark.parametrize("stages", [2, 4])
def test_no_deadlock_no_overwrite_and_the_right_data(seq, stride, offset, stages):
    for seed in range(40):
        Model(GEMM_SEQUENCES[seq], stride, offset, stages, seed).run()


def test_multicast_happens_in_the_sharing_plans():
    g = Gemm(8, 4, 1, 6)
    steps = list(pair_steps(g, 0, 1, 6))
    assert steps and all(mc for mine, _, mc in steps if mine is not None)
    assert not any(mc for _, _, mc in pair_steps(Gemm(2, 1, 3, 7), 0, 1, 6))


def test_the_model_sees_a_broken_protocol():
    """Rank 0 refilling a stage without waiting for rank 1's consumers overwrites
    data rank 1 still reads; rank 1 expecting only its own A lets it read a stage
    before the multicast B has landed; and the first design's asymmetric counts
    (rank 1 freeing rank 0's stages, not the other way round) let rank 1 run more
    than a pipeline ahead on steps without multicast, so its arrivals for a later
    use complete rank 0's empty phase while rank 0 still reads the stage (what
    this model found: both blocks now wait for both). Each shows in some
    interleaving."""
    for broken in (dict(pair_waits_peer=False), dict(rank1_expects_b=False), dict(symmetric=False)):
        failures = 0
        for seed in range(200):
            try:
                Model(GEMM_SEQUENCES[0], 2, 0, 2, seed, **broken).run()
            except AssertionError:
                failures += 1
        assert failures, broken
