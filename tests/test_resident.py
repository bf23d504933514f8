"""The resident kernel (tile-resident) on CPU: the partition it chooses is
checked numerically by running the kernel block by block (each block sees only
the shared-memory slices it holds, NaN elsewhere) against the unpartitioned
interpretation and eager PyTorch; corrupting the partition must show."""

from __future__ import annotations

import pytest
import torch

import trainkernel
from trainkernel import sched_interpreter
from trainkernel.dialects import tile
from trainkernel.ir import parse_module
from trainkernel.workloads import WORKLOADS

CASES = [
    ("tiny", None, torch.bfloat16),
    ("tiny", None, torch.float32),
    ("online", None, torch.bfloat16),
    ("online", (33, 100, 300, 7), torch.float16),
    ("online", (1, 128, 256, 16), torch.bfloat16),  # batch 1
    ("classification", None, torch.float32),
    ("classification", (7, 33, 65, 10), torch.bfloat16),
    ("mlp4", (8, 64, 64, 64, 64, 8), torch.bfloat16),  # deeper: two split classes alternate
    ("mlp4", (32, 256, 256, 256, 256, 32), torch.float32),
]


def _kernel_and_inputs(name, sizes, dtype, step_kind="sgd"):
    w = WORKLOADS[name]
    if sizes:
        w = w.with_sizes(sizes[0], sizes[1:])
    step = w.make_step(dtype)
    compiled = trainkernel.compile_training(step, w.example_args(), build=False)
    module = parse_module(compiled.ir("tile"))
    kernel = next(op for op in module.ops if isinstance(op, tile.KernelOp))
    params = w.init_params(0)
    ((x, y),) = w.make_batches(1, seed=1)
    return w, step, module, kernel, list(params) + [x, y]


def _max_rel(a, b) -> float:
    return max(float((u.double() - v.double()).norm() / u.double().norm().clamp_min(1e-30)) for u, v in zip(a, b))


@pytest.mark.parametrize("name,sizes,dtype", CASES, ids=lambda v: str(v))
def test_partitioned_run_matches_and_reads_only_what_each_block_holds(name, sizes, dtype):
    w, step, module, kernel, flat = _kernel_and_inputs(name, sizes, dtype)
    assert kernel.cluster is not None, "these steps fit a cluster: the cost model should make them resident"
    whole = sched_interpreter.run_program(module, flat)
    blocks = sched_interpreter.run_program(module, flat, partitioned=True)
    assert not any(torch.isnan(t).any() for t in blocks), "a block read a slice it does not hold"
    # Split contractions sum fp32 partials in rank order: equal up to fp32 rounding.
    assert _max_rel(whole, blocks) <= (2e-6 if dtype == torch.float32 else 1e-2)
    # And both are the step: loss and new parameters against eager.
    loss, _, new = step(tuple(flat[: len(w.param_shapes())]), *flat[-2:])
    n = len(new)
    assert _max_rel([loss, *new], [blocks[0], *blocks[-n:]]) < 1e-2


def test_a_cluster_of_several_blocks_is_chosen_for_online():
    _, _, _, kernel, _ = _kernel_and_inputs("online", None, torch.bfloat16)
    assert kernel.cluster == 16 and kernel.grid == 16 and kernel.arena_bytes.data == 0
    assert any(op.split == 2 for op in kernel.block.ops if isinstance(op, tile.GemmOp)), "h @ W2 splits its k"


def test_a_corrupted_partition_shows_as_nan():
    """Negative control: claim that a block does all of the first product
    (split -1) while it holds only its slice of W1: the blocks then read
    columns they do not hold."""
    _, _, module, kernel, flat = _kernel_and_inputs("online", None, torch.bfloat16)
    gemm = next(op for op in kernel.block.ops if isinstance(op, tile.GemmOp))
    assert gemm.split == 1
    from xdsl.dialects.builtin import IntegerAttr

    gemm.properties["split"] = IntegerAttr(-1, 64)
    out = sched_interpreter.run_program(module, flat, partitioned=True)
    assert any(torch.isnan(t).any() for t in out)


def test_too_large_stays_a_grid_kernel():
    _, _, _, kernel, _ = _kernel_and_inputs("small", None, torch.bfloat16)
    assert kernel.cluster is None and kernel.arena_bytes.data > 0


