"""Render ``train_loop.json`` as markdown (results README, the project
README's table block) and a PNG chart.

    python -m benchmarks.report                                   # results/h200/{README.md,train_loop.png}
    python -m benchmarks.report --json results/h200/train_loop.json --embed README.md
    python -m benchmarks.report --merge run-X-c=c.json:small,medium run-X-e=e.json:online,online-adam --note "..."

``render_readme_block(data)`` returns the block that the project README
embeds between ``<!-- train_loop:begin -->`` and ``<!-- train_loop:end -->``;
``--embed FILE`` rewrites that block in place (and refuses if the markers are
missing). Everything here reads only the JSON: no torch, no GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import List, Mapping, Optional, Sequence

from . import stats

BEGIN = "<!-- train_loop:begin -->"
END = "<!-- train_loop:end -->"
REPRODUCE = "python -m benchmarks.train_loop"
DEFAULT_JSON = Path(__file__).resolve().parent.parent / "results" / "h200" / "train_loop.json"

LABELS = {
    "eager": "eager",
    "eager-graph": "eager, graph",
    "inductor-default": "Inductor default",
    "inductor-max-autotune-no-cudagraphs": "Inductor max-autotune-no-cudagraphs",
    "inductor-reduce-overhead": "Inductor reduce-overhead",
    "trainkernel": "TrainKernel in-place",
    "trainkernel-staged": "TrainKernel staged",
    "trainkernel-capture": "TrainKernel in-place, own capture",
}


def label(name: str) -> str:
    return LABELS.get(name, name)


def load(path) -> dict:
    return json.loads(Path(path).read_text())


METHOD_KEYS = ("family", "status", "correct", "median_us", "p10_us", "p90_us", "samples_us",
               "max_rel_error", "compile_seconds", "errors")
WORKLOAD_KEYS = ("config", "methods", "best_baseline", "best_trainkernel", "speedup", "compile_seconds")
ENVIRONMENT_KEYS = ("device", "torch", "cuda", "git_commit")


def validate(data: Mapping) -> List[str]:
    """Problems with a results document (empty list: it is well formed).
    Also re-derives the baseline choice so a hand-edited file is caught."""
    problems = []
    for key in ("schema", "environment", "protocol", "workloads"):
        if key not in data:
            problems.append(f"missing top-level key {key!r}")
    for key in ENVIRONMENT_KEYS:
        if key not in data.get("environment", {}):
            problems.append(f"environment lacks {key!r}")
    for wname, w in data.get("workloads", {}).items():
        for key in WORKLOAD_KEYS:
            if key not in w:
                problems.append(f"{wname}: missing {key!r}")
        methods = w.get("methods", {})
        for mname, m in methods.items():
            for key in METHOD_KEYS:
                if key not in m:
                    problems.append(f"{wname}/{mname}: missing {key!r}")
            samples = m.get("samples_us") or []
            if m.get("median_us") is not None and not samples:
                problems.append(f"{wname}/{mname}: a median without raw samples")
            if samples and m.get("median_us") is not None and abs(stats.median(samples) - m["median_us"]) > 1e-9 * max(1.0, m["median_us"]):
                problems.append(f"{wname}/{mname}: median_us does not match its samples")
            cs = m.get("compile_seconds")
            if cs is not None and not ("cold" in cs and "warm" in cs):
                problems.append(f"{wname}/{mname}: compile_seconds lacks cold/warm")
        if methods and "best_baseline" in w:
            expect = stats.select_best_baseline(methods)
            if w["best_baseline"] != expect:
                problems.append(f"{wname}: best_baseline {w['best_baseline']!r}, expected {expect!r}")
            base = w["best_baseline"]
            if base is not None and (not methods[base].get("correct") or stats.is_trainkernel(base, methods[base])):
                problems.append(f"{wname}: best_baseline {base!r} is failed or TrainKernel")
        sp = w.get("speedup")
        if sp is not None and not ("value" in sp and "ci95" in sp and len(sp["ci95"]) == 2):
            problems.append(f"{wname}: speedup lacks value/ci95")
        of = (w.get("config") or {}).get("twin_of")
        if of is not None and of not in data.get("workloads", {}) and not data.get("partial"):
            problems.append(f"{wname}: a twin of {of!r}, which is not in this run")
    if "twins" in data:
        expect = stats.twin_comparisons(data.get("workloads", {}))
        if data["twins"] != expect:
            problems.append("twins do not match the workloads' speedups (re-derived: "
                            + ", ".join(f"{k} kept {v['kept']}" for k, v in expect.items()) + ")")
    return problems


def _us(v) -> str:
    if v is None:
        return "–"
    return f"{v:.1f}" if v >= 100 else f"{v:.2f}"


def _sci(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    return f"{v:.1e}"


def _shape(cfg: Mapping) -> str:
    recipe = cfg.get("recipe")
    tail = f", {recipe}" if recipe and recipe != "sgd-mse" else ""
    return f"B={cfg['batch']}, widths {'-'.join(str(w) for w in cfg['widths'])}{tail}"


def render_twins_table(data: Mapping) -> Optional[str]:
    """Each twin's speedup against its SGD/MSE twin's (re-derived from the
    workloads, so it always matches them); None when the run has no twin."""
    twins = stats.twin_comparisons(data.get("workloads", {}))
    if not twins:
        return None
    rows = [
        "| twin | SGD/MSE twin | twin's speedup | its speedup | kept [conservative 95% CI] | target | result |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, t in twins.items():
        sp = f"{t['speedup']:.2f}x" if t["speedup"] is not None else "–"
        psp = f"{t['twin_of_speedup']:.2f}x" if t["twin_of_speedup"] is not None else "–"
        if t["kept"] is not None:
            lo, hi = t["kept_ci95"]
            kept = f"{100 * t['kept']:.0f}% [{100 * lo:.0f}%, {100 * hi:.0f}%]"
            result = "kept" if t["met"] else "**lost more than the target allows**"
        else:
            kept, result = "–", f"not compared: {t['why']}"
        rows.append(f"| {name} | {t['twin_of']} | {sp} | {psp} | {kept} | >= {100 * t['target']:.0f}% | {result} |")
    return "\n".join(rows)


def verdict(w: Mapping) -> str:
    """One word per workload; a loss is stated as plainly as a win."""
    if w.get("error"):
        return "**workload aborted**"
    methods = w.get("methods", {})
    tk_ran = [n for n in methods if stats.is_trainkernel(n, methods[n])]
    if not tk_ran:
        return "TrainKernel not run"
    if w.get("best_trainkernel") is None:
        return "**TrainKernel failed**"
    if w.get("best_baseline") is None:
        return "no correct baseline"
    sp = w["speedup"]
    lo, hi = sp["ci95"]
    if lo > 1.0:
        return f"faster ({sp['value']:.2f}x)"
    if hi < 1.0:
        return f"**slower** ({1.0 / sp['value']:.2f}x the baseline's time)"
    return "tie (interval contains 1)"


def _variant(name: str) -> str:
    return {"trainkernel": "in-place", "trainkernel-staged": "staged", "trainkernel-capture": "capture"}.get(name, name)


def render_summary_table(data: Mapping) -> str:
    rows = [
        "| workload | shape | TrainKernel µs/step | fastest correct baseline | baseline µs/step | speedup [95% CI] | result |",
        "| --- | --- | ---: | --- | ---: | ---: | --- |",
    ]
    for wname, w in data.get("workloads", {}).items():
        methods = w.get("methods", {})
        tk, base = w.get("best_trainkernel"), w.get("best_baseline")
        if tk:
            tk_cell = f"{_us(methods[tk]['median_us'])} ({_variant(tk)})"
        else:  # no correct TrainKernel method: show what was timed, marked
            timed = [n for n, m in methods.items() if stats.is_trainkernel(n, m) and m.get("median_us") is not None]
            fastest = min(timed, key=lambda n: methods[n]["median_us"]) if timed else None
            tk_cell = f"{_us(methods[fastest]['median_us'])} ({_variant(fastest)}, failed)" if fastest else "–"
        base_cell = label(base) if base else "–"
        base_us = _us(methods[base]["median_us"]) if base else "–"
        sp = w.get("speedup")
        sp_cell = f"{sp['value']:.2f}x [{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}]" if sp else "–"
        rows.append(f"| {wname} | {_shape(w['config'])} | {tk_cell} | {base_cell} | {base_us} | {sp_cell} | {verdict(w)} |")
    return "\n".join(rows)


def failures(data: Mapping) -> List[str]:
    out = []
    for wname, w in data.get("workloads", {}).items():
        if w.get("error"):
            out.append(f"{wname} (whole workload): {w['error']}")
        for mname, m in w.get("methods", {}).items():
            if m.get("correct"):
                continue
            why = "; ".join(m.get("errors") or [])
            if not why:
                parts = []
                for key in ("trajectory", "replay_check"):
                    chk = m.get(key)
                    if chk and not chk.get("passed") and chk.get("first_failure"):
                        ff = chk["first_failure"]
                        parts.append(f"{key.replace('_', ' ')}: {ff['quantity']} at step {ff['step']}, "
                                     f"error {_sci(ff['error'])} > allowed {_sci(ff['allowed'])}")
                why = "; ".join(parts) or "; ".join(m.get("notes") or []) or "failed"
            out.append(f"{wname} / {label(mname)}: {why}")
    return out


def render_readme_block(data: Mapping) -> str:
    """The block the project README embeds (markers included)."""
    env = data.get("environment", {})
    proto = data.get("protocol", {})
    head = (f"Per-step time of a complete training step (forward, loss, backward, optimizer update: MSE and SGD "
            f"unless the shape names another recipe), "
            f"{proto.get('compute_dtype', 'bfloat16')} compute with FP32 master weights, "
            f"on {env.get('device', '?')}: median of {proto.get('replays', '?')} replays of a "
            f"{proto.get('graph_steps', 20)}-step CUDA graph with state feedback. Speedup is the fastest "
            f"correct baseline's median over TrainKernel's (> 1: TrainKernel faster); slower results are listed, not dropped.")
    lines = [BEGIN, head, "", render_summary_table(data), ""]
    twins = render_twins_table(data)
    if twins:
        lines += ["Twins: the same model with another loss and optimizer; each should keep at least "
                  f"{100 * stats.TWIN_TARGET:.0f}% of its SGD/MSE twin's speedup in the same run.", "", twins, ""]
    fails = failures(data)
    if fails:
        lines.append("Failed the correctness gate or errored (kept in the results, never a baseline): "
                     + "; ".join(f.split(":")[0] for f in fails) + ".")
        lines.append("")
    if data.get("smoke"):
        lines += ["**CPU smoke run: these numbers are not measurements.**", ""]
    commit = (env.get("git_commit") or "?")[:12]
    lines.append(f"torch {env.get('torch', '?')}, CUDA {env.get('cuda', '?')}, commit `{commit}`"
                 f"{' (dirty tree)' if env.get('git_dirty') else ''}, {data.get('created_utc', '')}. "
                 f"Reproduce: `{REPRODUCE}` (writes `results/h200/train_loop.json`).")
    merged = data.get("merged_from")
    if merged:  # several harness calls of one session (a device call is limited in time)
        parts = "; ".join(f"{run}: {', '.join(w)}" for run, w in merged.items() if run != "note")
        lines.append(f"Merged from {parts}" + (f" ({merged['note']})" if merged.get("note") else "") + ".")
    lines.append(END)
    return "\n".join(lines)


def replace_block(text: str, block: str) -> str:
    """Replace the marked block in ``text``; ValueError if the markers are absent."""
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < 0 or j < i:
        raise ValueError(f"markers {BEGIN} ... {END} not found")
    return text[:i] + block + text[j + len(END):]


def update_readme(readme: Path, data: Mapping) -> None:
    readme = Path(readme)
    readme.write_text(replace_block(readme.read_text(), render_readme_block(data)))


def render_methods_table(data: Mapping) -> str:
    rows = [
        "| workload | method | median µs | p10–p90 µs | samples | correct | max rel. error | error / allowed | compile cold / warm s |",
        "| --- | --- | ---: | ---: | ---: | :---: | ---: | ---: | ---: |",
    ]
    for wname, w in data.get("workloads", {}).items():
        for mname, m in w.get("methods", {}).items():
            ok = "yes" if m.get("correct") else ("**FAILED**" if m.get("status") == "failed" else "**ERROR**")
            spread = f"{_us(m.get('p10_us'))}–{_us(m.get('p90_us'))}" if m.get("p10_us") is not None else "–"
            cs = m.get("compile_seconds")
            comp = f"{cs['cold']:.1f} / {cs['warm']:.1f}" if cs else "–"
            rows.append(f"| {wname} | {label(mname)} | {_us(m.get('median_us'))} | {spread} | "
                        f"{len(m.get('samples_us') or [])} | {ok} | {_sci(m.get('max_rel_error'))} | "
                        f"{_ratio(m.get('max_error_ratio'))} | {comp} |")
    return "\n".join(rows)


def _ratio(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    return f"{v:.2f}"


def render_results_readme(data: Mapping, chart: Optional[str] = "train_loop.png") -> str:
    env = data.get("environment", {})
    proto = data.get("protocol", {})
    tol = proto.get("tolerance", {})
    out = ["# Training-loop benchmark: TrainKernel vs eager PyTorch and Inductor", ""]
    if data.get("smoke"):
        out += ["> **CPU smoke run.** The harness ran on CPU without CUDA graphs; nothing here is a measurement.", ""]
    if data.get("partial"):
        out += ["> **Partial run**: the suite did not finish; only the workloads below were measured.", ""]
    out += ["Generated by `python -m benchmarks.report` from `train_loop.json` (do not edit by hand).", ""]
    out += ["## Summary", "", render_readme_block(data), ""]
    if chart:
        out += [f"![per-step time]({chart})", ""]
    out += ["## Every method", "",
            "Median, 10th and 90th percentile of the per-step time; every raw sample is in the JSON. "
            "`error / allowed` is the worst ratio of a method's error to the tolerance (pass: <= 1).", "",
            render_methods_table(data), ""]
    fails = failures(data)
    out += ["## Correctness failures", ""]
    out += ([f"- {f}" for f in fails] if fails else ["None: every method that ran passed."]) + [""]
    out += ["## Protocol", "",
            f"- {proto.get('graph_steps')} training steps per CUDA graph, state fed back step to step over "
            f"{proto.get('resident_batches')} resident batches; {proto.get('warmup_replays')} warm-up replays, then "
            f"{proto.get('replays')} timed replays, {proto.get('timer')}; per-step time = replay time / {proto.get('graph_steps')}.",
            "- `eager` and `Inductor reduce-overhead` are timed as 20 Python calls per sample (the latter replays its own graphs).",
            f"- Correctness: {proto.get('trajectory_steps')}-step trajectory of every tensor a step returns (loss, "
            f"SGD's gradients, the new state: parameters and optimizer moments) vs float64; rule: {tol.get('rule')} (K = {tol.get('K')}, floor = {tol.get('floor')}); "
            f"eager must itself stay within {tol.get('eager_ceiling')} on loss and parameters. "
            f"Replay check: {tol.get('replay_check')}.",
            f"- Speedup interval: percentile bootstrap, {proto.get('bootstrap', {}).get('draws')} draws, "
            f"seed {proto.get('bootstrap', {}).get('seed')}.",
            f"- Compile time, cold: {proto.get('compile_cold')}; warm: {proto.get('compile_warm')}.",
            ""]
    out += ["## Environment", ""]
    out += [f"- {k}: `{v}`" for k, v in env.items()]
    if "total_seconds" in data:
        out += [f"- suite wall time: {data['total_seconds']:.0f} s"]
    out += [f"- command: `{data.get('command') or REPRODUCE}`", ""]
    return "\n".join(out)


def write_chart(data: Mapping, path: Path) -> bool:
    """A PNG of per-step medians (p10–p90 whiskers), one panel per workload.
    Returns False (with a note) where matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib is not installed; skipping the PNG chart", file=sys.stderr)
        return False
    workloads = list(data.get("workloads", {}).items())
    if not workloads:
        return False
    cols = min(3, len(workloads))
    rows = math.ceil(len(workloads) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(5.2 * cols, 9.0), 3.4 * rows + 0.4), squeeze=False)
    for ax, (wname, w) in zip(axes.flat, workloads):
        names = [n for n, m in w["methods"].items()]
        med = [w["methods"][n].get("median_us") or 0.0 for n in names]
        lo = [max(0.0, (w["methods"][n].get("median_us") or 0) - (w["methods"][n].get("p10_us") or 0)) for n in names]
        hi = [max(0.0, (w["methods"][n].get("p90_us") or 0) - (w["methods"][n].get("median_us") or 0)) for n in names]
        colors = ["#d62728" if stats.is_trainkernel(n, w["methods"][n]) else "#1f77b4" for n in names]
        ypos = list(range(len(names)))
        bars = ax.barh(ypos, med, xerr=[lo, hi], color=colors, capsize=2)
        for bar, n in zip(bars, names):
            m = w["methods"][n]
            if not m.get("correct"):
                bar.set_hatch("//")
                bar.set_alpha(0.45)
                ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                        " failed" if m.get("median_us") is not None else " error", va="center", fontsize=7)
        ax.set_yticks(ypos)
        ax.set_yticklabels([label(n) for n in names], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("µs per step (median, p10–p90)", fontsize=8)
        sp = w.get("speedup")
        title = f"{wname} ({_shape(w['config'])})"
        if sp:
            title += f"\nspeedup {sp['value']:.2f}x [{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}]"
        ax.set_title(title, fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    for ax in list(axes.flat)[len(workloads):]:
        ax.set_visible(False)
    env = data.get("environment", {})
    fig.suptitle(f"TrainKernel training-loop benchmark, {env.get('device', '?')}"
                 f"{' (CPU SMOKE: not a measurement)' if data.get('smoke') else ''}", fontsize=10)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def merge(takes: Sequence[tuple], note: str = "") -> dict:
    """One results document from several harness calls of one commit (a device
    call is limited in time): `takes` is (run label, document, workloads taken
    from it), in the order the merged table lists them. Every document must
    have measured the same commit on the same device; a workload comes from one
    call; a twin and its partner from the same call (a twin's kept share is a
    ratio of two speedups, and the baseline moves between calls). The twins
    table is derived again from the merged rows. ValueError says what is wrong."""
    if not takes:
        raise ValueError("nothing to merge")
    first = takes[0][1]
    key = lambda d: (d["environment"].get("git_commit"), d["environment"].get("device"))  # noqa: E731
    for label, data, _ in takes:
        if key(data) != key(first):
            raise ValueError(f"{label}: commit/device {key(data)} differs from {takes[0][0]}'s {key(first)}")
    workloads: dict = {}
    source: dict = {}
    for label, data, names in takes:
        for name in names:
            if name not in data.get("workloads", {}):
                raise ValueError(f"{label} has no workload {name!r}")
            if name in workloads:
                raise ValueError(f"{name} is taken from both {source[name]} and {label}")
            workloads[name], source[name] = data["workloads"][name], label
    for name, w in workloads.items():
        partner = (w.get("config") or {}).get("twin_of")
        if partner is not None and partner in source and source[partner] != source[name]:
            raise ValueError(f"twin {name} ({source[name]}) and its partner {partner} ({source[partner]}) "
                             "come from different calls")
    calls = {}  # label -> document, each call once however many takes name it
    for label, data, _ in takes:
        if calls.setdefault(label, data) is not data:
            raise ValueError(f"the label {label} names two documents")
    out = json.loads(json.dumps(first))
    out["workloads"] = json.loads(json.dumps(workloads))
    out["command"] = " ; ".join(d.get("command", "?") for d in calls.values())
    out["created_utc"] = max(d.get("created_utc", "") for d in calls.values())
    out["partial"] = any(d.get("partial") for d in calls.values())
    out["total_seconds"] = sum(d.get("total_seconds") or 0.0 for d in calls.values())
    twins = stats.twin_comparisons(out["workloads"])
    if twins:
        out["twins"] = twins
    else:
        out.pop("twins", None)
    merged: dict = {}
    for label, _, names in takes:
        merged.setdefault(label, []).extend(names)
    if note:
        merged["note"] = note
    out["merged_from"] = merged
    return out


def write_reports(json_path, out_dir: Optional[Path] = None) -> List[Path]:
    json_path = Path(json_path)
    out_dir = Path(out_dir) if out_dir else json_path.parent
    data = load(json_path)
    for problem in validate(data):
        print(f"warning: {json_path}: {problem}", file=sys.stderr)
    written = []
    png = out_dir / "train_loop.png"
    has_chart = write_chart(data, png)
    if has_chart:
        written.append(png)
    readme = out_dir / "README.md"
    readme.write_text(render_results_readme(data, chart=png.name if has_chart else None) + "\n")
    written.insert(0, readme)
    return written


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--embed", type=Path, default=None, metavar="README",
                    help="rewrite the train_loop block of this README in place")
    ap.add_argument("--print-block", action="store_true", help="print the README block to stdout")
    ap.add_argument("--merge", nargs="+", metavar="LABEL=PATH:W1,W2",
                    help="merge harness calls of one commit into --json (then render it): each the call's "
                         "label, its JSON and the workloads taken from it, in the table's order")
    ap.add_argument("--note", default="", help="with --merge: why and how the calls were merged")
    args = ap.parse_args(argv)
    if args.merge:
        takes, docs = [], {}
        for spec in args.merge:
            label, _, rest = spec.partition("=")
            path, _, names = rest.rpartition(":")
            if not (label and path and names):
                print(f"error: --merge {spec!r}: expected LABEL=PATH:W1,W2", file=sys.stderr)
                return 2
            takes.append((label, docs.setdefault(path, load(path)), names.split(",")))
        try:
            data = merge(takes, args.note)
        except ValueError as exc:
            print(f"error: --merge: {exc}", file=sys.stderr)
            return 2
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.json} (merged from {', '.join(dict.fromkeys(t[0] for t in takes))})")
    if not args.json.exists():
        print(f"error: {args.json} does not exist; run `{REPRODUCE}` first", file=sys.stderr)
        return 2
    data = load(args.json)
    if args.print_block:
        print(render_readme_block(data))
        return 0
    if args.embed:
        try:
            update_readme(args.embed, data)
        except ValueError as exc:
            print(f"error: {args.embed}: {exc}", file=sys.stderr)
            return 2
        print(f"updated {args.embed}")
        return 0
    for p in write_reports(args.json):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
