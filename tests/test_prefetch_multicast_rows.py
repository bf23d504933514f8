"""target.prefetch_multicast_rows (perf-log step 127): in a cluster kernel, the next
step's batch homes that every block stages whole, in 16-byte units, copied once for
the cluster (tk::stage_rows_multicast: block r issues its share of the rows as bulk
copies multicast into every block), counted on each block's mbarrier tk_inbar, which
every later step's staging wait waits on; issued after the barrier that closes the
step's first exchange, past which every block has left the step that last read the
copies being filled. Split homes and rows of other units keep their cp.async."""

from __future__ import annotations

import re

import pytest

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on, stepped
from _variants import suite_source as _source

# An unseen shape whose batch rows are 16-byte units (128- and 16-byte rows), odd widths inside.
ODD = WORKLOADS["online"].with_sizes(24, (64, 200, 8))
# Batch rows of 200 and 20 bytes: prefetched by 8- and 4-byte cp.async, nothing to multicast.
SMALL_UNITS = WORKLOADS["classification"].with_sizes(50, (100, 300, 10))


def _w(name: str):
    return ODD if name == "odd" else name


def test_off_until_measured():
    assert not T.DEFAULT.prefetch_multicast_rows and T.DEFAULT.prefetch_step_inputs


@pytest.fixture
def multicast_on(target_fields):
    target_fields(prefetch_multicast_rows=True)


def _step_body(src: str) -> str:
    return src[src.index("void tk_step("):src.index('extern "C" __global__')]


def _phases(body: str) -> list[str]:
    return re.split(r"\n  // ---- phase \d+\n", body)


def test_whole_homes_of_16_byte_rows_are_multicast_after_the_first_exchange(multicast_on):
    """classification: x's 512-byte rows multicast, the labels' 20-byte rows by the
    block's own 4-byte cp.async, one arrival after the last copy; the block follows
    the first exchange's closing barrier and opens no phase of its own."""
    body = _step_body(_source("classification"))
    assert "kCluster" in body
    phases = _phases(body)
    exchange = next(i for i, p in enumerate(phases) if "tk::exchange_async" in p)
    copies_at = [i for i, p in enumerate(phases) if "tk::stage_rows_multicast" in p]
    assert copies_at == [exchange]
    part = phases[exchange]
    assert part.index("tk::exchange_async") < part.rindex("__syncthreads();\n  if (tk_more) {  // the next step's batch")
    block = part[part.rindex("if (tk_more) {  // the next step's batch"):]
    copies = re.findall(r"tk::(stage_(?:rows|input_rows)\w*(?:<kCluster>)?)\((.*)\);", block)
    assert [name for name, _ in copies] == ["stage_rows_multicast<kCluster>", "stage_input_rows"]
    assert copies[0][1].endswith(", &tk_inbar, rank") and "tk_inbar" not in copies[1][1]
    assert block.rstrip().endswith("tk::stage_bulk_arrive(&tk_inbar);\n  }")
    assert body.count("tk::stage_bulk_arrive(") == 1


def test_the_barrier_is_initialised_before_the_blocks_first_arrive(multicast_on):
    """Another block's copies count on this block's tk_inbar as soon as it is past its
    first exchange, which waits for this block's first arrive."""
    body = _step_body(_source("online"))
    init = body.index("if (tk_first && threadIdx.x == 0) tk::init_stage_barrier(&tk_inbar);")
    arrive = body.index("if (tk_first) tk::cluster_arrive();")
    wait = body.index("tk::stage_wait_bulk(&tk_inbar, !tk_first, !tk_odd);")
    fence = body.index("if (tk_first) tk::stage_fence_async();")
    assert init < arrive < wait < fence < body.index("tk::stage_rows_multicast")
    assert "tk::stage_wait();" not in body


@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "odd"])
def test_every_later_step_waits_for_the_phase_the_step_before_completed(multicast_on, name):
    """One arrival a step that has a next, so step s waits on the parity of phase s - 1."""
    body = _step_body(_source(_w(name)))
    wait, parity = re.search(r"tk::stage_wait_bulk\(&tk_inbar, (.+?), (.+?)\);", body).groups()
    assert (wait, parity) == ("!tk_first", "!tk_odd")
    assert body.count("tk::stage_bulk_arrive(&tk_inbar);") == 1
    phases = 0
    for s in range(9):
        if s > 0:
            assert phases == s and int(s % 2 == 0) == (phases - 1) % 2
        if s + 1 < 9:
            phases += 1


def test_split_homes_are_not_multicast(multicast_on):
    """Homes split over the blocks (the weights) are each block's own: staged by
    stage_rows, never multicast; only prefetched step inputs are."""
    body = _step_body(_source("classification"))
    for args in re.findall(r"tk::stage_rows_multicast<kCluster>\((.*)\);", body):
        assert "rank)" not in args.split("tk_from")[0] and "tk_from[" in args


def test_nothing_to_multicast_leaves_the_source_as_it_was(target_fields):
    """Rows of 200 and 20 bytes (cp.async of 8 and 4 bytes), a kernel of one block (tiny)
    and grid kernels (small) print what they print with the switch off."""
    off = [_source(SMALL_UNITS), _source("tiny"), _source("small")]
    target_fields(prefetch_multicast_rows=True)
    assert [_source(SMALL_UNITS), _source("tiny"), _source("small")] == off


