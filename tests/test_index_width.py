"""64-bit index arithmetic where an index can pass 2**31 - 1 (issue 12, item 2).

The grid printer decides per kernel from the IR (`cuda_target.index_bound`):
`int` where every buffer's and tensor's element count and every loop end fit
(every kernel of the workloads: their CUDA is unchanged), `long long` loop
variables, multi-indices and `_linear` products otherwise. Resident kernels
index in 32 bits, which the kernel verifier guarantees
(`tile.RESIDENT_MAX_ELEMENTS`) and `tile-resident` respects.

The issue's reproducer (a 50000 x 50000 weight on meta tensors) goes through
every stage (each verified) and its CUDA compiles with nvcc. On the GPU,
`test_index_width_cuda` below runs a step past 2**31 elements against eager,
and every workload's kernel printed with 64-bit indices forced against the
32-bit one, bit for bit.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from torch.utils import _pytree as pytree

import trainkernel
from trainkernel.backend import cuda_target
from trainkernel.dialects import tile
from trainkernel.ir import parse_module
from trainkernel.pipeline import lower
from trainkernel.workloads import COMPUTE_DTYPES, WORKLOADS

NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None)
INCLUDE = Path(trainkernel.__file__).resolve().parent / "backend" / "include"
FLAGS = ["-std=c++17", "-arch=sm_90", "-O3", "--shared", "-Xcompiler", "-fPIC", "-I", str(INCLUDE)]

# A product of an int index and a stride, with no 64-bit cast: `(i)*50000`, `(q0)*50000`.
NARROW_PRODUCT = re.compile(r"(?<!long long\))\((?:i|j|i\d|q\d|o\d)\)\*\d")


def _sgd(lr=0.1):
    def step(params, x, y):
        def loss_fn(params):
            w, b = params
            return (torch.relu(x @ w + b) - y).pow(2).mean()

        grads, loss = torch.func.grad_and_value(loss_fn)(params)
        return loss, grads, tuple(p - lr * g for p, g in zip(params, grads))

    return step


def _big_args(device="meta", dtype=torch.float32, n=50000, batch=4):
    w = torch.empty(n, n, device=device, dtype=dtype)
    b = torch.empty(n, device=device, dtype=dtype)
    return ((w, b), torch.empty(batch, n, device=device, dtype=dtype), torch.empty(batch, n, device=device, dtype=dtype))


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


def _nvcc(source: str, tmp_path: Path) -> None:
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    r = subprocess.run([NVCC, *FLAGS, str(cu), "-o", str(tmp_path / "k.so")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]


@pytest.fixture(scope="module")
def big():
    """The issue's reproducer: compile_training on meta tensors with a 50000 x 50000 weight."""
    return trainkernel.compile_training(_sgd(), _big_args(), build=False)


def test_the_issue_reproducer_prints_64_bit_index_arithmetic(big):
    src = big.cuda_source
    assert "64-bit indices" in src.splitlines()[4]
    # The weight's update: b0 is the 50000 x 50000 weight, its offset a 64-bit product.
    assert re.search(r"b0\w*\[\(long long\)\(i\)\*50000 \+ \(j\)\] = ", src), src
    assert not NARROW_PRODUCT.search(src), NARROW_PRODUCT.search(src).group(0)
    assert not re.search(r"\bint (item|e|r|c|end|i\d|q\d|o\d)\b", src)
    assert "for (long long item" in src


def test_the_reproducer_is_verified_at_every_stage(big):
    """Every stage's text re-parses and verifies (as `trainkernel-opt` reads it)."""
    for stage in ("tk", "sched", "tile"):
        module = parse_module(big.lowered.stages[stage])
        module.verify()
    kernel = next(op for op in parse_module(big.lowered.stages["tile"]).ops if isinstance(op, tile.KernelOp))
    assert cuda_target.index_bound(kernel) > cuda_target.INT32_MAX
    assert kernel.cluster is None


@pytest.mark.skipif(NVCC is None, reason="nvcc not found (CUDA toolkit absent)")
def test_the_reproducer_compiles(big, tmp_path):
    _nvcc(big.cuda_source, tmp_path)


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_the_workloads_stay_32_bit(name, dtype):
    """The suite's kernels are far below 2**31: int indices, no long long index code."""
    w = WORKLOADS[name]
    captured = trainkernel.capture(w.make_step(dtype), w.example_args("meta", COMPUTE_DTYPES[dtype]))
    for resident in ("auto", "off"):
        src = lower(captured, True, resident=resident).cuda_source
        assert "64-bit indices" not in src and "long long item" not in src and "(long long)(" not in src


def _kernel_of(lowered) -> tile.KernelOp:
    return next(op for op in parse_module(lowered.stages["tile"]).ops if isinstance(op, tile.KernelOp))


def test_the_bound_counts_the_loop_ends():
    """index_bound is exact about what it counts: a map's last chunk end, items + grid."""
    w = WORKLOADS["tiny"]
    captured = trainkernel.capture(w.make_step("f32"), w.example_args("meta", torch.float32))
    kernel = _kernel_of(lower(captured, True, resident="off"))
    maps = [op for op in kernel.block.ops if isinstance(op, tile.MapOp)]
    bound = cuda_target.index_bound(kernel)
    assert bound >= max(op.items * op.chunk + kernel.threads for op in maps)
    assert bound >= max(op.items + kernel.grid for op in kernel.block.ops if isinstance(op, tile.TileWorkOp))
    assert bound <= cuda_target.INT32_MAX


