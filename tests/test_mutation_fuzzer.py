"""Mutation fuzzer in CI: every mutant of a valid sched.program or tile.kernel
is rejected by the verifier or interprets to exactly the original results
(issue 12, item 6); at the tile level it must also print, and where the
interpreter is blind (items, op offsets, chunk, rows, grid) it must get the
verdict the printer's contract gives (tests/mutation_fuzz.py, `Verdict`).

Seeded and deterministic: `TK_FUZZ_SEED` and `TK_FUZZ_MUTANTS` (default 1000
per level) choose another run. The counts are printed (also under `pytest -q`):

    mutation fuzzer (seed 12): mutants tried 1000, rejected ..., equivalent ..., wrong 0

The negative controls switch one verifier rule off and require the fuzzer to
find wrong mutants: a fuzzer that cannot fail would prove nothing.
"""

from __future__ import annotations

import os
import time

import pytest

from mutation_fuzz import MUTATORS, fuzz, make_subjects
from trainkernel.dialects import sched, tile

SEED = int(os.environ.get("TK_FUZZ_SEED", "12"))
MUTANTS = int(os.environ.get("TK_FUZZ_MUTANTS", "1000"))


@pytest.fixture(scope="module")
def subjects():
    return make_subjects(("sched",))


def test_every_workload_is_a_subject(subjects):
    from trainkernel.workloads import WORKLOADS

    names = {s.label.split("/")[0] for s in subjects}
    assert set(WORKLOADS) <= names and "tiny-adamw" in names
    assert {s.label.split("/")[1] for s in subjects} == {"f32", "bf16", "f16"}
    assert {s.label.split("/")[2] for s in subjects} == {"inplace", "staged"}


def test_mutants_are_rejected_or_equivalent(subjects, capsys):
    t0 = time.perf_counter()
    report = fuzz(subjects, MUTANTS, SEED)
    seconds = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\nmutation fuzzer (seed {SEED}, {len(subjects)} sched subjects, {seconds:.1f} s): {report.line()}")
        print(report.table())
    assert report.tried == MUTANTS >= 1000
    assert report.wrong == 0, "verified mutants that compute something else:\n" + "\n".join(report.wrong_cases[:20])
    # Every mutator ran, and the outcomes are not one-sided: some mutants pass, many are caught.
    assert set(report.per_mutator) == set(MUTATORS["sched"])
    assert report.equivalent >= MUTANTS // 10 and report.rejected >= MUTANTS // 3
    for name in ("offset_onto_another_buffer", "offset_past_the_end", "name_of_the_program", "name_of_a_value",
                 "arena_shrink", "arena_to_the_peak"):
        c = report.per_mutator[name]
        assert c["rejected"] > 0 and c["equivalent"] > 0, (name, c)
    for name in ("phase_split", "phase_reorder", "barrier_rescope", "arena_grow"):  # always legal
        assert report.per_mutator[name]["equivalent"] > 0, name
    # Each contract rule of the verifier was what rejected some mutant.
    reasons = " | ".join(report.reasons)
    for rule in ("overlap while both are live", "is not a C identifier", "overruns the", "must be a non-negative multiple",
                 "(not allocated yet) or a byte count", "two ops write the same buffer", "in the same phase",
                 "consecutive phases need a sched.barrier", "region arguments must be the tensor types"):
        assert rule in reasons, f"no mutant was rejected by {rule!r}; reasons seen: {sorted(report.reasons)}"


def _only(*names):
    return {"sched": {n: MUTATORS["sched"][n] for n in names}}


def test_control_without_the_liveness_rule_the_fuzzer_finds_wrong_mutants(subjects, monkeypatch):
    monkeypatch.setattr(sched, "verify_arena_liveness", lambda program: None)
    report = fuzz(subjects, 100, SEED, _only("offset_onto_another_buffer", "offset_anywhere"))
    assert report.wrong > 0, report.line()


def test_control_without_the_phase_rules_the_fuzzer_finds_wrong_mutants(subjects, monkeypatch):
    """Merged phases are caught three ways (hazard rule, liveness, reads after
    writes); with all three off, the interpreter sees the damage."""
    monkeypatch.setattr(sched.PhaseOp, "verify_", lambda self: None)
    monkeypatch.setattr(sched, "verify_arena_liveness", lambda program: None)
    monkeypatch.setattr(sched, "verify_reads_after_writes", lambda program: None)
    report = fuzz(subjects, 100, SEED, _only("barrier_remove_and_merge"))
    assert report.wrong > 0, report.line()


def test_control_without_arena_bounds_the_fuzzer_finds_wrong_mutants(subjects, monkeypatch):
    from trainkernel.dialects import base

    monkeypatch.setattr(base, "verify_arena_bounds", lambda program: None)
    report = fuzz(subjects, 100, SEED, _only("offset_past_the_end", "arena_shrink"))
    assert report.wrong > 0, report.line()