def test_off_prints_cp_async(target_fields):
    target_fields(prefetch_multicast_rows=False)
    src = _source("classification")
    assert "tk_inbar" not in src and "stage_rows_multicast" not in src and "tk::stage_wait();" in src


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "classification"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    """A launch a step: no later step, nothing multicast, the barrier never waited on."""
    assert same_bits_off_and_on(target_fields, "prefetch_multicast_rows", name, 4, seed=3, run=stepped)[0]


# Step 128: the copies inside the first exchange's publish wait (prefetch_multicast_in_publish).


@pytest.fixture
def in_publish(target_fields):
    target_fields(prefetch_multicast_rows=True, prefetch_multicast_in_publish=True)


def test_in_publish_the_copies_are_the_exchanges_during_lambda(in_publish):
    """classification: the copies are the last lambda of the first exchange's call (its
    `during`), after the publish's copy lambda; no phase's barrier is followed by them."""
    body = _step_body(_source("classification"))
    call = body[body.index("tk::exchange_async_published<kCluster"):]
    call = call[:call.index("\n    });\n") + 8]
    during = call[call.index("}, [&]() {  // during the publish wait"):]
    assert "tk::store_async_bytes" in call[:call.index(during)]
    assert re.findall(r"tk::(stage_\w+(?:<kCluster>)?)\(", during) == [
        "stage_rows_multicast<kCluster>", "stage_input_rows", "stage_bulk_arrive"]
    assert body.count("tk::stage_rows_multicast") == 1
    assert "__syncthreads();\n  if (tk_more) {  // the next step's batch" not in body


def test_in_publish_needs_the_multicast(target_fields):
    """Alone, the switch changes nothing: the copies stay every block's own cp.async at the prologue."""
    target_fields(prefetch_multicast_rows=False)
    off = _source("classification")
    target_fields(prefetch_multicast_rows=False, prefetch_multicast_in_publish=True)
    assert _source("classification") == off


# Step 129: only homes whose copies are at least prefetch_multicast_min_copy_bytes go by multicast.


def test_short_rows_keep_their_cp_async(target_fields):
    """online at 64 bytes: x's 256-byte rows multicast, the labels' 32-byte rows by the
    block's own cp.async into the same copy, both before the one arrival."""
    target_fields(prefetch_multicast_rows=True, prefetch_multicast_in_publish=True, prefetch_multicast_min_copy_bytes=64)
    body = _step_body(_source("online"))
    during = body[body.index("}, [&]() {  // during the publish wait"):]
    during = during[:during.index("\n    });\n")]
    copies = re.findall(r"tk::(stage_\w+(?:<kCluster>)?)\((.*)\);", during)
    assert sorted(name for name, _ in copies[:-1]) == ["stage_rows", "stage_rows_multicast<kCluster>"]
    assert copies[-1][0] == "stage_bulk_arrive"
    by = dict(copies)
    assert ", 64, 128, 128LL," in by["stage_rows_multicast<kCluster>"] and ", 64, 16, 16LL," in by["stage_rows"]


def test_rows_all_below_the_threshold_leave_the_multicast_off(target_fields):
    """odd at 512 bytes (x's 128-byte rows; y dense, one copy of 384 bytes): nothing to
    multicast, the source of the switch off."""
    target_fields(prefetch_multicast_rows=False)
    off = _source(ODD)
    target_fields(prefetch_multicast_rows=True, prefetch_multicast_in_publish=True, prefetch_multicast_min_copy_bytes=512)
    assert _source(ODD) == off


# Each form: the switch its GPU test turns off and on, the fields it holds, what its
# source prints, the steps its nvcc build and its GPU run take.
# (classification-adamw-ce prefetches nothing: its homes and the batch's copies would take
# 247 KB of shared memory against the 231 KB budget; run df23f2e-h100-a/a tried it.)
FORMS = {
    "after_exchange": ("prefetch_multicast_rows", {}, "stage_rows_multicast",
                       ["classification", "online-adam", "odd"], ["online", "classification", "online-adam", "odd"]),
    "in_publish": ("prefetch_multicast_in_publish", {"prefetch_multicast_rows": True}, "during the publish wait",
                   ["classification", "odd"], ["online", "classification", "online-adam", "odd"]),
    "short_rows_kept": ("prefetch_multicast_rows", {"prefetch_multicast_in_publish": True,
                                                    "prefetch_multicast_min_copy_bytes": 64},
                        "stage_rows_multicast", ["online", "odd"], ["online", "odd"]),
}


@needs_nvcc
@pytest.mark.parametrize("form, name", [(f, n) for f, v in FORMS.items() for n in v[3]])
def test_compiles_for_sm90(target_fields, tmp_path, form, name):
    switch, fixed, marker, _, _ = FORMS[form]
    target_fields(**fixed, **{switch: True})
    src = _source(_w(name))
    assert marker in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("form, name", [(f, n) for f, v in FORMS.items() for n in v[4]])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, form, name):
    """7 steps in one launch over 3 batches: both parities of the barrier, twice."""
    switch, fixed, marker, _, _ = FORMS[form]
    same, sources = same_bits_off_and_on(target_fields, switch, _w(name), 7, seed=5, run=looped, **fixed)
    assert [marker in s for s in sources] == [False, True]
    assert same
