"""Development probe: resident (one cluster, shared-memory working set) against
grid kernels, TrainKernel alone, with a correctness check against eager first.

Not the benchmark (no baselines: the harness does that); it isolates the effect
of `tile-resident` for docs/perf-log.md. Writes resident_probe.json to $OUT.

    python -m benchmarks.resident_probe [workload[:B,I,H,...,O][:dtype] ...]
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import time

import torch

import trainkernel
from trainkernel import lowering_cache
from trainkernel.dialects.tile import home_pitch as HOME_PITCH  # restored after a `dense` variant
from trainkernel.passes.tk_split_reductions import SplitLongReduction
from trainkernel.workloads import LARGE, TWINS, WORKLOADS

from trainkernel.backend.cuda_target import COLUMN_LOADS  # restored after a `col-loads=` variant
from trainkernel.pipeline import FUSE_INPUT_CASTS, FUSE_MERGE, SINK_SOURCES  # the defaults, unless a variant says

SPLIT = SplitLongReduction.match_and_rewrite  # `--reduce` swaps it for a no-op and back

# The probe swaps compiler functions between variants (home_pitch, the split pass),
# which the lowering cache's key cannot see: every variant lowers afresh.
lowering_cache.ENABLED = False

DEFAULT = ["tiny", "online", "classification", "small", "mlp4",
           "tiny:1,32,64,8", "online:33,100,300,7", "tiny::f32", "online::f16", "classification::f32"]


# The caller's NVCC_APPEND_FLAGS (h200_call.sh probe-knobs' define sets) stay in
# front of each variant's own flags. Until the twenty-seventh session a variant's
# flags replaced them, so probe-knobs built every set without its flags: runs
# ee817c5-h100-k and fafdb94-h100-o measured the library as it is (perf-log step 95).
CALLER_FLAGS = os.environ.get("NVCC_APPEND_FLAGS", "")


def nvcc_append_flags(flags: str) -> str:
    """NVCC_APPEND_FLAGS for a variant's `flags`: the caller's, then the variant's."""
    return " ".join(f for f in (CALLER_FLAGS, flags) if f)


STEPS = 20  # steps of one captured program (a replay)
LOOP_STEPS = 4  # timer_run's loop: its steps 1 and 2 neither stage everything nor store outputs
# Every probe's batches are in the compute dtype, as the harness passes them
# (benchmarks/workloads.make_problem). Before the eighteenth session they were fp32:
# the probed kernels then cast x (and y) to bf16 every step, which the harness's do not.


def workload(spec: str):
    """The workload and compute dtype of `spec`: name[:B,I,H,...,O][:bf16|f16|f32]."""
    name, sizes, dt = (spec.split(":") + ["", ""])[:3]
    w = LARGE if name == "large" else {**WORKLOADS, **TWINS}[name]
    if sizes:
        s = [int(v) for v in sizes.split(",")]
        w = w.with_sizes(s[0], s[1:])
    return w, {"": torch.bfloat16, "bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dt]


def time_program(prog, n: int = 30, steps: int = STEPS) -> tuple[float, list[float]]:
    """Median and samples of µs per step over n replays of a `steps`-step captured program."""
    for _ in range(5):
        prog.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        prog.replay()
        b.record()
        b.synchronize()
        samples.append(a.elapsed_time(b) * 1000 / steps)
    return statistics.median(samples), samples


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def check(w, dtype, compiled, steps: int = 10, device: str = "cuda") -> float:
    """Max relative error of everything the step returns (loss, SGD's gradients, the
    new state) against eager over `steps` steps, the new state fed back each step
    (the parameters of an SGD step, or a twin's whole optimizer state)."""
    from torch.utils import _pytree as pytree

    step = w.make_step(dtype)
    s_tk = pytree.tree_map(torch.clone, w.init_state(0, device))
    s_ref = pytree.tree_map(torch.clone, s_tk)
    batches = w.make_batches(4, seed=1, device=device, dtype=dtype)
    worst = 0.0
    for i in range(steps):
        x, y = batches[i % 4]
        out = compiled(s_tk, x, y)
        out_ref = step(s_ref, x, y)
        got, want = pytree.tree_leaves(out), pytree.tree_leaves(out_ref)
        assert len(got) == len(want), (len(got), len(want))
        worst = max(worst, *(rel(a, b) for a, b in zip(got, want)))
        s_tk, s_ref = out[-1], out_ref[-1]
        if not all(torch.isfinite(t).all() for t in got):
            return float("inf")
    return worst


def capture_matches_calls(w, dtype, compiled, steps: int = STEPS) -> bool:
    """Whether `steps` steps recorded by `capture` (one launch of a step loop, or a
    chain of launches) leave the bits of `steps` plain calls in the state and in
    the last step's other outputs: what `check` cannot see, since it makes plain
    calls."""
    from torch.utils import _pytree as pytree

    batches = w.make_batches(4, seed=1, device="cuda", dtype=dtype)
    s_calls = pytree.tree_map(torch.clone, w.init_state(0, "cuda"))
    for i in range(steps):
        out = compiled(s_calls, *batches[i % 4])
        s_calls = out[-1]
    want = [t.clone() for t in pytree.tree_leaves((s_calls, tuple(out)[:-1]))]
    s_cap = pytree.tree_map(torch.clone, w.init_state(0, "cuda"))
    program = compiled.capture(s_cap, *batches[0], steps=steps, batches=batches)
    program.replay()
    torch.cuda.synchronize()
    got = pytree.tree_leaves((s_cap, tuple(program.outputs)[:-1]))
    return len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))


