"""The unit timer's lines as a table: one row per target variant, spec's gemm and
tile shape, the median over the launches of each part (cycles of block 0's
first unit: first operands, K loop, K loop a step, split-K fix-up, epilogue and
its row-walk body), for fitting the grid model's unit price by tile shape
(perf-log "The next session's device calls (prepared in the thirty-first
session)", item 1).

    python scripts/diag/unit_table.py results/h200/run-X-u/unit_timer.log [--json out.json]

The log is `resident_probe --unit-timer`'s (h200_call.sh unit-timer): `=== target
variant '...'` headers, then per launch a `tk-unit MxNxK tile BMxBN unit U
ksteps S first .. kloop .. fixup .. epilogue .. rows write .. sync .. body ..
sync ..` line for each wgmma gemm (lines without `tile`, from before the tile
shape was printed, read as tile `?`).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys

UNIT = re.compile(r"tk-unit (?P<gemm>\d+x\d+x\d+)(?: tile (?P<tile>\d+x\d+))? unit (?P<unit>\d+) ksteps (?P<ksteps>\d+)"
                  r" first (?P<first>-?\d+) kloop (?P<kloop>-?\d+) fixup (?P<fixup>-?\d+) epilogue (?P<epilogue>-?\d+)"
                  r"(?: rows write -?\d+ sync -?\d+ body (?P<body>-?\d+) sync -?\d+)?")
VARIANT = re.compile(r"=== target variant '(?P<variant>.*)'")
PARTS = ("first", "kloop", "fixup", "epilogue", "body")


def read(lines) -> list[dict]:
    """Rows (variant, gemm, tile, ksteps, each part's median and the launches seen)."""
    groups: dict[tuple, list[dict]] = {}
    variant = ""
    for line in lines:
        if m := VARIANT.search(line):
            variant = m["variant"]
        elif m := UNIT.search(line):
            key = (variant, m["gemm"], m["tile"] or "?", int(m["ksteps"]))
            groups.setdefault(key, []).append({p: int(m[p]) for p in PARTS if m[p] is not None})
    rows = []
    for (variant, gemm, tile, ksteps), seen in groups.items():
        row = {"variant": variant, "gemm": gemm, "tile": tile, "ksteps": ksteps, "launches": len(seen)}
        for part in PARTS:
            values = [s[part] for s in seen if part in s]
            row[part] = statistics.median(values) if values else None
        row["kstep"] = row["kloop"] / ksteps if ksteps else None
        rows.append(row)
    return rows


def render(rows: list[dict]) -> str:
    head = "| variant | gemm | tile | K steps | first | K loop | a K step | fix-up | epilogue | body |"
    out = [head, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        def cell(v):
            return "-" if v is None else f"{v:.0f}"
        out.append(f"| {r['variant'] or '(as is)'} | {r['gemm']} | {r['tile']} | {r['ksteps']} | {cell(r['first'])} | "
                   f"{cell(r['kloop'])} | {cell(r['kstep'])} | {cell(r['fixup'])} | {cell(r['epilogue'])} | "
                   f"{cell(r['body'])} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)
    with open(args.log) as f:
        rows = read(f)
    if not rows:
        print(f"{args.log}: no tk-unit lines", file=sys.stderr)
        return 1
    print(render(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
