"""CPU tests of the training-loop benchmark harness (benchmarks/): statistics,
the correctness gate, baseline selection, the results schema and its
rendering, the workloads' trajectories, and the twins (AdamW + cross-entropy
of classification and mlp4, Adam of online: they capture, the interpreter
follows eager, their kernels write their whole state (test_cuda_compile
nvcc-compiles them), the harness runs them end to end on CPU and reports how
much of their partner's speedup they keep). No GPU needed."""

import copy
import dataclasses
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
# xdsl's wheel installs an unrelated top-level `benchmarks` package: make sure
# this checkout's folder is the one imported.
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))
_loaded = sys.modules.get("benchmarks")
if _loaded is not None and Path(getattr(_loaded, "__file__", "") or "").resolve().parent != ROOT / "benchmarks":
    for _name in [n for n in sys.modules if n == "benchmarks" or n.startswith("benchmarks.")]:
        del sys.modules[_name]

from benchmarks import correctness as C  # noqa: E402
from benchmarks import report, stats  # noqa: E402
from benchmarks import train_loop as TL  # noqa: E402
from benchmarks.workloads import (  # noqa: E402
    WORKLOADS,
    get_workloads,
    make_problem,
    make_step,
    quantity_names,
    reference_step,
    workload_step,
)
from torch.utils import _pytree as pytree  # noqa: E402

import trainkernel  # noqa: E402
from trainkernel import workloads as package  # noqa: E402

TWINS = [n for n, w in WORKLOADS.items() if w.twin_of]

assert Path(TL.__file__).resolve().parent == ROOT / "benchmarks"


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # Tiny matrices: extra threads only add contention on a shared CI machine.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# --------------------------------------------------------------------------- statistics


def test_percentiles_interpolate_linearly_like_numpy():
    xs = [4.0, 1.0, 3.0, 2.0]
    assert stats.percentile(xs, 0) == 1.0
    assert stats.percentile(xs, 100) == 4.0
    assert stats.median(xs) == 2.5
    assert stats.percentile(xs, 10) == pytest.approx(1.3)
    assert stats.percentile(xs, 90) == pytest.approx(3.7)
    assert stats.median([7.0]) == 7.0
    with pytest.raises(ValueError):
        stats.percentile([], 50)


def test_summary_keeps_raw_samples():
    samples = [float(v) for v in range(1, 31)]
    s = stats.summarize(samples)
    assert s["samples_us"] == samples
    assert s["median_us"] == 15.5
    assert s["p10_us"] == pytest.approx(3.9)
    assert s["p90_us"] == pytest.approx(27.1)
    assert stats.summarize([])["median_us"] is None


def test_bootstrap_is_deterministic_and_oriented():
    base = [20.0, 21.0, 19.5, 20.5, 22.0, 19.0] * 5
    fast = [10.0, 10.5, 9.8, 10.2, 11.0, 9.9] * 5
    first = stats.bootstrap_speedup(base, fast)
    again = stats.bootstrap_speedup(base, fast)
    assert first == again  # fixed seed: same interval every time
    assert first["seed"] == 0 and first["draws"] == 2000
    assert first["value"] == pytest.approx(stats.median(base) / stats.median(fast))
    lo, hi = first["ci95"]
    assert 1.0 < lo <= first["value"] <= hi  # candidate clearly faster
    slower = stats.bootstrap_speedup(fast, base)
    assert slower["ci95"][1] < 1.0
    other_seed = stats.bootstrap_speedup([1.0, 2.0, 3.0, 4.0], [1.5, 2.5, 3.5], seed=1)
    assert other_seed["seed"] == 1


def _rec(median, correct=True, family="baseline"):
    return {"median_us": median, "samples_us": [median] * 3, "correct": correct, "family": family}


def test_baseline_selection_excludes_failed_and_trainkernel():
    methods = {
        "inductor-default": _rec(5.0, correct=False),  # fastest, but wrong
        "eager-graph": _rec(9.0),
        "inductor-max-autotune-no-cudagraphs": _rec(7.0),
        "trainkernel": _rec(1.0, family="trainkernel"),
        "trainkernel-staged": _rec(2.0, family="trainkernel"),
        "eager": {"median_us": None, "samples_us": [], "correct": False, "family": "baseline"},
    }
    assert stats.select_best_baseline(methods) == "inductor-max-autotune-no-cudagraphs"
    assert stats.select_best_trainkernel(methods) == "trainkernel"
    # A TrainKernel method is excluded by family even under another name, and by name prefix.
    methods["mystery"] = _rec(0.5, family="trainkernel")
    methods["trainkernel-experimental"] = _rec(0.4)
    assert stats.select_best_baseline(methods) == "inductor-max-autotune-no-cudagraphs"
    methods["trainkernel"]["correct"] = False
    assert stats.select_best_trainkernel(methods) in ("mystery", "trainkernel-experimental")
    for name in list(methods):
        methods[name]["correct"] = False
    assert stats.select_best_baseline(methods) is None
    cmp = stats.compare(methods)
    assert cmp["speedup"] is None and cmp["best_baseline"] is None