def timer_run(specs: list[str], flags: str = "", timer: str = "PHASE_TIMER") -> None:
    """Three launches of each step's kernel (resident or grid, as the compiler
    chooses) with per-op (resident) or per-phase (grid) cycle counts printed by block 0.
    A launch of one step is both the loop's first and last step (it stages and casts
    everything, and stores every output to global memory), so a resident kernel is
    then also replayed once as a captured program of LOOP_STEPS steps in one launch:
    each step prints its line, and the middle ones are the step the harness times.
    flags: nvcc defines (--unit-timer: -DTK_UNIT_TIMER, each wgmma unit's cycles too).
    timer: OP_TIMER (--op-timer) for grid kernels' per-op maxima over the blocks instead.
    $TIMER_TARGETS: target variants ('|'-separated, target_variant's form), each
    spec timed under each (the default: the target as it is)."""
    from trainkernel import target
    from trainkernel.backend import cuda_target

    os.environ["NVCC_APPEND_FLAGS"] = nvcc_append_flags(flags)
    setattr(cuda_target, timer, True)
    for variant in os.environ.get("TIMER_TARGETS", "").split("|"):
        target.TARGETS[target.H200.name] = cuda_target.TARGET = target_variant(variant)
        print(f"=== target variant '{variant}'", flush=True)
        timer_specs(specs)
    target.TARGETS[target.H200.name] = cuda_target.TARGET = target.H200
    setattr(cuda_target, timer, False)


def timer_specs(specs: list[str]) -> None:
    """timer_run's launches of each spec under the current target."""
    for spec in specs:
        w, dtype = workload(spec)
        params = w.init_state(0, "cuda")  # the parameters, or a twin's optimizer state
        batches = w.make_batches(1, seed=1, device="cuda", dtype=dtype)
        c = trainkernel.compile_training(w.make_step(dtype), (params, *batches[0]))
        for _ in range(3):
            c(params, *batches[0])
        torch.cuda.synchronize()
        if "void tk_step(" in c.cuda_source:  # resident: the loop's steps
            print(f"--- {spec}: timer, {LOOP_STEPS} steps in one launch", flush=True)
            prog = c.capture(params, *batches[0], warmup=0, steps=LOOP_STEPS)
            assert prog.launches == 1
            prog.replay()
            torch.cuda.synchronize()
            print(f"--- {spec}: timer end", flush=True)


