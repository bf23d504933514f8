"""Every user error is a message, never a traceback (issue 12, item 7).

Each case is a reproducer from the issue: before the fix it escaped as a raw
exception (ValueError from deep inside, FileNotFoundError, RuntimeError from
torch, an xDSL type error, FakeTensor internals) or was silently accepted.
The command line prints TrainKernel's errors as one message and exits
non-zero; the Python API raises an exception whose message says what to do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import trainkernel
from trainkernel.backend.build import CacheError
from trainkernel.frontend import CaptureError, UnsupportedOpError
from trainkernel.tools.cli import main
from trainkernel.workloads import WORKLOADS

HAVE_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").is_file()
needs_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc (CUDA toolkit) not found")

W = WORKLOADS["tiny"]


def args():
    return W.example_args("meta", torch.float32)


def step():
    return W.make_step("f32")


# ------------------------------------------------------------------ the command line


def _cli_error(capsys, argv, code):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err + (info.value.code if isinstance(info.value.code, str) else "")
    if isinstance(info.value.code, str):  # raise SystemExit("message"): exit status 1
        assert code == 1
    else:
        assert info.value.code == code
    assert "Traceback" not in err
    return err


def test_cli_bad_arch(capsys):
    err = _cli_error(capsys, ["compile", "--arch", "sm_xx"], 2)
    assert "argument --arch: invalid CUDA architecture 'sm_xx'" in err


def test_cli_emit_into_a_missing_directory_fails_before_compiling(capsys, monkeypatch):
    import trainkernel.tools.cli as cli

    monkeypatch.setattr(cli, "_compile", lambda *a, **k: pytest.fail("compiled before checking --emit"))
    err = _cli_error(capsys, ["compile", "--emit", "/proc/nope/x.cu"], 1)
    assert "--emit /proc/nope/x.cu: directory /proc/nope does not exist" in err


def test_cli_emit_onto_a_directory(capsys, tmp_path):
    err = _cli_error(capsys, ["compile", "--emit", str(tmp_path)], 1)
    assert "is a directory" in err


def test_cli_sizes_too_large_for_a_tensor(capsys):
    err = _cli_error(capsys, ["compile", "--sizes", "99999999999,99999999999,4"], 1)
    assert "x would have shape (99999999999, 99999999999)" in err and "more than a tensor can hold" in err


@pytest.mark.parametrize("steps", ["0", "-1", "many"])
def test_cli_steps_must_be_positive(capsys, steps):
    err = _cli_error(capsys, ["compile", "--steps", steps], 2)
    assert "argument --steps: expected a positive integer" in err


def test_cli_interrupt_is_one_line(capsys, monkeypatch):
    import trainkernel.tools.cli as cli

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_compile", interrupted)
    assert main(["compile"]) == 130
    assert capsys.readouterr().err.strip() == "trainkernel compile: interrupted"


@needs_nvcc
def test_cli_cache_dir_that_is_a_file(capsys, tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    assert main(["compile", "--dtype", "f32", "--cache-dir", str(f)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("trainkernel compile: kernel cache location") and "is not a directory" in err
    assert "Traceback" not in err and f.read_text() == "x"


@needs_nvcc
def test_cli_newline_in_cache_path_from_the_environment(tmp_path):
    """End to end, as a user runs it: one message on stderr, exit status 1."""
    env = {**os.environ, "TRAINKERNEL_CACHE_DIR": str(tmp_path / "a\nb")}
    proc = subprocess.run([sys.executable, "-m", "trainkernel.tools.cli", "compile", "--dtype", "f32"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "contains a control character ('\\n'); refusing it" in proc.stderr
    assert not (tmp_path / "a\nb").exists()


# ------------------------------------------------------------------ compile_training


def test_inplace_must_be_a_bool():
    with pytest.raises(TypeError, match=r"^inplace must be True or False, got 'no'$"):
        trainkernel.compile_training(step(), args(), inplace="no", build=False)


@pytest.mark.parametrize("grid, kind, text", [
    (-1, ValueError, "got -1"),
    (2**31, ValueError, f"got {2**31}"),
    (1.5, TypeError, "got 1.5"),
    (True, TypeError, "got True"),
])
def test_grid_is_checked_not_silently_automatic(grid, kind, text):
    with pytest.raises(kind, match=r"^grid must be .*" + text.replace("(", r"\(")):
        trainkernel.compile_training(step(), args(), grid=grid, build=False)


def test_grid_zero_is_automatic_and_a_count_is_taken():
    auto = trainkernel.compile_training(step(), args(), build=False)
    forced = trainkernel.compile_training(step(), args(), grid=3, build=False)
    assert auto.meta.grid >= 1 and forced.meta.grid == 3


def test_bad_arch_is_refused_before_any_work():
    with pytest.raises(ValueError, match="invalid CUDA architecture 'sm_xx'"):
        trainkernel.compile_training(lambda *a: pytest.fail("captured"), args(), arch="sm_xx", build=False)


@needs_nvcc
def test_cache_dir_that_is_a_file(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(CacheError, match="is not a directory"):
        trainkernel.compile_training(step(), args(), cache_dir=f)


G = torch.randn(8)  # a global tensor the next step closes over


def _global_step(params, x, y):
    def loss_fn(p):
        out = x @ p[0] @ p[2] + p[3] + G
        return ((out - y) ** 2).mean()

    g, loss = torch.func.grad_and_value(loss_fn)(params)
    return loss, g, tuple(p - 0.1 * gg for p, gg in zip(params, g))


def _randn_step(params, x, y):
    def loss_fn(p):
        out = x @ p[0] @ p[2] + p[3] + torch.randn(8)
        return ((out - y) ** 2).mean()

    g, loss = torch.func.grad_and_value(loss_fn)(params)
    return loss, g, tuple(p - 0.1 * gg for p, gg in zip(params, g))


@pytest.mark.parametrize("how", ["compile_training", "capture"])
@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_closed_over_global_tensor(how, device):
    a = W.example_args(device, torch.float32)
    run = (lambda: trainkernel.compile_training(_global_step, a, build=False)) if how == "compile_training" \
        else (lambda: trainkernel.capture(_global_step, a))
    with pytest.raises(CaptureError) as info:
        run()
    msg = str(info.value)
    assert "_global_step uses a tensor that is not one of its arguments" in msg
    assert "pass it as part of the state or the batch" in msg
    assert "out = x @ p[0] @ p[2] + p[3] + G" in msg and "test_user_errors.py" in msg
    assert "FakeTensor" not in msg


@pytest.mark.parametrize("how", ["compile_training", "capture"])
@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_random_numbers_inside_the_step(how, device):
    """Under compile_training (meta arguments) this was a FakeTensorDeviceMismatchError;
    now it is the same message `capture` gives on CPU arguments."""
    a = W.example_args(device, torch.float32)
    run = (lambda: trainkernel.compile_training(_randn_step, a, build=False)) if how == "compile_training" \
        else (lambda: trainkernel.capture(_randn_step, a))
    with pytest.raises(UnsupportedOpError, match=r"unsupported op aten\.randn\.default") as info:
        run()
    assert "torch.randn(8)" in str(info.value) and "DeviceMismatch" not in str(info.value)


def test_factory_tensors_inside_a_step_on_meta_arguments_trace():
    """The other side of the same fix: a step that makes a constant tensor
    itself (torch.zeros, torch.full) compiles from meta example arguments."""

    def f(params, x, y):
        def loss_fn(p):
            out = x @ p[0] @ p[2] + p[3] + torch.full((8,), 0.5)
            return ((out - y) ** 2).mean()

        g, loss = torch.func.grad_and_value(loss_fn)(params)
        return loss, g, tuple(p - 0.1 * gg for p, gg in zip(params, g))

    c = trainkernel.compile_training(f, args(), build=False)
    params = W.init_params(seed=0)
    x, y = W.make_batches(1, seed=1)[0]
    got = trainkernel.interpret(c.captured, params, x, y)
    want = f(params, x, y)
    assert torch.equal(got[0], want[0])
