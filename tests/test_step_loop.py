"""Several training steps in one launch (the resident printer's step loop,
`tk_launch_steps`, and `CompiledTrainingStep.capture`, which records one
launch for `steps` steps of an in-place resident kernel).

What the printed loop must do: the kernel calls the step (`tk_step`, not
inlined by default; its buffers' pointers in a shared-memory table) once a step; step s > 0 takes the inputs the kernel never writes
(the batch) from row s of the step table and restages their homes; one
block or a cluster keeps the homes of the state it updates in place (every
update writes its home through when another step follows) unless another
home reuses their bytes; what no later step stages again (outputs, kept
state) only the last step stores to global memory (perf-log step 48). On the
GPU, one launch of K steps gives the bits of K launches."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
import torch.utils._pytree as pytree

import trainkernel
from trainkernel import target
from trainkernel.backend import cuda_target
from trainkernel.workloads import TWINS, WORKLOADS

from _variants import suite_source as _source


def _later_steps(src: str) -> str:
    """The printed block of a step after the first (restaging; the prologue itself where
    every step stages every home)."""
    if "  if (!tk_first) {" not in src:
        return _prologue(src)
    start = src.index("  if (!tk_first) {")
    return src[start: src.index("  } else {", start)]


def _prologue(src: str) -> str:
    first = src[src.index("  // ---- prologue"):]
    return first[: first.index("tk::stage_wait();")]


def _cast_homes(src: str) -> dict[str, int]:
    """home name -> the buffer it holds cast to another type (declared with another
    element type than the buffer's pointer)."""
    types = {name: t for t, name in re.findall(r"\n  ([\w:]+)\* (b\d+)\w* = ", src)}
    homes = dict((name, t) for t, name in re.findall(r"\n  ([\w:]+)\* (s\d+\w*) = \(", src))
    return {h: b for h, b in _homes(src).items() if homes[h] != types[f"b{b}"]}


def _step_inputs(src: str) -> list[int]:
    return [int(v) for v in re.search(r"kStepInputs\[\] = \{([-\d, ]*)\}", src).group(1).split(", ") if v != "-1"]


def _homes(src: str) -> dict[str, int]:
    """home name -> the buffer it is staged from (the first step's prologue)."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"tk::stage_rows\((s\d+\w*), b(\d+)", _prologue(src))}


def test_one_block_restages_only_the_batch_and_keeps_the_state_homes(before_steps_66_68):
    """tiny (one block): x and y come from the step table and are staged again; W1, b1,
    W2, b2 stay on chip, each update writing its home as well as global memory."""
    src = _source("tiny")
    assert "cluster of 1," in src
    later, homes = _later_steps(src), _homes(src)
    inputs = _step_inputs(src)
    assert inputs == [4, 5]  # x, y: the state (0-3) is written in place
    restaged = {int(b) for b in re.findall(r"tk::stage_rows\(s\d+\w*, b(\d+)", later)}
    # The batch, and any cast home (tile.smem_cast, never written through: loaded again
    # from what the previous step stored; none by default, tests/test_stage_casts.py).
    cast_homes = _cast_homes(src)
    assert restaged == set(inputs) | set(cast_homes.values())
    for c, b in enumerate(inputs):
        assert re.search(rf"b{b}\w* = \(\w+\*\)\(tk_in \? tk_in\[{c}\] : tk_buf\[{b}\]\);", src)
    state_homes = {h: b for h, b in homes.items() if b not in inputs and h not in cast_homes}
    assert sorted(state_homes.values()) == [0, 1, 2, 3]
    _assert_kept(src, state_homes)
    assert "static __device__ __noinline__ void tk_step(void* const* tk_in, bool tk_first, bool tk_more) {" in src
    assert "    if (tk_more) __syncthreads();" in src


def _global_stores(src: str) -> list[tuple[str, str]]:
    """(guard, buffer) of every store to a kernel argument in the step."""
    step = src[src.index("void tk_step("): src.index("extern \"C\" __global__")]
    return re.findall(r"\n\s+(if \([^\n]*?\) )?(b\d+)\w*\[[^\n]*\] = ", step)


def _assert_kept(src: str, state_homes: dict[str, int]) -> None:
    """Each state update stores to global memory on the last step and to its home on the
    others (one store an element either way); every other global store is the last
    step's alone."""
    for home, b in state_homes.items():
        stores = re.findall(rf"\n\s+if \((?:rank == 0 && )?!tk_more\) b{b}\w*\[[^\n]*\] = ([^\n]*);"
                            rf"\n\s+if \(tk_more\) {home}\[[^\n]*\] = \1;", src)
        assert stores, f"the update of b{b} does not write its home {home} through"
    stores = _global_stores(src)
    assert stores and all("!tk_more" in guard for guard, _ in stores), stores


def test_the_step_reads_its_pointers_as_the_target_says(before_steps_66_68, monkeypatch):
    """By default the step reads its buffers' pointers from a table in shared memory that
    the kernel fills once from its parameters (before it waits for the previous grid);
    `resident_step_pointers="param"` reads them from the parameters, and
    `resident_step_inline` inlines the step into the loop."""
    src = _source("tiny")
    assert "static __shared__ void* tk_buf[11];" in src
    assert ("  if (threadIdx.x == 0) {\n#pragma unroll\n    for (int i = 0; i < 11; ++i) tk_buf[i] = p.buf[i];\n"
            "  }\n  __syncthreads();\n  tk::wait_prior_grid();\n") in src
    assert "    tk_step(tk_s > 0 ? p.step_inputs + (size_t)tk_s * 2 : nullptr, tk_s == 0, tk_more);" in src
    monkeypatch.setattr(cuda_target, "TARGET", dataclasses.replace(target.DEFAULT, resident_step_pointers="param"))
    param = _source("tiny")
    assert "tk_buf[" not in param.split("static __device__")[0]  # no table
    assert "static __device__ __noinline__ void tk_step(void* const* tk_buf, void* const* tk_in, bool tk_first, " \
           "bool tk_more) {" in param
    assert "    tk_step(p.buf, tk_s > 0 ? p.step_inputs + (size_t)tk_s * 2 : nullptr, tk_s == 0, tk_more);" in param
    monkeypatch.setattr(cuda_target, "TARGET", dataclasses.replace(target.DEFAULT, resident_step_inline=True))
    inline = _source("tiny")
    assert "static __device__ __forceinline__ void tk_step(void* const* tk_in, bool tk_first, bool tk_more) {" in inline
    with pytest.raises(ValueError, match="resident_step_pointers must be param or smem"):
        dataclasses.replace(target.DEFAULT, resident_step_pointers="global")


@pytest.mark.parametrize("name", ["online", "classification"])
def test_a_cluster_keeps_its_state_homes_like_one_block(before_steps_66_68, name):
    """online, classification (clusters of 16 blocks, each updating its slice of the
    weights, the last bias replicated and updated whole by every block): the batch is
    staged again, every state home is kept, and a block barrier ends each step
    (target.step_block_barrier: nothing restaged is written, and each step's first
    DSMEM push waits for the cluster; tests/test_step_barriers.py)."""
    src = _source(name)
    assert re.search(r"cluster of (\d+),", src).group(1) != "1"
    later, homes = _later_steps(src), _homes(src)
    assert set(homes.values()) == {0, 1, 2, 3, 4, 5}
    assert {int(b) for b in re.findall(r"tk::stage_rows\(s\d+\w*, b(\d+)", later)} == {4, 5}
    _assert_kept(src, {h: b for h, b in homes.items() if b < 4})
    assert "    if (tk_more) __syncthreads();" in src


def test_homes_that_share_bytes_are_staged_again(before_steps_66_68, target_fields):
    """online-adam: the beta powers (0-d state, read in phase 0 only) have homes whose
    bytes later phases reuse: they are staged again each step and stored by every step;
    the weights and moments stay on chip. With target.step_loop_on_chip off, a cluster
    restages every home and every step stores everything (as before perf-log step 48)."""
    src = _source("online-adam")
    inputs = _step_inputs(src)
    later, homes = _later_steps(src), _homes(src)
    restaged = {int(b) for b in re.findall(r"tk::stage_rows\(s\d+\w*, b(\d+)", later)}
    powers = restaged - set(inputs)
    assert len(powers) == 2
    guards = {b: g for g, b in _global_stores(src)}
    assert all("!tk_more" not in guards[f"b{b}"] for b in powers)
    assert all("!tk_more" in g for b, g in guards.items() if int(b[1:]) not in powers)
    assert len(set(homes.values()) - restaged) == 12  # p, m, v of W1, b1, W2, b2
    target_fields(step_loop_on_chip=False)
    old = _source("online-adam")
    assert "if (!tk_first)" not in old and "if (tk_more)" not in old.split("extern \"C\" __global__")[0]
    assert "!tk_more" not in old


def test_a_staged_kernel_names_its_state_as_step_inputs():
    """Compiled staged, the kernel never writes its state: every input is a table column
    (the runtime then records one launch a step, since the state must be copied back)."""
    src = _source("tiny", inplace=False)
    assert _step_inputs(src) == [0, 1, 2, 3, 4, 5]


def test_grid_kernels_have_no_step_loop():
    src = _source("small")
    assert "tk_launch_steps" not in src and "tk_step" not in src


def _states_equal(a, b) -> bool:
    return all(torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8))
               for x, y in zip(pytree.tree_leaves(a), pytree.tree_leaves(b)))


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["tiny", "online", "classification", "online-adam", "classification-adamw-ce"])
def test_one_launch_of_k_steps_gives_the_bits_of_k_launches_on_gpu(name):
    """7 steps over 3 resident batches, twice (the second replay continues from the first's
    state): the captured program's one launch and 14 separate calls end in the same bits,
    state and last outputs alike."""
    w = {**WORKLOADS, **TWINS}[name]
    c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16))
    batches = w.make_batches(3, seed=5, device="cuda", dtype=torch.bfloat16)
    looped, called = w.init_state(device="cuda"), w.init_state(device="cuda")
    program = c.capture(looped, *batches[0], steps=7, batches=batches)
    assert program.launches == 1
    program.replay()
    program.replay()
    out = None
    for t in range(14):
        out = c(called, *batches[(t % 7) % 3])
    torch.cuda.synchronize()
    assert _states_equal(looped, called)
    assert _states_equal(tuple(program.outputs)[:-1], tuple(out)[:-1])