def _grid_kernel(name, sizes):
    """The grid kernel tile-resident prices for the bf16 in-place step (its mode off)."""
    w = WORKLOADS[name].with_sizes(sizes[0], sizes[1:])
    c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False, resident="off")
    module = parse_module(c.ir("tile"))
    return next(op for op in module.ops if isinstance(op, tile.KernelOp))


def _split_plan_on(kernel, cluster: int, wide: bool):
    """The first candidate plan with a split product, placed on `cluster` blocks, and
    the remote stores of its exchanges (largest last)."""
    from trainkernel.passes import tile_resident as tr
    from trainkernel.target import DEFAULT

    plan = next(p for p in tr.candidate_plans(tr.analyse(kernel))
                if any(tr.is_partial(op, p.op_split[op]) for _, op in tr.tile_ops(kernel)))
    placement = tr.place(kernel, plan, cluster, DEFAULT.resident_costs, wide=wide)
    partial = [op for _, op in tr.tile_ops(kernel) if tr.is_partial(op, plan.op_split[op])]
    return sorted(tr.exchange_stores(op, tr._result_elems(op), cluster, placement.homes, placement.pitch, wide)
                  for op in partial)


def test_an_exchange_is_priced_by_its_remote_stores():
    """online 64 x 128-256-256-16 as a cluster of 8 (what it was before perf-log step
    119): each of its two split products' exchanges of 16,384 partials costs a block
    14,336 pushes and 7 x 1,024 words of its bf16 chunk published, the 21,504 remote
    stores the phase timer put at ~11.6 us (run f6e2188-a)."""
    from trainkernel.target import DEFAULT

    stores = _split_plan_on(_grid_kernel("online", (64, 128, 256, 256, 16)), 8, wide=False)
    assert stores[-2:] == [21504, 21504]
    assert 9.0 < stores[-1] * DEFAULT.resident_costs.dsmem_store_us < 14.0


def test_wide_stores_are_counted_as_the_printer_widens_them():
    """The same exchanges with target.exchange_wide_stores: 7,168 pair pushes and 7 x
    256 runs of 8 bf16 elements (16 bytes) published, 8,960 stores; measured (run
    144fa00-h100-a) 37.0 -> 23.6 us for the step's two, ~0.53 ns a store saved: a
    store's cost does not grow with its width (perf-log step 121)."""
    stores = _split_plan_on(_grid_kernel("online", (64, 128, 256, 256, 16)), 8, wide=True)
    assert stores[-2:] == [8960, 8960]


def test_odd_chunks_are_counted_narrow_even_when_wide():
    """online 33 x 100-300-7: 231 partials, an odd chunk on any cluster: no pair, no
    run (the printer keeps tk::publish), so the count is the same either way."""
    kernel = _grid_kernel("online", (33, 100, 300, 7))
    assert _split_plan_on(kernel, 8, wide=True) == _split_plan_on(kernel, 8, wide=False)


def test_exchanges_heavier_than_the_grid_kernel_leave_a_grid_kernel():
    """The same step: even with wide stores its exchanges put the cluster
    (estimated ~25 us; measured 24.4 on 16 blocks, run 144fa00-h100-a) over the
    grid kernel's calibrated estimate (~23 us; measured 17.4): a grid kernel. At
    batch 16 with hidden layers of 128 the exchanges are an eighth as large:
    resident."""
    _, _, _, kernel, _ = _kernel_and_inputs("online", (64, 128, 256, 256, 16), torch.bfloat16)
    assert kernel.cluster is None
    _, _, _, kernel, _ = _kernel_and_inputs("online", (16, 64, 128, 128, 8), torch.bfloat16)
    assert kernel.cluster is not None