# --------------------------------------------------------------------------- correctness gate


def _gate_setup(name="tiny", steps=30, cap=16):
    w = WORKLOADS[name].capped(cap)
    params, batches = make_problem(w, seed=3)
    ref = C.reference_trajectory(reference_step(w), params, batches, steps)
    step = workload_step(w)
    eager = C.trajectory_errors(step, params, batches, ref)
    names = C.quantity_names(len(params))
    return w, params, batches, ref, step, C.envelope(eager), names


def test_gate_passes_eager_and_an_exact_method():
    w, params, batches, ref, step, allowed, names = _gate_setup()
    eager = C.judge(C.trajectory_errors(step, params, batches, ref), allowed, names)
    assert eager["passed"] and eager["max_error_ratio"] == pytest.approx(1 / C.K_EAGER)
    exact_step = make_step(w.lr, torch.float64, torch.float64)

    def exact(p, x, y):  # float64 inside, FP32 state outside
        loss, grads, new = exact_step(tuple(t.double() for t in p), x.double(), y.double())
        return loss.float(), tuple(g.float() for g in grads), tuple(t.float() for t in new)

    verdict = C.judge(C.trajectory_errors(exact, params, batches, ref), allowed, names)
    assert verdict["passed"]
    assert verdict["max_rel_error"] < 1e-5


@pytest.mark.parametrize("name", ["tiny", "classification"])
def test_gate_catches_wrong_baselines(name):
    w, params, batches, ref, step, allowed, names = _gate_setup(name)

    def loss_offset(p, x, y):
        loss, grads, new = step(p, x, y)
        return loss + 1e-2, grads, new

    def dropped_update(p, x, y):
        loss, grads, new = step(p, x, y)
        return loss, grads, p

    def nan_grad(p, x, y):
        loss, grads, new = step(p, x, y)
        return loss, (grads[0] * float("nan"),) + grads[1:], new

    offset = C.judge(C.trajectory_errors(loss_offset, params, batches, ref), allowed, names)
    assert not offset["passed"] and offset["first_failure"]["quantity"] == "loss"
    dropped = C.judge(C.trajectory_errors(dropped_update, params, batches, ref), allowed, names)
    assert not dropped["passed"] and dropped["first_failure"]["quantity"].startswith("param.")
    nan = C.judge(C.trajectory_errors(nan_grad, params, batches, ref), allowed, names)
    assert not nan["passed"] and nan["max_rel_error"] == "inf"


def test_gate_rejects_wrong_structure_and_shapes():
    _, params, batches, ref, step, allowed, names = _gate_setup(steps=2)

    def missing_grad(p, x, y):
        loss, grads, new = step(p, x, y)
        return loss, grads[:-1], new

    assert not C.judge(C.trajectory_errors(missing_grad, params, batches, ref), allowed, names)["passed"]


def test_eager_sanity_flags_a_broken_reference():
    w, params, batches, ref, step, allowed, names = _gate_setup(steps=20)
    eager = C.trajectory_errors(step, params, batches, ref)
    assert C.eager_sanity(eager, names, torch.bfloat16)["passed"]
    wrong_lr = make_step(w.lr * 3, torch.bfloat16)  # a harness bug: the reference and the step disagree
    bad = C.trajectory_errors(wrong_lr, params, batches, ref)
    assert not C.eager_sanity(bad, names, torch.bfloat16)["passed"]


# --------------------------------------------------------------------------- workloads


