"""Diagnostic (perf-log steps 57-61): the cost of a resident kernel's optimizer-update
map alone. Takes the largest map with a square root (the Adam/AdamW update) out of a
suite step's kernel as the printer prints it under each target variant, runs it in a
kernel of its own (the step's block size and shared-memory layout, one block, no
cluster), and prints its cycles a run with the update's operands (a) nonzero and
(b) zero gradients and moments (dead units: the IEEE divisions' operands are zeros).

    python3 scripts/diag/update_map.py [--twin NAME] [--run] [--out DIR]

Without --run it writes and nvcc-compiles the program (any machine with nvcc); with
--run it also runs it (a GPU) and prints a table: variant, operands, cycles a run."""
from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import torch

import trainkernel
from trainkernel import target
from trainkernel.backend import cuda_target
from trainkernel.workloads import TWINS, WORKLOADS

INCLUDE = Path(trainkernel.__file__).parent / "backend" / "include"
VARIANTS = {"default": {}, "guarded": dict(static_slices=False), "fast_paths": dict(fast_paths=True)}
RUNS = 64


def kernel_source(name: str, fields: dict) -> str:
    t = dataclasses.replace(target.DEFAULT, **fields)
    saved = target.TARGETS[target.DEFAULT.name], cuda_target.TARGET
    target.TARGETS[target.DEFAULT.name] = cuda_target.TARGET = t
    try:
        w = {**WORKLOADS, **TWINS}[name]
        return trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16),
                                            build=False).cuda_source
    finally:
        target.TARGETS[target.DEFAULT.name], cuda_target.TARGET = saved


def update_map(src: str) -> tuple[str, int, int, list[str]]:
    """(the map's block, its elements a block, the kernel's threads, the declarations
    of the shared-memory homes and global buffers it names)."""
    lines = src.splitlines()
    best = None
    for i, line in enumerate(lines):
        m = re.match(r"  \{ // tile\.map split -?\d+: (\d+) elements per block$", line)
        if not m:
            continue
        j = i + 1
        while lines[j] != "  }":
            j += 1
        block = "\n".join(lines[i:j + 1])
        if "sqrtf(" in block and (best is None or int(m.group(1)) > best[1]):
            best = (block, int(m.group(1)))
    if best is None:
        raise SystemExit("no map with a square root in this kernel")
    block, n = best
    threads = int(re.search(r"static constexpr int kThreads = (\d+);", src).group(1))
    names = set(re.findall(r"\b(s\d+(?:_\w+)?)\[", block))
    decls = [l.strip() for l in lines if (m := re.match(r"\s+\w+\* (s\d+(?:_\w+)?) = \(\w+\*\)\(smem \+ \d+\);", l))
             and m.group(1) in names]
    # Global buffers: stored by the last step alone (tk_more false), never here.
    globals_ = set(re.findall(r"\b(b\d+(?:_\w+)?)\[", block))
    decls += [f"{m.group(1)}* {m.group(2)} = nullptr;" for l in lines
              if (m := re.match(r"\s+([\w:]+)\* (b\d+(?:_\w+)?) = ", l)) and m.group(2) in globals_]
    return block, n, threads, decls


PROGRAM = """#include <cstdio>
#include "tk/resident.cuh"
static constexpr int kThreads = {threads};

// Shared memory filled with small positive floats (mode 0) or zeros (mode 1), but for
// one-element homes (the step's scalars: bias corrections, the step size), set to 0.5.
__device__ void fill(char* smem, int bytes, int mode) {{
  float* f = (float*)smem;
  for (int i = threadIdx.x; i < bytes / 4; i += kThreads) {{
    unsigned h = (unsigned)i * 2654435761u;
    f[i] = mode == 0 ? 1e-3f + (float)(h >> 8) * (1.0f / 16777216.0f) : 0.0f;
  }}
}}

extern "C" __global__ void __launch_bounds__({threads}, 1) map_kernel(int mode, long long* cycles) {{
  extern __shared__ __align__(128) char smem[];
  const int rank = 0;
  const bool tk_more = true;  // a step of the loop: the update stays in shared memory
  (void)rank; (void)tk_more;
{decls}
  fill(smem, {smem}, mode);
  __syncthreads();
{scalars}
  __syncthreads();
  long long t0 = clock64();
  for (int run = 0; run < {runs}; ++run) {{
{block}
    __syncthreads();
  }}
  long long t1 = clock64();
  if (threadIdx.x == 0) cycles[0] = (t1 - t0) / {runs};
}}

int main() {{
  long long* d; cudaMalloc(&d, sizeof(long long));
  cudaFuncSetAttribute(map_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, {smem});
  for (int mode = 0; mode < 2; ++mode) {{
    long long best = -1;
    for (int rep = 0; rep < 5; ++rep) {{
      map_kernel<<<1, kThreads, {smem}>>>(mode, d);
      long long c; cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost);
      if (best < 0 || c < best) best = c;
    }}
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {{ printf("error %s\\n", cudaGetErrorString(e)); return 1; }}
    printf("{label}\\t%s\\t%lld\\n", mode ? "zeros" : "nonzero", best);
  }}
  return 0;
}}
"""


def program(name: str, label: str, fields: dict) -> str:
    src = kernel_source(name, fields)
    block, n, threads, decls = update_map(src)
    smem = int(re.search(r"static constexpr int kSmem = (\d+);", src).group(1))
    # One-element homes read as [0] are the step's scalars: never zero (a division by them).
    scalars = sorted(set(re.findall(r"\b(s\d+(?:_\w+)?)\[0\]", block)))
    set_scalars = "\n".join(f"  if (threadIdx.x == 0) {s}[0] = 0.5f;" for s in scalars)
    body = "\n".join("    " + l for l in block.splitlines())
    return PROGRAM.format(threads=threads, decls="\n".join("  " + d for d in decls), smem=smem, runs=RUNS,
                          block=body, scalars=set_scalars, label=f"{name} {label} ({n} elements)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--twin", default="classification-adamw-ce")
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("/tmp/update_map"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for label, fields in VARIANTS.items():
        cu = args.out / f"{label}.cu"
        cu.write_text(program(args.twin, label, fields))
        exe = args.out / label
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", f"-I{INCLUDE}", "-o", str(exe), str(cu)], check=True)
        if args.run:
            rows += subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
