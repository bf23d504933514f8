"""Training-loop benchmark: TrainKernel against eager PyTorch and Inductor.

    python -m benchmarks.train_loop                     # the whole suite, H200
    python -m benchmarks.train_loop --workloads tiny,online --methods eager-graph,trainkernel

Implements the measurement protocol of DESIGN.md ("what faster means here"):
per-step time of a complete training step (forward, loss, backward, optimizer
update, state written back), captured as ONE CUDA graph of 20 steps with state
feedback (each step's new state feeds the next) over 4 resident batches
(step i uses batch i % 4), CUDA events around each replay, warm-up first, at
least 30 replays, per-step time = replay time / 20, raw samples kept. Every
method is first checked against a float64 reference over a 100-step
trajectory and over one replay of the very graph that is timed
(``benchmarks/correctness.py`` has the tolerance policy). A failing method
stays in the table, marked failed, and is never the baseline.

The twins (AdamW + cross-entropy of classification and mlp4, Adam of online)
run the same model with another recipe; each twin's speedup is divided by its
SGD/MSE twin's of the same run (``twins`` in the JSON: it should keep >= 90%).
``--workloads classification --twins`` runs a workload with its twins.

Writes ``results/h200/train_loop.json`` and, from it, ``results/h200/README.md``
and ``results/h200/train_loop.png`` (``benchmarks/report.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import torch

from . import correctness as C
from . import stats
from torch.utils import _pytree as pytree
from trainkernel.passes.tk_fuse import MERGE_MODES

from .workloads import (
    StepFn,
    Workload,
    dtype_name,
    get_workloads,
    make_problem,
    parse_dtype,
    quantity_names,
    reference_step,
    workload_step,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "results" / "h200" / "train_loop.json"
SCHEMA = "trainkernel.benchmarks.train_loop/1"

GRAPH_STEPS = 20
RESIDENT_BATCHES = 4
TRAJECTORY_STEPS = 100
MIN_REPLAYS = 30
WARMUP_REPLAYS = 5
CAPTURE_WARMUP_ITERS = 2
SUITE_BUDGET_S = 600  # uncaptured 20-step loops before capture (compiles lazy paths)

NEEDS_GPU = (
    "{prog}: needs a CUDA GPU: torch.cuda.is_available() is False on this machine "
    "(torch {torch}, built with CUDA {cuda}). The harness times CUDA graphs with CUDA events; run it "
    "on the GPU machine. Its unit tests (tests/test_benchmark_harness.py) run on CPU; "
    "--cpu-smoke exercises the harness on CPU without measuring anything."
)


# --------------------------------------------------------------------------- methods


@dataclasses.dataclass
class BuildContext:
    workload: Workload
    step: StepFn
    example_args: tuple  # (state, x, y) on the device; never mutated by builders
    compute_dtype: torch.dtype
    cache_root: Path
    device: torch.device


@dataclasses.dataclass
class Built:
    fn: StepFn
    compile_seconds: Optional[dict] = None
    before_call: Optional[Callable[[], None]] = None
    notes: List[str] = dataclasses.field(default_factory=list)
    # The timed loop, where the method records its own program instead of our
    # graph of `fn` calls: (state0, batches, graph_steps) -> a StepLoop-like object.
    make_loop: Optional[Callable] = None


@dataclasses.dataclass
class Method:
    name: str
    family: str  # "trainkernel" or "baseline"
    timing: str  # "graph": captured in our 20-step CUDA graph; "calls": 20 Python calls timed
    build: Callable[[BuildContext], Built]
    description: str


def _clone_state(state):
    return pytree.tree_map(lambda t: t.detach().clone(), state)


def _clone_args(args: tuple) -> tuple:
    state, *rest = args
    return (_clone_state(state), *rest)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _build_eager(ctx: BuildContext) -> Built:
    return Built(ctx.step)


@contextlib.contextmanager
def _inductor_cache(directory: Path):
    """A private Inductor (and Triton) on-disk cache with the in-memory caches
    cleared on entry and exit, so that the first compile in it is cold."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir
    except ImportError:  # older torch: do it by hand
        temporary_cache_dir = None
    if temporary_cache_dir is not None:
        with temporary_cache_dir(str(directory)):
            yield
        return
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(directory)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old


