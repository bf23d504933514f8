"""Where a resident kernel's step loop spends its time, op by op: ncu's warp-state
sampling (SourceCounters) of ONE launch of a captured 20-step program, its samples
summed over the lines of each tile op of the generated CUDA (the printer opens every
op with a `{ // tile.<op>` comment).

On the device (scripts/h200_call.sh, part ncu-loop), per spec:
    NVCC_APPEND_FLAGS=-lineinfo ncu --clock-control none -k regex:tk_.*_kernel -c 1 \
        --section SourceCounters --section WarpStateStats --import-source yes \
        -o $OUT/ncu/SPEC python3 scripts/diag/loop_profile.py --run SPEC $OUT/ncu
    ncu -i $OUT/ncu/SPEC.ncu-rep --page source --csv --print-source cuda > $OUT/ncu/SPEC.cuda.csv
On any machine, from the CSV and the kernel source --run wrote beside it:
    python scripts/diag/loop_profile.py --report results/.../ncu SPEC
"""

from __future__ import annotations

import csv
import re
import shutil
import sys
from collections import defaultdict
from pathlib import Path

STEPS = 20


def run(spec: str, out: Path) -> None:
    import torch

    import trainkernel
    from benchmarks.resident_probe import workload

    w, dtype = workload(spec)
    state = w.init_state(0, "cuda")
    batches = w.make_batches(4, seed=1, device="cuda", dtype=dtype)
    c = trainkernel.compile_training(w.make_step(dtype), (state, *batches[0]))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{spec}.cu").write_text(c.cuda_source)
    shutil.copy(c.build(), out / f"{spec}.so")  # SASS with line info (nvdisasm -g), if ncu lacks the source
    print(f"{spec}: built in {c.library_path.parent}", flush=True)
    prog = c.capture(state, *batches[0], warmup=0, steps=STEPS, batches=batches)
    # A resident kernel runs the steps in one launch (its loop); a grid kernel one launch
    # a step, of which ncu (-c 1) profiles the first.
    print(f"{spec}: {STEPS} steps in {prog.launches} launches", flush=True)
    prog.replay()
    torch.cuda.synchronize()


def op_of_line(source: list[str]) -> list[str]:
    """Each line's op, `p<phase> <its comment's first words>`: the last
    `{ // tile.<op> ...` opened at or above it (in tk_step for a resident kernel),
    else the region's name (the step's staging, a barrier, the kernel's loop)."""
    owner, current, phase, started = [], "before the kernel", 0, False
    resident = any("void tk_step(" in line for line in source)
    for line in source:
        if "void tk_step(" in line or ("__global__" in line and not resident):
            current, started = "step: pointers and staging", True
        m = re.match(r"\s*(?:if \(.*\)\s*)?\{ // (tile\.\w+[^,]*)", line)
        p = re.match(r"\s*// ---- phase (\d+)", line)
        if p:
            phase = int(p.group(1))
        if m and started:
            current = f"p{phase} {m.group(1)[:56]}"
        elif line == "  __syncthreads();" and current != "kernel: prologue and step loop":
            current = "block barrier between phases"
        elif line.strip() == "tk::grid_sync();":
            current = "grid barrier"
        elif line.startswith('extern "C" __global__') and resident:
            current = "kernel: prologue and step loop"
        owner.append(current)
    return owner


def sass_lines(folder: Path, spec: str, nvdisasm: str, cuobjdump: str) -> list[tuple[int, str, int | None]]:
    """(offset, opcode, line of the kernel's .cu) of every instruction of the kernel's
    cubin (nvdisasm -gi on the .so that --run kept). An instruction of an inlined header
    function whose caller is a header too takes the .cu line of the nearest one before
    it in the listing (the printer's ops follow each other in program order)."""
    import subprocess
    import tempfile

    so = (folder / f"{spec}.so").resolve()
    with tempfile.TemporaryDirectory() as d:
        cubin = Path(d) / "image.cubin"
        # A separate image (build.separate_image) is the cubin linked in as data.
        syms = subprocess.run(["readelf", "-sW", str(so)], check=True, capture_output=True, text=True).stdout
        found = {kind: addr for addr, kind in
                 re.findall(r"([0-9a-f]+)\s+\d+\s+NOTYPE.*_binary_image_cubin_(start|size)$", syms, re.M)}
        if found:
            data = so.read_bytes()
            start = _file_offset(so, int(found["start"], 16))
            cubin.write_bytes(data[start:start + int(found["size"], 16)])
        else:
            subprocess.run([cuobjdump, "-xelf", "all", str(so)], cwd=d, check=True, capture_output=True)
            cubin = next(Path(d).glob("*.cubin"))
        text = subprocess.run([nvdisasm, "-gi", str(cubin)], check=True, capture_output=True, text=True).stdout
    out, line = [], None
    in_code = False
    for raw in text.splitlines():
        if raw.startswith("//----") and ".text." in raw:
            in_code = True
            continue
        if not in_code:
            continue
        m = re.match(r'\s*//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?', raw)
        if m:
            if m.group(1).endswith(".cu"):
                line = int(m.group(2))
            elif m.group(3) and m.group(3).endswith(".cu"):
                line = int(m.group(4))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", raw)
        if m:
            out.append((int(m.group(1), 16), m.group(2), line))
    return out


