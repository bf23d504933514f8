"""CPU tests of the training-loop benchmark harness (benchmarks/): statistics,
the correctness gate, baseline selection, the results schema and its
rendering, and the workloads' trajectories. No GPU needed; a few seconds."""

import copy
import json
import math
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
    make_problem,
    make_step,
    reference_step,
    workload_step,
)

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
    w = WORKLOADS[name].scaled(cap)
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
    }
    assert WORKLOADS["mlp4"].layers == 4
    assert WORKLOADS["classification"].task == "classification"


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_trajectories_are_finite_and_eager_is_within_its_ceiling(name):
    w = WORKLOADS[name].scaled(16)
    params, batches = make_problem(w, seed=11)
    assert all(p.dtype == torch.float32 for p in params)
    assert all(x.dtype == torch.bfloat16 and y.dtype == torch.bfloat16 for x, y in batches)
    assert len(batches) == 4
    ref = C.reference_trajectory(reference_step(w), params, batches, 60)
    losses = torch.stack([r[0] for r in ref])
    assert torch.isfinite(losses).all()
    assert losses[-4:].mean() < losses[:4].mean()  # it trains
    step = workload_step(w)
    loss, grads, new = step(params, *batches[0])
    assert loss.dtype == torch.float32 and all(g.dtype == torch.float32 for g in grads)
    assert all(n.dtype == torch.float32 for n in new)
    eager = C.trajectory_errors(step, params, batches, ref)
    assert all(math.isfinite(e) for row in eager for e in row)
    assert C.eager_sanity(eager, C.quantity_names(len(params)), torch.bfloat16)["passed"]


def test_classification_targets_are_one_hot():
    w = WORKLOADS["classification"].scaled(16)
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
    w = WORKLOADS["tiny"].scaled(8)
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