def _owning_outputs(fn: Callable) -> Callable:
    """reduce-overhead replays its own CUDA graphs and hands out outputs that the
    next replay overwrites; a training loop that feeds the new state back must
    mark each step and keep its own copy (what a user has to do; counted in the
    method's time)."""
    from torch.utils import _pytree as pytree

    def step(*args):
        torch.compiler.cudagraph_mark_step_begin()
        out = fn(*args)
        return pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, out)

    return step


def _build_inductor(mode: str) -> Callable[[BuildContext], Built]:
    def build(ctx: BuildContext) -> Built:
        from torch import _dynamo

        notes: List[str] = []
        cache = ctx.cache_root / f"inductor-{ctx.workload.name}-{mode}"

        def compile_once(fullgraph: bool):
            _dynamo.reset()
            fn = torch.compile(ctx.step, mode=mode, fullgraph=fullgraph, dynamic=False)
            args = _clone_args(ctx.example_args)
            _sync(ctx.device)
            t0 = time.perf_counter()
            fn(*args)  # the first call traces, compiles (and autotunes)
            _sync(ctx.device)
            return fn, time.perf_counter() - t0

        fullgraph = True
        with _inductor_cache(cache):
            try:
                fn, cold = compile_once(True)
            except Exception as exc:  # graph break: what a user gets without fullgraph
                notes.append(f"fullgraph=True failed ({type(exc).__name__}: {str(exc)[:200]}); compiled with graph breaks")
                fullgraph = False
                fn, cold = compile_once(False)
        with _inductor_cache(cache):  # same on-disk cache, in-memory caches cleared: warm
            fn, warm = compile_once(fullgraph)
        if mode == "reduce-overhead":
            fn = _owning_outputs(fn)
        return Built(fn, {"cold": cold, "warm": warm,
                          "measured": "wall time of the first call: Dynamo trace + Inductor + Triton compile"
                                      + (" + GEMM autotuning" if "max-autotune" in mode else ""),
                          "fullgraph": fullgraph}, notes=notes)

    return build


def _build_trainkernel(inplace: bool, one_launch: bool = False) -> Callable[[BuildContext], Built]:
    def build(ctx: BuildContext) -> Built:
        import trainkernel  # lazily: the harness works without the compiler

        variant = ("inplace" if inplace else "staged") + ("-capture" if one_launch else "")
        cache = ctx.cache_root / f"trainkernel-{ctx.workload.name}-{variant}"
        cache.mkdir(parents=True, exist_ok=True)
        walls, reported = [], []
        compiled = None
        for _ in ("cold", "warm"):
            _sync(ctx.device)
            t0 = time.perf_counter()
            compiled = trainkernel.compile_training(ctx.step, _clone_args(ctx.example_args),
                                                    inplace=inplace, cache_dir=str(cache))
            _sync(ctx.device)
            walls.append(time.perf_counter() - t0)
            secs = getattr(compiled, "compile_seconds", None)
            reported.append(dict(secs) if secs else None)
        cold = reported[0]["total"] if reported[0] and "total" in reported[0] else walls[0]
        warm = reported[1]["total"] if reported[1] and "total" in reported[1] else walls[1]
        make_loop = None
        if one_launch:
            def make_loop(state0, batches, graph_steps):
                return ProgramLoop(compiled, state0, batches, graph_steps)
        return Built(compiled, {"cold": cold, "warm": warm, "cold_breakdown": reported[0],
                                "warm_breakdown": reported[1], "cold_wall": walls[0], "warm_wall": walls[1],
                                "measured": "compiled.compile_seconds['total'] (capture + passes + nvcc), "
                                            "fresh cache_dir for cold, the same cache_dir again for warm"},
                     make_loop=make_loop)

    return build


