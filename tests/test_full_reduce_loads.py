"""Full reductions with several loads in flight (`target.full_reduce_loads`,
16 by default): a thread's elements are loaded n at a time and folded in the
same order as one at a time, so the kernel gives the same bits; 1 prints the
one-at-a-time loop."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import torch

import trainkernel
from trainkernel import target as T
from trainkernel.backend.build import include_dir
from trainkernel.workloads import TWINS, WORKLOADS

# Pinned to the target before the switches of perf-log steps 70, 73 and 75-83
# were flipped (test_measured_defaults.py): the printed form these tests read.
pytestmark = pytest.mark.usefixtures("before_steps_69_83")


def _source(name: str, dtype=torch.bfloat16) -> str:
    w = {**WORKLOADS, **TWINS}[name]
    return trainkernel.compile_training(w.make_step(dtype), w.example_args(), build=False).cuda_source


def _loss_reduce(src: str) -> str:
    start = src.index("// tile.reduce tk.sum over")
    return src[start:src.index("block_reduce_sum", start)]


def test_sixteen_loads_in_flight_by_default():
    assert T.DEFAULT.full_reduce_loads == 16
    body = _loss_reduce(_source("small"))
    assert "float tk_v[16];" in body


def test_one_load_at_a_time_at_one(target_fields):
    target_fields(full_reduce_loads=1)
    body = _loss_reduce(_source("small"))
    assert "for (int r = threadIdx.x; r < 16384; r += blockDim.x)" in body and "tk_v" not in body


@pytest.mark.parametrize("n", [4, 16])
def test_batched_loads_keep_the_fold_order(target_fields, tmp_path, n):
    target_fields(full_reduce_loads=n)
    src = _source("small")
    body = _loss_reduce(src)
    # n loads r, r + B, ..., r + (n-1) B, then folded u = 0 .. n-1: the order of one at a time;
    # the tail takes the rest one at a time.
    assert f"for (; r + {n - 1} * (int)blockDim.x < 16384; r += {n} * (int)blockDim.x)" in body
    assert f"float tk_v[{n}];" in body and f"for (int u = 0; u < {n}; ++u) accum = __fadd_rn(accum, tk_v[u]);" in body
    assert "for (; r < 16384; r += blockDim.x)" in body
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    cu = tmp_path / "k.cu"
    cu.write_text(src)
    proc = subprocess.run([nvcc, "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-I",
                           str(include_dir()), "-c", str(cu), "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_argmax_folds_the_element_index(target_fields):
    """An argmax's fold takes each element's own index in the batch (the first maximum wins as before)."""
    from torch.func import grad_and_value

    def step(params, x, y):
        def loss_fn(p):
            return ((x @ p[0] - y) ** 2).mean()

        g, loss = grad_and_value(loss_fn)(params)
        where = (x @ params[0]).flatten().argmax()  # a full reduction over all 4096 outputs
        return loss, where, tuple(p - 0.01 * gi for p, gi in zip(params, g))

    target_fields(full_reduce_loads=8)
    args = ((torch.randn(64, 64),), torch.randn(64, 64), torch.randn(64, 64))
    src = trainkernel.compile_training(step, args, build=False, resident="off").cuda_source
    assert "tk::argmax_step(accum, arg, tk_v[u], r + u * (int)blockDim.x);" in src
    assert "tk::argmax_step(accum, arg, " in src.split("for (; r < 4096; r += blockDim.x)")[1]


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", "mlp4"])
def test_batched_loads_give_the_same_bits_on_gpu(target_fields, name):
    w = WORKLOADS[name]
    state = w.init_state(0, "cuda")
    x, y = w.make_batches(1, seed=1, device="cuda")[0]
    results = []
    for n in (1, 16):
        target_fields(full_reduce_loads=n)
        c = trainkernel.compile_training(w.make_step(torch.bfloat16), (state, x, y), inplace=False)
        results.append(c(tuple(t.clone() for t in state), x, y))
    flat = [torch.utils._pytree.tree_leaves(r) for r in results]
    for a, b in zip(*flat):
        assert torch.equal(a, b)