@pytest.mark.cuda
def test_staged_and_grid_kernels_record_a_launch_a_step_on_gpu():
    """Where the kernel cannot loop (staged: the new state is copied back after each step;
    a grid kernel), capture records one launch a step, with the same bits as before."""
    for name, inplace in (("tiny", False), ("small", True)):
        w = WORKLOADS[name]
        c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16),
                                         inplace=inplace)
        batches = w.make_batches(2, seed=5, device="cuda", dtype=torch.bfloat16)
        captured, called = w.init_state(device="cuda"), w.init_state(device="cuda")
        program = c.capture(captured, *batches[0], steps=4, batches=batches)
        assert program.launches == 4
        program.replay()
        for t in range(4):
            new = c(called, *batches[t % 2])[-1]
            if not inplace:
                for dst, src in zip(pytree.tree_leaves(called), pytree.tree_leaves(new)):
                    dst.copy_(src)
        torch.cuda.synchronize()
        assert _states_equal(captured, called), name


def test_a_step_without_a_batch_needs_no_step_table():
    """Every input is state (a step that reads nothing else): no table columns, and the
    launcher accepts several steps without a table."""

    def step(state):
        (w,) = state
        loss = (w * w).sum()
        return loss, (w - 0.1 * (2.0 * w),)

    c = trainkernel.compile_training(step, ((torch.randn(8, 16),),), build=False)
    src = c.cuda_source
    assert "cluster of" in src  # resident
    assert _step_inputs(src) == [] and "extern \"C\" int tk_step_inputs() { return 0; }" in src
    assert "tk_step(nullptr, tk_s == 0, tk_more);" in src
    assert "  if (steps < 1) return (int)cudaErrorInvalidValue;" in src
