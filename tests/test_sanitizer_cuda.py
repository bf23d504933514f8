"""compute-sanitizer (memcheck, racecheck, synccheck) on generated megakernels.

Runs the tiny, online, online-adam (resident kernels; the Adam twin's rank 0 stores
its beta powers, which every block stages) and small (a grid kernel on the wgmma
engine: TMA, mbarriers, wgmma) workloads for two steps under each tool and requires
"ERROR SUMMARY: 0 errors". GPU only; skipped where compute-sanitizer is absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "gpu_scripts" / "run_steps.py"


def _sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for base in ("/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer"):
        cand = Path(base) / "compute-sanitizer"
        if cand.exists():
            return str(cand)
    return None


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("workload", ["tiny", "online", "small", "online-adam"])
def test_compute_sanitizer_reports_nothing(tool: str, workload: str, tmp_path):
    sanitizer = _sanitizer()
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not installed")
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    env.setdefault("TRAINKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    env.setdefault("NVCC_APPEND_FLAGS", "-lineinfo")  # reports with source lines
    # Compile outside the sanitizer first (nvcc under it is slow and irrelevant).
    subprocess.run([sys.executable, str(SCRIPT), workload, "bfloat16", "1"], env=env, check=True,
                   capture_output=True, timeout=300)
    proc = subprocess.run(
        [sanitizer, "--tool", tool, "--error-exitcode", "7", sys.executable, str(SCRIPT), workload, "bfloat16", "2"],
        env=env, capture_output=True, text=True, timeout=600,
    )
    out = proc.stdout + proc.stderr
    print(out[-4000:])
    assert proc.returncode == 0, out[-4000:]
    # memcheck/synccheck close with "ERROR SUMMARY: 0 errors", racecheck with
    # "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)".
    assert "ERROR SUMMARY: 0 errors" in out or "(0 errors, 0 warnings)" in out, out[-4000:]


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("workload", ["tiny", "online", "online-adam", "classification"])
def test_compute_sanitizer_reports_nothing_on_the_step_loop(tool: str, workload: str, tmp_path):
    """Three steps in one launch of the resident kernel (capture's step loop): tiny (one
    block) and online (a cluster, whose replicated bias every block updates whole) keep
    their state homes on chip across steps and store to global memory on the last step
    alone; both restage the batch homes that the previous step's last phases may still
    have been reading before the step's end barrier."""
    _step_loop_reports_nothing(tool, workload, tmp_path)


