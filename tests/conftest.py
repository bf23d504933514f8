"""Shared pytest configuration.

Tests marked ``@pytest.mark.cuda`` need an NVIDIA GPU. Where torch sees none
(CI, laptops), they are skipped at collection with the reason spelled out,
so a run without a GPU still collects them and reports them as skipped.
"""

from __future__ import annotations

import pytest


def _no_gpu_reason() -> str | None:
    try:
        import torch
    except Exception as exc:  # pragma: no cover
        return f"needs an NVIDIA GPU: torch cannot be imported ({exc})"
    if torch.cuda.is_available():
        return None
    built = torch.version.cuda
    if built is None:
        return f"needs an NVIDIA GPU: this torch {torch.__version__} is a CPU-only build"
    return f"needs an NVIDIA GPU: torch.cuda.is_available() is False (torch {torch.__version__}, CUDA {built})"


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs an NVIDIA GPU; skipped where none is visible")
    config.addinivalue_line("markers", "lowering_cache: the test runs with trainkernel.lowering_cache enabled")


def pytest_collection_modifyitems(config, items):
    reason = _no_gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_lowering_cache(request, monkeypatch):
    """Tests replace compiler functions at run time, which the lowering cache's key
    cannot see: every test lowers afresh unless it is marked `lowering_cache`."""
    if request.node.get_closest_marker("lowering_cache") is None:
        from trainkernel import lowering_cache

        monkeypatch.setattr(lowering_cache, "ENABLED", False)


@pytest.fixture
def variant():
    """Register variants of the H200 for one test (`trainkernel.target.variant`), and forget them after."""
    import trainkernel.target as T

    made: list[str] = []

    def make(name, **changes):
        made.append(name)
        return T.variant(name, **changes)

    yield make
    for name in made:
        T.TARGETS.pop(name, None)


def _use_target_fields(monkeypatch, **fields):
    """The default target with `fields` replaced, where the passes (by name) and the
    CUDA printer (its module's TARGET) read it; returns it (undone after the test)."""
    import dataclasses

    import trainkernel.target as T
    from trainkernel.backend import cuda_target

    changed = dataclasses.replace(T.DEFAULT, **fields)
    monkeypatch.setitem(T.TARGETS, T.DEFAULT.name, changed)
    monkeypatch.setattr(cuda_target, "TARGET", changed)
    return changed


@pytest.fixture
def target_fields(monkeypatch):
    """Replace fields of the default target for one test: ``target_fields(carry_casts=True)``."""
    return lambda **fields: _use_target_fields(monkeypatch, **fields)


# The switches of perf-log steps 70, 73 and 75-83 flipped on together (measured in
# "Steps 69-83 measured"): the target fields, and the pipeline's tk-fuse input_casts.
STEPS_69_83 = dict(carried_cast_copies=False, keep_state_homes=False, batched_reduce_tails=False,
                   grid_carried_casts=False, full_sum_partials=False, split_k_shared_fixup=False,
                   prefetch_tensor_maps=False, grid_last_launch_outputs=False)


@pytest.fixture
def before_step_106(monkeypatch):
    """The default target with the grid model and split-K fix-up of before perf-log
    steps 105-106 (_variants.BEFORE_STEP_106): the kernels that earlier tests pin.
    target_fields then replaces fields of this target."""
    import trainkernel.target as T
    from _variants import BEFORE_STEP_106

    monkeypatch.setattr(T, "DEFAULT", _use_target_fields(monkeypatch, **BEFORE_STEP_106))


@pytest.fixture
def splits_through_l2(monkeypatch):
    """The default target with split-K's fix-ups through L2 only
    (split_k_cluster_fixup off: small's logits would otherwise meet in a cluster),
    for the tests of those fix-ups. target_fields then replaces fields of this target."""
    import trainkernel.target as T

    monkeypatch.setattr(T, "DEFAULT", _use_target_fields(monkeypatch, split_k_cluster_fixup=False))


@pytest.fixture
def before_steps_69_83(monkeypatch):
    """The default target and pipeline without the switches flipped after perf-log
    steps 69-83 were measured: the printed form that the tests of each of those
    switches (off against on, one at a time) and of earlier steps pin. The flipped
    defaults themselves are tested by each switch's `test_on_as_measured`, the lit
    tests of the suite's kernels, the fingerprints and the GPU suite.
    target_fields then replaces fields of this target."""
    import trainkernel.target as T
    from trainkernel import pipeline

    monkeypatch.setattr(pipeline, "FUSE_INPUT_CASTS", False)
    monkeypatch.setattr(T, "DEFAULT", _use_target_fields(monkeypatch, **STEPS_69_83))


@pytest.fixture
def before_steps_66_68(monkeypatch, before_steps_69_83):
    """The default target without perf-log steps 66-68 (the next batch staged during
    the step, the exchange's pushes and publish as st.async), nor the later ones: the
    printed form that tests of earlier steps pin. target_fields then replaces fields
    of this target."""
    import trainkernel.target as T

    monkeypatch.setattr(T, "DEFAULT", _use_target_fields(
        monkeypatch, prefetch_step_inputs=False, exchange_async_pushes=False, exchange_async_publish=False))
