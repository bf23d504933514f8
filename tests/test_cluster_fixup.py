"""target.split_k_cluster_fixup (perf-log step 124): split-K whose slices meet in a
thread block cluster. In each phase the wgmma gemm with the most K steps a unit
splits K into slices on consecutive blocks of one cluster (tile.gemm's fixup =
"cluster", the kernel's fixup_cluster), and each consumer warp's rows are summed
by one slice from the others' st.async pushes into its shared memory
(tk::hopper::splitk_cluster_fixup): no workspace, the same additions in the same
order as the shared fix-up through L2 (target.cluster_fixup_through_l2, the same
slices), so the same bits."""

from __future__ import annotations

import re

import pytest
import torch

import trainkernel
from trainkernel.dialects import tile
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _ptxas import ptxas_kernel_rows
from _variants import same_bits_off_and_on, stepped
from _variants import suite_source as _source

# small at sizes the suite does not have: a 200-row batch (a partial m-tile), 56
# outputs (a partial n-tile), K = 1000 (a partial last K step)
ODD = WORKLOADS["small"].with_sizes(200, (520, 1000, 56))
SPLIT = re.compile(r"// tile\.gemm (\d+)x(\d+)x(\d+) [^\n]*, split-K: (\d+) slices of (\d+)\n\s*const tk::hopper::GemmParams "
                   r"tk_gp\{([^\n]*)\};")


def _kernel(name):
    """The tile.kernel a workload's (or Workload's) step lowers to, as the target now is."""
    from _tile_stage import tile_kernel

    w = WORKLOADS[name] if isinstance(name, str) else name
    return tile_kernel(trainkernel.capture(w.make_step(torch.bfloat16), w.example_args("meta")))


def _cluster_gemms(kernel):
    return [op for op in kernel.block.ops if isinstance(op, tile.GemmOp) and op.fixup == "cluster"]


def test_on_by_default_and_off(target_fields):
    """On (perf-log step 126, runs 9df86ff-h100-d and f5ba586-h100-a: small -0.35 and
    -0.31 us a step, its 200-row step -0.77 and -0.60); off, small's logits split
    through the workspace."""
    from trainkernel.target import DEFAULT

    assert DEFAULT.split_k_cluster_fixup
    assert _cluster_gemms(_kernel("small")) and _kernel("small").fixup_cluster == 2
    target_fields(split_k_cluster_fixup=False)
    assert not _cluster_gemms(_kernel("small")) and _kernel("small").fixup_cluster is None


def test_small_splits_its_logits_in_clusters(target_fields):
    """small's logits (256 x 64 x 1024: 8 tiles of 64 x 32, 16 K steps a unit) split
    2 ways: 4 (its tile's consumer warps) would run its grid of 128 in clusters of
    4, of which an H100 or H200 holds 120 blocks at once (target.cluster_blocks).
    Its dW2 (1024 x 64 x 256, beside the phase's dh units and reductions) stays
    whole: the phase's busiest block is not its unit. The kernel runs in
    clusters of 2; the split gemm's first unit on a multiple of its split; no
    workspace."""
    target_fields(split_k_cluster_fixup=True)
    kernel = _kernel("small")
    split = _cluster_gemms(kernel)
    assert [(tile.iteration_space(op), op.ksplit) for op in split] == [((256, 64, 1024), 2)]
    assert kernel.fixup_cluster == 2 and kernel.grid == 128 and kernel.gemm_cluster is None
    for op in split:
        assert op.workspace is None and op.offset % op.ksplit == 0 and op.items <= kernel.grid
    for ops in kernel.phases():
        assert sum(op in split for op in ops) <= 1


def test_clusters_that_fit_at_once(target_fields):
    """Where clusters of 4 hold as many blocks as the grid, small's logits split 4 ways."""
    target_fields(split_k_cluster_fixup=True, cluster_blocks=(132, 132, 112))
    kernel = _kernel("small")
    assert [op.ksplit for op in _cluster_gemms(kernel)] == [4] and kernel.fixup_cluster == 4


def test_the_split_is_priced(target_fields):
    """A fix-up dearer than any K steps it saves splits nothing: the kernel as it is
    without the switch (no clusters, the workspace's split)."""
    import dataclasses

    from trainkernel.target import DEFAULT

    target_fields(split_k_cluster_fixup=False)
    off = _source("small")
    target_fields(split_k_cluster_fixup=True,
                  grid_costs=dataclasses.replace(DEFAULT.grid_costs, cluster_fixup_cycles=1e6))
    assert _source("small") == off


def test_at_most_the_tile_warps_and_one_gemm_a_phase(target_fields):
    """The odd small step: its logits (200 x 56 x 1000, 64 x 32 tiles of 4 warps) split
    4 ways however idle the grid (a slice owns whole warps)."""
    target_fields(split_k_cluster_fixup=True)
    kernel = _kernel(ODD)
    split = _cluster_gemms(kernel)
    assert split and all(op.ksplit <= tile.wgmma_tile_warps(op) for op in split)
    assert max(op.ksplit for op in split) == kernel.fixup_cluster


def test_priced_against_the_split_through_l2(target_fields):
    """Unsplit in a cluster, a gemm is priced as split_k splits it through L2
    (GridCosts.l2_fixup_cycles a unit): the step at 130 x 264-2048-24, whose
    logits (12 tiles, K = 2048) split 4 ways through L2 on 64-row tiles, keeps
    that kernel. Priced as whole, the cluster's 2 slices won, and with them
    128-row tiles that measured 1.44 us a step slower (perf-log step 124, run
    9df86ff-h100-d)."""
    odd = WORKLOADS["small"].with_sizes(130, (264, 2048, 24))
    target_fields(split_k_cluster_fixup=False)
    off = _source(odd)
    target_fields(split_k_cluster_fixup=True)
    assert _source(odd) == off