def _step_loop_reports_nothing(tool: str, workload: str, tmp_path, launches: str = "in 1 launches",
                               **env_extra: str) -> None:
    """Three captured steps of `workload` under `tool`: no report, and the capture ran
    as `launches` says (one launch of the step loop, or a chain of three)."""
    sanitizer = _sanitizer()
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not installed")
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", **env_extra)
    env.setdefault("TRAINKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    env.setdefault("NVCC_APPEND_FLAGS", "-lineinfo")
    subprocess.run([sys.executable, str(SCRIPT), workload, "bfloat16", "1"], env=env, check=True,
                   capture_output=True, timeout=300)
    proc = subprocess.run(
        [sanitizer, "--tool", tool, "--error-exitcode", "7", sys.executable, str(SCRIPT), workload, "bfloat16", "3",
         "capture"],
        env=env, capture_output=True, text=True, timeout=600,
    )
    out = proc.stdout + proc.stderr
    print(out[-4000:])
    assert proc.returncode == 0, out[-4000:]
    assert launches in out, out[-4000:]
    assert "ERROR SUMMARY: 0 errors" in out or "(0 errors, 0 warnings)" in out, out[-4000:]


@pytest.mark.cuda
@pytest.mark.parametrize("named", [0, 1])
def test_racecheck_on_named_barriers_of_part_of_the_block(named: int, tmp_path):
    """racecheck on a correct program in the shape of small's reported hazard.

    On the wgmma engine small's racecheck reports RAW hazards across a __syncthreads()
    (run-b64e3aa-b/race: every one a consumer thread's write before the barrier and a
    producer-warp read after it, in the reduction after a gemm; the mma engine, which has
    no named barriers, is clean). The consumer warpgroups had just synced among
    themselves on named barriers (the row epilogue's) while the producer had not.
    gpu_scripts/racecheck_named_barriers.cu does exactly that and nothing else; the
    results are checked by the program. named=0 (no named barriers) is the control: if
    named=1 alone is reported, racecheck's barrier model does not account for named
    barriers of part of the block, and small's report is that, not a race."""
    sanitizer = _sanitizer()
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not installed")
    exe = tmp_path / "racecheck_named_barriers"
    subprocess.run([nvcc, "-O3", "-lineinfo", "-arch=sm_90", str(ROOT / "tests" / "gpu_scripts" /
                    "racecheck_named_barriers.cu"), "-o", str(exe)], check=True, capture_output=True, timeout=300)
    plain = subprocess.run([str(exe), str(named)], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    proc = subprocess.run([sanitizer, "--tool", "racecheck", "--racecheck-report", "all", "--print-limit", "4",
                           "--error-exitcode", "7", str(exe), str(named)], capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    print(out[-4000:])
    assert proc.returncode == 0 and "(0 errors, 0 warnings)" in out, out[-4000:]


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("workload", ["online", "online-adam"])
def test_compute_sanitizer_on_the_step_loop_of_the_fallback_forms(tool: str, workload: str, tmp_path):
    """The forms that steps whose shapes do not allow the defaults get (perf-log steps
    66-68): the exchange's publish under a cluster barrier (an odd element count) and
    the batch staged at the step's start (rows not in 16-byte units), three steps in
    one launch, on the suite's steps through TK_TARGET_FIELDS."""
    fields = "exchange_async_publish=0;prefetch_step_inputs=0"
    _step_loop_reports_nothing(tool, workload, tmp_path, TK_TARGET_FIELDS=fields)


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("workload", ["online", "classification"])
def test_compute_sanitizer_on_the_step_loop_with_bulk_rows(tool: str, workload: str, tmp_path):
    """The next step's batch rows by bulk copies on an mbarrier (target.prefetch_bulk_rows,
    perf-log step 113), three steps in one launch: the copy engine's writes into the
    copy the step before last read, the barrier's two parities."""
    _step_loop_reports_nothing(tool, workload, tmp_path, TK_TARGET_FIELDS="prefetch_bulk_rows=1")


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("workload", ["online:33,100,300,7", "classification:50,100,300,10"])
def test_compute_sanitizer_on_the_step_loop_of_odd_shapes(tool: str, workload: str, tmp_path):
    """Steps the suite does not contain, whose products have partial 16-row units, K
    tails and slice extents that are not whole pairs (perf-log step 115): their
    ldmatrix reads are clamped into the operands' homes and reach the rows' padding
    (memcheck: inside the homes; racecheck: nobody writes what they read meanwhile)."""
    _step_loop_reports_nothing(tool, workload, tmp_path)


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
def test_compute_sanitizer_on_the_step_loop_of_wide_exchanges(tool: str, tmp_path):
    """Two hidden layers of 128 at batch 16 (resident): exchanges of 2,048 partials
    pushed in 8-byte pairs and published in 16-byte runs (target.exchange_wide_stores,
    perf-log step 118): the remote stores' extents, their byte counts on the
    mbarriers, the two parities."""
    _step_loop_reports_nothing(tool, "online:16,64,128,128,8", tmp_path, TK_TARGET_FIELDS="exchange_wide_stores=1")


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("workload", ["online", "classification"])
def test_compute_sanitizer_on_the_step_loop_with_late_prefetch(tool: str, workload: str, tmp_path):
    """The next step's batch copied after the step's first product phase
    (target.prefetch_copies_after_work, perf-log step 120), three steps in one launch:
    the copies into the other parity's homes while the step's phases run."""
    _step_loop_reports_nothing(tool, workload, tmp_path, TK_TARGET_FIELDS="prefetch_copies_after_work=1")


# The next step's batch multicast across the cluster (perf-log steps 127-129), three steps
# in one launch: every block's copies into the other blocks' homes of the other parity,
# the barrier's two parities. Copies after the first exchange's barrier; inside its
# publish wait; the labels' short rows by each block's cp.async beside x's multicast.
MULTICAST_FORMS = [
    ("online", "prefetch_multicast_rows=1"),
    ("classification", "prefetch_multicast_rows=1"),
    ("online", "prefetch_multicast_rows=1;prefetch_multicast_in_publish=1"),
    ("classification", "prefetch_multicast_rows=1;prefetch_multicast_in_publish=1"),
    ("online", "prefetch_multicast_rows=1;prefetch_multicast_in_publish=1;prefetch_multicast_min_copy_bytes=64"),
]


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("workload, fields", MULTICAST_FORMS)
def test_compute_sanitizer_on_the_step_loop_with_multicast_rows(tool: str, workload: str, fields: str, tmp_path):
    _step_loop_reports_nothing(tool, workload, tmp_path, TK_TARGET_FIELDS=fields)


# Every grid-kernel switch prepared in the twenty-first session (perf-log steps
# 76-83) with those before it (74, 75, 70): casts carried through a chain of
# launches (parity copies, their tensor maps), the loss from column partials on a
# split-K gemm whose fix-up its slices share (a spin wait across blocks), the
# maps prefetched, programmatic launch, outputs left to the chain's last launch.
PREPARED_GRID = ("grid_carried_casts=1;input_casts=1;sink_sources=1;split_k_shared_fixup=1;prefetch_tensor_maps=1;"
                 "grid_programmatic_launch=1;full_sum_partials=1;batched_reduce_tails=1;wgmma_producer_calls=1;"
                 "grid_last_launch_outputs=1")


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
def test_compute_sanitizer_on_a_chain_with_the_prepared_grid_switches(tool: str, tmp_path):
    """small's grid kernel, three steps captured as one chain of launches, every prepared
    grid switch on (PREPARED_GRID)."""
    _step_loop_reports_nothing(tool, "small", tmp_path, launches="in 3 launches (a chain)",
                               TK_TARGET_FIELDS=PREPARED_GRID)


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
def test_compute_sanitizer_on_a_chain_with_item_flags(tool: str, tmp_path):
    """small's grid kernel, three steps captured as one chain of launches, its phases
    joined by per-item flags (tile-item-flags): spin waits across blocks instead of
    grid barriers."""
    _step_loop_reports_nothing(tool, "small", tmp_path, launches="in 3 launches (a chain)",
                               TK_TARGET_FIELDS="item_flags=1")


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
def test_compute_sanitizer_on_a_chain_with_tagged_partials(tool: str, tmp_path):
    """small's grid kernel, three steps captured as one chain of launches, its split-K
    fix-up through tagged words (target.split_k_tagged_partials, perf-log step 103):
    the owner polls and zeroes 8-byte words of the workspace, which must lie inside
    the arena (memcheck), and the next launch tags them again."""
    _step_loop_reports_nothing(tool, "small", tmp_path, launches="in 3 launches (a chain)",
                               TK_TARGET_FIELDS="split_k_tagged_partials=1")


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
def test_compute_sanitizer_on_a_chain_with_mixed_gemm_engines(tool: str, tmp_path):
    """A grid kernel whose 10-class head's products take mma.sync tiles beside the wgmma
    pipeline (target.mixed_gemm_engines, perf-log step 122): their shared memory after
    the pipeline's stages and mbarriers, on 128 of the block's threads; three steps
    captured as one chain of launches."""
    _step_loop_reports_nothing(tool, "classification:128,512,1024,10", tmp_path, launches="in 3 launches (a chain)",
                               TK_TARGET_FIELDS="mixed_gemm_engines=1")


@pytest.mark.cuda
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
def test_compute_sanitizer_on_a_chain_with_cluster_fixups(tool: str, tmp_path):
    """small's grid kernel in clusters, its logits' split-K slices meeting
    in the owners' shared memory by st.async (target.split_k_cluster_fixup, perf-log
    step 124); three steps captured as one chain of launches."""
    _step_loop_reports_nothing(tool, "small", tmp_path, launches="in 3 launches (a chain)",
                               TK_TARGET_FIELDS="split_k_cluster_fixup=1")
