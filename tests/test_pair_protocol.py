"""A model check of the cluster pair's synchronization (tk/hopper_gemm.cuh,
"The cluster pair"; perf-log step 87), CPU only.

Every block of a grid (clusters of two: blocks b and b ^ 1), each a producer
and a consumer, runs the kernel's protocol over a sequence of gemms (the megakernel's: one pipeline position
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
    """pair_step over the walk: (own unit as (tile row, tile column, kb0, kb1, u) or
    None, steps, multicast) a step."""
    k = 0
    while True:
        u, v = first + k * stride, peer_first + k * stride
        if u >= g.units and v >= g.units:
            return
        mine = (*g.unit(u), u) if u < g.units else None
        theirs = (*g.unit(v), v) if v < g.units else None
        steps = max(w[3] - w[2] if w else 0 for w in (mine, theirs))
        multicast = mine is not None and theirs is not None and mine[1] == theirs[1] and mine[2:4] == theirs[2:4]
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
    full: list
    empty: list
    data: list  # per stage: {"A": tag, "B": tag} of the copies that landed last
    reading: set = field(default_factory=set)  # stages whose wgmma may still read


class Model:
    """The grid's blocks (clusters of two: b and b ^ 1), each a producer and a
    consumer, as generators that yield "wait" while blocked and "step" after a
    move; copies in flight land when the scheduler picks them. A tag names a
    copy's use: (the block's K step number, gemm, tile, K step); the two blocks
    of a cluster are at the same step number whenever one multicasts (the
    lockstep). Split gemms share their fix-up as the megakernel's do
    (splitk_shared_fixup, where splits < grid and the pair's units are 2q and
    2q + 1): after its K loop and idle steps, each slice's consumer waits until
    every slice of its tile has stored its partial; elsewhere the last slice
    sums (no wait). `aligned_fixup_only=False` shares it at any offset: the
    deadlock the header's rule avoids."""

    def __init__(self, gemms, stride, offset, stages, seed, pair_waits_peer=True, rank1_expects_b=True,
                 symmetric=True, aligned_fixup_only=True, run_ahead=True):
        self.rng = random.Random(seed)
        self.gemms, self.stride, self.stages = gemms, stride, stages
        self.pair_waits_peer, self.rank1_expects_b, self.symmetric = pair_waits_peer, rank1_expects_b, symmetric
        self.aligned_fixup_only, self.run_ahead = aligned_fixup_only, run_ahead
        self.consumed = [-1] * stride  # the last gemm each block's consumers finished
        self.blocks = []
        for b in range(stride):
            waits = pair_waits_peer and (symmetric or b % 2 == 0)  # on the peer's consumers too
            self.blocks.append(Block([Barrier(1) for _ in range(stages)],
                                     [Barrier(8 * (2 if waits else 1)) for _ in range(stages)],
                                     [{} for _ in range(stages)]))
        self.firsts = [(b - offset) % stride for b in range(stride)]
        self.copies: list = []  # in flight: (block, stage, operand, tag, bytes)
        self.stored: dict = {}  # (gemm, tile) -> slices whose partials are stored

    def _steps(self, b):
        """(gemm, own unit or None, K steps, multicast) a pair step of block b."""
        for gi, g in enumerate(self.gemms):
            for mine, steps, multicast in pair_steps(g, self.firsts[b], self.firsts[b ^ 1], self.stride):
                yield gi, mine, steps, multicast

    def producer(self, b):
        """produce_units; without run_ahead (grid_gemm_units' 256-wide tiles, whose
        producer takes its registers back at a block barrier after each gemm) it
        starts a gemm only once its consumers finished the one before."""
        blk, rank, n = self.blocks[b], b % 2, 0
        for gi, mine, steps, multicast in self._steps(b):
            while not self.run_ahead and self.consumed[b] < gi - 1:
                yield "wait"
            own = mine[3] - mine[2] if mine else 0
            for i in range(steps):
                stage, phase = n % self.stages, (n // self.stages) & 1
                while not blk.empty[stage].done(phase ^ 1):
                    yield "wait"
                if i < own:
                    kb = mine[2] + i
                    gets_b = rank == 0 or not multicast or self.rank1_expects_b
                    blk.full[stage].arrive(A_BYTES + (B_BYTES if gets_b else 0))
                    self.copies.append((b, stage, "A", (n, gi, mine[0], mine[1], kb), A_BYTES))
                    if not multicast:
                        self.copies.append((b, stage, "B", (n, gi, mine[1], kb), B_BYTES))
                    elif rank == 0:  # one copy, landing in both blocks
                        self.copies += [(dst, stage, "B", (n, gi, mine[1], kb), B_BYTES) for dst in (b, b ^ 1)]
                else:
                    blk.full[stage].arrive()  # an idle step: the phase without data
                n += 1
                yield "step"

    def _release(self, b, stage):
        self.blocks[b].reading.discard(stage)
        for _ in range(8):  # each consumer warp's leader
            self.blocks[b].empty[stage].arrive()
            if self.pair_waits_peer and (self.symmetric or b % 2 == 1):  # through mapa, on the peer's barrier
                self.blocks[b ^ 1].empty[stage].arrive()

    def consumer(self, b):
        """consume_units: one wgmma group in flight (wait_group 1 frees the step
        before), the unit's last stage freed after wait_group 0, the idle steps,
        then a split tile's shared fix-up."""
        blk, n = self.blocks[b], 0
        for gi, mine, steps, _ in self._steps(b):
            self.consumed[b] = gi - 1  # every gemm before this one is done
            own = mine[3] - mine[2] if mine else 0
            prev = None
            for i in range(steps):
                stage, phase = n % self.stages, (n // self.stages) & 1
                while not blk.full[stage].done(phase):
                    yield "wait"
                if i < own:
                    kb = mine[2] + i
                    want = {"A": (n, gi, mine[0], mine[1], kb), "B": (n, gi, mine[1], kb)}
                    assert blk.data[stage] == want, f"block {b} step {n} reads {blk.data[stage]}, not {want}"
                    blk.reading.add(stage)
                    if prev is not None:
                        self._release(b, prev)
                    prev = stage
                    if i == own - 1:  # wait_group 0 at the unit's end
                        self._release(b, prev)
                        prev = None
                else:
                    self._release(b, stage)
                n += 1
                yield "step"
            g = self.gemms[gi]
            # rank 0's first even: the pair holds 2q, 2q + 1 (consume_units' pair_aligned)
            aligned = self.firsts[b & ~1] % 2 == 0 or not self.aligned_fixup_only
            if mine is not None and 1 < g.splits < self.stride and aligned:  # the shared fix-up: every slice stored
                key = (gi, mine[4] // g.splits)
                self.stored.setdefault(key, set()).add(mine[4] % g.splits)
                while len(self.stored[key]) < g.splits:
                    yield "wait"
        self.consumed[b] = len(self.gemms) - 1

    def _land(self, copy):
        b, stage, operand, tag, nbytes = copy
        blk = self.blocks[b]
        assert stage not in blk.reading, f"a copy lands in block {b}'s stage {stage} while wgmma reads it"
        blk.data[stage] = {**blk.data[stage], operand: tag}
        blk.full[stage].complete_tx(nbytes)

    def run(self, max_moves=2000000):
        live = [self.producer(b) for b in range(self.stride)] + [self.consumer(b) for b in range(self.stride)]
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
            if not self.copies and live:
                before = self._state()
                if all([self._blocked(a) for a in list(live)]) and self._state() == before:
                    raise AssertionError("deadlock: every actor waits, nothing changed, no copy is in flight")
        raise AssertionError("no end after max_moves")

    def _state(self):
        """What a move can change: the barriers, the fix-ups' stored slices, the
        gemms consumers finished, the copies in flight."""
        bars = tuple((x.completed, x.pending, x.tx) for blk in self.blocks for x in blk.full + blk.empty)
        return bars, tuple(self.consumed), tuple(sorted((k, len(v)) for k, v in self.stored.items())), len(self.copies)

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
@pytest.mark.parametrize("stride,offset", [(2, 0), (6, 0), (6, 3), (4, 1), (8, 2)])
@pytest.mark.parametrize("stages", [2, 4])
@pytest.mark.parametrize("run_ahead", [True, False], ids=["producer-runs-ahead", "registers-handed-back"])
def test_no_deadlock_no_overwrite_and_the_right_data(seq, stride, offset, stages, run_ahead):
    """Every block of the grid, split gemms sharing their fix-up where splits < grid;
    the producer running ahead into the next gemm (tiles up to 128 wide) or not
    (256-wide tiles hand registers back after each gemm)."""
    for seed in range(25):
        Model(GEMM_SEQUENCES[seq], stride, offset, stages, seed, run_ahead=run_ahead).run()


def test_multicast_happens_in_the_sharing_plans():
    g = Gemm(8, 4, 1, 6)
    steps = list(pair_steps(g, 0, 1, 6))
    assert steps and all(mc for mine, _, mc in steps if mine is not None)
    assert not any(mc for _, _, mc in pair_steps(Gemm(2, 1, 3, 7), 0, 1, 6))


def test_a_shared_fix_up_of_unaligned_pairs_deadlocks():
    """At an odd offset a pair holds units (G - 1 + kG, (k + 1)G): block 0's slice
    of a tile at step 0 and its peer's next slice at step 1. Waiting in the shared
    fix-up for that slice, block 0 frees no stage of step 1, so its peer cannot
    load the slice: the header shares the fix-up only where rank 0's first unit
    is even (the megakernel's gemm offsets are)."""
    seq = [Gemm(2, 1, 3, 7)]
    with pytest.raises(AssertionError, match="deadlock"):
        for seed in range(25):
            Model(seq, 4, 1, 2, seed, aligned_fixup_only=False).run()
    for seed in range(25):
        Model(seq, 4, 1, 2, seed).run()


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
