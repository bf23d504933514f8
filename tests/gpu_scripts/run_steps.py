"""Compile one workload (or twin) and run a few training steps on the GPU (for compute-sanitizer).

    python tests/gpu_scripts/run_steps.py WORKLOAD [DTYPE] [STEPS] [inplace|staged|capture] [ENGINE] [MAX_KSPLIT]

WORKLOAD: a suite workload or twin, or one at other sizes as the resident probe
spells it (name:B,I,H,...,O, e.g. online:33,100,300,7).

capture: in place, the steps recorded by `capture(steps=STEPS, batches=...)` and
replayed once (a resident kernel runs them in one launch: its step loop).

ENGINE: the grid kernel's gemm engine (auto, mma, wgmma); MAX_KSPLIT: the
target's split-K limit (1: no split-K), to tell a sanitizer report's cause.
TK_TARGET_FIELDS (environment): fields of the target to switch, as the probe's
target variants spell them (benchmarks.resident_probe.target_variant), e.g.
"exchange_async_publish=0;prefetch_step_inputs=0"; input_casts=1 and
sink_sources=1 there set the pipeline's switches, as in the probe.
"""

import dataclasses
import os
import sys

import torch

import trainkernel


def main() -> None:
    name = sys.argv[1]
    dtype = getattr(torch, sys.argv[2]) if len(sys.argv) > 2 else torch.bfloat16
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    mode = sys.argv[4] if len(sys.argv) > 4 else "inplace"
    inplace = mode in ("inplace", "capture")
    engine = sys.argv[5] if len(sys.argv) > 5 else "auto"
    from benchmarks.resident_probe import target_variant, workload
    from trainkernel import target
    from trainkernel.backend import cuda_target

    from trainkernel import pipeline

    fields = os.environ.get("TK_TARGET_FIELDS", "")
    chosen = target_variant(fields)
    pipeline.FUSE_INPUT_CASTS = pipeline.FUSE_INPUT_CASTS or "input_casts=1" in fields
    pipeline.SINK_SOURCES = pipeline.SINK_SOURCES or "sink_sources=1" in fields
    if len(sys.argv) > 6:
        chosen = dataclasses.replace(chosen, max_ksplit=int(sys.argv[6]))
    target.TARGETS[target.H200.name] = cuda_target.TARGET = chosen
    w = workload(name)[0]
    params = w.init_state(0, "cuda")  # the parameters, or a twin's optimizer state
    batches = w.make_batches(2, seed=1, device="cuda")
    compiled = trainkernel.compile_training(w.make_step(dtype), (params, *batches[0]), inplace=inplace,
                                             gemm_engine=engine)
    if mode == "capture":
        program = compiled.capture(params, *batches[0], warmup=1, steps=steps, batches=batches)
        loss = program.replay()[0]
        torch.cuda.synchronize()
        chain = " (a chain)" if "tk_launch_chain" in compiled.cuda_source else ""
        print("ran", name, steps, "steps in", program.launches, f"launches{chain}, loss", float(loss))
        return
    for s in range(steps):
        out = compiled(params, *batches[s % 2])  # (loss, grads, new) or a twin's (loss, new_state)
        loss, new = out[0], out[-1]
        params = new if inplace else torch.utils._pytree.tree_map(torch.clone, new)
    torch.cuda.synchronize()
    print("ran", name, steps, "steps, loss", float(loss))


if __name__ == "__main__":
    main()
