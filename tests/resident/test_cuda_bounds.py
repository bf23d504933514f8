"""Regression tests from the review of the resident kernels (2026-12-01): shared-memory accesses of the resident CUDA stay inside their homes.

The partitioned interpreter cannot see addresses. This evaluates the index
expressions that ResidentPrinter emits for every split tile.map, for every
rank of the cluster and every thread, and checks each shared-memory load and
store against the extent of the home it addresses. A split axis whose size is
not a multiple of the cluster leaves trailing ranks an empty slice (size 100
over 16 blocks: ceil = 7, rank 15 holds nothing); their clamped index
min(l + 7*rank, 99) then addresses local element 99 - 105 = -6."""
from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))

import pytest
import torch

from trainkernel.backend.cuda_target import ResidentPrinter
from trainkernel.elements import byte_size
from trainkernel.dialects import sched, tile
from _helpers import workload

_ACCESS = re.compile(r"\b(s\d+\w*)\[([^\[\]]+)\]")


def _py(expr: str) -> str:
    expr = expr.replace("&&", " and ").replace("||", " or ")
    return re.sub(r"(?<![/])/(?![/])", "//", expr)


def _map_blocks(src: str):
    lines = src.splitlines()
    i = 0
    while i < len(lines):
        if "{ // tile.map split" in lines[i]:
            depth, j = 0, i
            body = []
            while True:
                depth += lines[j].count("{") - lines[j].count("}")
                body.append(lines[j])
                if depth == 0:
                    break
                j += 1
            yield body
            i = j
        i += 1


def _bad_accesses(kernel, threads=None):
    pr = ResidentPrinter(kernel)
    src = pr.print()
    extent = {}
    for op in kernel.block.ops:
        if isinstance(op, tile.SmemOp):
            # elements of the block's copy, rows `pitch` apart where the home is padded
            esize = byte_size(op.result.type.get_element_type())
            extent[pr.names[op.result]] = op.local_bytes(kernel.cluster) // esize
    threads = kernel.threads
    bad = []
    for body in _map_blocks(src):
        # All the block's threads, or one warp's lanes (target.resident_warp_small_maps).
        loop = re.search(r"for \(int base = (threadIdx.x|\(threadIdx.x & 31\)); base < (\d+); "
                         r"base \+= (\d+) \* (kThreads|32)\)", "\n".join(body))
        n, unroll = int(loop.group(2)), int(loop.group(3))
        width = threads if loop.group(4) == "kThreads" else 32
        start = next(k for k, ln in enumerate(body) if "for (int base" in ln) + 1
        guard = re.search(r"(\d+) \* rank < (\d+)\)", "\n".join(body[:start]))
        stmts = [ln.strip() for ln in body[start:]]
        for rank in range(kernel.cluster):
            if guard and not int(guard.group(1)) * rank < int(guard.group(2)):
                continue  # the block holds an empty slice and skips the map
            for t in range(width):
                for base in range(t, n, unroll * width):
                    env = {"rank": rank, "kThreads": threads, "base": base, "min": min, "max": max,
                           "true": True, "false": False}
                    active = True
                    for s in stmts:
                        g = re.match(r"if \((ok\d+)\) \{$", s)
                        if g:
                            active = bool(env[g.group(1)])
                            continue
                        if s == "}" or not s:
                            active = True
                            continue
                        if s.startswith("const float") or re.match(r"[sb]\d+\w*\[", s):
                            if not active:
                                continue
                            for name, idx in _ACCESS.findall(s):
                                if name in extent:
                                    k = eval(_py(idx), env)
                                    if not 0 <= k < extent[name]:
                                        bad.append((body[0].strip(), rank, t, name, k, extent[name]))
                            continue
                        m = re.match(r"(?:const int|int|bool) (\w+) = (.*);$", s) or re.match(r"(\w+) = (.*);$", s)
                        if m:
                            env[m.group(1)] = eval(_py(m.group(2)), env)
    return bad


def test_control_divisible_sizes_are_clean():
    *_, kernel, _ = workload("online", None, torch.bfloat16)  # H = 256 over 16 blocks
    assert kernel.cluster == 16
    assert _bad_accesses(kernel) == []


@pytest.mark.parametrize("sizes", [(64, 128, 100, 16)], ids=str)
def test_split_maps_stay_inside_their_homes(sizes):
    *_, kernel, _ = workload("online", sizes, torch.bfloat16)
    assert kernel.cluster == 16
    bad = _bad_accesses(kernel)
    assert bad == [], f"{len(bad)} out-of-home shared accesses, e.g. {bad[:3]}"
