"""Shared helpers for the review tests (not a test module)."""
from __future__ import annotations

import torch

import trainkernel
from trainkernel import sched_interpreter
from trainkernel.dialects import sched, tile
from trainkernel.ir import parse_module
from trainkernel.target import DEFAULT
from trainkernel.workloads import WORKLOADS


def compile_tile(step, args, **kw):
    c = trainkernel.compile_training(step, args, build=False, **kw)
    module = parse_module(c.ir("tile"))
    kernel = next(op for op in module.ops if isinstance(op, tile.KernelOp))
    return c, module, kernel


def workload(name, sizes, dtype, **kw):
    w = WORKLOADS[name]
    if sizes:
        w = w.with_sizes(sizes[0], sizes[1:])
    step = w.make_step(dtype)
    c, module, kernel = compile_tile(step, w.example_args(), **kw)
    params = w.init_params(0)
    ((x, y),) = w.make_batches(1, seed=1)
    return w, step, c, module, kernel, list(params) + [x, y]


def flat_inputs(args):
    leaves, _ = torch.utils._pytree.tree_flatten(args)
    return leaves


def summary(kernel):
    out = [f"cluster={kernel.cluster} smem={kernel.smem}"]
    for op in kernel.block.ops:
        if isinstance(op, tile.SmemOp):
            out.append(f"  smem {op.result.type} off={op.offset_value} split={op.split_axis} stage={op.source is not None}")
        elif isinstance(op, tile.TileWorkOp):
            out.append(f"  {op.name} split={op.split} scratch={op.scratch}")
        elif isinstance(op, tile.SyncOp):
            out.append("  sync")
    return "\n".join(out)


def run_both(step, args, **kw):
    """(kernel, eager flat results, partitioned flat results, whole flat results)."""
    c, module, kernel = compile_tile(step, args, **kw)
    flat = flat_inputs(args)
    blocks = sched_interpreter.run_program(module, flat, partitioned=True)
    whole = sched_interpreter.run_program(module, flat)
    eager = flat_inputs(step(*args))
    return c, kernel, eager, blocks, whole


def max_rel(a, b):
    return max(float((u.double() - v.double()).norm() / u.double().norm().clamp_min(1e-30)) for u, v in zip(a, b))


def grid_module(step, args, **kw):
    """The tile-level module of `step` as a grid kernel (tile-resident off)."""
    c, module, kernel = compile_tile(step, args, resident="off", **kw)
    return c, module


def every_plan(module_text_or_module, clusters=(2, 4, 8, 16)):
    """Yield (plan, cluster, resident module) for every candidate plan the pass
    considers legal and that fits, made resident on a fresh copy."""
    from trainkernel.ir import print_module
    from trainkernel.passes import tile_resident as tr

    text = module_text_or_module if isinstance(module_text_or_module, str) else print_module(module_text_or_module)
    base = parse_module(text)
    kernel = next(op for op in base.ops if isinstance(op, tile.KernelOp))
    an = tr.analyse(kernel)
    plans = tr.candidate_plans(an)
    for i in range(len(plans)):
        for cl in clusters:
            m = parse_module(text)
            k = next(op for op in m.ops if isinstance(op, tile.KernelOp))
            an2 = tr.analyse(k)
            plan = tr.candidate_plans(an2)[i]
            if not plan.split:
                continue
            p = tr.place(k, plan, cl, tr.COSTS)
            if p is None:
                continue
            tr.make_resident(k, plan, p, DEFAULT)
            m.verify()
            yield i, plan, cl, m