METHODS: Dict[str, Method] = {
    m.name: m
    for m in (
        Method("eager", "baseline", "calls", _build_eager, "eager PyTorch, 20 Python calls per sample"),
        Method("eager-graph", "baseline", "graph", _build_eager, "eager PyTorch captured in the 20-step CUDA graph"),
        Method("inductor-default", "baseline", "graph", _build_inductor("default"),
               "torch.compile mode='default', captured in the 20-step CUDA graph"),
        Method("inductor-max-autotune-no-cudagraphs", "baseline", "graph",
               _build_inductor("max-autotune-no-cudagraphs"),
               "torch.compile mode='max-autotune-no-cudagraphs', captured in the 20-step CUDA graph"),
        Method("inductor-reduce-overhead", "baseline", "calls", _build_inductor("reduce-overhead"),
               "torch.compile mode='reduce-overhead' (its own CUDA graphs), 20 calls per sample, "
               "outputs cloned before the next call"),
        # TrainKernel last: a crash in new device code cannot take the baselines with it.
        Method("trainkernel-staged", "trainkernel", "graph", _build_trainkernel(False),
               "TrainKernel megakernel, staged state commit (inplace=False), in the 20-step CUDA graph"),
        Method("trainkernel", "trainkernel", "graph", _build_trainkernel(True),
               "TrainKernel megakernel, in-place state (inplace=True), in the 20-step CUDA graph"),
        Method("trainkernel-capture", "trainkernel", "graph", _build_trainkernel(True, one_launch=True),
               "TrainKernel megakernel, in place, the same 20 steps over the same resident batches recorded by "
               "its own CompiledTrainingStep.capture(steps=20, batches=...): a resident kernel runs them in "
               "ONE launch (the step loop inside the kernel, the state on chip), a grid kernel one launch a step"),
    )
}


def get_methods(names: Optional[Sequence[str]] = None) -> List[Method]:
    if not names:
        return list(METHODS.values())
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    return [m for m in METHODS.values() if m.name in names]  # canonical order


# --------------------------------------------------------------------------- the timed loop


