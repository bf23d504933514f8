"""The development timer (`cuda_target.PHASE_TIMER`, `resident_probe --timer`):
a resident kernel reads the clock after its prologue and after every tile op,
a grid kernel after every grid barrier plus one at exit, and both still build."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import torch

import trainkernel
from trainkernel.backend import cuda_target
from trainkernel.backend.build import include_dir
from trainkernel.workloads import WORKLOADS


def _source(monkeypatch, name: str) -> str:
    monkeypatch.setattr(cuda_target, "PHASE_TIMER", True)
    w = WORKLOADS[name]
    return trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source


def test_grid_kernel_reads_the_clock_after_every_grid_barrier(monkeypatch, tmp_path):
    src = _source(monkeypatch, "small")
    assert "resident" not in src[:400], "small is a grid kernel (its working set exceeds a cluster)"
    barriers = src.count("tk::grid_sync();")
    body_barriers = barriers - 1  # the timer's own barrier at exit
    assert src.count("= clock64();") == barriers + 1  # the start, then one per barrier
    assert f"tk_t[{body_barriers + 1}] = clock64();" in src
    fields = " ".join(f"p{i}=%lld" for i in range(body_barriers + 1))
    assert f'printf("tk-timer small_sgd_bf16 grid %d {fields} ns=%llu at=%llu\\n"' in src  # wall ns too
    _compiles(src, tmp_path)


def test_resident_kernel_reads_the_clock_after_every_tile_op(monkeypatch, tmp_path):
    src = _source(monkeypatch, "tiny")
    assert "resident" in src[:400]
    assert 'printf("tk-timer tiny_sgd_bf16 prologue=%lld' in src
    _compiles(src, tmp_path)


def test_a_long_op_list_prints_in_lines_within_printf_limit(monkeypatch, tmp_path):
    """CUDA's printf takes at most 32 arguments: the AdamW + cross-entropy twin's resident
    kernel times more ops than that, so its values go out in lines of 30 (every op timed once)."""
    import re
    from trainkernel.workloads import TWINS

    monkeypatch.setattr(cuda_target, "PHASE_TIMER", True)
    w = TWINS["classification-adamw-ce"]
    src = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source
    assert "resident" in src[:400]
    lines = [ln for ln in src.splitlines() if 'printf("tk-timer' in ln]
    assert len(lines) >= 2
    timed = []
    for ln in lines:
        args = re.search(r'\\n", (.*)\);$', ln).group(1).split(", ")
        assert 1 <= len(args) <= cuda_target.TIMER_VALUES_PER_LINE < 32
        timed += [int(re.match(r"tk_t\[(\d+)\]", a).group(1)) for a in args]
    assert timed == list(range(1, len(timed) + 1))  # every interval once, in order
    assert src.count("= clock64();") == len(timed) + 1
    _compiles(src, tmp_path)


def test_op_timer_records_each_grid_ops_slowest_block(monkeypatch, tmp_path):
    """OP_TIMER (`resident_probe --op-timer`): after every tile op of a grid kernel, a
    block that ran items of it (its first item (block - offset) mod G below items)
    folds its cycles since its phase's start into the op's maximum; block 0 prints
    every op's label and maximum at exit and clears them for the next launch."""
    import re

    monkeypatch.setattr(cuda_target, "OP_TIMER", True)
    w = WORKLOADS["small"]
    compiled = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False)
    src = compiled.cuda_source
    ops = re.findall(r"tile\.(gemm|reduce|map) .*items = (\d+) : i64, offset = (\d+) : i64", compiled.ir("tile"))
    assert ops and f"__device__ unsigned long long tk_op_max[{len(ops)}];" in src
    for i, (_, items, offset) in enumerate(ops):
        assert (f"if (threadIdx.x == 0 && (int)((blockIdx.x + G - {offset} % G) % G) < {items}) "
                f"atomicMax(&tk_op_max[{i}], (unsigned long long)(clock64() - tk_ph));") in src
    assert src.count("tk_ph = clock64();") == 1 + src.count("// ---- phase") - 1  # the start, then each barrier
    labels = re.findall(r"(p\d+:\w+@\d+x\d+)=%llu", " ".join(ln for ln in src.splitlines() if "tk-optimer" in ln))
    assert [lab.split(":")[1].split("@")[0] for lab in labels] == [kind for kind, _, _ in ops]
    # cleared after a block barrier: run o1 of the ninth session printed zeros for every op
    # past 31, which warp 1 had cleared while thread 0 was still printing
    tail = src[src.rindex('printf("tk-optimer'):]
    assert tail.index("__syncthreads();") < tail.index(
        f"for (int i = threadIdx.x; blockIdx.x == 0 && i < {len(ops)}; i += blockDim.x) tk_op_max[i] = 0;")
    _compiles(src, tmp_path)