def test_no_slices_under_the_least_depth(target_fields):
    """mlp4's products (K = 256) would split in slices of 128, which lost
    (target.cluster_ksplit_min_k): its kernel as it is."""
    target_fields(split_k_cluster_fixup=False)
    off = _source("mlp4")
    target_fields(split_k_cluster_fixup=True)
    assert _source("mlp4") == off
    target_fields(split_k_cluster_fixup=True, cluster_ksplit_min_k=128)
    assert _cluster_gemms(_kernel("mlp4"))


def test_no_room_no_cluster(target_fields):
    """medium's pipeline leaves no 16 KB for the slots: no cluster split, the
    workspace's split as before."""
    target_fields(split_k_cluster_fixup=False)
    off = _source("medium")
    target_fields(split_k_cluster_fixup=True)
    assert _source("medium") == off


def test_through_l2_the_same_slices_with_a_workspace(target_fields):
    target_fields(split_k_cluster_fixup=True)
    cluster = [(tile.iteration_space(op), op.ksplit, op.items) for op in _cluster_gemms(_kernel("small"))]
    target_fields(split_k_cluster_fixup=True, cluster_fixup_through_l2=True)
    kernel = _kernel("small")
    assert kernel.fixup_cluster is None and not _cluster_gemms(kernel)
    l2 = [(tile.iteration_space(op), op.ksplit, op.items) for op in kernel.block.ops
          if isinstance(op, tile.GemmOp) and op.ksplit > 1]
    assert l2 == cluster
    assert all(op.workspace is not None for op in kernel.block.ops if isinstance(op, tile.GemmOp) and op.ksplit > 1)


def test_the_printed_kernel(target_fields):
    """The fix-up's region after the pipeline, its barriers initialised and published
    to the cluster before any unit, GemmParams naming it instead of a workspace, a
    launch in clusters of 2 that refuses a grid of fewer blocks than a split gemm's
    units."""
    target_fields(split_k_cluster_fixup=True)
    src = _source("small", resident="off")
    assert "static constexpr int kSmem = kFixSmem + 8224;" in src  # 4 warps' barriers, a 64 x 32 fp32 tile
    assert "tk::hopper::cluster_fixup_init(tk_fix);" in src and "  tk::cluster_sync();\n" in src
    calls = SPLIT.findall(src)
    assert [(m, n, k, s) for m, n, k, s, _, _ in calls] == [("256", "64", "1024", "2")]
    assert all(params.endswith("nullptr, nullptr, tk_fix") for *_, params in calls)
    assert 'extern "C" int tk_gemm_cluster() { return 2; }' in src
    assert "val.clusterDim.x = 2;" in src and "val.cooperative = 1;" in src
    assert "if (grid < 16 || grid % 2) return (int)cudaErrorInvalidConfiguration;" in src
    assert "TK_SPLITK_TAGGED" not in src  # no gemm left with a fix-up through L2 (p2's was the one)
    # The device path compiled in only here (the standalone gemm kernel carries none of it).
    assert src.count("#define TK_CLUSTER_FIXUP 1\n") == 1 and "TK_CLUSTER_FIXUP" not in _source("medium")


def test_a_resident_kernel_has_none(target_fields):
    target_fields(split_k_cluster_fixup=False)
    off = _source("online")
    target_fields(split_k_cluster_fixup=True)
    assert _source("online") == off


# mlp4's products (K = 256) split only in slices of 128, which the target no
# longer makes (target.cluster_ksplit_min_k): asked for here, so that its
# four clustered phases a step stay covered.
_SHALLOW = {"mlp4": dict(cluster_ksplit_min_k=128)}


def _args(name):
    w = WORKLOADS[name] if isinstance(name, str) else name
    return w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16)


@needs_nvcc
@pytest.mark.parametrize("name", ["small", ODD, "mlp4"], ids=str)
def test_builds_for_sm90a_without_a_stack_frame(target_fields, tmp_path, name):
    """The pushed fragment and the summed float4s stay in registers (ptxas -v: no stack
    frame, as every kernel of the suite: test_cuda_compile.py)."""
    target_fields(split_k_cluster_fixup=True, **_SHALLOW.get(str(name), {}))
    src = trainkernel.compile_training(*_args(name), build=False, resident="off").cuda_source
    assert "tk_fix}" in src
    assert nvcc_errors(src, tmp_path, host=False) == ""
    rows = ptxas_kernel_rows(src, tmp_path)
    assert rows and not any(r["stack"] for r in rows), rows


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", ODD, "mlp4"], ids=str)
def test_the_same_bits_as_through_l2_on_gpu(target_fields, name):
    """Four launches from the same state: every output and the state bit-equal to
    the same slices' fix-up through the workspace."""
    same, (src_l2, src_cluster) = same_bits_off_and_on(
        target_fields, "cluster_fixup_through_l2", name, 4, 2, run=stepped, values=(True, False),
        split_k_cluster_fixup=True, **_SHALLOW.get(str(name), {}))
    assert "tk_fix}" in src_cluster and "tk_fix" not in src_l2
    assert same


@pytest.mark.cuda
def test_bit_identical_reruns_on_gpu(target_fields):
    target_fields(split_k_cluster_fixup=True)
    first = stepped("small", 4, 3)
    second = stepped("small", 4, 3)
    assert "tk_fix}" in first[0]
    assert all(torch.equal(a, b) for a, b in zip(first[1], second[1]))
