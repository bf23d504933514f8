"""Special values through the compiled kernels (issue 12, item 4: the GPU half).

The cases of tests/test_special_values.py (NaN, ±inf, -0.0, subnormals and
near-overflow values paired with each other, through every tk op the CUDA
backend prints) are run through `compile_training`'s kernel on the GPU and
compared with eager PyTorch on the same GPU:

- NaN where eager has NaN (any NaN), and nowhere else;
- ±inf where eager has the same infinity;
- a zero where eager has a zero, with the same sign;
- other values within 2 ulps of the result type (libdevice's transcendental
  functions and FMA contraction may differ from ATen's in the last bits),
  where eager's result is subnormal within the smallest normal number.

To keep the GPU run short, every case of one dtype is one step (one kernel:
each case reads its own inputs, so the cases do not interact), compiled twice:
as a resident kernel (`resident="force"`, the ResidentPrinter) and as a grid
kernel (`resident="off"`, the grid printer). The CPU tests below run the same
harness (step, comparison) through the buffer interpreter, where it must hold
bit for bit, and show that the comparison catches a NaN dropped by a kernel.

Every case runs (argmax too: torch's first-maximum, first-NaN rule, an i64
result compared exactly); a bool result (comparisons) is returned as a 0/1
float, the form kernels keep masks in.
"""

from __future__ import annotations

import functools
import os
import sys

import pytest
import torch
from torch.utils import _pytree as pytree

sys.path.insert(0, os.path.dirname(__file__))

import trainkernel  # noqa: E402
from test_special_values import CASES, DTYPES  # noqa: E402

GPU_CASES = list(CASES)


def combined_step(dtype: str):
    """One step running every GPU case of `dtype`: step(state, *inputs) -> (*results, state).

    The state is the first case's first input, returned unchanged (the
    convention of compile_training); results are every case's results in
    CASES order, bool ones as 0/1 floats. Returns (step, args, owners) with
    owners[k] the case of result k."""
    cases = [(name, CASES[name][0], CASES[name][1](DTYPES[dtype])) for name in GPU_CASES]
    counts = [len(args) for _, _, args in cases]
    flat = [t for _, _, args in cases for t in args]

    def step(state, *rest):
        inputs = [state[0], *rest]
        out, k = [], 0
        for (_, fn, _), n in zip(cases, counts):
            r = fn(*inputs[k : k + n])
            k += n
            for v in r if isinstance(r, tuple) else (r,):
                out.append(v.float() if v.dtype == torch.bool else v)
        return (*out, state)

    owners = []
    for name, fn, args in cases:
        r = fn(*args)
        owners += [name] * (len(r) if isinstance(r, tuple) else 1)
    return step, ((flat[0],), *flat[1:]), owners


