"""The switches of perf-log steps 70, 73 and 75-83, measured on the H200 together
("Steps 69-83 measured": large 716 -> 640 us a step, medium 96.5 -> 85.7, small
23.3 -> 20.7, mlp4 34.5 -> 30.9, the resident steps -0.2..-1.2) and on by default:
each is on, shows in the kernel the compiler prints for a suite step, and is gone
with the field off. What each does, and that it keeps the bits, is tested beside
it (test_<switch>.py, against the target before the flips)."""

from __future__ import annotations

import pytest

from trainkernel import pipeline
from trainkernel import target as T
from trainkernel.pipeline import stage_passes

from _variants import suite_source as _source

# (target field, the suite step it shows in, what the printed kernel then holds)
SHOWN = [
    ("carried_cast_copies", "online", "_next = "),
    # medium: small's and mlp4's reductions have no tails on their 64-row kernels' 256 threads
    ("batched_reduce_tails", "medium", "the tail: its loads issued together too (target.batched_reduce_tails)"),
    ("grid_carried_casts", "small", "if (tk_first) {  // the phase's casts run in a chain's first launch alone"),
    ("full_sum_partials", "mlp4", "tk::hopper::column_partials("),
    # h @ W2's split-K call (narrowed to 32 wide: perf-log step 101), its last template argument kSharedFixup
    ("split_k_shared_fixup", "medium", "grid_gemm_units<__nv_bfloat16, tk::hopper::TileShape<32, TkShape::STAGES, "
                                       "TkShape::STAGE_BYTES>, false, false, true, false, true>"),
    ("prefetch_tensor_maps", "mlp4", "tk::hopper::prefetch_maps("),
    ("grid_last_launch_outputs", "small", "  if (!tk_more)  // only outputs read it: a chain's last launch alone\n"),
]


@pytest.mark.parametrize("field,name,shows", SHOWN, ids=[f for f, _, _ in SHOWN])
def test_on_and_shown(target_fields, field, name, shows):
    assert getattr(T.DEFAULT, field) is True
    assert shows in _source(name)
    target_fields(**{field: False})
    assert shows not in _source(name)


def test_keep_state_homes_on(target_fields):
    """The AdamW twin keeps its step powers' home from step to step: no staging of
    them in the step loop, which the field off brings back."""
    assert T.DEFAULT.keep_state_homes is True
    on = _source("online-adam")
    target_fields(keep_state_homes=False)
    assert _source("online-adam") != on


def test_input_casts_on():
    assert pipeline.FUSE_INPUT_CASTS is True
    assert stage_passes("tk").endswith(",tk-fuse{merge=maps input_casts=true}")
