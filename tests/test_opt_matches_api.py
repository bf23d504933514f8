"""`trainkernel-opt -p "$PIPELINE" -t cuda` on the captured text prints exactly
what `compile_training` prints, for every workload, in place and staged.

`CompiledTrainingStep.pipeline` is the `-p` string the lowering ran (from
`tk-mark-state-updates{state=N}` to the last tile pass); nothing happens between
capture and `.cu` outside it. CPU only: `compile_training(..., build=False)`
captures and lowers without nvcc or a GPU.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest

import trainkernel
from trainkernel.api import compile_training
from trainkernel.pipeline import pass_pipeline, state_leaves
from trainkernel.tools import opt
from trainkernel.workloads import WORKLOADS, parse_dtype

DTYPE = "bf16"


@functools.cache
def compiled(name: str, inplace: bool):
    w = WORKLOADS[name]
    step = w.make_step(DTYPE)
    args = w.example_args("meta", parse_dtype(DTYPE))
    return step, args, compile_training(step, args, inplace=inplace, build=False)


@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "staged"])
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_opt_on_the_captured_text_prints_the_compiled_source(name, inplace, tmp_path):
    step, args, c = compiled(name, inplace)
    assert c.pipeline == pass_pipeline("tile", inplace, state=state_leaves(c.captured))
    assert c.pipeline.startswith(f"tk-mark-state-updates{{state={len(args[0])}}},")
    src = tmp_path / "step.mlir"
    src.write_text(str(trainkernel.capture(step, args)))
    out = tmp_path / "step.cu"
    assert opt.main([str(src), "-p", c.pipeline, "-t", "cuda", "-o", str(out)]) == 0
    assert out.read_text() == c.cuda_source
    # and each stage's IR, too
    for stage in ("tk", "sched", "tile"):
        stage_out = tmp_path / f"{stage}.mlir"
        spec = pass_pipeline(stage, inplace, state=len(args[0]))
        assert opt.main([str(src), "-p", spec, "-o", str(stage_out)]) == 0
        # (the opt driver ends its output with one more newline than print_module)
        assert stage_out.read_text().rstrip("\n") == c.ir(stage).rstrip("\n"), stage


def test_the_command_line_tool_itself(tmp_path):
    """The same through the `trainkernel-opt` program (a subprocess), staged tiny:
    without the state marking (`state=0`) the in-place kernel differs."""
    step, args, c = compiled("tiny", True)
    src = tmp_path / "tiny.mlir"
    src.write_text(str(trainkernel.capture(step, args)))
    run = lambda spec: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "trainkernel.tools.opt", str(src), "-p", spec, "-t", "cuda"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert run(c.pipeline) == c.cuda_source
    unmarked = c.pipeline.replace(f"tk-mark-state-updates{{state={len(args[0])}}}", "tk-mark-state-updates{state=0}")
    assert run(unmarked) != c.cuda_source
