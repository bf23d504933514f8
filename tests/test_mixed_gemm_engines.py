"""target.mixed_gemm_engines (perf-log step 122): a grid kernel's gemms each on the
engine it fits. Where some products' operand rows are not whole 16 bytes (a head of
10 classes: 20-byte rows), those take mma.sync tiles and the rest the wgmma
pipeline, instead of every product of the step on mma.sync (wgmma_fits is all or
nothing). The mma.sync tiles' shared memory lies after the pipeline's, which keeps
its stages and mbarriers from gemm to gemm (and may have the next phase's loads in
flight into them); they run on 128 of the block's threads. On by default since the
GPU measured it (run 9f45cee-h100-a: 128 x 512-1024-10 70.9 -> 45.6 us a step)."""

from __future__ import annotations

import re

import pytest
import torch
import torch.utils._pytree as pytree

import trainkernel
import trainkernel.target as T
from trainkernel.dialects import tile
from trainkernel.item_interpreter import run_items
from trainkernel.sched_interpreter import run_program
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _tile_stage import tile_kernel
from _variants import suite_source

# A grid kernel by size (no resident plan fits), its head 10 classes wide.
HEAD10 = WORKLOADS["classification"].with_sizes(128, (512, 1024, 10))
# Small enough for the CPU interpreters, the same layouts: x @ W1 and dW1 fit
# wgmma; the head's product, dh = dy @ W2^T and dW2 read 10-wide rows.
SMALL = WORKLOADS["classification"].with_sizes(40, (64, 128, 10))
MIXED = "mixed_engines_test"


def _engines(kernel: tile.KernelOp) -> list[str]:
    return [op.engine for op in kernel.block.ops if isinstance(op, tile.GemmOp)]


def _fits(op: tile.GemmOp) -> bool:
    """Whether both operands' rows are whole 16 bytes (8 bf16)."""
    mm = op.matmul
    return all(tuple(v.type.get_shape())[-1] % 8 == 0 for v in (mm.lhs, mm.rhs))


def _kernel(w, engine: str, mixed: bool, grid: int = 8) -> tuple[tile.KernelOp, list[torch.Tensor]]:
    args = (w.init_state(), *w.make_batches(1, dtype=torch.bfloat16)[0])
    captured = trainkernel.capture(w.make_step(torch.bfloat16), args)
    T.variant(MIXED, mixed_gemm_engines=mixed)
    try:
        kernel = tile_kernel(captured, MIXED, grid=grid, engine=engine, inplace=False)
    finally:
        T.TARGETS.pop(MIXED, None)
    return kernel, pytree.tree_leaves(args)


def test_on_by_default_and_off_puts_every_product_on_mma_sync(target_fields):
    assert T.DEFAULT.mixed_gemm_engines is True
    src = suite_source(HEAD10, resident="off")
    assert "tk::hopper" in src and "tk_mma_smem" in src
    target_fields(mixed_gemm_engines=False)
    src = suite_source(HEAD10, resident="off")
    assert "tk::hopper" not in src and "tk_mma_smem" not in src
    assert "tk::gemm_tile_nt<kThreads," in src


def test_each_product_takes_the_engine_it_fits(target_fields):
    """On: the products whose operand rows are whole 16 bytes on wgmma, the head's
    three on mma.sync, in one kernel of the wgmma engine's block."""
    target_fields(mixed_gemm_engines=True)
    c = trainkernel.compile_training(HEAD10.make_step(torch.bfloat16), HEAD10.example_args(), build=False,
                                     resident="off")
    kernel = next(op for op in trainkernel.ir.parse_module(c.ir("tile")).ops if isinstance(op, tile.KernelOp))
    gemms = [op for op in kernel.block.ops if isinstance(op, tile.GemmOp)]
    assert {op.engine for op in gemms} == {"wgmma", "mma"}
    assert all((op.engine == "wgmma") == _fits(op) for op in gemms)
    assert sum(op.engine == "mma" for op in gemms) == 3
    wgmma = [op for op in gemms if op.engine == "wgmma"]
    bn, bm = tile.wgmma_pipeline_tile(wgmma)[1], wgmma[0].tile_shape[0]
    assert kernel.smem == T.DEFAULT.wgmma_smem_bytes(bn, bm) + T.DEFAULT.gemm_smem_bytes("mma.bf16")
    assert kernel.smem <= T.DEFAULT.smem_per_block
    src = c.cuda_source
    assert f"struct TkParams {{ CUtensorMap maps[{2 * len(wgmma)}];" in src
    assert "char* const tk_mma_smem = smem + TkShape::SMEM_BYTES;" in src
    assert len(re.findall(r"tk::gemm_tile_nt<128, __nv_bfloat16, 64, 64, 32, \w+, \w+>\(", src)) == 3
    assert src.count("tk_mma_smem,") == 3 and "kThreads, __nv_bfloat16" not in src


