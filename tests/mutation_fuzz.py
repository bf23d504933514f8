"""A mutation fuzzer for the buffer levels: the verifier or the interpreter.

Every mutant of a valid module must be either rejected by the verifier or
interpret (`trainkernel.sched_interpreter.run_program`, with its real byte
arena and concurrent phases) to exactly the original results, bit for bit.
A mutant that verifies and computes anything else, or crashes the
interpreter, is *wrong*: a program the verifiers let through to the CUDA
printer although it does not compute the step.

Subjects are the lowered modules of every workload in
`trainkernel.workloads` (small sizes, several dtypes, in-place and staged,
plus an AdamW step), with their inputs and reference results. Mutators are
registered per level with `@mutator("sched")`; each mutates a cloned
module in place and returns a one-line description, or None when it does
not apply to that module.

Only mutations whose effect the verifier can judge are fair: a mutant that
is a *different valid program* (e.g. a commit moved after a reader of the
old value, a cast to another precision) cannot be told from the intended
one by any verifier. So the mutators change what the printer trusts the
verifier for: arena offsets and size, barriers (removed, merged, split,
re-scoped), the order of ops in a phase, a duplicated compute, memref
shapes and element types (arena buffers; argument element counts), and the
names pasted into C++. A quarter of the mutants combine two mutations.

Tile level (`make_subjects(("tile",))`): every workload's `tile.kernel` as
the pipeline makes it (resident at these sizes: one block, or a cluster of 8
for medium), as a grid kernel of the cost model's grid, and as a grid kernel
of 4 blocks, plus online at its benchmark size (a cluster of 16). The generic
mutators (offsets, arena, names, shapes) run there too, with tile-specific
ones: syncs (dropped, re-scoped, inserted), ops moved, reordered and
duplicated, work items, op offsets, chunks, rows, the grid, the shared-memory
homes' offsets and splits, the ops' splits and partials, an extra smaller
yielded output, home names. A verified tile mutant must also print (the CUDA
printer may refuse it with a diagnostic, counted apart, never a traceback).

The interpreter judges a tile mutant as it judges a sched one (a resident
kernel of one block keeps its homes in one byte array, as the GPU does; one
of several blocks runs block by block, `partitioned=True`). It does not see
what only the printer uses: `items`, an op's `offset`, `chunk`, `rows`, the
grid. Their mutators state what a correct verifier must answer, worked out
from the printer's contract independently of the verifier's code
(`Verdict`): "reject" (e.g. any other `items` than the op's work items) or
"equivalent" (e.g. any op offset >= 0, any grid that fits, with no block
barrier over several blocks). A verified "reject" is wrong; a rejected
"equivalent" is counted as over-strict (and must be 0 too).
"""

from __future__ import annotations

import dataclasses
import random
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import torch
from torch.utils import _pytree as pytree
from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    IntAttr,
    MemRefType,
    StringAttr,
)
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from trainkernel.dialects import sched
from trainkernel.sched_interpreter import run_program
from trainkernel.util import numel