def test_workloads_match_the_issue():
    shapes = {n: (w.batch,) + w.widths for n, w in WORKLOADS.items()}
    assert shapes == {
        "tiny": (16, 32, 64, 8),
        "online": (64, 128, 256, 16),
        "small": (256, 512, 1024, 64),
        "medium": (1024, 1024, 4096, 256),
        "classification": (64, 256, 512, 10),
        "mlp4": (128, 256, 256, 256, 256, 256),
        "large": (2048, 2048, 8192, 2048),  # issue 10: the GEMMs dominate
        # the twins: the same models, another loss and optimizer
        "classification-adamw-ce": (64, 256, 512, 10),
        "mlp4-adamw-ce": (128, 256, 256, 256, 256, 256),
        "online-adam": (64, 128, 256, 16),
    }
    assert WORKLOADS["mlp4"].layers == 4
    assert WORKLOADS["classification"].task == "classification"
    recipes = {n: (w.twin_of, w.recipe.optimizer, w.recipe.loss) for n, w in WORKLOADS.items() if w.twin_of}
    assert recipes == {
        "classification-adamw-ce": ("classification", "adamw", "cross_entropy"),
        "mlp4-adamw-ce": ("mlp4", "adamw", "cross_entropy"),
        "online-adam": ("online", "adam", "mse"),
    }
    assert all(w.recipe == package.SGD_MSE and w.lr == 0.05 for w in WORKLOADS.values() if not w.twin_of)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_trajectories_are_finite_and_eager_is_within_its_ceiling(name):
    w = WORKLOADS[name].capped(16)
    state, batches = make_problem(w, seed=11)
    assert all(p.dtype == torch.float32 for p in pytree.tree_leaves(state))
    labels = w.recipe.labels
    assert all(x.dtype == torch.bfloat16 and y.dtype == (torch.int64 if labels else torch.bfloat16)
               for x, y in batches)
    assert len(batches) == 4
    ref = C.reference_trajectory(reference_step(w), state, batches, 60)
    losses = torch.stack([r[0] for r in ref])
    assert torch.isfinite(losses).all()
    assert losses[-4:].mean() < losses[:4].mean()  # it trains
    step = workload_step(w)
    out = step(state, *batches[0])
    assert all(t.dtype == torch.float32 for t in pytree.tree_leaves(out))
    assert pytree.tree_structure(out[-1]) == pytree.tree_structure(state)  # the last element is the new state
    names = quantity_names(w)
    assert len(names) == len(pytree.tree_leaves(out)) == len(ref[0]) and len(set(names)) == len(names)
    eager = C.trajectory_errors(step, state, batches, ref)
    assert all(math.isfinite(e) for row in eager for e in row)
    assert C.eager_sanity(eager, names, torch.bfloat16)["passed"]


@pytest.mark.parametrize("name", TWINS)
def test_a_twin_is_its_partners_model_and_data(name):
    twin = WORKLOADS[name].capped(16)
    partner = WORKLOADS[twin.twin_of].capped(16)
    assert (twin.batch, twin.widths) == (partner.batch, partner.widths)
    s_twin, b_twin = make_problem(twin, seed=2)
    s_partner, b_partner = make_problem(partner, seed=2)
    for a, b in zip(s_twin["params"], s_partner):
        assert torch.equal(a, b)
    assert all(torch.equal(t, torch.zeros_like(t)) for k in ("exp_avg", "exp_avg_sq") for t in s_twin[k])
    assert [float(t) for t in s_twin["beta_powers"]] == [1.0, 1.0]
    for (x, y), (xp, yp) in zip(b_twin, b_partner):
        assert torch.equal(x, xp)
        if twin.recipe.labels and partner.task == "classification":  # the same classes, as labels
            assert torch.equal(y, yp.float().argmax(-1))
        elif not twin.recipe.labels:
            assert torch.equal(y, yp)
    if twin.recipe.labels:
        assert all(y.shape == (twin.batch,) and 0 <= int(y.min()) and int(y.max()) < twin.widths[-1]
                   for _, y in b_twin)


def test_adam_names_follow_the_state_structure():
    w = WORKLOADS["online-adam"].capped(8)
    state, batches = make_problem(w, seed=0)
    out = workload_step(w)(state, *batches[0])
    names = quantity_names(w)
    # each name sits on a leaf of its kind: moments are zero-started, the beta powers 0-d
    for name, leaf in zip(names, pytree.tree_leaves(out)):
        if name.startswith("beta_power"):
            assert leaf.dim() == 0
        elif name != "loss":
            kind, param = name.split(".")
            k = w.param_names().index(param)
            assert leaf.shape == w.param_shapes()[k], name
    assert float(out[-1]["beta_powers"][0]) == pytest.approx(0.9) and float(out[-1]["beta_powers"][1]) == pytest.approx(0.999)