def test_timer_off_reads_no_clock():
    w = WORKLOADS["small"]
    src = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source
    assert "clock64" not in src and "tk-timer" not in src and "tk_op_max" not in src


def _compiles(src: str, tmp_path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    cu = tmp_path / "k.cu"
    cu.write_text(src)
    proc = subprocess.run([nvcc, "-std=c++17", "-arch=sm_90", "-O3", "-I", str(include_dir()), "-c", str(cu),
                           "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_probe_target_variants_read_fields_as_the_call_script_spells_them():
    """`TARGET_VARIANTS="| resident_map_unroll=16"` reaches target_variant with spaces
    around the field (run r of the fifth session failed on ' resident_map_unroll')."""
    import dataclasses

    from benchmarks.resident_probe import target_variant
    from trainkernel import target

    assert target_variant(" resident_map_unroll=16").resident_map_unroll == 16
    assert target_variant(" wgmma_tiles_n = 64,128 ; resident_map_unroll=4 ").wgmma_tiles_n == (64, 128)
    assert target_variant(" ") == dataclasses.replace(target.H200)
    # input_casts and sink_sources are the pipeline's switches (the probe sets them), not target fields
    assert target_variant(" grid_carried_casts=1;input_casts=1;sink_sources=1") == dataclasses.replace(
        target.H200, grid_carried_casts=True)


def test_probe_variants_keep_the_caller_s_nvcc_flags(monkeypatch):
    """probe-knobs sets NVCC_APPEND_FLAGS around the probe; a variant's own flags
    (" +-D...") go after them, never instead (runs ee817c5-h100-k and
    fafdb94-h100-o built every knob set without its flags: perf-log step 95)."""
    import benchmarks.resident_probe as probe

    monkeypatch.setattr(probe, "CALLER_FLAGS", "-DTK_SPLITK_ACQ_REL=1")
    assert probe.nvcc_append_flags("") == "-DTK_SPLITK_ACQ_REL=1"
    assert probe.nvcc_append_flags("-DTK_UNIT_TIMER") == "-DTK_SPLITK_ACQ_REL=1 -DTK_UNIT_TIMER"
    monkeypatch.setattr(probe, "CALLER_FLAGS", "")
    assert probe.nvcc_append_flags("") == "" and probe.nvcc_append_flags("-DX") == "-DX"


@pytest.mark.parametrize("name", ["tiny", "online-adam", "classification-adamw-ce"])
def test_probe_check_feeds_back_the_whole_state_of_any_recipe(name):
    """resident_probe's correctness check runs SGD steps and the Adam twins alike (run r of
    the fifth session died tracing the twins with a parameter tuple for their state): the
    eager step checked against itself on the CPU is exact, and a wrong step is caught."""
    import torch

    from benchmarks.resident_probe import check
    from benchmarks.workloads import WORKLOADS

    w = WORKLOADS[name]
    step = w.make_step(torch.float32)
    assert check(w, torch.float32, step, steps=3, device="cpu") == 0.0

    def off_by_a_little(state, x, y):
        out = step(state, x, y)
        return (out[0] * 1.01, *out[1:])

    assert check(w, torch.float32, off_by_a_little, steps=2, device="cpu") > 1e-3
