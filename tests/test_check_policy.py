"""The correctness policy of `trainkernel.tools.cli.check_workload` (its module
docstring): a per-quantity bound from eager's error, and for forced checks a
budget of steps where a decision on a value within rounding of its threshold
(a relu mask) may flip."""

import math

from trainkernel.tools.cli import FLOOR, OUTLIER_CAP, Quantity


def quantity(check: str, errors: list[float], eager: float = 1e-7) -> Quantity:
    q = Quantity("grad[0]", check)
    for e in errors:
        q.record(e, eager)
    return q


def test_within_the_bound_passes():
    q = quantity("forced", [2e-7] * 100)
    assert q.allowed == max(4e-7, FLOOR) and q.passed and q.outliers == 0


def test_one_flip_in_100_forced_steps_passes_and_is_reported():
    q = quantity("forced", [2e-7] * 99 + [8e-4])  # run-8f1e568-s: small (200, 520, 1000, 56) f32
    assert q.passed and q.outliers == 1


def test_two_flips_in_100_steps_fail():
    assert not quantity("forced", [2e-7] * 98 + [8e-4, 8e-4]).passed


def test_an_outlier_over_the_cap_fails():
    assert not quantity("forced", [2e-7] * 99 + [OUTLIER_CAP * 2]).passed


def test_a_non_finite_step_fails():
    assert not quantity("forced", [2e-7] * 99 + [math.inf]).passed


def test_short_runs_still_allow_one_flip():
    assert quantity("forced", [2e-7, 8e-4]).passed


def test_the_trajectory_check_takes_no_exception():
    q = quantity("trajectory", [2e-7] * 99 + [8e-4])
    assert not q.passed and q.errors == []