def test_get_workloads_with_twins_runs_each_twin_next_to_its_partner():
    names = lambda ws: [w.name for w in ws]  # noqa: E731
    assert names(get_workloads(["classification"], with_twins=True)) == ["classification", "classification-adamw-ce"]
    assert names(get_workloads(["online-adam"], with_twins=True)) == ["online", "online-adam"]
    assert names(get_workloads(["mlp4-adamw-ce", "tiny"])) == ["tiny", "mlp4-adamw-ce"]
    assert names(get_workloads(["tiny"], with_twins=True)) == ["tiny"]
    assert len(get_workloads()) == len(WORKLOADS)
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        get_workloads(["nope"])


# --------------------------------------------------------------------------- the twins through the compiler


@pytest.mark.parametrize("name", TWINS)
def test_twin_captures_and_the_interpreter_follows_eager(name):
    """Three steps with state feedback: the interpreter's new state is eager's
    bit for bit (moments and beta powers included); the loss agrees to 1e-6
    (the cross-entropy's reductions may round in another order)."""
    w = WORKLOADS[name].capped(16)
    state, batches = make_problem(w, seed=4)
    step = workload_step(w)
    captured = trainkernel.capture(step, (state, *batches[0]))
    ir = str(captured)
    assert "tk.sqrt" in ir and ("tk.max" in ir if w.recipe.labels else True)
    eager_state = interp_state = state
    for t in range(3):
        x, y = batches[t % len(batches)]
        want = step(eager_state, x, y)
        got = trainkernel.interpret(captured, interp_state, x, y)
        assert pytree.tree_structure(got) == pytree.tree_structure(want)
        torch.testing.assert_close(got[0], want[0], rtol=1e-6, atol=0)
        for k, (a, b) in enumerate(zip(pytree.tree_leaves(got[-1]), pytree.tree_leaves(want[-1]))):
            assert torch.equal(a, b), (t, quantity_names(w)[1 + k])
        eager_state, interp_state = want[-1], got[-1]


def _twin_kernel(name: str):
    w = WORKLOADS[name]
    from trainkernel.pipeline import lower

    state, batches = make_problem(w, seed=0)
    args = pytree.tree_map(lambda t: t.to("meta"), (state, *batches[0]))
    return lower(trainkernel.capture(workload_step(w), args), True)


def test_twin_kernels_write_the_whole_state():
    """In place, a twin's kernel writes its whole optimizer state and returns only
    the loss besides (its nvcc build, with the build's flags and the stack-frame
    check, is tests/test_cuda_compile.py's)."""
    lowered = {name: _twin_kernel(name) for name in TWINS}  # (capture is not thread-safe: lower first)
    for name, low in lowered.items():
        # in place: the whole optimizer state (params, both moments, beta powers) is
        # written by the kernel, nothing else leaves it but the loss
        w = WORKLOADS[name]
        assert len([b for b in low.meta.buffers if b.role == "output"]) == 1, name
        assert len(low.meta.buffers) == 2 + len(pytree.tree_leaves(w.recipe.init_state(w.init_params()))) + 1


def test_classification_targets_are_one_hot():
    w = WORKLOADS["classification"].capped(16)
    _, batches = make_problem(w, seed=5)
    for _, y in batches:
        assert y.shape == (w.batch, 10)
        assert torch.equal(y.float().sum(-1), torch.ones(w.batch))
        assert set(y.float().unique().tolist()) <= {0.0, 1.0}


def test_compute_dtype_is_a_parameter():
    w = WORKLOADS["tiny"]
    params, batches = make_problem(w, compute_dtype=torch.float32, seed=1)
    ref = C.reference_trajectory(reference_step(w), params, batches, 5)
    errs = C.trajectory_errors(workload_step(w, torch.float32), params, batches, ref)
    assert max(max(r) for r in errs) < 1e-4  # fp32 compute is far closer than bf16
    params16, batches16 = make_problem(w, compute_dtype=torch.float16, seed=1)
    assert batches16[0][0].dtype == torch.float16
    loss, _, _ = workload_step(w, torch.float16)(params16, *batches16[0])
    assert torch.isfinite(loss)


# --------------------------------------------------------------------------- the harness, end to end on CPU


def _fake(name, fn_factory, family="baseline"):
    def build(ctx):
        return TL.Built(fn_factory(ctx.step))

    return TL.Method(name, family, "graph", build, f"test method {name}")


def _raising_build(ctx):
    raise RuntimeError("no compiler here")