class StepLoop:
    """``graph_steps`` steps with state feedback over the resident batches,
    then the final state written back into persistent state buffers.

    A step returns a tuple whose last element is the new state (any pytree:
    the parameters, or parameters and optimizer moments). With
    ``capture=True`` the loop is captured once as a CUDA graph and each
    ``run()`` is one replay; otherwise ``run()`` makes the Python calls. An
    in-place method returns its (mutated) input tensors, so nothing is copied
    back; a functional one returns fresh tensors and pays one copy per
    state tensor per 20 steps (part of "state written back")."""

    def __init__(self, fn: StepFn, state0, batches: Sequence, graph_steps: int, *,
                 capture: bool, before_call: Optional[Callable[[], None]] = None):
        self.fn, self.state0, self.batches = fn, state0, batches
        self.graph_steps, self.before_call = graph_steps, before_call
        self.state = _clone_state(state0)
        self.graph = None
        self.out = None
        if capture:
            self._capture()

    def _body(self):
        s = self.state
        out = None
        for i in range(self.graph_steps):
            x, y = self.batches[i % len(self.batches)]
            if self.before_call is not None:
                self.before_call()
            out = self.fn(s, x, y)
            s = out[-1]
        for dst, src in zip(pytree.tree_leaves(self.state), pytree.tree_leaves(s)):
            if src.data_ptr() != dst.data_ptr():
                dst.copy_(src)
        return tuple(out[:-1])

    def reset(self) -> None:
        with torch.no_grad():
            for dst, src in zip(pytree.tree_leaves(self.state), pytree.tree_leaves(self.state0)):
                dst.copy_(src)

    def _capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(CAPTURE_WARMUP_ITERS):
                self._body()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.reset()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self._body()
        torch.cuda.synchronize()
        self.reset()

    def run(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self.out = self._body()

    def outputs(self):
        """The last step's outputs of the latest run, with the final state last
        (e.g. last loss, last grads, final params)."""
        return (*self.out, self.state)


class ProgramLoop:
    """The StepLoop interface over `CompiledTrainingStep.capture(state, x, y,
    steps=graph_steps, batches=batches)`: the same steps, batches and state
    feedback as the graph of calls, recorded by TrainKernel's own runtime."""

    def __init__(self, compiled, state0, batches: Sequence, graph_steps: int):
        self.state0, self.graph_steps = state0, graph_steps
        self.state = _clone_state(state0)
        x0, y0 = batches[0]
        self.program = compiled.capture(self.state, x0, y0, steps=graph_steps,
                                        batches=[tuple(b) for b in batches])
        torch.cuda.synchronize()
        self.reset()

    def reset(self) -> None:
        with torch.no_grad():
            for dst, src in zip(pytree.tree_leaves(self.program.state), pytree.tree_leaves(self.state0)):
                dst.copy_(src)

    def run(self) -> None:
        self.program.replay()

    def outputs(self):
        return (*tuple(self.program.outputs)[:-1], self.program.state)


def time_loop(loop: StepLoop, replays: int, warmup: int, device: torch.device) -> List[float]:
    """Per-step microseconds of ``replays`` back-to-back runs (CUDA events on
    the current stream around each run; the CPU does not wait between runs)."""
    for _ in range(warmup):
        loop.run()
    _sync(device)
    samples = []
    if device.type == "cuda":
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        for s, e in zip(starts, ends):
            s.record()
            loop.run()
            e.record()
        torch.cuda.synchronize(device)
        for s, e in zip(starts, ends):
            samples.append(s.elapsed_time(e) * 1000.0 / loop.graph_steps)
    else:  # --cpu-smoke only: not a measurement
        for _ in range(replays):
            t0 = time.perf_counter()
            loop.run()
            samples.append((time.perf_counter() - t0) * 1e6 / loop.graph_steps)
    return samples


# --------------------------------------------------------------------------- one workload


@dataclasses.dataclass
class RunConfig:
    steps: int = TRAJECTORY_STEPS
    graph_steps: int = GRAPH_STEPS
    replays: int = MIN_REPLAYS
    warmup_replays: int = WARMUP_REPLAYS
    compute_dtype: torch.dtype = torch.bfloat16
    seed: int = 0
    device: str = "cuda"
    cpu_smoke: bool = False
    cache_root: Optional[Path] = None


def _error_text(stage: str, exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return f"{stage}: {type(exc).__name__}: {str(exc).strip()[:400]}{where}"


def run_method(method: Method, ctx: BuildContext, batches: Sequence, reference: Sequence,
               allowed: Sequence[float], names: Sequence[str], cfg: RunConfig) -> dict:
    rec: dict = {
        "family": method.family,
        "timing": method.timing if not cfg.cpu_smoke else "calls (cpu-smoke)",
        "description": method.description,
        "status": "error",
        "correct": False,
        "median_us": None, "p10_us": None, "p90_us": None, "samples_us": [],
        "max_rel_error": None,
        "max_error_ratio": None,
        "trajectory": None,
        "replay_check": None,
        "compile_seconds": None,
        "errors": [],
        "notes": [],
        "seconds": {},
    }
    device = ctx.device
    state0 = ctx.example_args[0]
    t0 = time.perf_counter()
    try:
        built = method.build(ctx)
    except Exception as exc:
        rec["errors"].append(_error_text("build", exc))
        rec["seconds"]["build"] = time.perf_counter() - t0
        return rec
    rec["seconds"]["build"] = time.perf_counter() - t0
    rec["compile_seconds"] = built.compile_seconds
    rec["notes"] += built.notes

    t0 = time.perf_counter()
    try:
        errs = C.trajectory_errors(built.fn, state0, batches, reference[: cfg.steps], before_call=built.before_call)
        rec["trajectory"] = C.judge(errs, allowed, names)
        rec["trajectory"]["per_quantity_max"] = C.per_quantity_max(errs, names)
    except Exception as exc:
        rec["errors"].append(_error_text("trajectory", exc))
    rec["seconds"]["trajectory"] = time.perf_counter() - t0
    _sync(device)

    t0 = time.perf_counter()
    loop = None
    try:
        capture = method.timing == "graph" and device.type == "cuda"
        if built.make_loop is not None and capture:
            loop = built.make_loop(state0, batches, cfg.graph_steps)
            rec["notes"].append(f"launches per {cfg.graph_steps} steps: {loop.program.launches}")
        else:
            loop = StepLoop(built.fn, state0, batches, cfg.graph_steps, capture=capture,
                            before_call=built.before_call)
        loop.reset()
        loop.run()
        _sync(device)
        result = loop.outputs()
        replay_errs = [C.relative_errors(result, reference[cfg.graph_steps - 1])]  # every leaf, state last
        rec["replay_check"] = C.judge(replay_errs, allowed, names)
        rec["replay_check"]["compared_with_reference_step"] = cfg.graph_steps - 1
        loop.reset()
        samples = time_loop(loop, cfg.replays, cfg.warmup_replays, device)
        rec.update(stats.summarize(samples))
    except Exception as exc:
        rec["errors"].append(_error_text("capture/replay", exc))
    finally:
        if device.type == "cuda":  # nothing of this method may still be running when its graph goes
            with contextlib.suppress(Exception):
                torch.cuda.synchronize()
        del loop
        gc.collect()
        if device.type == "cuda":
            with contextlib.suppress(Exception):
                torch.cuda.empty_cache()
    rec["seconds"]["replay_and_timing"] = time.perf_counter() - t0

    checks = [c for c in (rec["trajectory"], rec["replay_check"]) if c is not None]
    if checks:
        rec["max_rel_error"] = _max_num(c["max_rel_error"] for c in checks)
        rec["max_error_ratio"] = _max_num(c["max_error_ratio"] for c in checks)
    rec["correct"] = (not rec["errors"] and rec["trajectory"] is not None and rec["trajectory"]["passed"]
                      and rec["replay_check"] is not None and rec["replay_check"]["passed"])
    if rec["correct"]:
        rec["status"] = "passed"
    elif not rec["errors"]:
        rec["status"] = "failed"
    elif rec["median_us"] is not None:
        rec["status"] = "failed"  # measured, but part of the check raised
    return rec


def _max_num(values) -> object:
    out = 0.0
    for v in values:
        if isinstance(v, str):
            return v if v == "nan" else "inf"
        out = max(out, v)
    return out


def run_workload(workload: Workload, methods: Sequence[Method], cfg: RunConfig, log=print) -> dict:
    device = torch.device(cfg.device)
    t_start = time.perf_counter()
    step = workload_step(workload, cfg.compute_dtype)
    state0, batches = make_problem(workload, compute_dtype=cfg.compute_dtype, device=device,
                                   n_batches=RESIDENT_BATCHES, seed=cfg.seed)
    names = quantity_names(workload)
    n_ref = max(cfg.steps, cfg.graph_steps)

    t0 = time.perf_counter()
    reference = C.reference_trajectory(reference_step(workload), state0, batches, n_ref)
    t_ref = time.perf_counter() - t0

    # The envelope: eager PyTorch's own drift, same dtype, same device.
    t0 = time.perf_counter()
    eager_errs = C.trajectory_errors(step, state0, batches, reference[: cfg.steps])
    allowed = C.envelope(eager_errs)
    sanity = C.eager_sanity(eager_errs, names, cfg.compute_dtype)
    t_env = time.perf_counter() - t0
    if not sanity["passed"]:
        log(f"  [{workload.name}] eager disagrees with the float64 reference ({sanity}); every method is marked failed")

    cache_root = cfg.cache_root or Path(tempfile.mkdtemp(prefix="tk-bench-"))
    ctx = BuildContext(workload, step, (state0, *batches[0]), cfg.compute_dtype, cache_root, device)
    results: Dict[str, dict] = {}
    for method in methods:
        log(f"  [{workload.name}] {method.name} ...", end="", flush=True)
        rec = run_method(method, ctx, batches, reference, allowed, names, cfg)
        if not sanity["passed"]:
            rec["correct"] = False
            rec["status"] = "failed"
            rec["notes"].append("eager disagrees with the float64 reference: the envelope is invalid")
        results[method.name] = rec
        med = rec["median_us"]
        log(f" {rec['status']}" + (f", {med:.2f} us/step" if med is not None else "")
            + (f" ({rec['errors'][0]})" if rec["errors"] else "")
            + f" [{sum(rec['seconds'].values()):.1f}s]")

    cmp = stats.compare(results)
    compile_seconds = {name: {"cold": rec["compile_seconds"]["cold"], "warm": rec["compile_seconds"]["warm"]}
                       for name, rec in results.items() if rec.get("compile_seconds")}
    return {
        "config": {**workload.config(), "compute_dtype": dtype_name(cfg.compute_dtype),
                   "flops_per_step": workload.flops_per_step()},
        "quantities": names,
        "tolerance": {"allowed": dict(zip(names, allowed)),
                      "eager_max_error": C.per_quantity_max(eager_errs, names),
                      "eager_sanity": sanity},
        "reference_losses": [float(r[0]) for r in reference[: cfg.steps]],
        "methods": results,
        "best_baseline": cmp["best_baseline"],
        "best_trainkernel": cmp["best_trainkernel"],
        "speedup": cmp["speedup"],
        "compile_seconds": compile_seconds,
        "seconds": {"reference": t_ref, "envelope": t_env, "total": time.perf_counter() - t_start},
    }


# --------------------------------------------------------------------------- environment


def _cmd(args: List[str]) -> Optional[str]:
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=20, cwd=REPO_ROOT)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def environment(device: torch.device) -> dict:
    env = {
        "device": None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "platform": platform.platform(),
        # The GPU machine's copy has no .git: the caller passes the commit in.
        "git_commit": os.environ.get("TRAINKERNEL_COMMIT") or _cmd(["git", "rev-parse", "HEAD"]),
        "git_dirty": None,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
    }
    # Only this tree's own repository says whether it is dirty. Where the caller
    # names the commit (the GPU machine's copy, made by the device tool) no status
    # of the copy speaks for that commit, and a repository around a tree would
    # describe other files: unknown (None) in both cases.
    top = None if os.environ.get("TRAINKERNEL_COMMIT") else _cmd(["git", "rev-parse", "--show-toplevel"])
    own = top is not None and Path(top).resolve() == REPO_ROOT
    status = _cmd(["git", "status", "--porcelain", "--untracked-files=no"]) if own else None
    env["git_dirty"] = None if status is None else bool(status)
    with contextlib.suppress(Exception):
        import triton

        env["triton"] = triton.__version__
    with contextlib.suppress(Exception):
        from torch._inductor import config as inductor_config

        env["inductor_config"] = {k: getattr(inductor_config, k, None) for k in (
            "max_autotune_gemm_backends", "max_autotune_gemm_search_space", "compile_threads",
            "coordinate_descent_tuning", "fx_graph_cache", "autotune_local_cache")}
    nvcc = _cmd(["nvcc", "--version"])
    if nvcc:
        env["nvcc"] = nvcc.splitlines()[-1]
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env["device"] = props.name
        env["compute_capability"] = f"{props.major}.{props.minor}"
        env["sm_count"] = props.multi_processor_count
        env["memory_gib"] = round(props.total_memory / 2**30, 1)
        drv = _cmd(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        if drv:
            env["driver"] = drv.splitlines()[0]
    else:
        env["device"] = f"cpu ({platform.processor() or platform.machine()})"
    return env


# --------------------------------------------------------------------------- the suite


def _warm_process(device: torch.device, methods: Sequence[Method], cache_root: Path) -> None:
    """Pay one-time process costs (Inductor imports, compile worker pool,
    cuBLAS handles) before any timed compile, so no method is charged for them."""
    x = torch.ones(8, 8, device=device)
    (x @ x).sum().item()
    if any(m.name.startswith("inductor") for m in methods):
        from torch import _dynamo

        with _inductor_cache(cache_root / "process-warmup"):
            torch.compile(lambda t: (t * 2 + 1).relu(), dynamic=False)(x)
        _dynamo.reset()
    _sync(device)


def run_suite(workloads: Sequence[Workload], methods: Sequence[Method], cfg: RunConfig,
              out_path: Optional[Path] = None, log=print, command: Optional[str] = None) -> dict:
    device = torch.device(cfg.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    t_start = time.perf_counter()
    own_tmp = None
    if cfg.cache_root is None:
        own_tmp = tempfile.TemporaryDirectory(prefix="tk-bench-cache-")
        cfg = dataclasses.replace(cfg, cache_root=Path(own_tmp.name))
    data = {
        "schema": SCHEMA,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command,
        "environment": environment(device),
        "protocol": {
            "graph_steps": cfg.graph_steps,
            "resident_batches": RESIDENT_BATCHES,
            "trajectory_steps": cfg.steps,
            "replays": cfg.replays,
            "warmup_replays": cfg.warmup_replays,
            "capture_warmup_loops": CAPTURE_WARMUP_ITERS,
            "timer": "CUDA events around each replay, replays back to back" if device.type == "cuda"
                     else "time.perf_counter (cpu-smoke: NOT a measurement)",
            "per_step_us": "replay time / graph_steps",
            "compute_dtype": dtype_name(cfg.compute_dtype),
            "master_dtype": "float32",
            "seed": cfg.seed,
            "tolerance": C.policy_dict(cfg.compute_dtype),
            "bootstrap": {"draws": stats.BOOTSTRAP_DRAWS, "seed": stats.BOOTSTRAP_SEED,
                          "confidence": stats.CONFIDENCE},
            "compile_cold": "fresh on-disk cache, in-memory caches cleared, process already warm",
            "compile_warm": "the same on-disk cache again, in-memory caches cleared (as a new process would)",
        },
        "smoke": cfg.cpu_smoke,
        "partial": True,
        "methods": {m.name: {"family": m.family, "timing": m.timing, "description": m.description} for m in methods},
        "workloads": {},
        "twins": {},
    }
    try:
        _warm_process(device, methods, cfg.cache_root)
        for w in workloads:
            log(f"workload {w.name}: batch {w.batch}, widths {w.widths}")
            try:
                data["workloads"][w.name] = run_workload(w, methods, cfg, log=log)
            except Exception as exc:  # e.g. out of memory in the reference: keep the others
                log(f"  [{w.name}] aborted: {_error_text('workload', exc)}")
                data["workloads"][w.name] = {
                    "config": {**w.config(), "compute_dtype": dtype_name(cfg.compute_dtype)},
                    "error": _error_text("workload", exc), "methods": {}, "best_baseline": None,
                    "best_trainkernel": None, "speedup": None, "compile_seconds": {},
                }
            data["twins"] = stats.twin_comparisons(data["workloads"])
            data["total_seconds"] = time.perf_counter() - t_start
            if out_path is not None:  # keep what we have if a later workload crashes the process
                write_json(data, out_path)
        data["partial"] = False
        data["total_seconds"] = time.perf_counter() - t_start
        if data["total_seconds"] > SUITE_BUDGET_S and device.type == "cuda":
            log(f"warning: the suite took {data['total_seconds']:.0f} s, over its {SUITE_BUDGET_S} s budget")
        if out_path is not None:
            write_json(data, out_path)
    finally:
        if own_tmp is not None:
            with contextlib.suppress(Exception):
                own_tmp.cleanup()
    return data


def write_json(data: dict, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    tmp.replace(path)


# --------------------------------------------------------------------------- CLI


def _csv(s: str) -> List[str]:
    return [p.strip() for p in s.split(",") if p.strip()]


def build_parser(prog: str = "python -m benchmarks.train_loop") -> argparse.ArgumentParser:
    from .workloads import WORKLOADS

    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=_csv, default=None,
                    help=f"comma-separated subset of: {', '.join(WORKLOADS)} (default: all)")
    ap.add_argument("--twins", action="store_true",
                    help="also run the twins of the workloads named (and the SGD/MSE twin of each twin named), "
                         "so each twin's speedup can be compared with its partner's")
    ap.add_argument("--methods", type=_csv, default=None,
                    help=f"comma-separated subset of: {', '.join(METHODS)} (default: all)")
    ap.add_argument("--steps", type=int, default=TRAJECTORY_STEPS,
                    help="trajectory steps checked against float64 (default %(default)s)")
    ap.add_argument("--graph-steps", type=int, default=GRAPH_STEPS,
                    help="training steps per captured graph / per timed sample (default %(default)s)")
    ap.add_argument("--replays", type=int, default=MIN_REPLAYS,
                    help=f"timed replays per method (default and protocol minimum {MIN_REPLAYS})")
    ap.add_argument("--warmup-replays", type=int, default=WARMUP_REPLAYS)
    ap.add_argument("--dtype", default="bf16", help="compute dtype: bf16 (default), fp16 or fp32")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="JSON output; README.md and train_loop.png are written beside it "
                         "(default results/h200/train_loop.json)")
    ap.add_argument("--no-report", action="store_true", help="write only the JSON")
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="root for the cold/warm compile caches (default: a fresh temporary folder)")
    ap.add_argument("--fuse-merge", choices=MERGE_MODES, default=None,
                    help="experiment: lower with tk-fuse{merge=MODE} (perf-log steps 17 and 26; recorded in the "
                         "JSON's command), to measure it against a run without (default: the pipeline's)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="run on CPU without CUDA graphs to exercise the harness; measures nothing")
    return ap


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m benchmarks.train_loop") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        workloads = get_workloads(args.workloads, with_twins=args.twins)
        methods = get_methods(args.methods)
        dtype = parse_dtype(args.dtype)
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.fuse_merge is not None:
        from trainkernel import pipeline

        pipeline.FUSE_MERGE = args.fuse_merge
    if args.steps < args.graph_steps:
        print(f"{prog}: error: --steps ({args.steps}) must be >= --graph-steps ({args.graph_steps})", file=sys.stderr)
        return 2
    if args.cpu_smoke:
        device = "cpu"
    elif not torch.cuda.is_available():
        print(NEEDS_GPU.format(prog=prog, torch=torch.__version__, cuda=torch.version.cuda), file=sys.stderr)
        return 3
    else:
        device = "cuda"
    if args.replays < MIN_REPLAYS:
        print(f"warning: --replays {args.replays} is below the protocol's minimum of {MIN_REPLAYS}", file=sys.stderr)
    cfg = RunConfig(steps=args.steps, graph_steps=args.graph_steps, replays=args.replays,
                    warmup_replays=args.warmup_replays, compute_dtype=dtype, seed=args.seed,
                    device=device, cpu_smoke=args.cpu_smoke, cache_root=args.cache_dir)
    if device == "cuda":
        name = torch.cuda.get_device_name()
        if "H200" not in name and args.out == DEFAULT_OUT:
            print(f"warning: writing results of a {name} to {args.out}", file=sys.stderr)
    command = "python -m benchmarks.train_loop" + "".join(" " + a for a in (sys.argv[1:] if argv is None else argv))
    data = run_suite(workloads, methods, cfg, out_path=args.out, command=command)
    print(f"wrote {args.out} ({data['total_seconds']:.0f} s)")
    if not args.no_report:
        from . import report

        for path in report.write_reports(args.out):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