def launch_run(specs: list[str], widths: tuple[str, ...] = ("128", "256")) -> None:
    """Why a kernel can be slower in an in-place graph than alone: per spec and
    wgmma tile width, the in-place step timed as a 20-step graph, as 20 direct
    launches, compiled with inplace=False as a graph (kernel + state copy, and
    back to back without the copy), and with a final grid barrier; then the
    phase timer's cycles and wall ns, printed by block 0, for direct
    launches and for every step of one in-place graph replay."""
    from trainkernel import target
    from trainkernel.backend import cuda_target

    out = os.environ.get("OUT", "/tmp")
    results, rows = {}, []
    for spec in specs:
        w, dtype = workload(spec)
        for width in widths:
            key = f"{spec}/wgmma-n={width}"

            def h200(final: str) -> None:  # the H200 at this width, ending grid kernels as `final` says
                target.TARGETS[target.H200.name] = dataclasses.replace(
                    target.H200, wgmma_tiles_n=(int(width),), final_grid_sync=final)

            h200("never")
            try:
                params = w.init_params(0, "cuda")
                batches = w.make_batches(4, seed=1, device="cuda", dtype=dtype)
                c = trainkernel.compile_training(w.make_step(dtype), (params, *batches[0]))
                err = check(w, dtype, c)
                graph_us, graph_s = time_program(c.capture(params, *batches[0], steps=STEPS, batches=batches))
                direct_s = []
                for rep in range(33):
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    for i in range(STEPS):
                        c(params, *batches[i % 4])
                    b.record()
                    b.synchronize()
                    if rep >= 3:
                        direct_s.append(a.elapsed_time(b) * 1000 / STEPS)
                staged = trainkernel.compile_training(w.make_step(dtype), (params, *batches[0]), inplace=False)
                staged_us, staged_s = time_program(staged.capture(params, *batches[0], steps=STEPS, batches=batches))
                # the staged kernel back to back: no state copy between launches
                nofeed_us, nofeed_s = time_program(staged.capture(params, *batches[0], steps=STEPS, batches=batches,
                                                                  feed_back=False))
                h200("always")
                fin = trainkernel.compile_training(w.make_step(dtype), (params, *batches[0]))
                fin_err = check(w, dtype, fin)
                fin_us, fin_s = time_program(fin.capture(params, *batches[0], steps=STEPS, batches=batches))
                h200("never")
                cuda_target.PHASE_TIMER = True
                try:
                    timed = trainkernel.compile_training(w.make_step(dtype), (params, *batches[0]))
                    print(f"--- {key}: timer, 3 direct launches", flush=True)
                    for i in range(3):
                        timed(params, *batches[i % 4])
                    torch.cuda.synchronize()
                    prog = timed.capture(params, *batches[0], steps=STEPS, batches=batches)
                    torch.cuda.synchronize()
                    print(f"--- {key}: timer, one in-place graph replay ({STEPS} steps)", flush=True)
                    prog.replay()
                    torch.cuda.synchronize()
                    print(f"--- {key}: timer end", flush=True)
                    timer_us, timer_s = time_program(prog, n=5)
                finally:
                    cuda_target.PHASE_TIMER = False
                results[key] = {"max_rel_err": err, "graph_us": graph_us, "graph_samples": graph_s,
                                "direct_us": statistics.median(direct_s), "direct_samples": direct_s,
                                "staged_graph_us": staged_us, "staged_samples": staged_s,
                                "staged_no_feedback_us": nofeed_us, "staged_no_feedback_samples": nofeed_s,
                                "final_sync_err": fin_err, "final_sync_graph_us": fin_us, "final_sync_samples": fin_s,
                                "timer_graph_us": timer_us, "timer_samples": timer_s}
                rows.append(f"{key:22s} err {err:.1e} graph {graph_us:7.1f} direct {statistics.median(direct_s):7.1f}"
                            f" staged {staged_us:7.1f} staged-nofeed {nofeed_us:7.1f} final-sync {fin_us:7.1f}"
                            f" (err {fin_err:.1e}) timer-build {timer_us:7.1f} us/step")
                print(rows[-1], flush=True)
            except Exception as e:  # a probe: report and go on
                results[key] = {"error": repr(e)[:2000]}
                rows.append(f"{key:28s} ERROR {repr(e)[:300]}")
                print(rows[-1], flush=True)
            json.dump(results, open(f"{out}/launch_probe.json", "w"), indent=1)
    target.TARGETS[target.H200.name] = target.H200
    print("\n".join(["", "=== launch probe ==="] + rows))


def target_variant(spec: str):
    """The H200 target with the fields of `spec` replaced: `field=v[,v...]` joined by `;`
    (an empty spec is the target as it is); `costs.field=v` replaces a field of a
    cost object (e.g. `resident_costs.smem_budget=225280`). Values take the field's
    type: an int, a float, a string, or a tuple of ints."""
    from trainkernel import target

    def parse(old, value: str):
        if isinstance(old, tuple):
            return tuple(int(v) for v in value.split(","))
        return type(old)(value) if not isinstance(old, bool) else value in ("1", "true", "True")

    changes, nested = {}, {}
    for item in filter(None, spec.split(";")):
        name, _, value = (part.strip() for part in item.partition("="))  # "| field=v" has spaces
        if not name or name in ("input_casts", "sink_sources"):  # the pipeline's, not the target's (the caller sets them)
            continue
        outer, _, inner = name.partition(".")
        if inner:
            nested.setdefault(outer, {})[inner] = parse(getattr(getattr(target.H200, outer), inner), value)
        else:
            changes[name] = parse(getattr(target.H200, name), value)
    for outer, fields in nested.items():
        changes[outer] = dataclasses.replace(getattr(target.H200, outer), **fields)
    return dataclasses.replace(target.H200, **changes)


