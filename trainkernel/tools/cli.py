"""`trainkernel`: the command line for the user jobs.

    trainkernel compile [WORKLOAD] [--dtype bf16] [--staged]   compile (and, on a GPU, train and check)
    trainkernel inspect WORKLOAD --stage captured|tk|sched|tile|cuda|pipeline   one stage, or the -p list
    trainkernel verify [--workloads ...] [--dtypes ...]         GPU correctness: compiled vs PyTorch
    trainkernel bench ...                                       the training-loop benchmark

Workloads come from `trainkernel.workloads.WORKLOADS`; ``--sizes B,I,H,...,O``
reshapes one (e.g. ``--sizes 33,100,300,7``).

Correctness policy (`check_workload`, used by `compile` and `verify` and by
tests/test_runtime_cuda.py). Errors are normwise relative errors against a
float64 computation, ``||out - ref||_2 / ||ref||_2``, and eager PyTorch in the
same compute dtype on the same GPU defines what is legitimate: per quantity,
``allowed = max(K * max_t eager_err, FLOOR)`` with K = 4, FLOOR = 1e-6 (as in
benchmarks/correctness.py). Two checks, both over every step:

* per step ("forced"): at step t the compiled step, eager and float64 all run
  on the compiled trajectory's state; checked: the loss, every gradient and
  every parameter *update* (new - old, so that a wrong update is not hidden
  by the much larger parameter values);
* trajectory: compiled, eager and float64 each run their own trajectory with
  state fed back; checked: the loss and every parameter at every step.

One exception, for decisions: a forced quantity may exceed its bound at
``OUTLIER_STEPS`` steps in 100 (at least one), by at most ``OUTLIER_CAP``.
A relu mask (or any comparison) on a value that lies within rounding error of
its threshold takes either side legitimately, and one flipped element moves a
gradient by ~1e-3 of its norm: on small (200, 520, 1000, 56) in f32, the
pre-activations summed in the megakernel's order cross zero against float64
once in 100 steps, and CPU PyTorch's order three times, while eager on the GPU
happened not to (tests/test_runtime_cuda.py's f32 run of that shape,
results/h200/run-8f1e568-s). A wrong tile, a race or a lost update shows at
most steps or by more than the cap; the trajectory check takes no exception.

All outputs must be finite.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from collections.abc import Sequence

K_EAGER = 4.0
FLOOR = 1e-6
OUTLIER_STEPS = 0.01  # of a forced check's steps (at least one) that may exceed the bound: decision flips
OUTLIER_CAP = 1e-2  # ... by at most this (or the bound, if larger)
DTYPES = ("f32", "bf16", "f16")


# --------------------------------------------------------------------------- workloads


def get_workload(name: str, sizes: Sequence[int] | None = None):
    """A workload from `trainkernel.workloads.WORKLOADS`, optionally resized to (B, I, H..., O)."""
    from trainkernel.workloads import WORKLOADS

    if name not in WORKLOADS:
        raise SystemExit(f"trainkernel: unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
    w = WORKLOADS[name]
    if sizes:
        sizes = [int(s) for s in sizes]
        if len(sizes) < 3:
            raise SystemExit("trainkernel: --sizes needs B,I,...,O (at least 3 numbers)")
        w = w.with_sizes(batch=sizes[0], widths=sizes[1:])
        _check_tensor_sizes(w)
    return w


MAX_TENSOR_BYTES = 2**63 - 1


def _check_tensor_sizes(workload) -> None:
    """Every tensor of the resized workload must be one a tensor can hold."""
    shapes = [("x", (workload.batch, workload.widths[0])), ("y", (workload.batch, workload.widths[-1]))]
    shapes += [(f"params[{i}]", tuple(s)) for i, s in enumerate(workload.param_shapes())]
    for name, shape in shapes:
        if math.prod(shape) * 4 > MAX_TENSOR_BYTES:
            raise SystemExit(
                f"trainkernel: --sizes {','.join(map(str, workload.sizes))}: {name} would have shape {shape}, "
                f"{math.prod(shape):.3g} elements, more than a tensor can hold"
            )


def _parse_sizes(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        sizes = [int(s) for s in text.replace("x", ",").split(",") if s]
    except ValueError:
        raise SystemExit(f"trainkernel: --sizes must be comma-separated integers, got {text!r}") from None
    if any(s < 1 for s in sizes):
        raise SystemExit(f"trainkernel: --sizes must all be >= 1, got {text!r}")
    return sizes


def problem(workload, compute_dtype, device, n_batches: int = 4, seed: int = 0):
    """(params, batches): FP32 master params and resident batches with x, y in the compute dtype."""
    params = tuple(p.contiguous() for p in workload.init_params(seed=seed, device=device))
    batches = workload.make_batches(n_batches, seed=seed, device=device, dtype=compute_dtype)
    return params, batches


# --------------------------------------------------------------------------- the correctness check


def _rel(out, ref) -> float:
    import torch

    o = out.detach().to(dtype=torch.float64)
    if not bool(torch.isfinite(o).all()):
        return math.inf
    d = float(torch.linalg.vector_norm(o - ref))
    n = float(torch.linalg.vector_norm(ref))
    if n == 0.0:
        return 0.0 if d == 0.0 else math.inf
    return d / n


@dataclasses.dataclass
class Quantity:
    name: str
    check: str  # "forced" or "trajectory"
    max_error: float = 0.0
    eager_error: float = 0.0
    max_abs_vs_eager: float = 0.0
    errors: list[float] = dataclasses.field(default_factory=list)  # per step (forced checks)

    def record(self, error: float, eager_error: float) -> None:
        self.max_error = max(self.max_error, error)
        self.eager_error = max(self.eager_error, eager_error)
        if self.check == "forced":
            self.errors.append(error)

    @property
    def allowed(self) -> float:
        return max(K_EAGER * self.eager_error, FLOOR)

    @property
    def outliers(self) -> int:
        """Steps over the bound (forced checks; the module docstring's exception)."""
        return sum(e > self.allowed for e in self.errors)

    @property
    def passed(self) -> bool:
        if self.max_error <= self.allowed:
            return True
        if self.check != "forced" or not self.errors:
            return False
        budget = max(1, int(OUTLIER_STEPS * len(self.errors)))
        return self.outliers <= budget and self.max_error <= max(OUTLIER_CAP, self.allowed)


@dataclasses.dataclass
class CheckReport:
    label: str
    steps: int
    quantities: list[Quantity]
    compile_seconds: dict
    stats: dict
    final_loss: float = math.nan
    eager_final_loss: float = math.nan

    @property
    def passed(self) -> bool:
        return all(q.passed for q in self.quantities)

    def failures(self) -> list[Quantity]:
        return [q for q in self.quantities if not q.passed]

    def format(self, verbose: bool = False) -> str:
        worst = max(self.quantities, key=lambda q: q.max_error / q.allowed)
        abs_worst = max(q.max_abs_vs_eager for q in self.quantities)
        lines = [
            f"{self.label}: {'PASS' if self.passed else 'FAIL'} over {self.steps} steps; "
            f"max |compiled - eager| = {abs_worst:.3g}; worst {worst.check} {worst.name}: "
            f"rel err {worst.max_error:.3g} (eager {worst.eager_error:.3g}, allowed {worst.allowed:.3g}); "
            f"final loss {self.final_loss:.6g} (eager {self.eager_final_loss:.6g})"
        ]
        for q in self.quantities if verbose else self.failures():
            lines.append(
                f"    {'ok  ' if q.passed else 'FAIL'} {q.check:10s} {q.name:12s} rel err {q.max_error:.3g} "
                f"eager {q.eager_error:.3g} allowed {q.allowed:.3g} max|c-e| {q.max_abs_vs_eager:.3g}"
                + (f" ({q.outliers} of {len(q.errors)} steps over the bound)" if q.outliers else "")
            )
        return "\n".join(lines)


def check_workload(workload, compute_dtype, *, steps: int = 100, inplace: bool = True, device=None,
                   cache_dir=None, seed: int = 0, compiled=None) -> CheckReport:
    """Run `steps` compiled steps on the GPU and judge them by the policy in the module docstring.
    SGD/MSE-style steps only (the state is the parameters); a workload with another recipe
    (an optimizer state, class labels) is refused: the harness checks those."""
    import torch

    recipe = getattr(workload, "recipe", None)
    if recipe is not None and (recipe.optimizer != "sgd" or recipe.labels):
        raise ValueError(
            f"check_workload checks steps whose state is the parameters (SGD); {workload.name} trains with "
            f"{recipe.name}: check it with the benchmark harness (python -m benchmarks.train_loop --twins)"
        )

    from trainkernel.workloads import parse_dtype

    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # eager f32 must be true f32
    try:
        return _check(workload, parse_dtype(compute_dtype), steps, inplace, torch.device(device or "cuda"),
                      cache_dir, seed, compiled)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def _check(workload, compute_dtype, steps, inplace, device, cache_dir, seed, compiled) -> CheckReport:
    import torch

    from trainkernel.api import compile_training

    step = workload.make_step(compute_dtype)
    ref = workload.reference_step()
    params0, batches = problem(workload, compute_dtype, device, seed=seed)
    if compiled is None:
        compiled = compile_training(step, (params0, *batches[0]), inplace=inplace, cache_dir=cache_dir)

    n = len(params0)
    names = ["loss"] + [f"grad[{i}]" for i in range(n)] + [f"update[{i}]" for i in range(n)]
    forced = [Quantity(nm, "forced") for nm in names]
    traj = [Quantity("loss", "trajectory")] + [Quantity(f"param[{i}]", "trajectory") for i in range(n)]

    state = tuple(p.clone() for p in params0)  # compiled trajectory (updated in place or replaced)
    eager_state = tuple(p.clone() for p in params0)
    ref_state = tuple(p.double() for p in params0)
    loss_c = loss_e = None
    with torch.no_grad():
        for t in range(steps):
            x, y = batches[t % len(batches)]
            x64, y64 = x.double(), y.double()
            old = tuple(p.clone() for p in state)
            # forced: everyone starts from the compiled state
            e_loss, e_grads, e_new = step(old, x, y)
            r_loss, r_grads, r_new = ref(tuple(p.double() for p in old), x64, y64)
            c_loss, c_grads, c_new = compiled(state, x, y)
            c_outs = [c_loss, *c_grads, *(a.double() - b.double() for a, b in zip(c_new, old))]
            e_outs = [e_loss, *e_grads, *(a.double() - b.double() for a, b in zip(e_new, old))]
            r_outs = [r_loss, *r_grads, *(a - b.double() for a, b in zip(r_new, old))]
            for q, c, e, r in zip(forced, c_outs, e_outs, r_outs):
                q.record(_rel(c, r), _rel(e, r))
                diff = (c.double() - e.double()).abs().max().item() if c.numel() else 0.0
                q.max_abs_vs_eager = max(q.max_abs_vs_eager, diff if math.isfinite(diff) else math.inf)
            state = tuple(c_new)
            # trajectory: eager and float64 follow their own states
            te_loss, _, eager_state = step(eager_state, x, y)
            tr_loss, _, ref_state = ref(ref_state, x64, y64)
            for q, c, e, r in zip(traj, [c_loss, *state], [te_loss, *eager_state], [tr_loss, *ref_state]):
                q.record(_rel(c, r), _rel(e, r))
                diff = (c.double() - e.double()).abs().max().item()
                q.max_abs_vs_eager = max(q.max_abs_vs_eager, diff if math.isfinite(diff) else math.inf)
            loss_c, loss_e = c_loss, te_loss
    label = f"{workload.name} {tuple(workload.sizes)} {_short(compute_dtype)} {'in-place' if compiled.inplace else 'staged'}"
    return CheckReport(
        label=label,
        steps=steps,
        quantities=forced + traj,
        compile_seconds=dict(compiled.compile_seconds),
        stats=compiled.stats(),
        final_loss=float(loss_c) if loss_c is not None else math.nan,
        eager_final_loss=float(loss_e) if loss_e is not None else math.nan,
    )


def _short(dtype) -> str:
    from trainkernel.workloads import dtype_short

    return dtype_short(dtype)


# --------------------------------------------------------------------------- subcommands


def _compile(workload, dtype: str, inplace: bool, cache_dir, arch=None, build=True):
    from trainkernel.api import compile_training
    from trainkernel.workloads import parse_dtype

    compute = parse_dtype(dtype)
    step = workload.make_step(compute)
    return compile_training(step, workload.example_args(device="meta", dtype=compute), inplace=inplace,
                            cache_dir=cache_dir, arch=arch, build=build)


def _check_emit(path: str) -> None:
    """Fail before compiling when --emit cannot be written."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise SystemExit(f"trainkernel compile: --emit {path}: is a directory")
    if not os.path.isdir(parent):
        raise SystemExit(f"trainkernel compile: --emit {path}: directory {parent} does not exist")


def cmd_compile(args) -> int:
    import torch

    if args.emit:
        _check_emit(args.emit)
    w = get_workload(args.workload, _parse_sizes(args.sizes))
    mode = "staged state commit" if args.staged else "in-place state"
    print(f"workload  {w.name}: (B, widths) = {tuple(w.sizes)}, {args.dtype} compute, {mode}")
    c = _compile(w, args.dtype, not args.staged, args.cache_dir, args.arch)
    s = c.compile_seconds
    built = c._build_result()
    print(f"capture   {s['capture']:8.3f} s")
    print(f"passes    {s['passes']:8.3f} s")
    print(f"nvcc      {s['nvcc']:8.3f} s{'  (cache hit)' if built.cached else ''}  [{built.arch}]")
    print(f"total     {s['total']:8.3f} s")
    st = c.stats()
    print(f"kernel    {c.kernel_name}: {st['phases']} phases, {st['barriers']} grid barriers, "
          f"{st['cuda_lines']} lines of CUDA")
    print(f"launch    grid <= {st['grid']} blocks x {st['block']} threads, {st['smem_bytes']} B shared memory, "
          f"{st['arena_bytes']} B arena")
    print(f"library   {built.path}")
    print(f"source    {built.path.with_suffix('.cu')}")
    if args.emit:
        try:
            with open(args.emit, "w") as f:
                f.write(c.cuda_source)
        except OSError as exc:
            raise SystemExit(f"trainkernel compile: cannot write --emit {args.emit}: {exc.strerror or exc}") from None
        print(f"wrote     {args.emit}")
    if not torch.cuda.is_available():
        print("no GPU: stopped after emitting and nvcc-compiling the kernel "
              f"(for {built.arch}); nothing was run. On a machine with an NVIDIA GPU this command "
              f"trains {args.steps} steps and compares them with PyTorch eager.")
        return 0
    report = check_workload(w, args.dtype, steps=args.steps, inplace=not args.staged, compiled=c)
    print(f"trained   {args.steps} steps on {torch.cuda.get_device_name()}")
    print(report.format(verbose=True))
    return 0 if report.passed else 1


def cmd_inspect(args) -> int:
    w = get_workload(args.workload, _parse_sizes(args.sizes))
    c = _compile(w, args.dtype, not args.staged, args.cache_dir, build=False)
    if args.stage == "captured":  # what trainkernel.capture gives: the input of `pipeline`
        text = str(c.captured)
    elif args.stage == "pipeline":  # the exact trainkernel-opt -p list from `captured` to `cuda`
        text = c.pipeline
    else:
        text = c.cuda_source if args.stage == "cuda" else c.ir(args.stage)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def cmd_verify(args) -> int:
    import torch

    if not torch.cuda.is_available():
        print("trainkernel verify: needs an NVIDIA GPU (torch.cuda.is_available() is False); "
              "use `trainkernel compile` to check that kernels build", file=sys.stderr)
        return 2
    from trainkernel.workloads import WORKLOADS

    names = args.workloads or list(WORKLOADS)
    modes = {"inplace": [True], "staged": [False], "both": [True, False]}[args.mode]
    sizes = _parse_sizes(args.sizes)
    failed = 0
    total = 0
    t0 = time.perf_counter()
    for name in names:
        w = get_workload(name, sizes)
        for dtype in args.dtypes:
            for inplace in modes:
                total += 1
                try:
                    report = check_workload(w, dtype, steps=args.steps, inplace=inplace, cache_dir=args.cache_dir)
                except Exception as exc:  # a crash is a failure of that case, not of the run
                    failed += 1
                    print(f"{name} {dtype} {'in-place' if inplace else 'staged'}: ERROR {type(exc).__name__}: {exc}")
                    continue
                failed += not report.passed
                print(report.format(verbose=args.verbose), flush=True)
    print(f"{total - failed} passed, {failed} failed ({time.perf_counter() - t0:.1f} s)")
    return 1 if failed else 0


def cmd_bench(argv: Sequence[str]) -> int:
    from trainkernel.tools import bench  # lazily: pulls in the benchmark harness

    return int(bench.main(list(argv)) or 0)


# --------------------------------------------------------------------------- argument parsing


def _arch(text: str) -> str:
    from trainkernel.backend.build import normalize_arch

    try:
        return normalize_arch(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trainkernel", description="Compile a PyTorch training step into one CUDA megakernel.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp, workload_optional: bool):
        if workload_optional:
            sp.add_argument("workload", nargs="?", default="tiny", help="workload name (default: tiny)")
        else:
            sp.add_argument("workload", help="workload name")
        sp.add_argument("--dtype", default="bf16", choices=DTYPES, help="compute dtype (default: bf16)")
        sp.add_argument("--sizes", help="resize the workload: B,I,H,...,O (e.g. 33,100,300,7)")
        sp.add_argument("--staged", action="store_true", help="staged state commit instead of in-place")
        sp.add_argument("--cache-dir", help="kernel cache (default: $TRAINKERNEL_CACHE_DIR or ~/.cache/trainkernel)")

    c = sub.add_parser("compile", help="compile a workload; on a GPU also train it and compare with PyTorch")
    common(c, True)
    c.add_argument("--steps", type=_positive_int, default=10, help="steps to train and check on a GPU (default: 10)")
    c.add_argument("--arch", type=_arch, help="CUDA architecture (default: the GPU's, else sm_90)")
    c.add_argument("--emit", metavar="FILE", help="also write the generated .cu to FILE")

    i = sub.add_parser("inspect", help="print one stage of the lowering")
    common(i, False)
    i.add_argument("--stage", required=True, choices=("captured", "tk", "sched", "tile", "cuda", "pipeline"),
                   help="captured: the IR trainkernel.capture gives; tk/sched/tile: after that stage; cuda: the .cu; "
                   "pipeline: the trainkernel-opt -p list that turns `captured` into `cuda`")

    v = sub.add_parser("verify", help="GPU correctness: compiled vs PyTorch eager over N steps (non-zero exit on mismatch)")
    v.add_argument("--workloads", nargs="+", help="workload names (default: all)")
    v.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    v.add_argument("--mode", default="both", choices=("inplace", "staged", "both"))
    v.add_argument("--steps", type=_positive_int, default=100)
    v.add_argument("--sizes", help="resize every workload: B,I,H,...,O")
    v.add_argument("--cache-dir")
    v.add_argument("-v", "--verbose", action="store_true", help="print every quantity, not only failures")

    sub.add_parser("bench", help="training-loop benchmark (options: trainkernel bench --help)", add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        return cmd_bench(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    handler = {"compile": cmd_compile, "inspect": cmd_inspect, "verify": cmd_verify}[args.command]
    from trainkernel.errors import TrainKernelError

    try:
        return handler(args)
    except KeyboardInterrupt:
        print(f"trainkernel {args.command}: interrupted", file=sys.stderr)
        return 130
    except TrainKernelError as exc:  # the user's to fix: the message, no traceback
        print(f"trainkernel {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
