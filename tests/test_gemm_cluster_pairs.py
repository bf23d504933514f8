"""target.gemm_cluster_pairs (perf-log step 87; off until measured): a grid
kernel on the wgmma engine launched in clusters of two, every gemm walked as
the pair's lockstep (tk::hopper::pair_step), B multicast where the two units
share it. sched-to-tile makes the grid even, sets tile.kernel's gemm_cluster
and starts each gemm on an even block (tile-reductions-first keeps it so); the
printer initialises the pair's barriers, syncs the cluster at the start and
the end, passes kPair to every gemm and launches with the cluster attribute
beside the cooperative one; the runtime sizes the grid in co-resident
clusters. The interpreters run the kernel as without (only the loads change);
the GPU gives the same bits as without."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import torch.utils._pytree as pytree

import trainkernel
from trainkernel.dialects import tile
from trainkernel.sched_interpreter import run_program
from trainkernel.tools.cli import problem
from trainkernel.workloads import LARGE, TWINS, WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _tile_stage import tile_kernel
from _variants import same_bits_off_and_on, stepped

ALL = {**WORKLOADS, "large": LARGE, **TWINS}
GRID_STEPS = ("small", "mlp4", "medium", "large", "mlp4-adamw-ce")  # the suite's wgmma grid kernels


def _captured(w, args=None):
    return trainkernel.capture(w.make_step(torch.bfloat16), args or w.example_args("meta", torch.bfloat16))


def _source(w) -> str:
    return trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args("meta", torch.bfloat16),
                                        build=False).cuda_source


@pytest.fixture
def paired(variant):
    return variant("paired", gemm_cluster_pairs=True).name


def test_off_by_default():
    assert not trainkernel.target.DEFAULT.gemm_cluster_pairs
    kernel = tile_kernel(_captured(WORKLOADS["medium"]))
    assert kernel.gemm_cluster is None
    assert "tk_gemm_cluster" not in _source(WORKLOADS["medium"])


@pytest.mark.parametrize("name", GRID_STEPS)
def test_the_kernel_is_paired_with_its_gemms_on_even_blocks(paired, variant, name):
    captured = _captured(ALL[name])
    # Paired gemms keep the kernel's one tile width (sched_to_tile narrows no gemm
    # of a paired kernel): the kernel alone with one width too.
    uniform = variant("uniform", wgmma_gemm_widths=False).name
    kernel, alone = tile_kernel(captured, target=paired), tile_kernel(captured, target=uniform)
    assert kernel.gemm_cluster == 2 and kernel.grid % 2 == 0
    gemms = [op for op in kernel.block.ops if isinstance(op, tile.GemmOp)]
    assert gemms and all(op.engine == "wgmma" and op.offset % 2 == 0 for op in gemms)
    # nothing else changes: the same ops and items a phase; an offset moves by at most
    # one block for each gemm before it in its phase
    for ops, before in zip(kernel.phases(), alone.phases(), strict=True):
        assert [(op.name, op.items) for op in ops] == [(op.name, op.items) for op in before]
        for k, (op, old) in enumerate(zip(ops, before)):
            moved = sum(isinstance(o, tile.GemmOp) for o in ops[: k + 1])
            assert 0 <= op.offset - old.offset <= moved, (name, op.name, old.offset, op.offset)


def test_resident_and_mma_kernels_are_not_paired(paired):
    for name in ("tiny", "online", "classification"):  # resident: one cluster of its own
        assert tile_kernel(_captured(WORKLOADS[name]), target=paired).gemm_cluster is None
    assert tile_kernel(_captured(WORKLOADS["medium"]), target=paired, engine="mma").gemm_cluster is None
    one = tile_kernel(_captured(WORKLOADS["small"]), target=paired, grid=1, engine="wgmma")
    assert one.gemm_cluster is None  # one block: nothing to pair


def test_an_odd_chosen_grid_becomes_even(paired):
    kernel = tile_kernel(_captured(WORKLOADS["medium"]), target=paired, grid=131)
    assert kernel.grid == 131  # a forced grid is the caller's: sched-to-tile keeps it...
    assert kernel.gemm_cluster is None  # ...and does not pair an odd one
    chosen = tile_kernel(_captured(WORKLOADS["small"].with_sizes(300, (264, 520, 72))), target=paired)
    assert chosen.gemm_cluster == 2 and chosen.grid % 2 == 0


@pytest.mark.parametrize("name", ["medium", "mlp4-adamw-ce"])
def test_the_printer_pairs_every_gemm_and_launches_clusters(target_fields, name):
    target_fields(gemm_cluster_pairs=True)
    src = _source(ALL[name])
    assert "tk::hopper::pipeline_init<TkShape, true>(tk_hbase);" in src
    assert src.count("tk::cluster_sync();") == 2  # barriers published; nobody leaves early
    calls = re.findall(r"tk::hopper::grid_gemm_units<([^>]*)>", src)
    assert calls and all(c.split(", ")[-1] == "true" and len(c.split(", ")) == 8 for c in calls)
    assert "cudaLaunchAttributeClusterDimension" in src and "cudaLaunchAttributeCooperative" in src
    assert 'extern "C" int tk_gemm_cluster() { return 2; }' in src
    assert "cudaOccupancyMaxActiveClusters" in src


@pytest.mark.parametrize("cooperative", [True, False])
def test_every_launch_configuration_writes_only_its_attributes(target_fields, cooperative):
    """Each attribute array (tk_launch's, tk_max_active_clusters' of the cluster one
    alone) is written at indices below its size: the occupancy query once wrote
    the cluster dimension's y and z one past its one-element array."""
    target_fields(gemm_cluster_pairs=True, gemm_cluster_cooperative=cooperative, grid_programmatic_launch=True)
    src = _source(WORKLOADS["medium"])
    configs = re.findall(r"cudaLaunchAttribute attr\[(\d+)\];(.*?)cfg\.numAttrs = (\d+);", src, re.S)
    assert len(configs) == 2  # the occupancy query and tk_launch_chain (tk_launch calls it)
    for size, body, count in configs:
        assert int(size) == int(count)
        assert all(int(i) < int(size) for i in re.findall(r"attr\[(\d+)\]", body)), body