# ------------------------------------------------------------------ tile level


@pytest.fixture(scope="module")
def tile_subjects():
    return make_subjects(("tile",))


def test_every_workload_is_a_tile_subject_as_grid_and_resident_kernels(tile_subjects):
    from trainkernel.workloads import WORKLOADS

    kernels = [s.program for s in tile_subjects]
    assert set(WORKLOADS) <= {s.label.split("/")[0] for s in tile_subjects}
    assert any(k.cluster == 1 for k in kernels) and any((k.cluster or 1) > 1 for k in kernels)
    assert any(k.cluster is None and k.grid == 1 for k in kernels)
    assert any(k.cluster is None and k.grid > 1 for k in kernels)


def test_tile_mutants_are_rejected_or_equivalent(tile_subjects, capsys):
    t0 = time.perf_counter()
    report = fuzz(tile_subjects, MUTANTS, SEED)
    seconds = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\nmutation fuzzer (seed {SEED}, {len(tile_subjects)} tile subjects, {seconds:.1f} s): {report.line()}")
        print(report.table())
    assert report.tried == MUTANTS >= 1000
    assert report.wrong == 0, "verified mutants that compute something else:\n" + "\n".join(report.wrong_cases[:20])
    assert report.overstrict == 0, "valid mutants rejected:\n" + "\n".join(report.overstrict_cases[:20])
    assert report.printer_refused == 0, "\n".join(report.refused_cases[:20])
    assert set(report.per_mutator) == set(MUTATORS["tile"])
    assert report.equivalent >= MUTANTS // 10 and report.rejected >= MUTANTS // 3
    for name in ("sync_insert", "tile_op_reorder", "tile_op_offset", "tile_chunk"):  # legal ones pass
        assert report.per_mutator[name]["equivalent"] > 0, name
    for name in ("sync_drop", "tile_items", "yield_extra_output", "tile_op_duplicate", "tile_grid"):
        assert report.per_mutator[name]["rejected"] > 0, name
    reasons = " | ".join(report.reasons)
    for rule in ("in the same phase (a tile.sync must separate them)", "overlap while both are live",
                 "items = _, expected _", "but every output must have the shape of",
                 "is not a C identifier", "overruns the kernel's",
                 "a block would address slices it does not hold"):
        assert rule in reasons, f"no tile mutant was rejected by {rule!r}; reasons seen: {sorted(report.reasons)}"


def _only_tile(*names):
    return {"tile": {n: MUTATORS["tile"][n] for n in names}}


def test_tile_control_without_the_phase_rules_the_fuzzer_finds_wrong_mutants(tile_subjects, monkeypatch):
    """A deleted tile.sync is caught by the hazard rule, liveness and reads after
    writes; with all of them off, the interpreter sees the damage."""
    for rule in ("verify_phase_hazards", "verify_tile_reads_after_writes", "verify_home_liveness"):
        monkeypatch.setattr(tile, rule, lambda *a: None)
    monkeypatch.setattr(sched, "verify_arena_liveness", lambda program: None)
    report = fuzz(tile_subjects, 100, SEED, _only_tile("sync_drop"), compound=0.0)
    assert report.wrong > 0, report.line()


def test_tile_control_without_home_liveness_the_fuzzer_finds_wrong_mutants(tile_subjects, monkeypatch):
    """Homes moved onto live bytes: the interpreter keeps a block's homes in one byte array."""
    monkeypatch.setattr(tile, "verify_home_liveness", lambda *a: None)
    monkeypatch.setattr(tile, "verify_phase_hazards", lambda *a: None)
    report = fuzz(tile_subjects, 200, SEED, _only_tile("home_offset"), compound=0.0)
    assert report.wrong > 0, report.line()


def test_tile_control_without_the_partition_rule_the_fuzzer_finds_wrong_mutants(tile_subjects, monkeypatch):
    monkeypatch.setattr(tile, "verify_partition", lambda *a: None)
    report = fuzz(tile_subjects, 200, SEED, _only_tile("home_split", "op_split"), compound=0.0)
    assert report.wrong > 0, report.line()


def test_tile_control_without_exact_items_the_fuzzer_finds_wrong_mutants(tile_subjects, monkeypatch):
    """The interpreter ignores items: the verdict alone catches a verifier that does not."""
    monkeypatch.setattr(tile, "_check_items", lambda *a: None)
    monkeypatch.setattr(tile.MapOp, "verify_", tile.TileWorkOp.verify_)
    report = fuzz(tile_subjects, 50, SEED, _only_tile("tile_items"), compound=0.0)
    assert report.wrong > 0, report.line()
