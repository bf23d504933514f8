"""Column reductions of grid kernels (bias gradients): the vector path
(`CudaPrinter.vector_column_reduce`: 16-byte loads, `COLUMN_VECTOR_LOADS` in
flight a thread, row groups folded through the warp's shuffle tree, warps in
slice order) where the input is an arena buffer whose rows and items split
into whole vectors, else the scalar path (one column a lane). CPU: which path
each reduction takes, and that the kernels compile; GPU: against eager over
a trajectory, and the same bits on every run."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import torch

import trainkernel
from trainkernel.backend import cuda_target
from trainkernel.backend.build import include_dir
from trainkernel.workloads import LARGE, WORKLOADS, parse_dtype

VECTOR = "16-byte loads"
HEAD = re.compile(r"// tile\.reduce tk\.(sum|max): (\d+) rows into (\d+) columns, 32 per item, [^\n]*")

# Grid steps (resident off) whose bias columns split into whole 16-byte vectors
# or not: bf16 rows of 40 and 300 columns (8-element vectors: 40 yes, 300 no,
# 8 yes), f32 rows of 100 and 300 (4-element vectors, 300 = 9 items and 12
# columns), f16 with fewer rows (5) than the block has warps (12).
STEPS = {
    "bf16-37x40x300x8": (WORKLOADS["tiny"].with_sizes(37, (40, 300, 8)), "bf16"),
    "f32-300x100x300x7": (WORKLOADS["tiny"].with_sizes(300, (100, 300, 7)), "f32"),
    "f16-5x64x40x8": (WORKLOADS["tiny"].with_sizes(5, (64, 40, 8)), "f16"),
}


def _source(w, dtype: str, resident: str = "off", args=None) -> str:
    args = args if args is not None else w.example_args()
    return trainkernel.compile_training(w.make_step(parse_dtype(dtype)), args, build=False,
                                        resident=resident).cuda_source


def _heads(src: str) -> list[tuple[str, int, bool]]:
    """(op, columns, vector path) of every column reduction of the kernel."""
    return [(m.group(1), int(m.group(3)), VECTOR in m.group(0)) for m in HEAD.finditer(src)]


def test_large_bias_sums_take_16_byte_loads():
    src = _source(LARGE, "bf16", resident="auto")
    heads = _heads(src)
    assert heads == [("sum", 2048, True), ("sum", 8192, True)]
    assert "tk::Vec<__nv_bfloat16, 8> tk_raw[16];" in src
    assert "tk::warp_fold_row_groups<4>(tk_acc, tk::SumOp{});" in src


@pytest.mark.parametrize("name", list(STEPS))
def test_the_path_follows_the_vector_width(name):
    w, dtype = STEPS[name]
    vec = 16 // {"bf16": 2, "f16": 2, "f32": 4}[dtype]
    heads = _heads(_source(w, dtype))
    assert heads, "the step has bias gradients"
    for _, cols, vector in heads:
        assert vector == (cols % vec == 0), (cols, vec)


def test_zero_vector_loads_print_every_column_sum_scalar(monkeypatch):
    monkeypatch.setattr(cuda_target, "COLUMN_VECTOR_LOADS", 0)
    heads = _heads(_source(LARGE, "bf16", resident="auto"))
    assert heads and not any(v for _, _, v in heads)


def test_the_tail_is_predicated_not_a_serial_loop():
    """Rows past a slice's end are skipped by a predicate in the batch (171 rows a
    warp over 8 row groups: 22 rows a lane, two batches), never one load at a time."""
    src = _source(LARGE, "bf16", resident="auto")
    body = src[src.index("// tile.reduce tk.sum: 2048 rows into 8192 columns"):]
    body = body[:body.index("tk_part is reused")]
    assert "for (int r = (int)tk_warp * 171 + tk_lane / 4; r < r1; r += 128) {" in body
    assert "if (r + u * 8 < r1) tk_raw[u] = tk::load_vec<8>(" in body
    assert "++r" not in body


@pytest.mark.parametrize("name", list(STEPS))
def test_the_kernels_compile_for_sm90a(name, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    w, dtype = STEPS[name]
    cu = tmp_path / "k.cu"
    cu.write_text(_source(w, dtype))
    proc = subprocess.run([nvcc, "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-I",
                           str(include_dir()), "-c", str(cu), "-o", str(tmp_path / "k.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(STEPS))
def test_vector_column_sums_match_eager_on_gpu(name, tmp_path):
    from trainkernel.tools.cli import check_workload, problem

    w, dtype = STEPS[name]
    params0, batches = problem(w, parse_dtype(dtype), "cuda")
    compiled = trainkernel.compile_training(w.make_step(parse_dtype(dtype)), (params0, *batches[0]),
                                            resident="off", cache_dir=tmp_path)
    assert VECTOR in compiled.cuda_source
    report = check_workload(w, dtype, steps=50, compiled=compiled)
    assert report.passed, report.format(verbose=True)
    # Bit-identical reruns: the fold order is fixed.
    runs = []
    for _ in range(2):
        state = tuple(p.clone() for p in params0)
        out = compiled(state, *batches[1])
        torch.cuda.synchronize()
        runs.append([t.clone() for t in torch.utils._pytree.tree_leaves(out)])
    for a, b in zip(*runs):
        assert torch.equal(a, b)
