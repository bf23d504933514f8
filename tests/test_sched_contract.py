"""The sched-level verifiers are the printer's contract (issue 12, item 3).

The lit tests in lit_tests/sched/verify-{names,arena,liveness,reads}.mlir pin
every diagnostic; here the rules meet real programs: the issue's reproducer
(two live buffers of the tiny workload moved onto the same bytes: accepted
before, and the sched interpreter then got most outputs wrong), the symbol
name the frontend derives from the step, and the shared identifier helper.
"""

from __future__ import annotations

import itertools
import re

import pytest
import torch
from torch.utils import _pytree as pytree
from xdsl.dialects.builtin import IntAttr
from xdsl.utils.exceptions import VerifyException

import trainkernel
from trainkernel.dialects import sched
from trainkernel.ir import parse_module, print_module
from trainkernel.pipeline import lower
from trainkernel.passes.sched_allocate import live_ranges
from trainkernel.sched_interpreter import run_program
from trainkernel.workloads import WORKLOADS


@pytest.fixture(scope="module")
def tiny_sched():
    w = WORKLOADS["tiny"]
    step = w.make_step("bf16")
    compiled = trainkernel.compile_training(step, w.example_args("meta", torch.bfloat16), build=False)
    return w, step, compiled.ir("sched")


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


def _program(module) -> sched.ProgramOp:
    return next(op for op in module.ops if isinstance(op, sched.ProgramOp))


def test_live_buffers_moved_onto_the_same_bytes_are_rejected(tiny_sched):
    """Issue 12 item 3, first reproducer: every pair of arena buffers with
    overlapping live ranges, one moved onto the other's bytes, is rejected;
    and such programs do compute wrong results (the interpreter's byte arena)."""
    w, step, text = tiny_sched
    params = w.init_params(seed=1)
    ((x, y),) = w.make_batches(1, seed=2, dtype=torch.bfloat16)
    inputs = pytree.tree_leaves((params, x, y))
    want = run_program(_program(parse_module(text)), inputs)
    rejected = wrong = 0
    base = _program(parse_module(text))
    ranges = live_ranges(base)
    buffers = [op for op in base.block.ops if isinstance(op, sched.BufferOp)]
    pairs = [(i, j) for i, j in itertools.permutations(range(len(buffers)), 2)
             if not (ranges[buffers[i].result][1] < ranges[buffers[j].result][0]
                     or ranges[buffers[j].result][1] < ranges[buffers[i].result][0])]
    assert len(pairs) >= 4
    for i, j in pairs:
        module = parse_module(text)
        bufs = [op for op in _program(module).block.ops if isinstance(op, sched.BufferOp)]
        if bufs[i].offset_value == bufs[j].offset_value:
            continue
        bufs[j].properties["offset"] = IntAttr(bufs[i].offset_value)
        if sched.nbytes(bufs[j].result.type) + bufs[i].offset_value > _program(module).arena_bytes.data:
            _program(module).properties["arena_bytes"] = IntAttr(bufs[i].offset_value + 2 ** 20)
        with pytest.raises(VerifyException, match="overlap while both are live"):
            module.verify()
        rejected += 1
        got = run_program(_program(module), inputs)
        wrong += any(not _same_bits(g, e) for g, e in zip(got, want))
    assert rejected >= 4 and wrong >= 1


def test_unallocated_arena_with_offsets_is_rejected(tiny_sched):
    _, _, text = tiny_sched
    module = parse_module(text)
    _program(module).properties["arena_bytes"] = IntAttr(-1)
    with pytest.raises(VerifyException, match=r"arena -1 \(not allocated\) but a sched.buffer has offset"):
        module.verify()


@pytest.mark.parametrize("name, ok", [
    ("step", True), ("_a1", True), ("A_b_C", True),
    ("", False), ("1a", False), ("a.b", False), ("a$b", False), ("a b", False), ("a\nb", False), ("é", False),
])
def test_check_c_identifier(name, ok):
    if ok:
        sched.check_c_identifier("name", name)
    else:
        with pytest.raises(VerifyException, match="is not a C identifier"):
            sched.check_c_identifier("name", name)


def test_the_kernel_name_derived_from_the_step_is_a_c_identifier():
    """The frontend used to keep `.` and `$` of a step's __name__ in the
    symbol name, which the printer pastes into `tk_<name>_kernel`."""
    w = WORKLOADS["tiny"]
    step = w.make_step("f32")

    def renamed(*args):
        return step(*args)

    renamed.__name__ = "my.step$v2"
    captured = trainkernel.capture(renamed, w.example_args("meta", torch.float32))
    assert captured.name == "my_step_v2"
    lowered = lower(captured)
    assert lowered.kernel_name == "tk_my_step_v2_kernel"
    assert re.search(r"tk_my_step_v2_kernel\((const __grid_constant__ )?TkParams p\)", lowered.cuda_source)
    assert print_module(parse_module(lowered.stages["tile"])) == lowered.stages["tile"]
