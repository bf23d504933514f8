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

Tile level: `MUTATORS["tile"]` is empty. Subjects carry their `tile.kernel`
too (`Subject.level == "tile"`, built by `make_subjects(levels=...)`); the
generic mutators below work on any `ProgramLikeOp` and can be registered for
"tile" next to tile-specific ones (syncs, items, offset, chunk, grid, yielded
shapes) once the tile verifiers exist. Note that the interpreter runs a tile
op's body on whole tensors and ignores items/chunk/grid, so for those the
verifier (coverage and bounds rules) is the only judge.
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

Mutator = Callable[[sched.ProgramLikeOp, random.Random], "str | None"]

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


def _lower(captured, inplace: bool, levels: Sequence[str]) -> dict[str, builtin.ModuleOp]:
    """The module after each stage, as `pipeline.lower` runs them."""
    from trainkernel.pipeline import run_passes, stage_passes, state_leaves

    module = captured.module.clone()
    state = state_leaves(captured)
    out = {}
    for stage in ("tk", "sched", "tile"):
        run_passes(module, stage_passes(stage, inplace, state=state))
        if stage in levels:
            out[stage] = module.clone()
        if all(lv in out for lv in levels):
            break
    return out


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
            for level, module in _lower(captured, inplace, levels).items():
                want = run_program(program_of(module), inputs)
                eager = pytree.tree_leaves(step(params, x, y))
                assert all(same_bits(g, e) for g, e in zip(want, eager)), f"{name}: the {level} level is not exact"
                subjects.append(Subject(f"{name}/{dtype}/{'inplace' if inplace else 'staged'}", level, module,
                                        inputs, want))
    w = WORKLOADS["tiny"].with_sizes(*SUBJECT_SIZES["tiny"])
    step = w.make_adamw_step(torch.float32)
    state = w.init_adamw_state(seed=seed)
    ((x, y),) = w.make_batches(1, seed=seed + 1)
    args = (state, x, y, adamw_bias_correction(3))
    captured = trainkernel.capture(step, args)
    inputs = pytree.tree_leaves(args)
    for level, module in _lower(captured, True, levels).items():
        want = run_program(program_of(module), inputs)
        subjects.append(Subject("tiny-adamw/f32/inplace", level, module, inputs, want))
    return subjects


# ------------------------------------------------------------------ the loop


@dataclasses.dataclass
class Report:
    tried: int = 0
    rejected: int = 0
    equivalent: int = 0
    wrong: int = 0
    not_applicable: int = 0
    per_mutator: dict[str, Counter] = dataclasses.field(default_factory=lambda: defaultdict(Counter))
    reasons: Counter = dataclasses.field(default_factory=Counter)  # first words of rejection messages
    wrong_cases: list[str] = dataclasses.field(default_factory=list)

    def line(self) -> str:
        return (f"mutants tried {self.tried}, rejected {self.rejected}, equivalent {self.equivalent}, "
                f"wrong {self.wrong}")

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
        what = fn(program_of(module), rng)
        if what is None:
            report.not_applicable += 1
            continue
        names = [name]
        # A quarter of the mutants get a second mutation (interactions: a
        # split phase merged elsewhere, a moved buffer in a shrunk arena, ...).
        if rng.random() < compound:
            name2, fn2 = rng.choice([(n, f) for s, n, f in pool if s is subject])
            what2 = fn2(program_of(module), rng)
            if what2 is not None:
                names.append(name2)
                what = f"{what}; then {what2}"
        report.tried += 1
        counters = [report.per_mutator[n] for n in names]
        for c in counters:
            c["tried"] += 1
        try:
            module.verify()
        except VerifyException as exc:
            report.rejected += 1
            for c in counters:
                c["rejected"] += 1
            report.reasons[_reason(exc)] += 1
            continue
        try:
            got = run_program(program_of(module), subject.inputs)
            same = len(got) == len(subject.want) and all(same_bits(g, e) for g, e in zip(got, subject.want))
            detail = "results differ"
        except Exception as exc:  # noqa: BLE001 - a verified program must interpret
            same = False
            detail = "interpreter raised " + "".join(traceback.format_exception_only(exc)).strip()
        outcome = "equivalent" if same else "wrong"
        for c in counters:
            c[outcome] += 1
        if same:
            report.equivalent += 1
        else:
            report.wrong += 1
            report.wrong_cases.append(f"{subject.level} {subject.label}: {'+'.join(names)}: {what}: {detail}")
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


@mutator("sched")
def phase_duplicate_op(program, rng):
    """Run one compute twice in its phase (two writers of the same buffer)."""
    phases = [p for p in sched.phases(program) if any(isinstance(o, sched.ComputeOp) for o in p.body.block.ops)]
    if not phases:
        return None
    p = rng.choice(phases)
    op = rng.choice([o for o in p.body.block.ops if isinstance(o, sched.ComputeOp)])
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
"""Mutators that work on any ProgramLikeOp; register them for "tile" together
with the tile-specific ones. Run by hand on grid tile kernels (resident="off",
seed 3, 800 mutants): with only the shared rules of `base`, 76 wrong (arena
offsets moved onto live bytes); with `sched.verify_arena_liveness` and
`sched.verify_reads_after_writes` also called from `tile.KernelOp.verify_`,
wrong 0. (The small workloads lower to resident kernels, which have no arena
buffers and read their output buffers in phase 0, so reads-after-writes as
written does not fit them.)"""

__all__ = ["GENERIC_MUTATORS", "MUTATORS", "Report", "Subject", "fuzz", "make_subjects", "mutator", "program_of", "same_bits"]