def test_tiles_whose_pipeline_leaves_no_room_are_not_offered(target_fields):
    """The 128 x 64 pipeline (218,240 bytes) and a 30,720-byte mma.sync tile exceed a
    block's 227 KiB: a mixed kernel takes a narrower or 64-row wgmma tile."""
    from trainkernel.passes.sched_to_tile import mixed_smem_fits

    assert not mixed_smem_fits(T.DEFAULT, 64, 128, {"mma.bf16"})
    assert not mixed_smem_fits(T.DEFAULT, 256, 128, {"mma.bf16"})
    assert mixed_smem_fits(T.DEFAULT, 64, 64, {"mma.bf16"})
    assert mixed_smem_fits(T.DEFAULT, 32, 128, {"mma.bf16"})
    assert mixed_smem_fits(T.DEFAULT, 128, 128, set())  # nothing beside the pipeline: as without
    target_fields(mixed_gemm_engines=True, wgmma_consumers=(2,), wgmma_tiles_n=(64,))
    with pytest.raises(Exception, match="no wgmma tile leaves room"):
        trainkernel.compile_training(HEAD10.make_step(torch.bfloat16), HEAD10.example_args(), build=False,
                                     resident="off", gemm_engine="wgmma")


def test_the_interpreters_agree_with_the_all_mma_sync_kernel():
    """The phase interpreter on the mixed kernel gives the all-mma.sync kernel's
    results (within bf16 rounding of the products' fp32 sums), and item by item the
    same bits as the phase interpreter."""
    mixed, inputs = _kernel(SMALL, "wgmma", True)
    assert set(_engines(mixed)) == {"wgmma", "mma"}
    plain, _ = _kernel(SMALL, "mma", False)
    assert set(_engines(plain)) == {"mma"}
    got, want = run_program(mixed, inputs), run_program(plain, inputs)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert torch.allclose(a.float(), b.float(), rtol=2e-2, atol=1e-3), (a - b).abs().max()
    assert all(torch.equal(a, b) for a, b in zip(run_items(mixed, inputs), got))


def test_forcing_wgmma_off_is_an_error_where_a_product_does_not_fit():
    with pytest.raises(Exception, match="engine=wgmma needs bf16/f16 gemms"):
        _kernel(SMALL, "wgmma", False)


@needs_nvcc
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_compiles_for_sm90(target_fields, tmp_path, dtype):
    target_fields(mixed_gemm_engines=True)
    src = suite_source(HEAD10, dtype=dtype, resident="off")
    assert "tk_mma_smem" in src
    assert nvcc_errors(src, tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_matches_pytorch_on_gpu(target_fields, dtype):
    from trainkernel.tools.cli import check_workload

    target_fields(mixed_gemm_engines=True)
    c = trainkernel.compile_training(HEAD10.make_step(dtype), HEAD10.example_args(device="meta", dtype=dtype),
                                     resident="off")
    assert "tk_mma_smem" in c.cuda_source
    report = check_workload(HEAD10, {torch.bfloat16: "bf16", torch.float16: "f16"}[dtype], steps=30, compiled=c)
    assert report.passed, report.format(verbose=True)
