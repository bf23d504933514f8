"""Regression tests for defects found in review."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import trainkernel
from trainkernel.frontend import UnsupportedOpError


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a, b) and torch.equal(torch.signbit(a), torch.signbit(b))


def test_signed_zero_scalars_stay_distinct():
    def f(a):
        return a + (-0.0), a + 0.0, a - 0.0

    a = torch.tensor([-0.0, 1.0])
    captured = trainkernel.capture(f, (a,))
    for got, want in zip(trainkernel.interpret(captured, a), f(a)):
        assert _same_bits(got, want)


def test_tensor_constant_with_both_zeros_is_not_uniform():
    def f(a):
        return a * torch.tensor([0.0, -0.0])

    with pytest.raises(UnsupportedOpError, match="non-uniform tensor constant"):
        trainkernel.capture(f, (torch.ones(2),))


@pytest.mark.parametrize("sizes", ["-3,4,4", "0,4,4"])
def test_cli_rejects_non_positive_sizes(sizes):
    proc = subprocess.run(
        [sys.executable, "-m", "trainkernel.tools.cli", "inspect", "tiny", "--stage", "tk", f"--sizes={sizes}"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "--sizes must all be >= 1" in proc.stderr