def test_run_workload_marks_wrong_methods_failed_and_never_picks_them(tmp_path):
    def offset(step):
        return lambda p, x, y: (lambda o: (o[0] + 1e-2, o[1], o[2]))(step(p, x, y))

    def no_update(step):
        return lambda p, x, y: (lambda o: (o[0], o[1], p))(step(p, x, y))

    methods = [
        TL.METHODS["eager"],
        _fake("wrong-loss", offset),
        _fake("no-update", no_update),
        TL.Method("broken", "baseline", "graph", _raising_build, "raises"),
        _fake("trainkernel", lambda step: step, family="trainkernel"),
    ]
    cfg = TL.RunConfig(steps=8, graph_steps=4, replays=3, warmup_replays=1, device="cpu",
                       cpu_smoke=True, cache_root=tmp_path)
    w = WORKLOADS["tiny"].capped(8)
    out = TL.run_workload(w, methods, cfg, log=lambda *a, **k: None)
    m = out["methods"]
    assert m["eager"]["correct"] and m["eager"]["status"] == "passed"
    assert m["trainkernel"]["correct"]
    for bad in ("wrong-loss", "no-update"):
        assert m[bad]["status"] == "failed" and not m[bad]["correct"]
        assert len(m[bad]["samples_us"]) == 3  # timed anyway, and kept in the table
    assert m["broken"]["status"] == "error" and "no compiler here" in m["broken"]["errors"][0]
    assert out["best_baseline"] == "eager"
    assert out["best_trainkernel"] == "trainkernel"
    assert out["speedup"]["ci95"][0] <= out["speedup"]["value"] <= out["speedup"]["ci95"][1]
    assert m["eager"]["replay_check"]["passed"]
    assert not m["no-update"]["replay_check"]["passed"]


def test_run_workload_on_a_twin_checks_the_whole_optimizer_state(tmp_path):
    def no_bias_correction(step):  # a plausible optimizer bug: beta powers never advance
        def wrong(s, x, y):
            loss, new = step(s, x, y)
            return loss, {**new, "beta_powers": s["beta_powers"]}

        return wrong

    def stale_moment(step):
        return lambda s, x, y: (lambda o: (o[0], {**o[1], "exp_avg": s["exp_avg"]}))(step(s, x, y))

    methods = [
        TL.METHODS["eager"],
        _fake("no-bias-correction", no_bias_correction),
        _fake("stale-moment", stale_moment),
        _fake("trainkernel", lambda step: step, family="trainkernel"),
    ]
    cfg = TL.RunConfig(steps=8, graph_steps=4, replays=3, warmup_replays=1, device="cpu",
                       cpu_smoke=True, cache_root=tmp_path)
    w = WORKLOADS["classification-adamw-ce"].capped(8)
    out = TL.run_workload(w, methods, cfg, log=lambda *a, **k: None)
    m = out["methods"]
    assert out["quantities"] == quantity_names(w) and "exp_avg_sq.W2" in out["quantities"]
    assert out["config"]["twin_of"] == "classification" and out["config"]["recipe"] == "adamw-ce"
    assert m["eager"]["correct"] and m["trainkernel"]["correct"] and m["eager"]["replay_check"]["passed"]
    assert not m["no-bias-correction"]["correct"]
    assert m["no-bias-correction"]["trajectory"]["first_failure"]["quantity"].startswith("beta_power.")
    assert not m["stale-moment"]["correct"]
    assert m["stale-moment"]["trajectory"]["first_failure"]["quantity"].startswith(("exp_avg.", "param."))


