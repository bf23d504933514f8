"""target.fast_paths: a resident map's divisions and square roots run the fast paths
of IEEE `/` and sqrtf without their branch to the slow path (tk::div_fast,
tk::sqrt_fast), so that nvcc interleaves the elements' chains; one test an iteration
computes every element again with `/` and sqrtf where an operand is outside the
fast paths' range (perf-log step 61). The same bits either way."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
import torch

from trainkernel import target as T
from trainkernel.backend.build import build
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import same_bits_off_and_on
from _variants import suite_source as _source



@pytest.fixture
def fast_on(target_fields):
    target_fields(fast_paths=True)


def _maps(src: str) -> list[str]:
    return re.findall(r"  \{ // tile\.map split.*\n(?:    .*\n)+?  \}\n", src)


def test_on_by_default(target_fields):
    """Measured faster with the same bits (perf-log step 61): on; off prints `/`."""
    assert T.DEFAULT.fast_paths is True
    assert "tk_fast" in _source("online-adam")
    target_fields(fast_paths=False)
    assert "tk_fast" not in _source("online-adam")


def test_the_update_maps_run_the_fast_paths(fast_on):
    """online-adam: each Adam update (a square root and two divisions an element)
    runs the fast paths for all its elements, then `/` and sqrtf only if one
    cleared the flag, into the same names, before any store."""
    maps = [m for m in _maps(_source("online-adam")) if "tk_fast" in m]
    assert len(maps) >= 4  # W1, b1, W2, b2
    for m in maps:
        fast, exact = m.split("if (!tk_fast) {", 1)
        exact = exact.split("\n", 1)[1]  # after the comment
        assert fast.count("tk::sqrt_fast(") == exact.count("sqrtf(")
        assert fast.count("tk::div_fast(") == exact.count(" / ")
        assert "tk::div_fast(" in fast or "tk::sqrt_fast(" in fast
        assigned = re.findall(r"float (v\d+) = ", fast)
        assert re.findall(r"^\s+(v\d+) = ", exact, re.M) == assigned
        assert exact.index("}") < exact.index("if (ok0)")


def test_maps_without_divisions_are_untouched(fast_on, target_fields):
    """online (SGD) has no division or square root in a map: the same kernel."""
    on = _source("online")
    target_fields(fast_paths=False)
    assert _source("online") == on


def test_ieee_calls_keep_their_calls(target_fields):
    target_fields(fast_paths=True, ieee_calls=True)
    src = _source("online-adam")
    assert "tk_fast" not in src and "tk::div_rn(" in src


@needs_nvcc
@pytest.mark.parametrize("name", ["online-adam", "classification-adamw-ce"])
def test_compiles_for_sm90(fast_on, tmp_path, name):
    assert nvcc_errors(_source(name), tmp_path) == ""


CHECK_SOURCE = r"""
#include <cuda_runtime.h>
#include "tk/types.cuh"
__global__ void tk_fast_kernel(const float* a, const float* b, int n, float* q, float* qr, float* s, float* sr,
                               int* ok) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  bool okd = true, oks = true;
  q[i] = tk::div_fast(a[i], b[i], okd);
  qr[i] = a[i] / b[i];
  s[i] = tk::sqrt_fast(a[i], oks);
  sr[i] = sqrtf(a[i]);
  ok[i] = (okd ? 1 : 0) | (oks ? 2 : 0);
}
extern "C" int tk_fast_check(const float* a, const float* b, int n, float* q, float* qr, float* s, float* sr,
                             int* ok) {
  tk_fast_kernel<<<(n + 255) / 256, 256>>>(a, b, n, q, qr, s, sr, ok);
  return (int)cudaDeviceSynchronize();
}
"""


def _operands(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random signs, mantissas and exponents over [-130, 130] (zeros, subnormals and
    infinities among them), and the ranges' edges."""
    rng = np.random.default_rng(seed)

    def draw() -> np.ndarray:
        bits = (rng.integers(0, 2, n, dtype=np.uint32) << 31) | rng.integers(0, 1 << 23, n, dtype=np.uint32)
        exp = np.clip(rng.integers(-130, 131, n) + 127, 0, 255).astype(np.uint32)
        return (bits | (exp << 23)).view(np.float32)

    a, b = draw(), draw()
    edges = np.array([0.0, -0.0, 2.0**-60, -(2.0**-60), 2.0**60, np.nextafter(np.float32(2.0**60), 0),
                      np.nextafter(np.float32(2.0**-60), 0), 2.0**-101, np.nextafter(np.float32(2.0**-101), 0),
                      np.finfo(np.float32).max, np.inf, -np.inf, np.nan, 1e-45, 1.0, 3.0, 1e-8, 0.03162],
                     dtype=np.float32)
    k = len(edges)
    a[:k * k] = np.repeat(edges, k)
    b[:k * k] = np.tile(edges, k)
    return a, b


@pytest.mark.cuda
def test_the_fast_paths_give_the_ieee_bits_where_they_keep_ok_on_gpu():
    """2^22 random operand pairs and every pair of the ranges' edges: where ok stays
    set, tk::div_fast and tk::sqrt_fast give the bits of `/` and sqrtf; ok is set
    exactly on their documented ranges (both operands' magnitudes in [2^-60, 2^60);
    the square root's operand in [2^-101, FLT_MAX])."""
    lib = ctypes.CDLL(str(build(CHECK_SOURCE).path))
    n = 1 << 22
    a_np, b_np = _operands(n, seed=7)
    a, b = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
    outs = [torch.empty(n, device="cuda") for _ in range(4)]
    ok = torch.empty(n, dtype=torch.int32, device="cuda")
    ptr = ctypes.c_void_p
    assert lib.tk_fast_check(ptr(a.data_ptr()), ptr(b.data_ptr()), ctypes.c_int(n),
                             *(ptr(t.data_ptr()) for t in outs), ptr(ok.data_ptr())) == 0
    q, qr, s, sr = (t.cpu().numpy().view(np.uint32) for t in outs)
    okd, oks = (ok.cpu().numpy() & 1) != 0, (ok.cpu().numpy() & 2) != 0

    def in_div(x):
        m = np.abs(x)
        return (m >= 2.0**-60) & (m < 2.0**60)

    with np.errstate(invalid="ignore"):
        assert np.array_equal(okd, in_div(a_np) & in_div(b_np))
    sbits = a_np.view(np.uint32)
    assert np.array_equal(oks, (sbits >= 0x0D000000) & (sbits <= 0x7F7FFFFF))
    assert okd.sum() > n // 8 and oks.sum() > n // 8  # both ranges well covered (~21% and ~44%)
    assert np.array_equal(q[okd], qr[okd])
    assert np.array_equal(s[oks], sr[oks])


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online-adam", "classification-adamw-ce", "odd-adam", "online-adam-f32"])
def test_the_bits_do_not_change_on_gpu(target_fields, name):
    """Six steps from the same state on the same batches, fast paths or not: the
    same bits (state and outputs)."""
    from trainkernel.workloads import TWINS
    w = {"odd-adam": TWINS["online-adam"].with_sizes(33, (100, 300, 7))}.get(name, name.removesuffix("-f32"))
    dtype = torch.float32 if name.endswith("-f32") else torch.bfloat16
    same, sources = same_bits_off_and_on(target_fields, "fast_paths", w, dtype=dtype)
    assert ["tk_fast" in s for s in sources] == [False, True]
    assert same