def test_resident_kernels_stay_32_bit_by_construction():
    """A step whose inputs fit on chip but whose output does not fit 32-bit
    indices (an outer product of two 50000-vectors, 2.5e9 elements):
    tile-resident{mode=force} would make it resident (and the verifier then
    reject it); it leaves it a grid kernel, which indexes in 64 bits."""

    def step(params, x):
        (w,) = params
        return x @ w, (w * 0.5,)

    args = ((torch.empty(1, 50000, device="meta"),), torch.empty(50000, 1, device="meta"))
    c = trainkernel.compile_training(step, args, build=False, resident="force")
    kernel = _kernel_of(c.lowered)
    assert kernel.cluster is None and tile.largest_extent(kernel) > tile.RESIDENT_MAX_ELEMENTS
    assert "64-bit indices" in c.cuda_source
    # The same step at 4000 (1.6e7 elements) does go resident: the guard is the size, not the shape.
    small = ((torch.empty(1, 4000, device="meta"),), torch.empty(4000, 1, device="meta"))
    assert _kernel_of(trainkernel.compile_training(step, small, build=False, resident="force").lowered).cluster


def test_the_resident_printer_refuses_a_kernel_past_32_bits(monkeypatch):
    from xdsl.utils.exceptions import DiagnosticException

    w = WORKLOADS["tiny"]
    captured = trainkernel.capture(w.make_step("f32"), w.example_args("meta", torch.float32))
    kernel = _kernel_of(lower(captured, True, resident="force"))
    assert kernel.cluster is not None
    cuda_target.printer_for(kernel).print()  # fits
    monkeypatch.setattr(tile, "RESIDENT_MAX_ELEMENTS", 16)
    with pytest.raises(DiagnosticException, match="resident kernel indexes in 32 bits"):
        cuda_target.printer_for(kernel)


def _forced_wide(monkeypatch) -> None:
    """Print every grid kernel with 64-bit indices, however small."""
    monkeypatch.setattr(cuda_target, "INT32_MAX", 0)


@pytest.mark.skipif(NVCC is None, reason="nvcc not found (CUDA toolkit absent)")
@pytest.mark.parametrize("name,dtype", [("tiny", "bf16"), ("small", "f32")])
def test_forced_64_bit_kernels_compile(name, dtype, tmp_path, monkeypatch):
    """The 64-bit forms of every construct the workloads use (mma and SIMT gemms,
    maps, row and column reductions) compile."""
    w = WORKLOADS[name]
    captured = trainkernel.capture(w.make_step(dtype), w.example_args("meta", COMPUTE_DTYPES[dtype]))
    _forced_wide(monkeypatch)
    src = lower(captured, True, resident="off").cuda_source
    assert "64-bit indices" in src and "int item" not in src
    for construct in ("tile.gemm", "tile.map", "rows into", "elements into"):
        assert construct in src, construct
    _nvcc(src, tmp_path)


# ---------------------------------------------------------------- on the GPU


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "classification", "small", "mlp4"])
def test_forced_64_bit_kernels_give_the_32_bit_bits_on_gpu(name, tmp_path, monkeypatch):
    """Index width changes no arithmetic: both kernels give the same bits."""
    w = WORKLOADS[name]
    dt = COMPUTE_DTYPES["bf16"]
    step = w.make_step("bf16")
    params = tuple(p.cuda() for p in w.init_params(seed=0))
    ((x, y),) = w.make_batches(1, seed=1, dtype=dt)
    args = (params, x.cuda(), y.cuda())
    narrow = trainkernel.compile_training(step, args, cache_dir=tmp_path, resident="off", inplace=False)
    _forced_wide(monkeypatch)
    wide = trainkernel.compile_training(step, args, cache_dir=tmp_path, resident="off", inplace=False)
    assert "64-bit indices" in wide.cuda_source and "64-bit indices" not in narrow.cuda_source
    got, want = pytree.tree_leaves(wide(*args)), pytree.tree_leaves(narrow(*args))
    assert len(got) == len(want) and all(_same_bits(a, b) for a, b in zip(got, want))


@pytest.mark.cuda
def test_a_step_past_2_to_the_31_elements_on_gpu(tmp_path):
    """A 2**31 + 4096-element bf16 parameter (4 GiB): the kernel's update of its
    last elements, which 32-bit offsets would wrap onto the first ones, equals eager."""
    n = 2**31 + 4096
    if torch.cuda.get_device_properties(0).total_memory < 8 * n * 2:
        pytest.skip("needs about 40 GiB of GPU memory")

    def step(params, x):
        def loss_fn(params):
            (v,) = params
            return (v * x).sum()  # x broadcasts: each element's gradient is x[k % 4096]

        grads, loss = torch.func.grad_and_value(loss_fn)(params)
        return loss, tuple(p - 0.5 * g for p, g in zip(params, grads))

    g = torch.Generator(device="cuda").manual_seed(0)
    v = torch.randn(n // 4096, 4096, device="cuda", generator=g).to(torch.bfloat16)
    x = torch.randn(4096, device="cuda", generator=g).to(torch.bfloat16)
    compiled = trainkernel.compile_training(step, ((v,), x), cache_dir=tmp_path, resident="off", inplace=False)
    assert "64-bit indices" in compiled.cuda_source
    got = compiled((v,), x)
    want = step((v,), x)
    new_got, new_want = got[-1][0], want[-1][0]
    assert torch.equal(new_got[-8:], new_want[-8:]) and torch.equal(new_got[:8], new_want[:8])
    assert torch.equal(new_got, new_want)
    assert torch.allclose(got[0].float(), want[0].float(), rtol=2e-2, atol=64.0)  # two f32 sums of 2**31 terms