# Device-library variants (`--variants`): a name and the nvcc defines that
# select it; the build cache keys on NVCC_APPEND_FLAGS, so each builds apart.
VARIANTS = {"auto": "", "scalar-gemm": "-DTK_RESIDENT_SCALAR_GEMM"}
# Threads per block of the resident kernels (`--threads 128,256,512`): the
# target's resident_threads replaced, to measure what it should be.


def main(specs: list[str], modes: tuple[str, ...] = ("auto", "off"), variants: dict[str, str] | None = None) -> None:
    out = os.environ.get("OUT", "/tmp")
    results = {}
    rows = []
    configs = [(m, m, "") for m in modes] if variants is None else [(v, "auto", f) for v, f in variants.items()]
    for spec in specs:
        w, dtype = workload(spec)
        for label, mode, flags in configs:
            key = f"{spec}/{label}"
            os.environ["NVCC_APPEND_FLAGS"] = nvcc_append_flags(flags)
            if label in ("padded", "dense"):
                from trainkernel.dialects import tile

                tile.home_pitch = HOME_PITCH if label == "padded" else (lambda t, split, cluster: None)
            if label in ("split", "unsplit"):  # grid reductions of 2026-12-01 evening, or as before them
                from trainkernel import target
                from trainkernel.passes import tk_split_reductions as tsr

                target.TARGETS[target.H200.name] = dataclasses.replace(
                    target.H200, reduce_columns=32 if label == "split" else target.H200.threads)
                tsr.SplitLongReduction.match_and_rewrite = SPLIT if label == "split" else (lambda self, op, rw: None)
            if label.startswith("tiles="):  # grid kernels' bf16/f16 gemm tile and block size: tiles=BMxBN/threads
                from trainkernel import target

                shape, threads = label[6:].split("/")
                bm, bn = (int(v) for v in shape.split("x"))
                tiles = tuple((k, (bm, bn, 32) if k != "simt.f32" else t) for k, t in target.H200.gemm_tiles)
                target.TARGETS[target.H200.name] = dataclasses.replace(target.H200, threads=int(threads), gemm_tiles=tiles)
            if label in ("ksplit", "no-ksplit"):  # split-K in grid kernels, or every gemm whole
                from trainkernel import target

                target.TARGETS[target.H200.name] = dataclasses.replace(
                    target.H200, max_ksplit=target.DEFAULT.max_ksplit if label == "ksplit" else 1)
            if label in ("pdl", "no-pdl"):  # resident kernels launched programmatically or not
                from trainkernel import target
                from trainkernel.backend import cuda_target

                cuda_target.TARGET = dataclasses.replace(target.DEFAULT, programmatic_launch=label == "pdl")
            if label.startswith("wgmma-maps="):  # the h200 target with another wgmma_map_elems_per_thread
                from trainkernel import target

                target.TARGETS[target.H200.name] = dataclasses.replace(
                    target.H200, wgmma_map_elems_per_thread=int(label[11:]))
            if label in ("staged", "default"):  # the h200 target and printer as they are
                from trainkernel import target
                from trainkernel.backend import cuda_target

                target.TARGETS[target.H200.name] = target.H200
                cuda_target.COLUMN_LOADS = COLUMN_LOADS
            if label.startswith("wgmma-n="):  # the wgmma tile widths sched-to-tile may choose from
                from trainkernel import target

                target.TARGETS[target.H200.name] = dataclasses.replace(
                    target.H200, wgmma_tiles_n=tuple(int(v) for v in label[8:].split(",")))
            if label.startswith("full-loads="):  # full reductions' loads in flight (target.full_reduce_loads)
                from trainkernel import target
                from trainkernel.backend import cuda_target

                target.TARGETS[target.H200.name] = dataclasses.replace(target.H200, full_reduce_loads=int(label[11:]))
                cuda_target.TARGET = target.TARGETS[target.H200.name]
            if label.startswith("col-loads="):  # column reductions' loads in flight a thread
                from trainkernel import target
                from trainkernel.backend import cuda_target

                target.TARGETS[target.H200.name] = target.H200
                cuda_target.COLUMN_LOADS = int(label[10:])
            if label.startswith("final="):  # how grid kernels end: target.final_grid_sync never|wide|always
                from trainkernel import target
                from trainkernel.backend import cuda_target

                cuda_target.FINAL_FENCE = False
                target.TARGETS[target.H200.name] = dataclasses.replace(target.H200, final_grid_sync=label[6:])
            if label == "fence":  # no final grid barrier; each block fences its stores before it exits
                from trainkernel import target
                from trainkernel.backend import cuda_target

                cuda_target.FINAL_FENCE = True
                target.TARGETS[target.H200.name] = dataclasses.replace(target.H200, final_grid_sync="never")
            if label.startswith("target:"):  # --target: the h200 target with fields replaced (target_variant)
                from trainkernel import target
                from trainkernel.backend import cuda_target

                target.TARGETS[target.H200.name] = target_variant(label[7:].partition(" +")[0])
                cuda_target.TARGET = target.TARGETS[target.H200.name]  # the resident printer's fields too
            from trainkernel import pipeline  # tk-fuse: merge=MODE[+casts|+nocasts], else the pipeline's defaults

            merge, casts = label[6:].partition("+")[::2] if label.startswith("merge=") else (FUSE_MERGE, "")
            pipeline.FUSE_MERGE = merge
            pipeline.FUSE_INPUT_CASTS = {"casts": True, "nocasts": False}.get(casts, FUSE_INPUT_CASTS)
            # A target variant may set the pipeline's switches too: tk-fuse's input_casts, tk-to-sched's sink_sources.
            if label.startswith("target:") and "input_casts=1" in label:
                pipeline.FUSE_INPUT_CASTS = True
            pipeline.SINK_SOURCES = SINK_SOURCES or (label.startswith("target:") and "sink_sources=1" in label)
            if label.startswith("threads="):  # the h200 target with another resident_threads
                from trainkernel import target

                target.TARGETS[target.H200.name] = dataclasses.replace(target.H200, resident_threads=int(label[8:]))
            try:
                t0 = time.perf_counter()
                params = w.init_state(0, "cuda")  # the parameters, or a twin's optimizer state
                batches = w.make_batches(4, seed=1, device="cuda", dtype=dtype)
                engine = label if label in ("wgmma", "mma") else "auto"  # --engine: the grid kernels' gemm engine
                c = trainkernel.compile_training(w.make_step(dtype), (params, *batches[0]), resident=mode,
                                                 gemm_engine=engine)
                compile_s = time.perf_counter() - t0
                err = check(w, dtype, c)
                same = capture_matches_calls(w, dtype, c)
                prog = c.capture(params, *batches[0], steps=STEPS, batches=batches)
                med, samples = time_program(prog)
                cluster = "grid" if c.meta.grid_barriers or "resident" not in c.cuda_source[:400] else c.meta.grid
                results[key] = {"median_us": med, "samples": samples, "max_rel_err": err, "compile_s": compile_s,
                                "grid": c.meta.grid, "smem": c.meta.smem_bytes, "resident": "resident" in c.cuda_source[:400],
                                "capture_matches_calls": same, "nvcc_append_flags": os.environ["NVCC_APPEND_FLAGS"]}
                built_with = f"  nvcc +{os.environ['NVCC_APPEND_FLAGS']}" if os.environ["NVCC_APPEND_FLAGS"] else ""
                rows.append(f"{spec:28s} {label:11s} {str(cluster):>5s} smem {c.meta.smem_bytes:7d}  {med:8.2f} us/step  "
                            f"err {err:.2e}  capture {'=' if same else '!= (WRONG)'} calls{built_with}")
            except Exception as e:  # a probe: report and go on
                results[key] = {"error": repr(e)[:2000]}
                rows.append(f"{spec:28s} {label:11s} ERROR {repr(e)[:300]}")
            print(rows[-1], flush=True)
            json.dump(results, open(f"{out}/resident_probe.json", "w"), indent=1)
    print("\n".join(["", "=== resident probe ==="] + rows))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--timer"]:
        timer_run(sys.argv[2:] or DEFAULT)
    elif sys.argv[1:2] == ["--op-timer"]:  # grid kernels: each tile op's slowest block, cycles from its phase's start
        timer_run(sys.argv[2:] or ["mlp4", "mlp4-adamw-ce", "medium", "large"], timer="OP_TIMER")
    elif sys.argv[1:2] == ["--unit-timer"]:  # the phase timer, and block 0's cycles of each wgmma unit
        timer_run(sys.argv[2:] or ["small", "mlp4"], "-DTK_UNIT_TIMER")
    elif sys.argv[1:2] == ["--launch"]:  # in-place graph against direct launches and a staged graph, per tile width
        launch_run(sys.argv[2:] or ["medium", "large"], tuple(os.environ.get("LAUNCH_WIDTHS", "128,256").split(",")))
    elif sys.argv[1:2] == ["--final"]:  # how grid kernels end: a final grid barrier (per target rule), none, a fence
        main(sys.argv[2:] or ["small", "mlp4", "medium", "large"],
             variants={"final=wide": "", "final=never": "", "fence": "", "final=always": ""})
    elif sys.argv[1:2] == ["--pitch"]:  # padded homes (tile.home_pitch) against dense ones, one run
        main(sys.argv[2:] or DEFAULT, variants={"padded": "", "dense": ""})
    elif sys.argv[1:2] == ["--reduce"]:  # sliced column sums + split long reductions against neither, one run
        main(sys.argv[2:] or ["small", "mlp4", "medium"], variants={"split": "", "unsplit": ""})
    elif sys.argv[1:2] == ["--tiles"]:  # grid kernels' gemm tiles and threads, one run
        main(sys.argv[2:] or ["small", "mlp4", "medium", "large"],
             variants={f"tiles={t}": "" for t in ("64x64/128", "128x64/256", "128x128/256")})
    elif sys.argv[1:2] == ["--engine"]:  # the wgmma gemm engine against mma.sync tiles, one run
        main(sys.argv[2:] or ["small", "mlp4", "medium", "large"], variants={"wgmma": "", "mma": ""})
    elif sys.argv[1:2] == ["--ksplit"]:  # split-K against whole-K gemms, one run
        main(sys.argv[2:] or ["small", "mlp4", "medium"], variants={"ksplit": "", "no-ksplit": ""})
    elif sys.argv[1:2] == ["--pdl"]:  # programmatic dependent launch against plain stream order, one run
        main(sys.argv[2:] or DEFAULT, variants={"pdl": "", "no-pdl": ""})
    elif sys.argv[1:2] == ["--epilogue"]:  # staged gemm epilogues against inline loads; map items of 8 elements
        main(sys.argv[2:] or ["small", "mlp4", "medium", "large"],
             variants={"staged": "", "inline": "-DTK_EPILOGUE_LOADS_INLINE", "wgmma-maps=8": ""})
    elif sys.argv[1:2] == ["--wide"]:  # 128 x 256 wgmma tiles where the cost model picks them; column loads
        main(sys.argv[2:] or ["small", "mlp4", "medium", "large"],
             variants={"default": "", "wgmma-n=128": "", "col-loads=1": ""})
    elif sys.argv[1:2] == ["--full-loads"]:  # full reductions (the loss sum) one load at a time against 16
        main(sys.argv[2:] or ["small", "mlp4", "medium"], variants={"full-loads=1": "", "full-loads=16": ""})
    elif sys.argv[1:2] == ["--col-loads"]:  # --col-loads 16,32 spec ...: column sums' loads in flight a thread
        main(sys.argv[3:] or ["medium", "large"], variants={f"col-loads={n}": "" for n in sys.argv[2].split(",")})
    elif sys.argv[1:2] == ["--target"]:  # --target 'field=v;field=v' ... -- spec ...: target variants, one run
        rest = sys.argv[2:]
        cut = rest.index("--") if "--" in rest else len(rest)
        # A variant may end in " +FLAGS": nvcc defines of the device library (e.g. +-DTK_NO_TENSORMAP_PREFETCH).
        main(rest[cut + 1:] or ["small", "mlp4"], variants={f"target:{v}": v.partition(" +")[2] for v in rest[:cut] or [""]})
    elif sys.argv[1:2] == ["--threads"]:
        main(sys.argv[3:] or DEFAULT, variants={f"threads={n}": "" for n in sys.argv[2].split(",")})
    elif sys.argv[1:2] == ["--merge"]:  # --merge none,maps,maps+casts spec ...: tk-fuse's merge modes (+casts/+nocasts: input_casts)
        main(sys.argv[3:] or ["online-adam", "classification-adamw-ce", "mlp4-adamw-ce"],
             variants={f"merge={m}": "" for m in sys.argv[2].split(",")})
    elif sys.argv[1:2] == ["--variants"]:
        main(sys.argv[2:] or DEFAULT, variants=VARIANTS)
    elif sys.argv[1:2] == ["--auto"]:
        main(sys.argv[2:] or DEFAULT, modes=("auto",))
    else:
        main(sys.argv[1:] or DEFAULT)
