"""The switches prepared for the H200 (perf-log steps 69,
70, 73-77, 79-83, 87 and keep_state_homes), all on together, on steps the suite does not
contain (odd widths and batches, three and four layers, fp16, resident and
forced grid kernels): each kernel uses the switches it can and builds for
sm_90a. The measured winners are on by default (test_measured_defaults.py), the
others (69, 74, 79, 82, 87) stay off; this is where a combination's printing or
compiling fails first."""

from __future__ import annotations


import pytest
import torch

import trainkernel
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors

PIPELINE = ("FUSE_INPUT_CASTS", "SINK_SOURCES")  # the pipeline's prepared switches (steps 70 and 79)
PREPARED = dict(carried_cast_copies=True, batched_reduce_tails=True, wgmma_producer_calls=True,
                stage_loads_in_flight=8, keep_state_homes=True, grid_carried_casts=True,
                full_sum_partials=True, split_k_shared_fixup=True, prefetch_tensor_maps=True,
                grid_programmatic_launch=True, grid_last_launch_outputs=True, gemm_cluster_pairs=True)

CASES = [  # (workload, batch, widths, dtype, resident, what the kernel must show)
    ("online", 64, (128, 256, 256, 16), torch.bfloat16, "force", "_next = "),  # three layers: copies
    ("online", 5, (33, 65, 10), torch.float16, "auto", "stage_rows<8>"),  # odd rows: batched copies
    ("mlp4", 130, (256, 264, 128, 72), torch.bfloat16, "off", ", true>(&p.maps"),  # grid, wgmma: producer calls
    ("online-adam", 9, (41, 73, 6), torch.bfloat16, "off", "the tail: its loads"),  # grid, odd (mma.sync: no row of whole 16 bytes): batched tails
    ("online-adam", 17, (48, 80, 24), torch.bfloat16, "off", "if (tk_more) "),  # grid: carried casts
    ("small", 300, (264, 520, 72), torch.float16, "off", "tk::hopper::column_partials("),  # grid: the loss's partials
]


@needs_nvcc
@pytest.mark.parametrize("name,batch,widths,dtype,resident,shows", CASES, ids=lambda v: str(v))
def test_every_prepared_switch_together_builds_on_unseen_steps(target_fields, monkeypatch, tmp_path, name, batch,
                                                               widths, dtype, resident, shows):
    from trainkernel import pipeline
    from trainkernel.workloads import TWINS

    target_fields(**PREPARED)
    for switch in PIPELINE:
        monkeypatch.setattr(pipeline, switch, True)
    w = {**WORKLOADS, **TWINS}[name].with_sizes(batch, widths)
    src = trainkernel.compile_training(w.make_step(dtype), w.example_args(dtype=dtype), build=False,
                                       resident=resident).cuda_source
    assert shows in src
    assert nvcc_errors(src, tmp_path, host=False) == ""