def test_cpu_only_run_exits_with_a_clear_message(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    assert TL.main(["--workloads", "tiny"]) != 0
    err = capsys.readouterr().err
    assert "needs a CUDA GPU" in err
    assert TL.main(["--workloads", "nope"]) == 2
    assert TL.main(["--methods", "eager,nope"]) == 2


def test_trainkernel_bench_entry_point(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    import importlib.util

    spec = importlib.util.spec_from_file_location("_tk_bench_under_test", ROOT / "trainkernel" / "tools" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--workloads", "tiny"]) != 0
    assert "trainkernel bench: needs a CUDA GPU" in capsys.readouterr().err


# --------------------------------------------------------------------------- results JSON and reports


def _samples(center, n=30):
    return [center * (1 + 0.01 * ((i * 7) % 11 - 5) / 5) for i in range(n)]


def _method(family, center, correct=True, status=None, compile_s=None):
    s = _samples(center) if center is not None else []
    summ = stats.summarize(s)
    return {
        "family": family, "timing": "graph", "description": "", "status": status or ("passed" if correct else "failed"),
        "correct": correct, **summ, "max_rel_error": 1e-3 if correct else 0.5, "max_error_ratio": 0.3 if correct else 40.0,
        "trajectory": None, "replay_check": None,
        "compile_seconds": compile_s, "errors": [] if status != "error" else ["build: RuntimeError: boom"],
        "notes": [], "seconds": {},
    }


def synthetic_results():
    workloads = {}
    layout = {
        # name: (trainkernel us, eager-graph us, inductor-default us (correct?), max-autotune us)
        "tiny": (12.0, 60.0, (24.0, True), 19.0),
        "small": (60.0, 85.0, (40.0, True), 44.0),
        "online": (20.0, 70.0, (10.0, False), 23.0),  # the fastest baseline is wrong
    }
    for name, (tk, eg, (ind, ind_ok), mat) in layout.items():
        methods = {
            "eager-graph": _method("baseline", eg),
            "inductor-default": _method("baseline", ind, correct=ind_ok, compile_s={"cold": 9.0, "warm": 1.0}),
            "inductor-max-autotune-no-cudagraphs": _method("baseline", mat, compile_s={"cold": 40.0, "warm": 2.0}),
            "trainkernel": _method("trainkernel", tk, compile_s={"cold": 5.0, "warm": 0.1}),
            "trainkernel-staged": _method("trainkernel", None, correct=False, status="error"),
        }
        cmp = stats.compare(methods)
        w = WORKLOADS[name]
        workloads[name] = {
            "config": {**w.config(), "compute_dtype": "bfloat16"},
            "methods": methods, **cmp,
            "compile_seconds": {n: {"cold": m["compile_seconds"]["cold"], "warm": m["compile_seconds"]["warm"]}
                                for n, m in methods.items() if m["compile_seconds"]},
        }
    return {
        "schema": TL.SCHEMA, "created_utc": "2026-11-29T00:00:00Z", "command": "python -m benchmarks.train_loop",
        "environment": {"device": "NVIDIA H200", "torch": "2.11.0", "cuda": "13.0", "git_commit": "0123456789abcdef"},
        "protocol": {"graph_steps": 20, "resident_batches": 4, "replays": 30, "warmup_replays": 5,
                     "trajectory_steps": 100, "compute_dtype": "bfloat16", "timer": "CUDA events",
                     "tolerance": C.policy_dict(torch.bfloat16),
                     "bootstrap": {"draws": 2000, "seed": 0, "confidence": 0.95}},
        "smoke": False, "partial": False, "workloads": workloads, "total_seconds": 420.0,
    }


def _with_twins(data):
    """synthetic_results plus two twins: online-adam keeps 90% of online's
    speedup, classification-adamw-ce's partner did not run."""
    data = copy.deepcopy(data)
    for name, tk in (("online-adam", 22.0), ("classification-adamw-ce", 15.0)):
        w = WORKLOADS[name]
        methods = {
            "inductor-max-autotune-no-cudagraphs": _method("baseline", 23.0 if name == "online-adam" else 30.0),
            "trainkernel": _method("trainkernel", tk),
        }
        data["workloads"][name] = {"config": {**w.config(), "compute_dtype": "bfloat16"}, "methods": methods,
                                   **stats.compare(methods), "compile_seconds": {}}
    data["twins"] = stats.twin_comparisons(data["workloads"])
    return data


def test_twins_keep_a_share_of_their_partners_speedup():
    data = _with_twins(synthetic_results())
    twins = data["twins"]
    assert set(twins) == {"online-adam", "classification-adamw-ce"}
    online = data["workloads"]["online"]["speedup"]["value"]  # 23.0 / 20.0
    adam = twins["online-adam"]
    assert adam["twin_of"] == "online" and adam["speedup"] == pytest.approx(23.0 / 22.0)
    assert adam["kept"] == pytest.approx((23.0 / 22.0) / online)
    assert adam["met"] is True and adam["kept"] >= 0.9
    lo, hi = adam["kept_ci95"]
    assert lo <= adam["kept"] <= hi
    missing = twins["classification-adamw-ce"]
    assert missing["kept"] is None and missing["met"] is None and "classification did not run" in missing["why"]
    # losing more than 10% is reported as such
    slow = copy.deepcopy(data)
    slow["workloads"]["online-adam"]["methods"]["trainkernel"] = _method("trainkernel", 30.0)
    slow["workloads"]["online-adam"].update(stats.compare(slow["workloads"]["online-adam"]["methods"]))
    verdict = stats.twin_comparisons(slow["workloads"])["online-adam"]
    assert verdict["met"] is False and verdict["kept"] < 0.9
    # a partner without a speedup: not compared, and said why
    broken = copy.deepcopy(data)
    broken["workloads"]["online"]["speedup"] = None
    assert "no speedup for online" in stats.twin_comparisons(broken["workloads"])["online-adam"]["why"]


def test_twins_are_rendered_and_validated():
    data = _with_twins(synthetic_results())
    data["workloads"]["classification"] = copy.deepcopy(data["workloads"]["online"])
    data["workloads"]["classification"]["config"] = {**WORKLOADS["classification"].config(), "compute_dtype": "bfloat16"}
    data["twins"] = stats.twin_comparisons(data["workloads"])
    assert report.validate(data) == []
    block = report.render_readme_block(data)
    rows = {line.split("|")[1].strip(): line for line in block.splitlines() if line.startswith("| ")}
    assert ">= 90%" in rows["online-adam"] and "| kept |" in rows["online-adam"]
    assert "adam-mse" in rows["online-adam"] or "adam-mse" in block  # the recipe is named in the shape
    assert "90%" in block and "Twins" in block
    tampered = copy.deepcopy(data)
    tampered["twins"]["online-adam"]["kept"] = 2.0
    assert any("twins do not match" in p for p in report.validate(tampered))
    orphan = copy.deepcopy(data)
    del orphan["workloads"]["online"]
    orphan["twins"] = stats.twin_comparisons(orphan["workloads"])
    assert any("a twin of 'online'" in p for p in report.validate(orphan))
    assert "not compared" in report.render_readme_block(orphan)


def test_merge_takes_each_workload_from_one_call_of_one_commit(tmp_path):
    """report.merge / --merge: rows in the order taken, twins derived again from the
    merged rows, each call's seconds and command once, the calls recorded."""
    a = _with_twins(synthetic_results())
    b = copy.deepcopy(a)
    b["workloads"]["tiny"]["methods"]["trainkernel"] = _method("trainkernel", 6.0)
    b["workloads"]["tiny"].update(stats.compare(b["workloads"]["tiny"]["methods"]))
    b["command"], b["total_seconds"], b["created_utc"] = "call b", 100.0, "2026-11-30T00:00:00Z"
    merged = report.merge([("a", a, ["small"]), ("b", b, ["tiny", "online", "online-adam"])], note="why")
    assert list(merged["workloads"]) == ["small", "tiny", "online", "online-adam"]
    assert merged["workloads"]["tiny"] == b["workloads"]["tiny"]
    assert merged["twins"] == stats.twin_comparisons(merged["workloads"]) and "online-adam" in merged["twins"]
    assert merged["merged_from"] == {"a": ["small"], "b": ["tiny", "online", "online-adam"], "note": "why"}
    assert merged["total_seconds"] == 520.0 and merged["command"] == "python -m benchmarks.train_loop ; call b"
    assert merged["created_utc"] == "2026-11-30T00:00:00Z"
    assert report.validate(merged) == []
    # the command line: the same, written to --json and rendered
    pa, pb, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "m" / "train_loop.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    assert report.main(["--json", str(out), "--merge", f"a={pa}:small", f"b={pb}:tiny,online,online-adam",
                        "--note", "why"]) == 0
    assert json.loads(out.read_text()) == json.loads(json.dumps(merged))
    assert (out.parent / "README.md").exists()


def test_merge_refuses_what_cannot_be_compared():
    a = _with_twins(synthetic_results())
    other = copy.deepcopy(a)
    other["environment"]["git_commit"] = "fedcba9876543210"
    with pytest.raises(ValueError, match="differs"):
        report.merge([("a", a, ["tiny"]), ("x", other, ["small"])])
    with pytest.raises(ValueError, match="taken from both"):
        report.merge([("a", a, ["tiny"]), ("b", copy.deepcopy(a), ["tiny"])])
    with pytest.raises(ValueError, match="no workload 'medium'"):
        report.merge([("a", a, ["medium"])])
    with pytest.raises(ValueError, match="different calls"):
        report.merge([("a", a, ["online"]), ("b", copy.deepcopy(a), ["online-adam"])])
    assert report.main(["--merge", "nonsense"]) == 2


def test_synthetic_results_are_valid_json_and_pick_correct_baselines(tmp_path):
    data = synthetic_results()
    assert report.validate(data) == []
    path = tmp_path / "h200" / "train_loop.json"
    TL.write_json(data, path)
    back = json.loads(path.read_text())
    assert back == data
    online = back["workloads"]["online"]
    assert online["best_baseline"] == "inductor-max-autotune-no-cudagraphs"  # not the failed 10 us one
    assert back["workloads"]["small"]["best_baseline"] == "inductor-default"
    assert back["workloads"]["small"]["speedup"]["value"] < 1.0  # a loss, recorded as such
    for w in back["workloads"].values():
        for m in w["methods"].values():
            for key in ("median_us", "p10_us", "p90_us", "samples_us", "correct", "max_rel_error"):
                assert key in m
    # A hand-edited file that names a failed baseline is caught.
    tampered = copy.deepcopy(data)
    tampered["workloads"]["online"]["best_baseline"] = "inductor-default"
    assert any("best_baseline" in p for p in report.validate(tampered))


def test_readme_rendering_shows_wins_losses_and_failures(tmp_path):
    data = synthetic_results()
    block = report.render_readme_block(data)
    assert block.startswith(report.BEGIN) and block.endswith(report.END)
    lines = {line.split("|")[1].strip(): line for line in block.splitlines() if line.startswith("| ") and "---" not in line}
    assert "faster" in lines["tiny"] and "1.58x" in lines["tiny"]  # 19.0 / 12.0
    assert "slower" in lines["small"]
    assert "max-autotune" in lines["online"] and "23.00" in lines["online"]  # not the failed 10 us method
    assert "online / Inductor default" in block  # the failure is named
    assert "python -m benchmarks.train_loop" in block
    full = report.render_results_readme(data)
    assert "**FAILED**" in full and "**ERROR**" in full
    assert "40.0 / 2.0" in full  # compile seconds cold / warm
    host = "# Project\n\nintro\n\n" + report.BEGIN + "\nold table\n" + report.END + "\n\nrest\n"
    new = report.replace_block(host, block)
    assert "old table" not in new and new.startswith("# Project") and new.endswith("rest\n")
    assert report.replace_block(new, block) == new  # idempotent
    with pytest.raises(ValueError):
        report.replace_block("no markers here", block)
    readme = tmp_path / "README.md"
    readme.write_text(host)
    report.update_readme(readme, data)
    assert "1.58x" in readme.read_text()


def test_write_reports_from_json(tmp_path):
    path = tmp_path / "train_loop.json"
    TL.write_json(synthetic_results(), path)
    written = report.write_reports(path)
    assert (tmp_path / "README.md") in written
    text = (tmp_path / "README.md").read_text()
    assert "| tiny |" in text
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert (tmp_path / "train_loop.png") not in written
    else:
        assert (tmp_path / "train_loop.png").stat().st_size > 1000
    assert report.main(["--json", str(path), "--print-block"]) == 0


def test_a_tree_without_its_own_repository_is_not_called_dirty(tmp_path, monkeypatch):
    """A repository around the tree (whose status is about other files) must not mark the
    run "dirty tree", nor may the status of a copy whose commit the caller names
    (TRAINKERNEL_COMMIT, the GPU machine's copy): unknown (None). In this checkout's own
    repository, with no commit named, the flag is a bool."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    outer = tmp_path / "outer"
    inner = outer / "copy"
    inner.mkdir(parents=True)
    subprocess.run([git, "init", "-q", str(outer)], check=True)
    (outer / "other.txt").write_text("x")
    subprocess.run([git, "-C", str(outer), "add", "other.txt"], check=True)
    (outer / "other.txt").write_text("changed")  # the outer repository is dirty
    monkeypatch.setattr(TL, "REPO_ROOT", inner)
    assert TL.environment(torch.device("cpu"))["git_dirty"] is None
    monkeypatch.setattr(TL, "REPO_ROOT", ROOT)
    monkeypatch.delenv("TRAINKERNEL_COMMIT", raising=False)
    if (ROOT / ".git").exists():
        assert isinstance(TL.environment(torch.device("cpu"))["git_dirty"], bool)
        monkeypatch.setenv("TRAINKERNEL_COMMIT", "0123456")
        env = TL.environment(torch.device("cpu"))
        assert env["git_dirty"] is None and env["git_commit"] == "0123456"