def test_a_grid_kernel_on_mma_sync_is_priced_by_the_engine_choice_weight(target_fields):
    """64 x 256-256-256-10: its 10-class head keeps every product of the grid kernel
    on mma.sync without target.mixed_gemm_engines, which measured 57.2 us a step (run
    144fa00-h100-a) against a raw estimate of ~13; with mma.sync's gemm items weighed
    by GridCosts.mma_engine_calibration the estimate is ~55 and the cluster of 16
    (estimated ~26, measured 24.5) wins. Mixed (the default since perf-log step 122)
    the head's products alone stay on mma.sync, weighed the same, and the rest go on
    the wgmma pipeline: ~33, still over the cluster's estimate. The same step with 16
    outputs is a wgmma grid kernel, its estimate unweighed."""
    from trainkernel.passes import tile_resident as tr
    from trainkernel.target import DEFAULT

    mixed = _grid_kernel("classification", (64, 256, 256, 256, 10))
    assert {op.engine for op in mixed.block.ops if isinstance(op, tile.GemmOp)} == {"mma", "wgmma"}
    assert 28.0 < tr.grid_estimate_us(mixed, DEFAULT) < 40.0
    _, _, _, kernel, _ = _kernel_and_inputs("classification", (64, 256, 256, 256, 10), torch.bfloat16)
    assert kernel.cluster == 16
    target_fields(mixed_gemm_engines=False)
    from trainkernel.target import DEFAULT as UNMIXED

    head10 = _grid_kernel("classification", (64, 256, 256, 256, 10))
    assert {op.engine for op in head10.block.ops if isinstance(op, tile.GemmOp)} == {"mma"}
    assert 45.0 < tr.grid_estimate_us(head10, UNMIXED) < 65.0
    _, _, _, kernel, _ = _kernel_and_inputs("classification", (64, 256, 256, 256, 10), torch.bfloat16)
    assert kernel.cluster == 16
    head16 = _grid_kernel("online", (64, 128, 256, 256, 16))
    assert {op.engine for op in head16.block.ops if isinstance(op, tile.GemmOp)} == {"wgmma"}
    from trainkernel.passes.sched_to_tile import estimate_us

    phases = [p for p in head16.phases() if p]
    raw = estimate_us(phases, head16.grid, DEFAULT) + DEFAULT.grid_costs.launch_us
    assert tr.grid_estimate_us(head16, DEFAULT) == pytest.approx(DEFAULT.resident_costs.grid_calibration * raw)


def test_resident_off_and_forced_grid_give_grid_kernels():
    w = WORKLOADS["tiny"]
    for kw in ({"resident": "off"}, {"grid": 4}):
        c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False, **kw)
        assert "cluster" not in c.ir("tile").splitlines()[1]
        assert "cudaLaunchCooperativeKernel" in c.cuda_source
    c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False)
    assert "cudaLaunchKernelEx" in c.cuda_source and "tk::stage_rows" in c.cuda_source
    with pytest.raises(ValueError, match="resident"):
        trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False, resident="yes")


class _FakeLib:
    """A loaded library as the launcher sees it: resident ones report their
    cluster, and `fits` says whether that cluster can be co-resident."""

    def __init__(self, source: str, fits: bool):
        self.resident = "cudaLaunchKernelEx" in source
        self.fits = fits
        self.path = None

    def cluster(self) -> int:
        return 16 if self.resident else 0

    def max_active_blocks_per_sm(self) -> int:
        if self.resident and not self.fits:
            raise RuntimeError("the resident kernel's cluster of 16 blocks cannot be co-resident on this device")
        return 1

    def num_buffers(self):
        return None


@pytest.mark.parametrize("fits", [True, False])
def test_a_cluster_that_cannot_be_co_resident_falls_back_to_the_grid_kernel(monkeypatch, fits):
    import trainkernel.runtime as runtime

    w = WORKLOADS["online"]
    c = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False)
    assert "cudaLaunchKernelEx" in c.cuda_source
    built = []

    class _Build:
        def __init__(self, source):
            self.path = source

    monkeypatch.setattr(c, "_build_result", lambda arch=None: built.append(c.cuda_source) or _Build(c.cuda_source))
    monkeypatch.setattr(runtime, "load_library", lambda source: _FakeLib(source, fits))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    device = torch.device("cuda", 0)
    if fits:
        lib = c._library(device)
        assert lib.resident and len(built) == 1
        return
    with pytest.warns(RuntimeWarning, match="cannot be co-resident on this device; running the grid kernel"):
        lib = c._library(device)
    assert not lib.resident
    assert "cudaLaunchCooperativeKernel" in c.cuda_source and c.meta.arena_bytes > 0