def mismatches(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """Elementwise: True where `got` breaks the special-value contract with `want`."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if not want.is_floating_point():
        return got != want
    g, w = got.double().cpu(), want.double().cpu()
    finfo = torch.finfo(want.dtype)
    bad = g.isnan() != w.isnan()
    inf = w.isinf()
    bad |= inf & (g != w)
    bad |= ~inf & g.isinf()
    zero = w == 0
    bad |= zero & ((g != 0) | (torch.signbit(g) != torch.signbit(w)))
    rest = ~(w.isnan() | inf | zero)
    tol = torch.where(w.abs() < finfo.tiny, torch.full_like(w, finfo.tiny), 2 * finfo.eps * w.abs())
    bad |= rest & ~((g - w).abs() <= tol)
    return bad


def check(got, want, owners) -> list[str]:
    """One line per result that breaks the contract, naming its case."""
    out = []
    for k, (g, w, case) in enumerate(zip(got, want, owners)):
        bad = mismatches(g, w)
        if bool(bad.any()):
            out.append(f"{case} result {k}: {int(bad.sum())} of {bad.numel()} differ, e.g. got "
                       f"{g.cpu()[bad.cpu()][:4].tolist()}, eager {w.cpu()[bad.cpu()][:4].tolist()}")
    return out


# ---------------------------------------------------------------- CPU: the harness itself


@functools.cache
def _lowered(dtype: str, resident: str):
    step, args, owners = combined_step(dtype)
    return step, args, owners, trainkernel.compile_training(step, args, build=False, resident=resident, inplace=False)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_combined_step_lowers_for_both_printers(dtype):
    for resident in ("force", "off"):
        step, args, owners, c = _lowered(dtype, resident)
        assert ("kCluster" in c.cuda_source) == (resident == "force"), resident
    assert len(owners) == len(pytree.tree_leaves(step(*args))) - 1


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_combined_step_is_exact_in_the_interpreter(dtype):
    """The tile level of the very kernels the GPU test runs, interpreted: eager's
    bits (any NaN for NaN), and so within the GPU test's contract."""
    from test_special_values import same
    from trainkernel.ir import parse_module
    from trainkernel.sched_interpreter import run_program

    for resident in ("force", "off"):
        step, args, owners, c = _lowered(dtype, resident)
        want = pytree.tree_leaves(step(*args))[:-1]
        got = run_program(parse_module(c.ir("tile")), pytree.tree_leaves(args))[: len(want)]
        assert check(got, want, owners) == []
        for k, (g, w) in enumerate(zip(got, want)):
            assert bool(same(g, w).all()), (resident, owners[k], k)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_eager_reference_runs_on_the_inputs_device(dtype):
    # The GPU test runs the step eagerly on CUDA tensors: a constant a case
    # builds on the CPU (torch.arange/full/zeros without device=) fails there
    # only. Meta tensors fail the same way here.
    step, args, _ = combined_step(dtype)
    step(*pytree.tree_map(lambda t: t.to("meta"), args))


def test_the_check_catches_a_dropped_nan_a_lost_sign_and_a_wrong_value():
    w = torch.tensor([float("nan"), -0.0, 1.0, float("inf"), -float("inf"), 3e38])
    assert not mismatches(w.clone(), w).any()
    for k, wrong in enumerate([0.0, 0.0, 1.0 + 1e-5, 3e38, float("inf"), float("inf")]):
        g = w.clone()
        g[k] = wrong
        assert mismatches(g, w).tolist() == [i == k for i in range(len(w))], (k, mismatches(g, w))
    assert not mismatches(torch.tensor([1.0 + 1.1920929e-07]), torch.tensor([1.0])).any()  # 1 ulp: tolerated
    assert not mismatches(torch.tensor([0.0]), torch.tensor([1e-40])).any()  # a flushed subnormal: tolerated
    assert mismatches(torch.tensor([float("nan")]), torch.tensor([1.0])).all()
    assert mismatches(torch.tensor([1.0, 2.0], dtype=torch.bfloat16), torch.tensor([1.0, 2.0625], dtype=torch.bfloat16)).tolist() == [False, True]


# ---------------------------------------------------------------- the GPU


@pytest.mark.cuda
@pytest.mark.parametrize("resident", ["force", "off"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_special_values_through_the_kernel_match_eager_on_gpu(dtype, resident, tmp_path_factory):
    step, args, owners = combined_step(dtype)
    args = pytree.tree_map(lambda t: t.cuda(), args)
    compiled = trainkernel.compile_training(step, args, inplace=False, resident=resident,
                                            cache_dir=tmp_path_factory.getbasetemp() / "special-values-cache")
    assert ("kCluster" in compiled.cuda_source) == (resident == "force")
    got = pytree.tree_leaves(compiled(*args))
    want = pytree.tree_leaves(step(*args))
    assert len(got) == len(want)
    bad = check(got[:-1], want[:-1], owners)
    assert not bad, f"{len(bad)} results break the special-value contract ({dtype}, resident={resident}):\n" + \
        "\n".join(bad[:30])