def test_clusters_alone_without_the_cooperative_attribute(target_fields):
    """target.gemm_cluster_cooperative off: the launch asks for the clusters only
    (for a driver that refuses the two together); nothing else changes."""
    target_fields(gemm_cluster_pairs=True)
    both = _source(WORKLOADS["medium"])
    target_fields(gemm_cluster_pairs=True, gemm_cluster_cooperative=False)
    alone = _source(WORKLOADS["medium"])
    assert "cudaLaunchAttributeCooperative" in both and "cudaLaunchAttributeCooperative" not in alone
    assert "attr[0].id = cudaLaunchAttributeClusterDimension;" in alone
    kernel = lambda src: src[: src.index("static int tk_configure()")]  # noqa: E731
    assert kernel(both) == kernel(alone)


@needs_nvcc
@pytest.mark.parametrize("name", ["medium", "mlp4-adamw-ce"])
def test_builds_for_sm90a(target_fields, tmp_path, name):
    target_fields(gemm_cluster_pairs=True)
    assert nvcc_errors(_source(ALL[name]), tmp_path) == ""


@needs_nvcc
@pytest.mark.parametrize("name", ["medium", "large"])
def test_ptxas_reports_no_local_memory_and_no_loss(target_fields, tmp_path, name):
    """The paired pipeline keeps the consumers' registers (large: 256-wide tiles,
    setmaxnreg) and the wgmma pipeline whole (tests/test_ptxas_wgmma_kernels.py's rule)."""
    import subprocess

    from _ptxas import parse_ptxas

    target_fields(gemm_cluster_pairs=True)
    cu = tmp_path / "k.cu"
    cu.write_text(_source(ALL[name]))
    include = Path(trainkernel.__file__).resolve().parent / "backend" / "include"
    proc = subprocess.run(["nvcc", "-std=c++17", "-O3", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas",
                           "-v", "-I", str(include), str(cu), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    log = proc.stdout + proc.stderr
    assert not re.findall(r".*\bC75\d\d\b.*", log)
    assert all(not (r["spill_stores"] or r["spill_loads"] or r["stack"]) for r in parse_ptxas(log))


@needs_nvcc
def test_builds_on_an_unseen_step_with_the_other_switches(target_fields, tmp_path):
    """Three layers of odd widths, fp16, with producer calls and programmatic launch (the
    launch's third attribute)."""
    target_fields(gemm_cluster_pairs=True, wgmma_producer_calls=True, grid_programmatic_launch=True)
    w = WORKLOADS["mlp4"].with_sizes(130, (256, 264, 128, 72))
    src = trainkernel.compile_training(w.make_step(torch.float16), w.example_args("meta", torch.float16),
                                       build=False, resident="off").cuda_source
    assert "tk_gemm_cluster" in src and "cudaLaunchAttributeProgrammaticStreamSerialization" in src
    assert nvcc_errors(src, tmp_path) == ""


def test_the_tile_interpreter_gives_the_unpaired_results(paired):
    """The pair changes which block loads what, not what is computed: the same bits."""
    w = WORKLOADS["small"].with_sizes(40, (32, 48, 16))
    params, batches = problem(w, torch.bfloat16, "cpu")
    args = (params, *batches[0])
    captured = _captured(w, args)
    outs = []
    for target in (paired, None):
        kernel = tile_kernel(captured, target, grid=4, engine="wgmma", inplace=False)
        assert (kernel.gemm_cluster == 2) == (target is not None)
        outs.append(run_program(kernel, pytree.tree_leaves(args)))
    assert all(torch.equal(a, b) for a, b in zip(*outs))


@pytest.mark.parametrize("name", ["small", "medium", "mlp4-adamw-ce"])
def test_the_bits_compared_on_gpu_differ_only_in_the_pairing(target_fields, name):
    """What the GPU test below compares: unpaired, no cluster at all (small's split-K
    cluster fix-up, which sums the slices in another order, is off on both sides)."""
    target_fields(gemm_cluster_pairs=False, wgmma_gemm_widths=False, split_k_cluster_fixup=False)
    off = _source(ALL[name])
    target_fields(gemm_cluster_pairs=True, wgmma_gemm_widths=False, split_k_cluster_fixup=False)
    on = _source(ALL[name])
    assert "tk_gemm_cluster" not in off and "TK_CLUSTER_FIXUP" not in off and "tk_gemm_cluster" in on


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", "medium", "mlp4-adamw-ce"])
def test_the_same_bits_on_gpu(target_fields, name):
    # One width a kernel: a paired kernel keeps its gemms' width (sched-to-tile), and an
    # unpaired medium would narrow h @ W2 and split its K another way (other fp32 sums).
    # The split-K fix-up through L2 on both sides: unpaired, small's split gemms would
    # sum their slices in a cluster instead (split_k_cluster_fixup, perf-log step 126),
    # in another order, and a paired kernel's clusters are its pairs.
    same, (src_off, src_on) = same_bits_off_and_on(target_fields, "gemm_cluster_pairs", name, 4, 2, run=stepped,
                                                   wgmma_gemm_widths=False, split_k_cluster_fixup=False)
    assert "tk_gemm_cluster" in src_on and "tk_gemm_cluster" not in src_off
    assert same


@pytest.mark.cuda
def test_the_same_bits_on_an_unseen_step_on_gpu(target_fields):
    w = WORKLOADS["mlp4"].with_sizes(130, (256, 264, 128, 72))
    same, _ = same_bits_off_and_on(target_fields, "gemm_cluster_pairs", w, 3, 5, run=stepped, wgmma_gemm_widths=False,
                                   split_k_cluster_fixup=False)
    assert same