def _byte_ranges_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.parametrize("name,sizes,dtype", CASES, ids=lambda v: str(v))
def test_exchange_receive_buffers_are_reserved_since_the_previous_cluster_barrier(name, sizes, dtype):
    """Other blocks push partials into a receive buffer as soon as they reach the
    exchange, while its own block may still run any phase since the previous
    cluster barrier (the previous exchange, or the kernel start): no home live
    in those phases may share a byte with it, and it holds CLUSTER shares."""
    from trainkernel.passes.tile_resident import iteration_space, is_partial

    *_, kernel, _ = _kernel_and_inputs(name, sizes, dtype)
    cluster = kernel.cluster or 1
    homes = {op.result: op for op in kernel.block.ops if isinstance(op, tile.SmemOp)}
    phase, live, exchanges = 0, {}, []
    for op in kernel.block.ops:
        if isinstance(op, tile.SyncOp):
            phase += 1
        elif isinstance(op, tile.TileWorkOp):
            for v in (*op.ins, *op.outs):
                root = v
                while root not in homes and hasattr(root.owner, "source"):
                    root = root.owner.source
                if root in homes:
                    live.setdefault(root, set()).add(phase)
            if cluster > 1 and is_partial(op, op.split):
                exchanges.append((phase, op))
    for r, home in homes.items():
        if home.source is not None and home.source.index < kernel.num_inputs.data:
            live[r] |= set(range(0, max(live[r]) + 1))  # staged from the kernel start
    since = 0
    for phase, op in exchanges:
        if isinstance(op, tile.GemmOp):
            m, n, _ = iteration_space(op)
            elems = m * n
        else:
            elems = 1
            for d in op.reduction().result.type.get_shape():
                elems *= d
        recv = (op.scratch, op.scratch + 4 * cluster * -(-elems // cluster))
        assert recv[1] <= kernel.smem
        for r, home in homes.items():
            if live.get(r, set()) & set(range(since, phase + 1)):
                span = (home.offset_value, home.offset_value + home.local_bytes(cluster))
                assert not _byte_ranges_overlap(recv, span), (r, phase)
        since = phase


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("cols", [1, 4, 7, 8, 10, 16, 33, 64, 100, 128, 256, 300])
def test_padded_rows_start_aligned_and_spread_over_the_bank_groups(dtype, cols):
    """tile.home_pitch: rows start 16-byte aligned (cp.async, ldmatrix) and eight
    consecutive rows (one 8x8 ldmatrix, or an mma fragment's rows g = 0..7) fall
    in eight different 16-byte bank groups; rows of at most 16 bytes stay dense."""
    from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, MemRefType

    elem, size = {"bf16": (BFloat16Type(), 2), "f16": (Float16Type(), 2), "f32": (Float32Type(), 4)}[dtype]
    t = MemRefType(elem, [64, cols])
    pitch = tile.home_pitch(t, -1, 1)
    if cols * size <= 16:
        assert pitch is None
        return
    stride = (pitch or cols) * size
    assert stride >= cols * size and stride % 16 == 0
    assert len({(r * stride // 16) % 8 for r in range(8)}) == 8
    assert tile.local_bytes(t, -1, 1, pitch) == 64 * stride
    # a split axis pads the local row: 256 columns over 16 blocks are rows of 16
    assert tile.home_pitch(MemRefType(elem, [64, 16 * cols]), 1, 16) == pitch


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("cols", [1, 3, 7, 8, 10])
def test_narrow_rows_of_a_gemm_operand_are_padded_to_16_bytes(dtype, cols):
    """tile.home_pitch's narrow (a home a tile.gemm reads, target.pad_narrow_gemm_rows):
    rows of 16-bit elements shorter than 16 bytes get 16 (ldmatrix's row); fp32
    gemms do not use ldmatrix, and rows of 16 bytes or more are padded as before."""
    from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, MemRefType

    elem, size = {"bf16": (BFloat16Type(), 2), "f16": (Float16Type(), 2), "f32": (Float32Type(), 4)}[dtype]
    t = MemRefType(elem, [33, cols])
    pitch = tile.home_pitch(t, -1, 1, narrow=True)
    if size == 2 and cols * size < 16:
        assert pitch == 8 and tile.local_bytes(t, -1, 1, pitch) == 33 * 16
    else:
        assert pitch == tile.home_pitch(t, -1, 1)
    assert tile.home_pitch(MemRefType(elem, [1, cols]), -1, 1, narrow=True) is None  # one row: nothing to pad


def _resident_source(w) -> str:
    return trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False,
                                        resident="force").cuda_source


def test_a_narrow_head_reaches_the_ldmatrix_path(target_fields):
    """online at 33 x 100-300-7: the 7-wide homes its products read (W2's slice,
    the logits' gradient) get 8-element rows, so every product has ldmatrix modes
    (tk::smem_gemm's clamped path, perf-log steps 115-116); without
    target.pad_narrow_gemm_rows, three of its five products have a -1 mode."""
    import re

    w = WORKLOADS["online"].with_sizes(33, (100, 300, 7))
    modes = re.compile(r"tk::smem_gemm<kThreads, \d, __nv_bfloat16, (-?\d+), (-?\d+),")
    on = modes.findall(_resident_source(w))
    target_fields(pad_narrow_gemm_rows=False)
    off = modes.findall(_resident_source(w))
    assert len(on) == len(off) == 5
    assert all(a != "-1" and b != "-1" for a, b in on)
    assert sum("-1" in pair for pair in off) == 3


def test_narrow_rows_never_cost_the_other_homes_their_padding(target_fields):
    """online at 64 x 128-256-256-16 on 8 blocks fills 230 KB a block: its [256, 2]
    slices padded to 8 columns do not fit beside every other home's padding, and
    the placer keeps the others' padding rather than the narrow one's (the same
    placement as without target.pad_narrow_gemm_rows). (A grid kernel by the cost
    model since perf-log step 119: resident here by force, on at most 8 blocks.)"""
    w = WORKLOADS["online"].with_sizes(64, (128, 256, 256, 16))
    target_fields(max_cluster=8, clusters=(1, 2, 4, 8))
    on = _resident_source(w)
    assert "constexpr int kCluster = 8;" in on
    assert "(64, 32, 128, s16, 136, 1," in on  # x's rows padded (128 -> 136)
    target_fields(max_cluster=8, clusters=(1, 2, 4, 8), pad_narrow_gemm_rows=False)
    assert on == _resident_source(w)


def test_padding_never_costs_residency(monkeypatch):
    """classification's AdamW + cross-entropy twin fits a cluster of 16 only
    without padding every home: the placer pads the homes its gemms read
    (ldmatrix's eight rows in eight bank groups) and keeps the rest dense,
    rather than give up the resident kernel or pad nothing."""
    from trainkernel.passes import tile_resident
    from trainkernel.workloads import TWINS

    w = TWINS["classification-adamw-ce"]
    compiled = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False)
    kernel = next(op for op in parse_module(compiled.ir("tile")).ops if isinstance(op, tile.KernelOp))
    assert kernel.cluster == 16
    homes = [op for op in kernel.block.ops if isinstance(op, tile.SmemOp)]
    gemm_reads = {v for op in kernel.block.ops if isinstance(op, tile.GemmOp) for v in op.ins}
    padded = {op.result for op in homes if op.pitch_value}
    assert padded and padded <= gemm_reads
    # every 2-D home a gemm reads whose dense rows would need padding has it
    assert all(op.result in padded for op in homes if op.result in gemm_reads
               and tile.home_pitch(op.result.type, op.split.value.data, kernel.cluster))
    assert any(op.result not in padded and tile.home_pitch(op.result.type, op.split.value.data, kernel.cluster)
               for op in homes)  # and some other home stays dense
    # Control: with every home padded, the same step does not fit.
    monkeypatch.setattr(tile_resident, "place",
                        lambda kernel, plan, cluster, costs, *_: tile_resident._place(kernel, plan, cluster, costs, pad="all"))
    all_padded = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False)
    assert "kCluster" not in all_padded.cuda_source


@pytest.mark.parametrize("name,sizes,dtype", CASES[:6], ids=lambda v: str(v))
def test_programmatic_launch_waits_before_the_first_global_access(name, sizes, dtype):
    """A resident kernel may start while the previous step still runs: nothing
    before its tk::wait_prior_grid() may read or write a buffer (b<i>) or
    stage a copy; the launcher asks for the overlap."""
    import re

    w = WORKLOADS[name]
    if sizes:
        w = w.with_sizes(sizes[0], sizes[1:])
    src = trainkernel.compile_training(w.make_step(dtype), w.example_args(), build=False).cuda_source
    body = src[src.index("__global__"):]
    head, sep, _ = body.partition("tk::wait_prior_grid();")
    assert sep, "no wait before the prologue"
    statements = [ln.strip() for ln in head.splitlines()[1:] if ln.strip()]
    # Only declarations: shared memory, the rank, buffer and home pointers, the trigger,
    # and the copy of the parameters' pointers into the step's table (shared memory).
    allowed = re.compile(r"^(extern __shared__|__shared__|const int rank|\(void\)|"
                         r"[\w:<> ]+\* [bs]\d+\w* = \([\w:<> ]+\*\)(p\.buf\[\d+\]|\(smem \+ \d+\));$|"
                         r"tk::launch_dependents\(\);$|if \(threadIdx\.x == 0\) \{$|#pragma unroll$|"
                         r"for \(int i = 0; i < \d+; \+\+i\) tk_buf\[i\] = p\.buf\[i\];$|\}$|__syncthreads\(\);$)")
    assert all(allowed.match(s) for s in statements), [s for s in statements if not allowed.match(s)]
    assert "cudaLaunchAttributeProgrammaticStreamSerialization" in src
    assert "static constexpr bool kProgrammatic = true;" in src


def test_programmatic_launch_off_prints_neither_trigger_nor_wait(monkeypatch):
    import dataclasses

    from trainkernel import target
    from trainkernel.backend import cuda_target

    monkeypatch.setattr(cuda_target, "TARGET", dataclasses.replace(target.DEFAULT, programmatic_launch=False))
    w = WORKLOADS["online"]
    src = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source
    assert "tk::wait_prior_grid();" not in src and "tk::launch_dependents();" not in src
    assert "static constexpr bool kProgrammatic = false;" in src


@pytest.mark.parametrize("unroll", [8, 16])
def test_resident_maps_unroll_to_the_targets_limit(monkeypatch, unroll):
    """A resident map takes up to target.resident_map_unroll elements a thread an iteration
    (online-adam's x cast has 32 a thread: 4 iterations of 8, or 2 of 16), the
    power of two that covers what it has below that (a map of one element a thread: 1)."""
    import dataclasses
    import re

    from trainkernel import target
    from trainkernel.backend import cuda_target
    from trainkernel.workloads import TWINS

    monkeypatch.setattr(cuda_target, "TARGET", dataclasses.replace(target.DEFAULT, resident_map_unroll=unroll))
    # Its x cast (32 elements a thread) as a map, not folded into the prologue (tile-stage-casts).
    monkeypatch.setitem(target.TARGETS, target.DEFAULT.name, dataclasses.replace(target.DEFAULT, stage_casts=False))
    w = TWINS["online-adam"]
    src = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False).cuda_source
    assert "tile.map split" in src, "online-adam's kernel is resident"
    steps = {int(u) for u in re.findall(r"base < \d+; base \+= (\d+) \* kThreads\)", src)}
    assert max(steps) == unroll and 1 in steps, steps


@pytest.mark.parametrize("name,threads", [("classification-adamw-ce", 512), ("online-adam", 512),
                                          ("classification", 256), ("online", 256)])
def test_resident_block_size_follows_the_division_and_sqrt_work(name, threads):
    """The Adam/AdamW twins' resident kernels update their parameters with an
    IEEE sqrt and two divisions an element (latency-bound: 512 threads measured
    ~12% faster on classification-adamw-ce); the SGD steps have none and keep
    256 (perf-log step 32)."""
    from trainkernel.workloads import TWINS

    w = {**WORKLOADS, **TWINS}[name]
    compiled = trainkernel.compile_training(w.make_step(torch.bfloat16), w.example_args(), build=False)
    kernel = next(op for op in parse_module(compiled.ir("tile")).ops if isinstance(op, tile.KernelOp))
    assert kernel.cluster is not None and kernel.threads == threads