def _file_offset(so: Path, address: int) -> int:
    """The file offset of a virtual address of the library (its section's)."""
    import subprocess

    sections = subprocess.run(["readelf", "-SW", str(so)], check=True, capture_output=True, text=True).stdout
    for m in re.finditer(r"\]\s+\S+\s+\S+\s+([0-9a-f]{8,})\s+([0-9a-f]{6,})\s+([0-9a-f]{6,})", sections):
        addr, off, size = (int(g, 16) for g in m.groups())
        if addr <= address < addr + size:
            return address - addr + off
    raise ValueError(f"{so}: no section holds {address:#x}")


def _ncu_csv(path: Path) -> tuple[list[str], list[list[str]], int]:
    """An ncu source-page CSV: its header, its rows and the samples' column."""
    rows = list(csv.reader(path.read_text().splitlines()))
    head_at = next(i for i, r in enumerate(rows) if any("Warp Stall Sampling" in c for c in r))
    head = rows[head_at]
    return head, rows[head_at + 1:], next(i for i, c in enumerate(head) if c.startswith("Warp Stall Sampling (All"))


def _print_per_op(title: str, total: float, per_op: dict[str, float],
                  per_reason: dict[str, dict[str, float]] | None = None) -> None:
    """The samples per op, most first, with each op's top three stall reasons."""
    print(title)
    for op, n in sorted(per_op.items(), key=lambda kv: -kv[1]):
        line = f"  {100 * n / max(total, 1):5.1f}%  {n:8.0f}  {op}"
        if per_reason is not None:
            top = sorted(per_reason[op].items(), key=lambda kv: -kv[1])[:3]
            line = f"{line:80s} " + ", ".join(f"{name} {v:.0f}" for name, v in top if v)
        print(line)


def report_sass(folder: Path, spec: str, nvdisasm: str, cuobjdump: str) -> None:
    """From ncu's SASS view (spec.sass.csv: each instruction's address and samples)."""
    owner = op_of_line((folder / f"{spec}.cu").read_text().splitlines())
    head, rows, samp_col = _ncu_csv(folder / f"{spec}.sass.csv")
    addr_col = next(i for i, c in enumerate(head) if c.strip() == "Address")
    src_col = next(i for i, c in enumerate(head) if c.strip() == "Source")
    reasons = {i: c[6:] for i, c in enumerate(head) if c.startswith("stall_") and "(Not Issued)" not in c}
    samples, why = [], []
    for r in rows:
        try:
            samples.append((int(r[addr_col], 16), r[src_col].strip(), float(r[samp_col] or 0)))
            why.append({name: float(r[i] or 0) for i, name in reasons.items()})
        except (ValueError, IndexError):
            continue
    base = min(a for a, _, _ in samples)
    by_offset = {off: (op, ln) for off, op, ln in sass_lines(folder, spec, nvdisasm, cuobjdump)}
    per_op: dict[str, float] = defaultdict(float)
    per_reason: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    total = mismatched = 0.0
    for (addr, text, n), stalls in zip(samples, why):
        total += n
        op, ln = by_offset.get(addr - base, ("", None))
        if not text.split() or op not in text:
            mismatched += n
        key = owner[ln - 1] if ln and 0 < ln <= len(owner) else "?"
        per_op[key] += n
        for name, v in stalls.items():
            per_reason[key][name] += v
    _print_per_op(f"{spec}: {total:.0f} warp stall samples (SASS view; {mismatched:.0f} on instructions that did "
                  "not match)", total, per_op, per_reason)


def report(folder: Path, spec: str) -> None:
    """From ncu's CUDA view (spec.cuda.csv: each line of the kernel's source and its samples)."""
    owner = op_of_line((folder / f"{spec}.cu").read_text().splitlines())
    head, rows, samp_col = _ncu_csv(folder / f"{spec}.cuda.csv")
    line_col = next(i for i, c in enumerate(head) if c.strip() in ("#", "Line", "Line #"))
    per_op: dict[str, float] = defaultdict(float)
    total = 0.0
    for r in rows:
        try:
            line, samples = int(r[line_col]), float(r[samp_col] or 0)
        except (ValueError, IndexError):
            continue
        total += samples
        per_op[owner[line - 1] if 0 < line <= len(owner) else "?"] += samples
    _print_per_op(f"{spec}: {total:.0f} warp stall samples", total, per_op)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        run(sys.argv[2], Path(sys.argv[3]))
    elif sys.argv[1:2] == ["--report"]:
        for spec in sys.argv[3:]:
            report(Path(sys.argv[2]), spec)
    elif sys.argv[1:2] == ["--report-sass"]:  # --report-sass FOLDER NVDISASM CUOBJDUMP SPEC...
        for spec in sys.argv[5:]:
            report_sass(Path(sys.argv[2]), spec, sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