Mutator = Callable[[sched.ProgramLikeOp, random.Random], "str | Verdict | None"]


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A mutation whose effect the interpreter cannot see, with the answer a
    correct verifier must give: `expect` is "reject" or "equivalent"."""

    what: str
    expect: str

MUTATORS: dict[str, dict[str, Mutator]] = {"sched": {}, "tile": {}}


def mutator(*levels: str):
    """Register a mutator for the given levels ("sched", "tile")."""

    def register(fn: Mutator) -> Mutator:
        for level in levels:
            MUTATORS[level][fn.__name__] = fn
        return fn

    return register


# ------------------------------------------------------------------ subjects


@dataclasses.dataclass
class Subject:
    label: str
    level: str
    module: builtin.ModuleOp
    inputs: list[torch.Tensor]
    want: tuple[torch.Tensor, ...]

    @property
    def program(self) -> sched.ProgramLikeOp:
        return program_of(self.module)


def program_of(module: builtin.ModuleOp) -> sched.ProgramLikeOp:
    return next(op for op in module.ops if isinstance(op, sched.ProgramLikeOp))


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and torch.equal(
        a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8)
    )


def _lower(captured, inplace: bool, levels: Sequence[str], **tile_options) -> dict[str, builtin.ModuleOp]:
    """The module after each stage, as `pipeline.lower` runs them. With "tile"
    in `levels`, one tile module per TILE_VARIANTS entry (key "tile/<variant>")."""
    from trainkernel.pipeline import run_passes, stage_passes, state_leaves

    module = captured.module.clone()
    state = state_leaves(captured)
    out = {}
    for stage in ("tk", "sched"):
        run_passes(module, stage_passes(stage, inplace, state=state))
        if stage in levels:
            out[stage] = module.clone()
    if "tile" in levels:
        for variant, options in TILE_VARIANTS.items():
            tiled = module.clone()
            run_passes(tiled, stage_passes("tile", inplace, state=state, **options))
            out[f"tile/{variant}"] = tiled
    return out


TILE_VARIANTS = {"resident": {}, "grid": {"resident": "off"}, "grid4": {"grid": 4}}
"""Tile subjects per workload config: the pipeline's kernel (resident at the
fuzzer's sizes), a grid kernel of the cost model's grid, and one of 4 blocks."""


def _run(program: sched.ProgramLikeOp, inputs) -> tuple[torch.Tensor, ...]:
    """The interpreter as the oracle: block by block for a resident cluster."""
    return run_program(program, inputs, partitioned=True)


def _check_subject(module, inputs, eager, label: str) -> tuple[torch.Tensor, ...]:
    """The oracle's results for a subject, after checking them: run whole, every
    level is eager's bits; block by block (a resident cluster sums its partials
    in rank order, as the kernel does) they are close to them and NaN-free."""
    program = program_of(module)
    whole = run_program(program, inputs)
    assert all(same_bits(g, e) for g, e in zip(whole, eager)), f"{label}: not exact"
    want = _run(program, inputs)
    for g, e in zip(want, eager):
        assert not g.isnan().any() and torch.allclose(g.double(), e.double(), rtol=1e-4, atol=1e-6), label
    return want


# Small sizes with every workload's structure (layers, classes); the fuzzer
# is about the schedule, not the arithmetic.
SUBJECT_SIZES = {
    "tiny": (4, (8, 16, 4)),
    "online": (8, (16, 32, 4)),
    "small": (8, (16, 32, 8)),
    "medium": (16, (16, 64, 8)),
    "classification": (4, (16, 32, 10)),
    "mlp4": (8, (16, 16, 16, 16, 16)),
}
# (dtype, inplace) per workload: every dtype and both commit modes appear.
SUBJECT_CONFIGS = {
    "tiny": [("bf16", True), ("f32", False)],
    "online": [("f16", True)],
    "small": [("bf16", False)],
    "medium": [("f32", True)],
    "classification": [("bf16", True)],
    "mlp4": [("f16", False)],
}


def make_subjects(levels: Sequence[str] = ("sched",), seed: int = 0) -> list[Subject]:
    """One subject per (workload config, level), with an AdamW step on tiny."""
    import trainkernel
    from trainkernel.workloads import COMPUTE_DTYPES, WORKLOADS, adamw_bias_correction

    subjects = []
    for name, w in WORKLOADS.items():
        batch, widths = SUBJECT_SIZES[name]
        w = w.with_sizes(batch, widths)
        for dtype, inplace in SUBJECT_CONFIGS[name]:
            step = w.make_step(dtype)
            captured = trainkernel.capture(step, w.example_args("meta", COMPUTE_DTYPES[dtype]))
            params = w.init_params(seed=seed)
            ((x, y),) = w.make_batches(1, seed=seed + 1, dtype=COMPUTE_DTYPES[dtype])
            inputs = pytree.tree_leaves((params, x, y))
            for key, module in _lower(captured, inplace, levels).items():
                level, _, variant = key.partition("/")
                want = _check_subject(module, inputs, pytree.tree_leaves(step(params, x, y)), f"{name} {key}")
                subjects.append(Subject(f"{name}/{dtype}/{'inplace' if inplace else 'staged'}"
                                        + (f"/{variant}" if variant else ""), level, module, inputs, want))
    w = WORKLOADS["tiny"].with_sizes(*SUBJECT_SIZES["tiny"])
    step = w.make_adamw_step(torch.float32)
    state = w.init_adamw_state(seed=seed)
    ((x, y),) = w.make_batches(1, seed=seed + 1)
    args = (state, x, y, adamw_bias_correction(3))
    captured = trainkernel.capture(step, args)
    inputs = pytree.tree_leaves(args)
    for key, module in _lower(captured, True, levels).items():
        level, _, variant = key.partition("/")
        want = _run(program_of(module), inputs)
        subjects.append(Subject("tiny-adamw/f32/inplace" + (f"/{variant}" if variant else ""), level, module,
                                inputs, want))
    if "tile" in levels:
        # A resident cluster of 16 blocks: online at its benchmark size.
        w = WORKLOADS["online"]
        step = w.make_step("f32")
        captured = trainkernel.capture(step, w.example_args("meta", torch.float32))
        params = w.init_params(seed=seed)
        ((x, y),) = w.make_batches(1, seed=seed + 1)
        inputs = pytree.tree_leaves((params, x, y))
        module = _lower(captured, True, ("tile",))["tile/resident"]
        assert (program_of(module).cluster or 1) > 1
        want = _check_subject(module, inputs, pytree.tree_leaves(step(params, x, y)), "online-bench")
        subjects.append(Subject("online-bench/f32/inplace/resident", "tile", module, inputs, want))
    return subjects


# ------------------------------------------------------------------ the loop


@dataclasses.dataclass
class Report:
    tried: int = 0
    rejected: int = 0
    equivalent: int = 0
    wrong: int = 0
    not_applicable: int = 0
    overstrict: int = 0  # rejected although the mutation's Verdict is "equivalent"
    printer_refused: int = 0  # verified, then refused by the CUDA printer with a diagnostic
    overstrict_cases: list[str] = dataclasses.field(default_factory=list)
    refused_cases: list[str] = dataclasses.field(default_factory=list)
    per_mutator: dict[str, Counter] = dataclasses.field(default_factory=lambda: defaultdict(Counter))
    reasons: Counter = dataclasses.field(default_factory=Counter)  # first words of rejection messages
    wrong_cases: list[str] = dataclasses.field(default_factory=list)

    def line(self) -> str:
        extra = (f" (over-strict {self.overstrict}, refused by the printer {self.printer_refused})"
                 if self.overstrict or self.printer_refused else "")
        return (f"mutants tried {self.tried}, rejected {self.rejected}, equivalent {self.equivalent}, "
                f"wrong {self.wrong}" + extra)

    def table(self) -> str:
        """Per mutator (a compound mutant counts under both of its mutators)."""
        rows = [f"  {name:28s} tried {c['tried']:4d}  rejected {c['rejected']:4d}  equivalent {c['equivalent']:4d}"
                f"  wrong {c['wrong']:3d}" for name, c in sorted(self.per_mutator.items())]
        return "\n".join(rows)


def _reason(exc: BaseException) -> str:
    """A stable label for a rejection: the verifier message without its numbers and names."""
    import re

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = re.sub(r"'[^']*'|%\S+|\d+", "_", text)
    return text[:200]


def fuzz(subjects: Sequence[Subject], mutants: int, seed: int,
         mutators: dict[str, dict[str, Mutator]] | None = None, max_attempts: int | None = None,
         compound: float = 0.25) -> Report:
    """Try `mutants` applicable mutants: a random mutator on a random subject,
    with probability `compound` followed by a second one. `per_mutator`
    counts a mutant under every mutator that took part in it."""
    mutators = MUTATORS if mutators is None else mutators
    rng = random.Random(seed)
    pool = [(s, name, fn) for s in subjects for name, fn in mutators.get(s.level, {}).items()]
    if not pool:
        raise ValueError("no mutator applies to any subject")
    report = Report()
    attempts = 0
    max_attempts = max_attempts or 20 * mutants
    while report.tried < mutants:
        attempts += 1
        if attempts > max_attempts:
            raise RuntimeError(f"only {report.tried} applicable mutants in {max_attempts} attempts")
        subject, name, fn = rng.choice(pool)
        module = subject.module.clone()
        first = fn(program_of(module), rng)
        if first is None:
            report.not_applicable += 1
            continue
        names, verdicts = [name], [first]
        # A quarter of the mutants get a second mutation (interactions: a
        # split phase merged elsewhere, a moved buffer in a shrunk arena, ...).
        if rng.random() < compound:
            name2, fn2 = rng.choice([(n, f) for s, n, f in pool if s is subject])
            second = fn2(program_of(module), rng)
            if second is not None:
                names.append(name2)
                verdicts.append(second)
        what = "; then ".join(v.what if isinstance(v, Verdict) else v for v in verdicts)
        # What a correct verifier must say where the interpreter is blind: reject if
        # any part must be rejected; the interpreter decides the rest (an
        # "equivalent" part changes nothing it computes).
        must_reject = any(isinstance(v, Verdict) and v.expect == "reject" for v in verdicts)
        must_accept = all(isinstance(v, Verdict) and v.expect == "equivalent" for v in verdicts)
        report.tried += 1
        counters = [report.per_mutator[n] for n in names]
        for c in counters:
            c["tried"] += 1
        case = f"{subject.level} {subject.label}: {'+'.join(names)}: {what}"

        def wrong(detail: str) -> None:
            report.wrong += 1
            for c in counters:
                c["wrong"] += 1
            report.wrong_cases.append(f"{case}: {detail}")

        try:
            module.verify()
        except VerifyException as exc:
            report.rejected += 1
            for c in counters:
                c["rejected"] += 1
            report.reasons[_reason(exc)] += 1
            if must_accept:
                report.overstrict += 1
                report.overstrict_cases.append(f"{case}: {_reason(exc)}")
            continue
        except Exception as exc:  # noqa: BLE001 - a traceback, not a diagnostic
            wrong("verifier raised " + "".join(traceback.format_exception_only(exc)).strip())
            continue
        if must_reject:
            wrong("verified, but the printer's contract says it must be rejected")
            continue
        if subject.level == "tile":
            from xdsl.utils.exceptions import DiagnosticException

            from trainkernel.backend.cuda_target import printer_for

            try:
                printer_for(program_of(module)).print()
            except DiagnosticException as exc:
                report.printer_refused += 1
                report.refused_cases.append(f"{case}: {exc}")
            except Exception as exc:  # noqa: BLE001
                wrong("the CUDA printer raised " + "".join(traceback.format_exception_only(exc)).strip())
                continue
        try:
            got = _run(program_of(module), subject.inputs)
            same = len(got) == len(subject.want) and all(same_bits(g, e) for g, e in zip(got, subject.want))
            detail = "results differ"
        except Exception as exc:  # noqa: BLE001 - a verified program must interpret
            same = False
            detail = "interpreter raised " + "".join(traceback.format_exception_only(exc)).strip()
        if same:
            report.equivalent += 1
            for c in counters:
                c["equivalent"] += 1
        else:
            wrong(detail)
    return report


# ------------------------------------------------------------------ helpers for mutators


def _buffers(program: sched.ProgramLikeOp, placed: bool = True) -> list[sched.BufferOp]:
    return [op for op in program.block.ops
            if isinstance(op, sched.BufferOp) and (op.offset_value is not None or not placed)]


def _set_offset(op: sched.BufferOp, offset: int) -> None:
    op.properties["offset"] = IntAttr(offset)


def _arena(program: sched.ProgramLikeOp) -> int:
    return program.arena_bytes.data


def _set_arena(program: sched.ProgramLikeOp, value: int) -> None:
    program.properties["arena_bytes"] = IntAttr(value)


def _label(op: sched.BufferOp) -> str:
    return f"%{op.result.name_hint}" if op.result.name_hint else f"buffer@{op.offset_value}"


A = sched.ARENA_ALIGNMENT


# ------------------------------------------------------------------ offsets


@mutator("sched")
def offset_onto_another_buffer(program, rng):
    """Move a buffer onto another buffer's offset (the issue's reproducer)."""
    bufs = _buffers(program)
    if len(bufs) < 2:
        return None
    a, b = rng.sample(bufs, 2)
    if a.offset_value == b.offset_value:
        return None
    old = a.offset_value
    _set_offset(a, b.offset_value)
    return f"{_label(a)} offset {old} -> {b.offset_value} (that of {_label(b)})"


@mutator("sched")
def offset_shift(program, rng):
    """Shift an offset by a few alignment units, either way (may go negative or past the end)."""
    bufs = _buffers(program)
    if not bufs:
        return None
    b = rng.choice(bufs)
    delta = rng.choice([-4, -3, -2, -1, 1, 2, 3, 4, 16]) * A
    old = b.offset_value
    _set_offset(b, old + delta)
    return f"{_label(b)} offset {old} -> {old + delta}"


@mutator("sched")
def offset_misaligned(program, rng):
    bufs = _buffers(program)
    if not bufs:
        return None
    b = rng.choice(bufs)
    delta = rng.randrange(1, A)
    old = b.offset_value
    _set_offset(b, old + delta)
    return f"{_label(b)} offset {old} -> {old + delta}"


@mutator("sched")
def offset_anywhere(program, rng):
    """A random aligned offset inside (or just past) the arena."""
    bufs = _buffers(program)
    if not bufs or _arena(program) <= 0:
        return None
    b = rng.choice(bufs)
    new = rng.randrange(0, _arena(program) // A + 2) * A
    if new == b.offset_value:
        return None
    old = b.offset_value
    _set_offset(b, new)
    return f"{_label(b)} offset {old} -> {new}"


@mutator("sched")
def offset_past_the_end(program, rng):
    """Place a buffer at the arena's end, after growing the arena a little or not at all."""
    bufs = _buffers(program)
    if not bufs:
        return None
    b = rng.choice(bufs)
    old = b.offset_value
    grow = rng.choice([0, sched.nbytes(b.result.type) - 1, sched.nbytes(b.result.type) + A])
    new = -(-_arena(program) // A) * A
    _set_arena(program, _arena(program) + grow)
    _set_offset(b, new)
    return f"{_label(b)} offset {old} -> {new}, arena +{grow}"


@mutator("sched")
def offset_drop(program, rng):
    bufs = _buffers(program)
    if not bufs:
        return None
    b = rng.choice(bufs)
    del b.properties["offset"]
    return f"{_label(b)} loses its offset"


# ------------------------------------------------------------------ arena size


@mutator("sched")
def arena_shrink(program, rng):
    arena = _arena(program)
    if arena <= 0:
        return None
    new = rng.choice([arena - 1, arena - A, arena // 2, 0, rng.randrange(0, arena)])
    _set_arena(program, new)
    return f"arena {arena} -> {new}"


@mutator("sched")
def arena_to_the_peak(program, rng):
    """Exactly the highest buffer end (fits), or one byte less (does not)."""
    bufs = _buffers(program)
    if not bufs:
        return None
    peak = max(b.offset_value + sched.nbytes(b.result.type) for b in bufs)
    new = peak - rng.choice([0, 1])
    old = _arena(program)
    if new == old:
        return None
    _set_arena(program, new)
    return f"arena {old} -> {new} (peak {peak})"


@mutator("sched")
def arena_grow(program, rng):
    arena = _arena(program)
    new = arena + rng.choice([1, A, 12345, 2**40])
    _set_arena(program, new)
    return f"arena {arena} -> {new}"


@mutator("sched")
def arena_invalid(program, rng):
    arena = _arena(program)
    new = rng.choice([-1, -2, -5, -(2**40), 2**63, 2**64 + 7])
    _set_arena(program, new)
    return f"arena {arena} -> {new}"


# ------------------------------------------------------------------ barriers and phases


def _top(program) -> list:
    return list(program.block.ops)


def _barriers(program) -> list[sched.BarrierOp]:
    return [op for op in program.block.ops if isinstance(op, sched.BarrierOp)]


def _neighbour_phases(barrier: sched.BarrierOp):
    """The phases right before and after `barrier` (skipping buffers/views), or None."""
    prev, nxt = barrier.prev_op, barrier.next_op
    while prev is not None and not isinstance(prev, sched.PhaseOp | sched.BarrierOp):
        prev = prev.prev_op
    while nxt is not None and not isinstance(nxt, sched.PhaseOp | sched.BarrierOp):
        nxt = nxt.next_op
    if isinstance(prev, sched.PhaseOp) and isinstance(nxt, sched.PhaseOp):
        return prev, nxt
    return None


@mutator("sched")
def barrier_remove_and_merge(program, rng):
    """Drop a barrier and run the two phases it separated as one."""
    candidates = [(b, _neighbour_phases(b)) for b in _barriers(program)]
    candidates = [(b, pn) for b, pn in candidates if pn is not None]
    if not candidates:
        return None
    k = rng.randrange(len(candidates))
    barrier, (first, second) = candidates[k]
    for op in list(second.body.block.ops):
        op.detach()
        first.body.block.add_op(op)
    barrier.detach()
    barrier.erase()
    second.detach()
    second.erase()
    return f"barrier {k} removed, its phases merged"


@mutator("sched")
def barrier_remove_only(program, rng):
    barriers = _barriers(program)
    if not barriers:
        return None
    k = rng.randrange(len(barriers))
    barriers[k].detach()
    barriers[k].erase()
    return f"barrier {k} removed"


@mutator("sched")
def barrier_rescope(program, rng):
    barriers = _barriers(program)
    if not barriers:
        return None
    k = rng.randrange(len(barriers))
    b = barriers[k]
    new = "block" if b.scope.data == "grid" else "grid"
    b.properties["scope"] = StringAttr(new)
    return f"barrier {k} scope -> {new}"


@mutator("sched")
def phase_split(program, rng):
    """Cut a phase in two with a barrier (more synchronization: always legal)."""
    phases = [p for p in sched.phases(program) if len(list(p.body.block.ops)) >= 2]
    if not phases:
        return None
    p = rng.choice(phases)
    ops = list(p.body.block.ops)
    cut = rng.randrange(1, len(ops))
    second = sched.PhaseOp()
    for op in ops[cut:]:
        op.detach()
        second.body.block.add_op(op)
    barrier = sched.BarrierOp("grid")
    program.block.insert_ops_after([barrier, second], p)
    return f"phase split after op {cut} of {len(ops)}"


@mutator("sched")
def phase_reorder(program, rng):
    """Shuffle the ops of one phase (they run concurrently: order must not matter)."""
    phases = [p for p in sched.phases(program) if len(list(p.body.block.ops)) >= 2]
    if not phases:
        return None
    p = rng.choice(phases)
    ops = list(p.body.block.ops)
    order = list(range(len(ops)))
    while order == sorted(order):
        rng.shuffle(order)
    for op in ops:
        op.detach()
    for i in order:
        p.body.block.add_op(ops[i])
    return f"phase ops reordered {order}"


def _idempotent(op) -> bool:
    """Running `op` twice computes what running it once does: it updates nothing in
    place. (A duplicated in-place update that another mutation moves into its own
    phase is a different valid program, which no verifier can tell apart.)"""
    from trainkernel.dialects import tile

    def memory(v):  # a staged home is its argument's memory
        return v.owner.source if isinstance(v.owner, tile.SmemOp) and v.owner.source is not None else v

    return not {memory(v) for v in sched.buffers_read(op)} & {memory(v) for v in sched.buffers_written(op)}


@mutator("sched")
def phase_duplicate_op(program, rng):
    """Run one compute twice in its phase (two writers of the same buffer)."""
    phases = [p for p in sched.phases(program)
              if any(isinstance(o, sched.ComputeOp) and _idempotent(o) for o in p.body.block.ops)]
    if not phases:
        return None
    p = rng.choice(phases)
    op = rng.choice([o for o in p.body.block.ops if isinstance(o, sched.ComputeOp) and _idempotent(o)])
    p.body.block.insert_op_after(op.clone(), op)
    return "a compute duplicated in its phase"


# ------------------------------------------------------------------ shapes and element types


_OTHER_ELEMENT = {Float32Type: BFloat16Type, BFloat16Type: Float16Type, Float16Type: Float32Type}


def _mutated_type(t: MemRefType, rng: random.Random, keep_count: bool) -> MemRefType | None:
    shape = list(t.get_shape())
    et = t.get_element_type()
    choices = ["reverse", "merge"] if keep_count else ["grow", "shrink", "drop", "add", "element", "reverse"]
    kind = rng.choice(choices)
    if kind == "reverse" and len(shape) >= 2 and shape != shape[::-1]:
        shape = shape[::-1]
    elif kind == "merge" and len(shape) >= 2:
        shape = [shape[0] * shape[1], *shape[2:]]
    elif kind == "grow" and shape:
        i = rng.randrange(len(shape))
        shape[i] += 1
    elif kind == "shrink" and shape and max(shape) > 1:
        i = max(range(len(shape)), key=lambda k: shape[k])
        shape[i] -= 1
    elif kind == "drop" and shape:
        shape.pop(rng.randrange(len(shape)))
    elif kind == "add":
        shape.insert(rng.randrange(len(shape) + 1), rng.choice([1, 2]))
    elif kind == "element" and type(et) in _OTHER_ELEMENT:
        et = _OTHER_ELEMENT[type(et)]()
    else:
        return None
    new = MemRefType(et, shape)
    return None if new == t else new


@mutator("sched")
def shape_of_a_buffer(program, rng):
    """Another shape or element type for an arena buffer (same offset)."""
    bufs = _buffers(program, placed=False)
    if not bufs:
        return None
    b = rng.choice(bufs)
    new = _mutated_type(b.result.type, rng, keep_count=rng.random() < 0.3)
    if new is None:
        return None
    old = b.result.type
    repl = sched.BufferOp(new, b.offset_value)
    repl.result.name_hint = b.result.name_hint
    program.block.insert_op_before(repl, b)
    b.result.replace_all_uses_with(repl.result)
    b.detach()
    b.erase()
    return f"{_label(repl)}: {old} -> {new}"


@mutator("sched")
def shape_of_an_argument(program, rng):
    """Another element count or element type for a program argument. (A
    count-preserving reshape of an argument would change the kernel's
    signature, not its correctness: not a fair mutation.)"""
    args = list(program.block.args)
    if not args:
        return None
    arg = rng.choice(args)
    new = _mutated_type(arg.type, rng, keep_count=False)
    if new is None or numel(new.get_shape()) == numel(arg.type.get_shape()) \
            and new.get_element_type() == arg.type.get_element_type():
        return None
    index = arg.index
    repl = program.block.insert_arg(new, index)
    repl.name_hint = arg.name_hint
    arg.replace_all_uses_with(repl)
    program.block.erase_arg(arg)
    return f"argument {index}: {arg.type} -> {new}"


# ------------------------------------------------------------------ names printed into C++

_GOOD_NAMES = ["step", "_k", "Step_2", "x9", "tk_kernel", "a_b_c"]
_BAD_SYMBOLS = ["a.b", "1step", "", "a b", "k\nint injected = 42;\n//", 'k"', "a$b", "a-b", "ü"]
_BAD_HINTS = ["a.b", "a$b", "a-b", "x.1y", "$x"]  # what an SSA name may hold and C may not


@mutator("sched")
def name_of_the_program(program, rng):
    new = rng.choice(_GOOD_NAMES + _BAD_SYMBOLS)
    old = program.sym_name.data
    if new == old:
        return None
    program.properties["sym_name"] = StringAttr(new)
    return f"program name {old!r} -> {new!r}"


@mutator("sched")
def name_of_a_value(program, rng):
    values = list(program.block.args) + [b.result for b in _buffers(program, placed=False)]
    if not values:
        return None
    v = rng.choice(values)
    new = rng.choice(_GOOD_NAMES + _BAD_HINTS)
    old = v.name_hint
    v.name_hint = new
    if v.name_hint == old:
        return None
    return f"value name {old!r} -> {new!r}"


GENERIC_MUTATORS = tuple(n for n in MUTATORS["sched"] if n.startswith(("offset_", "arena_", "name_", "shape_")))
"""Mutators that work on any ProgramLikeOp: registered for "tile" too, next to
the tile-specific ones below. (Before the tile contract rules, 800 of them on
grid tile kernels gave 76 wrong: arena offsets moved onto live bytes.)"""
for _name in GENERIC_MUTATORS:
    MUTATORS["tile"][_name] = MUTATORS["sched"][_name]


# ------------------------------------------------------------------ tile level

from xdsl.dialects.builtin import IntegerAttr, IntegerType  # noqa: E402

from trainkernel.dialects import tile  # noqa: E402


def _tile_ops(kernel) -> list:
    return [op for op in kernel.block.ops if isinstance(op, tile.TileWorkOp)]


def _syncs(kernel) -> list:
    return [op for op in kernel.block.ops if isinstance(op, tile.SyncOp)]


def _scope(kernel) -> str:
    """The barrier a kernel needs: block in a resident kernel or a kernel of one block."""
    return "block" if kernel.cluster is not None or kernel.grid == 1 else "grid"


def _set(op, key: str, value: int) -> None:
    op.properties[key] = IntegerAttr(value, 64 if -(2**63) <= value < 2**63 else IntegerType(128))


def _phase_of(kernel) -> dict:
    out, phase = {}, 0
    for op in kernel.block.ops:
        if isinstance(op, tile.SyncOp):
            phase += 1
        elif isinstance(op, tile.TileWorkOp):
            out[op] = phase
    return out


def _work_items(op) -> int:
    """What `items` must be, from the printer's loops (independently of the verifier)."""
    from trainkernel.dialects import tk

    if isinstance(op, tile.GemmOp):
        mm = next(o for o in op.body.block.ops if isinstance(o, tk.MatmulOp))
        m, n = tk.shape_of(mm.result)
        bm, bn, _ = op.tile_shape
        return max(1, -(-m // bm) * -(-n // bn))
    if isinstance(op, tile.ReduceOp):
        outs = numel(tk.shape_of(op.reduction().result))
        return max(1, outs if op.rows == 1 else -(-outs // op.rows))
    return max(1, -(-numel(tk.shape_of(op.body.block.last_op.operands[0])) // op.chunk))


@mutator("tile")
def sync_drop(kernel, rng):
    """Delete a tile.sync: a producer and its consumer share a phase."""
    syncs = _syncs(kernel)
    if not syncs:
        return None
    k = rng.randrange(len(syncs))
    syncs[k].detach()
    syncs[k].erase()
    return f"tile.sync {k} deleted"


@mutator("tile")
def sync_rescope(kernel, rng):
    syncs = _syncs(kernel)
    if not syncs:
        return None
    k = rng.randrange(len(syncs))
    new = "block" if syncs[k].scope.data == "grid" else "grid"
    syncs[k].properties["scope"] = StringAttr(new)
    return f"tile.sync {k} scope -> {new}"


@mutator("tile")
def sync_insert(kernel, rng):
    """A barrier between two ops of a phase (more synchronization: always legal)."""
    phase = _phase_of(kernel)
    ops = _tile_ops(kernel)
    pairs = [(a, b) for a, b in zip(ops, ops[1:]) if phase[a] == phase[b] and a.next_op is b]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    kernel.block.insert_op_after(tile.SyncOp(_scope(kernel)), a)
    return f"tile.sync {_scope(kernel)} inserted before a {b.name}"


@mutator("tile")
def tile_op_reorder(kernel, rng):
    """Swap two adjacent tile ops of one phase (they run concurrently)."""
    ops = _tile_ops(kernel)
    pairs = [(a, b) for a, b in zip(ops, ops[1:]) if a.next_op is b]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    a.detach()
    kernel.block.insert_op_after(a, b)
    return f"{a.name} and {b.name} swapped"


@mutator("tile")
def tile_op_across_a_sync(kernel, rng):
    """Move a tile op over the barrier next to it, into the neighbouring phase."""
    ops = [op for op in _tile_ops(kernel) if isinstance(op.next_op, tile.SyncOp) or isinstance(op.prev_op, tile.SyncOp)]
    if not ops:
        return None
    op = rng.choice(ops)
    if isinstance(op.next_op, tile.SyncOp) and (rng.random() < 0.5 or not isinstance(op.prev_op, tile.SyncOp)):
        sync = op.next_op
        op.detach()
        kernel.block.insert_op_after(op, sync)
        return f"a {op.name} moved into the next phase"
    sync = op.prev_op
    op.detach()
    kernel.block.insert_op_before(op, sync)
    return f"a {op.name} moved into the previous phase"


@mutator("tile")
def tile_op_duplicate(kernel, rng):
    """Run one tile op twice in its phase (two writers of the same buffer)."""
    ops = [op for op in _tile_ops(kernel) if _idempotent(op)]
    if not ops:
        return None
    op = rng.choice(ops)
    kernel.block.insert_op_after(op.clone(), op)
    return f"a {op.name} duplicated in its phase"


@mutator("tile")
def tile_items(kernel, rng):
    """Another number of work items: more store past the outputs (a row
    reduction), fewer leave outputs unwritten; the interpreter ignores items."""
    ops = _tile_ops(kernel)
    if not ops:
        return None
    op = rng.choice(ops)
    old = op.items
    new = rng.choice([old - 1, old + 1, 2 * old, old + 100000, 2**40, 0, -1, 2**63 + 5])
    if new == old:
        return None
    _set(op, "items", new)
    return Verdict(f"{op.name} items {old} -> {new}", "equivalent" if new == _work_items(op) else "reject")


@mutator("tile")
def tile_op_offset(kernel, rng):
    """Another first block for an op's work: any offset >= 0 is the same kernel
    (the printer starts at `offset % G`); a negative one is invalid."""
    ops = _tile_ops(kernel)
    if not ops:
        return None
    op = rng.choice(ops)
    old = op.offset
    new = rng.choice([0, 1, 3, old + 1, 131, 2**31 - 1, 2**31, 2**40, -1])
    if new == old:
        return None
    _set(op, "offset", new)
    return Verdict(f"{op.name} offset {old} -> {new}", "equivalent" if new >= 0 else "reject")


@mutator("tile")
def tile_chunk(kernel, rng):
    """Another chunk for a map, with its items recomputed or left as they were."""
    maps = [op for op in _tile_ops(kernel) if isinstance(op, tile.MapOp) and op.body.block.last_op.operands]
    if not maps:
        return None
    op = rng.choice(maps)
    old = op.chunk
    new = rng.choice([1, 96, 128, 256, 1024, 2**20, 2**31 - 1, 2**31, 0])
    if new == old:
        return None
    _set(op, "chunk", new)
    if new >= 1 and rng.random() < 0.7:
        _set(op, "items", _work_items(op))
        return Verdict(f"tile.map chunk {old} -> {new}, items recomputed",
                       "equivalent" if new <= 2**31 - 1 else "reject")
    valid = 1 <= new <= 2**31 - 1 and op.items == _work_items(op)
    return Verdict(f"tile.map chunk {old} -> {new}", "equivalent" if valid else "reject")


@mutator("tile")
def tile_rows(kernel, rng):
    """A row reduction as a column one or back (items recomputed): a column
    reduction needs reduced axes that lead, kept axes after them, rows <= threads."""
    reds = [op for op in _tile_ops(kernel) if isinstance(op, tile.ReduceOp)]
    if not reds:
        return None
    op = rng.choice(reds)
    old = op.rows
    new = rng.choice([1, 32, 128, kernel.threads, 2 * kernel.threads])
    if new == old:
        return None
    _set(op, "rows", new)
    _set(op, "items", _work_items(op))
    red = op.reduction()
    axes, rank = list(red.axes_list), len(red.input.type.get_shape())
    column_ok = axes == list(range(len(axes))) and 0 < len(axes) < rank
    valid = new == 1 or (column_ok and (new <= kernel.threads or kernel.cluster is not None))
    return Verdict(f"tile.reduce rows {old} -> {new}, items recomputed", "equivalent" if valid else "reject")


@mutator("tile")
def tile_grid(kernel, rng):
    """Another grid: any that fits a launch is the same computation (work items
    are handed out modulo the grid), but a block barrier orders only one block,
    and a resident kernel's grid is its cluster."""
    old = kernel.grid
    new = rng.choice([0, 1, 2, 3, 132, 528, 2**31 - 1, 2**31, 10**12, -4])
    if new == old:
        return None
    _set(kernel, "grid", new)
    block_syncs = any(s.scope.data == "block" for s in _syncs(kernel))
    if kernel.cluster is not None:
        valid = False
    else:
        valid = 1 <= new <= 2**31 - 1 and (new == 1 or not block_syncs)
    return Verdict(f"grid {old} -> {new}", "equivalent" if valid else "reject")


def _homes(kernel) -> list:
    return [op for op in kernel.block.ops if isinstance(op, tile.SmemOp)]


@mutator("tile")
def home_offset(kernel, rng):
    """Move a shared-memory home: onto another home's bytes, by a few 16-byte
    steps, misaligned, or past the kernel's shared memory. (Several blocks: the
    interpreter gives each home its own tensor, so only one block's kernels.)"""
    homes = _homes(kernel)
    if not homes or kernel.cluster != 1:
        return None
    h = rng.choice(homes)
    old = h.offset_value
    kind = rng.choice(["onto", "shift", "misalign", "end"])
    if kind == "onto" and len(homes) > 1:
        new = rng.choice([o for o in homes if o is not h]).offset_value
    elif kind == "shift":
        new = old + rng.choice([-4, -2, -1, 1, 2, 8]) * tile.SMEM_ALIGNMENT
    elif kind == "misalign":
        new = old + rng.choice([1, 4, 8])
    else:
        new = kernel.smem - rng.choice([0, tile.SMEM_ALIGNMENT])
    if new == old:
        return None
    h.properties["offset"] = IntegerAttr(new, 64)
    return f"home {h.result.name_hint or h.result.type} offset {old} -> {new}"


@mutator("tile")
def kernel_smem(kernel, rng):
    """Shrink or grow the kernel's shared memory."""
    old = kernel.smem
    new = rng.choice([0, old // 2, old - 16, old + 16, 227 * 1024 + 1])
    if new == old or new < 0:
        return None
    _set(kernel, "smem", new)
    return f"smem {old} -> {new}"


@mutator("tile")
def home_split(kernel, rng):
    """Another split axis for a home (-1: every block holds all of it)."""
    homes = _homes(kernel)
    if not homes:
        return None
    h = rng.choice(homes)
    rank = len(h.result.type.get_shape())
    old = h.split_axis
    new = rng.choice(list(range(-1, rank)) + [rank])
    if new == old:
        return None
    h.properties["split"] = IntegerAttr(new, 64)
    return f"home split {old} -> {new}"


@mutator("tile")
def op_split(kernel, rng):
    """Another split dimension for a resident op (-1: every block does all of it)."""
    ops = [op for op in _tile_ops(kernel) if op.split is not None]
    if not ops:
        return None
    op = rng.choice(ops)
    old = op.split
    new = rng.choice(list(range(-1, op.iteration_rank())) + [op.iteration_rank()])
    if new == old:
        return None
    _set(op, "split", new)
    return f"{op.name} split {old} -> {new}"


@mutator("tile")
def op_scratch(kernel, rng):
    """Move (or drop) a split contraction's partials."""
    ops = [op for op in _tile_ops(kernel) if op.scratch is not None]
    if not ops:
        return None
    op = rng.choice(ops)
    old = op.scratch
    choice = rng.choice(["drop", "zero", "shift", "onto"])
    if choice == "drop":
        del op.properties["scratch"]
        return f"{op.name} loses its scratch"
    homes = _homes(kernel)
    new = {"zero": 0, "shift": old + 16 * rng.choice([-2, -1, 1, 4])}.get(choice) if choice != "onto" else \
        rng.choice(homes).offset_value
    if new == old:
        return None
    _set(op, "scratch", new)
    return f"{op.name} scratch {old} -> {new}"


@mutator("tile")
def yield_extra_output(kernel, rng):
    """Yield one more value of another shape than the iteration space into its
    own buffer (the issue: a gemm or map yielding an extra smaller output)."""
    from trainkernel.dialects import tk

    choices = []
    for op in _tile_ops(kernel):
        term = op.body.block.last_op
        space = tuple(term.operands[0].type.get_shape()) if term.operands else None
        for arg in op.body.block.args:
            if space is not None and tuple(arg.type.get_shape()) != space:
                choices.append((op, arg))
    if not choices:
        return None
    op, arg = rng.choice(choices)
    buf = op.ins[arg.index]
    body = op.detach_region(op.body)
    term = body.block.last_op
    term.operands = [*term.operands, arg]
    props = {k: v for k, v in op.properties.items() if k != "operandSegmentSizes"}
    new = type(op)(list(op.ins), [*op.outs, buf], body, props)
    kernel.block.insert_op_before(new, op)
    op.detach()
    op.erase()
    return Verdict(f"{new.name} also yields its {arg.type} operand into it", "reject")


@mutator("tile")
def name_of_a_home(kernel, rng):
    homes = _homes(kernel)
    if not homes:
        return None
    h = rng.choice(homes)
    old = h.result.name_hint
    new = rng.choice(_GOOD_NAMES + _BAD_HINTS)
    h.result.name_hint = new
    if h.result.name_hint == old:
        return None
    return f"home name {old!r} -> {new!r}"

__all__ = ["GENERIC_MUTATORS", "MUTATORS", "Report", "Subject", "Verdict", "fuzz", "make_subjects", "mutator",
           "program_of", "same_bits"]
