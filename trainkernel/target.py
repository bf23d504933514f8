"""The machine a kernel is built for: one frozen options object.

Every fact about the GPU that a pass, the tile verifier or the CUDA printer
needs lives here once: threads per block, GEMM tile shapes and the pipeline
depth they are sized for, grid limits, shared-memory limits, cluster sizes,
and the measured costs the two cost models use (`GridCosts` for
`sched-to-tile`'s grid sizing, `ResidentCosts` for `tile-resident`).

The passes take a target by name (`sched-to-tile{target=h200}`,
`tile-resident{target=h200}`; the default is `h200`), so the pipeline string
stays the whole description of a lowering; `TARGETS` holds the named ones and
`register` adds one (an experiment: a variant with other costs or tiles).

The H200 figures are from `../shared/GPU.md` (measured on the machine:
barrier costs, launch floors, per-SM bandwidth) and `docs/perf-log.md` (the
calibrations of the cost models); the limits are sm_90's (CUDA programming
guide: 227 KiB of dynamic shared memory per block, 1024 threads, clusters of 8
portable and 16 with the non-portable attribute). The module imports nothing
of the package (the base layer), so the dialects, passes, printer and
runtime may all read it.

(`trainkernel/targets.py` is another thing: the registry of output formats,
`-t cuda`.)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

def wgmma_hands_registers_back(bn: int) -> bool:
    """Mirror of tk::hopper::grid_gemm_units' `Shape::BN > 128`: a wgmma tile
    this wide needs more accumulator registers than a megakernel thread has,
    so the producer warpgroup lends its registers to the consumers for each
    gemm (and the kernel ends with a grid barrier, `final_grid_sync`)."""
    return bn > 128


# tk::hopper's tile table (kHopperTiles / TileById in hopper_gemm.cuh): BN ->
# (its id, pipeline stages); BK = 64 for all, BM = 64 a consumer warpgroup.
WGMMA_TILES: dict[int, tuple[int, int]] = {256: (0, 4), 128: (1, 6), 64: (2, 8), 32: (3, 8)}


def wgmma_tile_supported(bm: int, bn: int) -> bool:
    """Mirror of tk::hopper::TileShape's asserts: BM 64 or 128 (one or two
    consumer warpgroups), BN of the tile table; the register hand-back of the
    widest tiles (`wgmma_hands_registers_back`) is sized for two consumers."""
    return bm in (64, 128) and bn in WGMMA_TILES and (bm == 128 or not wgmma_hands_registers_back(bn))


def wgmma_threads(bm: int) -> int:
    """Mirror of tk::hopper::kThreads: the producer warpgroup and a consumer
    warpgroup for each 64 rows of the tile."""
    return 128 + 2 * bm


@dataclass(frozen=True)
class GridCosts:
    """`sched-to-tile`'s cost model for the grid size of a grid kernel:
    microseconds on an H200 (docs/perf-log.md). The harness measured steps 2.4x
    to 6.4x slower than this model predicts; `ResidentCosts.grid_calibration`
    corrects for that where the two kernels are compared."""

    grid_sync_us: float = 1.1  # cooperative grid.sync(); GPU.md: 0.8-1.2 us by block count
    block_sync_us: float = 0.05  # __syncthreads(); GPU.md: 0.013 us, rounded up for the phase tail
    mma_flop_per_us: float = 3.0e6  # per SM, a bf16/f16 mma.sync gemm tile
    simt_flop_per_us: float = 0.25e6  # per SM, an fp32 SIMT gemm tile
    item_overhead_us: float = 0.3  # a gemm or reduce work item's set-up and first loads
    map_chunk_us: float = 0.15  # one map work item (a chunk of elements)
    reduce_us_per_element: float = 2e-4  # per element a reduce work item folds (per output row)
    launch_us: float = 1.2  # a cooperative launch replayed in a CUDA graph (GPU.md)
    # A wgmma work unit (tk/hopper_gemm.cuh, one block per SM), on the same
    # relative scale as mma_flop_per_us: the standalone tile reached 410-690
    # TFLOP/s on medium's and large's products (results/h200/gemm.json)
    # against the megakernel's mma.sync tiles at 95-176 (four blocks per SM),
    # so ~3.5x per SM, ~14x per block.
    wgmma_flop_per_us: float = 4.2e7
    # A 128 x 256 unit against a 128 x 128 one, fitted to the phase timer's
    # gemm phases of medium and large at both widths (perf-log step 15): per
    # unit, t = overhead + K * (time per K step). 128 wide: ~3.5 us +
    # 7.8e-3 us/K; 256 wide: ~10.3 us + 12.6e-3 us/K. So the wide unit's rate
    # is 1.24x (not the 1.33x its operand bytes per FLOP promise) and its
    # fixed part (the epilogue of twice the elements, the register hand-back's
    # drained pipeline) ~6.8 us more, which on this model's scale (its 128
    # unit is ~8.9x faster than measured) is ~0.75 us.
    wgmma_wide_speedup: float = 1.24
    wgmma_wide_unit_us: float = 0.75
    wgmma_unit_us: float = 0.6  # a unit's pipeline ramp and epilogue start (hopper_gemm.cuh's model)
    # sched-to-tile's engine choice weighs the mma.sync kernel's gemm items by
    # this in the estimate it compares with the wgmma ones' (not its grid's
    # choice, nor its maps, reductions and barriers: perf-log step 108). Every
    # step measured on both engines ran mma.sync 1.3-2.1x slower where this model put the two within
    # 2-19% (measured over modelled 1.19-1.86; perf-log step 85), but nothing
    # was measured where a weight of 1.4 would change a kernel (grid kernels of
    # one block: tiny, batch 1). 4 with the parts model (unit_parts), whose
    # wgmma units of medium's size cost 2-3x their old price while mma.sync's
    # did not move, so that the engine choice keeps its old ratio (perf-log
    # step 106; measured with it, run a0555bf-h100-a).
    mma_engine_calibration: float = 4.0
    # A phase's time as its busiest block's (sched_to_tile.busiest_block_us: item
    # i of an op at offset o on block (o + i) % grid, a block's items in turn)
    # instead of the longer of its longest op's rounds and its items spread
    # evenly, which cannot see a reduce and two gemm units sharing a block
    # (small's p4: blocks 0-23, the op timer of perf-log step 103). Only where
    # a block has its SM to itself (sched_to_tile.phase_us: the wgmma engine's
    # grids). Measured with unit_parts (step 106, run a0555bf-h100-a): on.
    block_sums: bool = True
    # A wgmma unit's epilogue, per element a consumer thread holds (BN / 2):
    # the row walk is issue-bound per element (perf-log steps 96 and 98: 0.58k
    # cycles at 32 wide, 1.05k at 64 on 64 x BN tiles, ~29 cycles an element a
    # thread). 0: none (wgmma_unit_us holds one epilogue of any width).
    wgmma_epilogue_us: float = 0.0
    # wgmma units and reduce items priced from their measured parts (perf-log
    # step 106, `wgmma_unit_parts_us`), in cycles put on the model's scale by
    # `cycle_us` (a 64 x 32 unit of four K steps, ~2.95k cycles, keeps its
    # 0.63): the first operands; K steps, each the longer of a latency part
    # and A's and B's bytes at one block's intake (390-660 cycles measured on
    # the small steps whatever the shape, ~0.94k for medium's 32 KB steps);
    # the row walk's 32-column passes, dearer on 128-row tiles and by the
    # bytes an element the epilogue moves (an SGD update's fp32 weight in and
    # out and its cast). Measured (perf-log step 106, run a0555bf-h100-a, with
    # block_sums and mma_engine_calibration 4): small -0.87, medium -1.85, the
    # odd steps 200 x 520-1000-56 -0.64 and 130 x 264-2048-24 -3.55 us a step;
    # the unchanged kernels within +-0.05: on.
    unit_parts: bool = True
    cycle_us: float = 2.14e-4
    unit_first_cycles: float = 1000.0
    k_step_cycles: float = 400.0
    k_step_bytes_per_cycle: float = 35.0
    row_pass_cycles: float = 520.0  # a plain pass of a 64-row tile (0.53-0.59k)
    two_warpgroup_pass: float = 1.45  # on a 128-row tile (1.59k against 1.03k for two passes)
    pass_per_epilogue_byte: float = 0.05  # each byte an element moves past a 2-byte store (SGD: ~1.4x)
    wide_unit_cycles: float = 3500.0  # a tile that hands the producer's registers back (wgmma_wide_unit_us's part)
    # A unit's split-K fix-up within a cluster (target.split_k_cluster_fixup,
    # splitk_cluster_fixup): its warps' pushes to the owners (a 64 x 32 fp32
    # fragment's 3/4 at DSMEM's ~18.6 B a cycle, perf-log step 94) and the
    # owner's mbarrier wait. A prediction (perf-log step 124) until measured.
    cluster_fixup_cycles: float = 600.0
    # A unit's split-K fix-up through L2 (the tagged or shared fix-up: one or
    # two L2 round trips of its fp32 partials and the tile's counter; small's
    # logits, 64 x 32 tiles in 2 slices: 1.6-2.5k cycles, perf-log step 103's
    # unit timer). Priced on every such unit (sched_to_tile.item_cost_us),
    # which moved none of the suite's kernels; what it decides is the cluster
    # split against the split through L2 (cluster_split_k). split_k's count
    # stays its rule by idle blocks (l2_ksplit), older than the model.
    l2_fixup_cycles: float = 2000.0
    # A reduce item: a fixed part and each element folded (op timer: 1.2k cycles
    # at 1k elements, 2.9k at 8k, column sums of 32 columns an item on 256
    # threads, so 8 slices of rows). A column sum's slices' partials are folded
    # by one thread group in slice order from shared memory (a dependent load
    # and add each): each slice past those 8 adds reduce_fold_cycles, each one
    # short of them saves it (a prediction: perf-log step 131).
    reduce_item_cycles: float = 900.0
    reduce_element_cycles: float = 0.25
    reduce_fold_cycles: float = 30.0
    reduce_measured_slices: int = 8

    def sync_us(self, scope: str) -> float:
        """A barrier of `scope` (grid or block)."""
        return self.grid_sync_us if scope == "grid" else self.block_sync_us

    def gemm_flop_per_us(self, mma: str, engine: str = "mma", bn: int = 128, bm: int = 128) -> float:
        """Per block, for a gemm tile of mma kind `mma` (`mma.bf16`, `mma.f16`,
        `simt.f32`) on `engine` (`mma`: mma.sync tiles, `wgmma`: the Hopper
        tile, `bm` x `bn`). A 64-row wgmma tile's K loop takes in its operands
        at the 128-row tile's bytes a cycle (perf-log step 91: a unit's loads,
        not its tensor cores, set the pace), so its rate is the 128-row tile's
        times the ratio of their flops per byte (0.75 at 64 wide)."""
        if engine == "wgmma":
            flops_per_byte = (bm * bn / (bm + bn)) / (128 * bn / (128 + bn))  # against the 128-row tile's
            return flops_per_byte * self.wgmma_flop_per_us * (self.wgmma_wide_speedup if wgmma_hands_registers_back(bn) else 1.0)
        return self.simt_flop_per_us if mma.startswith("simt") else self.mma_flop_per_us

    def wgmma_unit_parts_us(self, bm: int, bn: int, bk: int, ksteps: int, epilogue_bytes: float,
                            elem_bytes: int = 2) -> float:
        """A `bm` x `bn` wgmma unit of `ksteps` K steps of `bk` whose epilogue
        moves `epilogue_bytes` an element (unit_parts)."""
        step = max(self.k_step_cycles, elem_bytes * bk * (bm + bn) / self.k_step_bytes_per_cycle)
        # A 64-row tile's one consumer warpgroup: each pass dearer past 32
        # accumulators a thread (64 x 128 with the SGD update: 1-1.5k a pass
        # against ~0.5-0.65k at 64 x 64; perf-log step 104's unit timer).
        crowded = max(1.0, bn / 2 / 32) if bm == 64 else self.two_warpgroup_pass
        per_pass = self.row_pass_cycles * crowded * (1.0 + self.pass_per_epilogue_byte * max(0.0, epilogue_bytes - 2.0))
        passes = -(-bn // 32)  # a thread holds bn / 2 accumulators: the walk's passes double with bn
        wide = self.wide_unit_cycles if wgmma_hands_registers_back(bn) else 0.0
        return (self.unit_first_cycles + ksteps * step + passes * per_pass + wide) * self.cycle_us

    def reduce_parts_us(self, elements: int, slices: int | None = None) -> float:
        """A reduce item folding `elements`, then (a column sum) the partials of
        its `slices` slices of rows (unit_parts)."""
        folds = 0.0 if slices is None else self.reduce_fold_cycles * (slices - self.reduce_measured_slices)
        return (self.reduce_item_cycles + self.reduce_element_cycles * elements + folds) * self.cycle_us

    def wgmma_unit_fixed_us(self, bn: int) -> float:
        """A wgmma work unit's time outside its K loop, for a `bn`-wide tile (a
        consumer thread holds bn / 2 of its elements, whatever its height)."""
        return (self.wgmma_unit_us + self.wgmma_epilogue_us * bn / 2
                + (self.wgmma_wide_unit_us if wgmma_hands_registers_back(bn) else 0.0))


@dataclass(frozen=True)
class ResidentCosts:
    """Microseconds and bytes per microsecond on an H200 (../shared/GPU.md,
    docs/perf-log.md). `grid_calibration` scales sched-to-tile's grid estimate
    by what the harness measured against it: 4 fitted to the mma.sync kernels
    of 2026-12-01 (2.4x-6.4x, median ~4); 2 since the wgmma kernels (harness at
    f6e2188, a launch a step over the raw estimate: small 1.75, mlp4 1.51,
    medium 2.34, large 2.75, geometric mean 2.0; perf-log step 119)."""

    launch_us: float = 1.3  # a launch that loads and stores a few KB
    cluster_launch_us: float = 0.2  # extra for a cluster launch
    sm_bytes_per_us: float = 90e3  # one SM's load/store bandwidth
    block_sync_us: float = 0.02
    cluster_sync_us: float = 0.3
    # A remote 32-bit store of an exchange (push or publish), a block's: online
    # 64 x 128-256-256-16's exchanges of 16,384 partials, 21,504 of them a block in
    # ~11.6 us (phase timer and ncu, run f6e2188-a: ~1 a cycle, short scoreboard on
    # st.async; perf-log step 119). Was 200 GB/s of pushes over the cluster, no
    # term for the publish: a third of the measured time.
    dsmem_store_us: float = 0.54e-3
    op_overhead_us: float = 0.15  # loop set-up and the latency of one op's first loads
    mma_flop_per_us: float = 1.0e6  # mma.sync from shared memory, one SM
    simt_flop_per_us: float = 0.1e6
    elem_ops_per_us: float = 2.0e4  # per-element code of one block
    # The results a block stores to global memory (gradients, updated state),
    # element by element from gemm fragments and map lanes. Charged at what one
    # SM moves; the phase timer says ~18e3, the maps' elements ~1.2e4 a µs and
    # an exchange's barrier ~1.1 µs: with the three the model fits every
    # resident step within 0.9-1.4x but moves tiny's AdamW kernel to a cluster
    # of 8, so they wait for a probe (perf-log, "Cost models against the
    # harness at 650d25f").
    result_store_bytes_per_us: float = 90e3
    # The block size (tile-resident's `resident_threads_for`). An IEEE division or
    # square root is a fast path and a branch to its slow path, which keeps the
    # compiler from overlapping a thread's elements: such element ops are
    # latency-bound and cost ~in proportion to 1 / warps. 512 threads a block
    # against 256, measured (perf-log step 32): classification-adamw-ce (AdamW
    # over ~26k element ops of div/sqrt a block) 32.18 -> 28.41 us, online-adam
    # (~7k) 15.06 -> 14.73, the SGD steps (none) +0.07..+0.41 us.
    branchy_elem_op_us: float = 0.25e-3  # one div or sqrt of one element, at resident_threads
    wider_block_us: float = 0.35  # each further resident_threads a block: barriers, the gemms' set-up
    # The homes' share of a block's 227 KiB: what the hardware allows less 1 KiB for
    # the kernel's static arrays (reduction scratch: 256 bytes). At 220 KiB
    # classification-adamw-ce could not pad its gemm operands (perf-log step 32).
    smem_budget: int = 226 * 1024
    grid_calibration: float = 2.0


@dataclass(frozen=True)
class TargetOptions:
    """One GPU target (see the module docstring). Frozen: a pass reads it, never
    changes it; `dataclasses.replace` makes a variant."""

    name: str
    arch: str = "sm_90"  # nvcc's -arch when no GPU is visible to ask
    sms: int = 132
    threads: int = 128  # per block: the gemm tiles (tk::gemm_tile) are written for 4 warps (2x2 warp tiles)
    max_threads: int = 1024  # per block, the hardware's limit
    # Block tile (BM, BN, BK) per mma kind; tk::gemm_tile keeps gemm_stages of them in flight (cp.async).
    gemm_tiles: tuple[tuple[str, tuple[int, int, int]], ...] = (
        ("mma.bf16", (64, 64, 32)),
        ("mma.f16", (64, 64, 32)),
        ("simt.f32", (64, 64, 16)),
    )
    gemm_stages: int = 3  # must equal tk::kGemmStages (backend/include/tk/gemm.cuh)
    # Columns per work item of a column reduction (a bias gradient): one warp's
    # lanes read 32 consecutive columns of a row (coalesced), and the block's
    # threads / 32 warps split the rows, so a column has that many loads in
    # flight instead of one thread walking every row (medium's 1024-row bias
    # sums were 1024 dependent load-add steps).
    reduce_columns: int = 32
    # A reduction over trailing axes (a loss per sample, a softmax's row max)
    # may fold one output per warp (tile.reduce rows = warps) where the cost
    # rule of sched_to_tile.row_warps says so; False: always one output a
    # block (the probe's baseline, perf-log step 29).
    reduce_row_warps: bool = True
    # Elements a thread of a grid tile.reduce that is not a column sum (a whole
    # block or a warp an output) loads before folding them (at most as many as
    # it has), folded in the order of one at a time (same bits). One at a time,
    # mlp4's loss sum (32768 elements, one block) waited ~85 load latencies,
    # about half of its 30k-cycle phase; 16 measured small 33.7 -> 30.7 and mlp4
    # 59.9 -> 51.0 us, medium unchanged (perf-log step 19). The CUDA printer
    # issues them; sched-to-tile's row_warps counts load rounds with it.
    full_reduce_loads: int = 16
    # A grid kernel's phase runs its reductions before its gemms (each block
    # takes its items of the phase's ops in order): a column sum reads what the
    # previous phase stored, in 64-byte pieces a row apart, and after the gemms
    # it read it back from DRAM while the gemm epilogues streamed the weights
    # (large's p4 bias sums ended 39k cycles after the gemm, either load width;
    # perf-log steps 35 and 36). False: the schedule's order (the probe's
    # baseline).
    reductions_first: bool = True
    # tile-column-partials (grid kernels on the wgmma engine): a column sum of a
    # gemm's output reads the 16-row fp32 partials the gemm's row walk wrote
    # (False: the probe's baseline). column_partial_rows mirrors
    # tk::hopper::kColumnPartialRows (the row walk's rows a thread a pass).
    column_partials: bool = True
    column_partial_rows: int = 16
    # Only for a summed output of at least this many bytes. Measured (run
    # 452f53f-a, every sum given partials): large (dh 32 MB, dy 8 MB) 731.5 ->
    # 718.3 us; medium (8 MB, 0.5 MB) +0.5, mlp4 (64 KB each) +1.0,
    # mlp4-adamw-ce +0.3, small -0.9. Since step 36 a sum runs at its phase's
    # start and reads an output the previous phase stored: up to ~8 MB it is
    # still in the 50 MB L2 and the sum is cheap; the partials' adds and
    # stores then only lengthen the gemm's epilogue. 32 MB (with the phase's
    # fp32 weight traffic) is not. Between the two brackets: a quarter of L2.
    column_partials_min_bytes: int = 12 * 2**20
    # A full sum of a gemm's output (a mean loss) reads the gemm's column
    # partials too, summing all of them, where the one block that sums it would
    # load more than one batch a thread (full_reduce_loads x threads elements):
    # small's loss 16384 -> 1024 elements, mlp4's 32768 -> 2048; the phase's
    # gemm units wait for that one block (perf-log step 77). Measured with the
    # other grid winners (run 7000e65-c): part of small 23.3 -> 20.7 us: on.
    full_sum_partials: bool = True
    # tile-row-local (grid kernels): a run of phases whose ops all work row by
    # row (maps of whole rows, row reductions) over one row count, the same
    # rows to an item and block, ordered by block barriers instead of grid
    # barriers (mlp4-adamw-ce's cross-entropy, p5-p8): 47.78 -> 43.90 us on
    # the H200 (perf-log steps 39 and 41).
    row_local: bool = True
    # Split-K (grid kernels): a gemm with fewer tiles than half the grid splits
    # K into up to max_ksplit slices of at least ksplit_min_k elements each
    # (512: on the H200 slices of 128-256 lost more to the partials' round trip
    # than the idle blocks gave: small 84 -> 87 us, mlp4 139 -> 158, while
    # medium's K = 4096 in 8 slices of 512 won 349 -> 281; perf-log step 10);
    # the last block to finish a tile sums its slices in order (deterministic).
    max_ksplit: int = 16
    ksplit_min_k: int = 512
    map_elems_per_thread: int = 4  # a tile.map work item: threads x this many elements
    max_blocks_per_sm: int = 4  # the grid sched-to-tile may ask for: sms x this (the runtime clamps to co-resident)
    max_grid_dim: int = 2**31 - 1  # gridDim.x: the most blocks a forced grid may name
    smem_per_block: int = 227 * 1024  # dynamic shared memory a block may opt into (sm_90)
    smem_alignment: int = 16  # of every shared-memory home (cp.async moves 16 bytes)
    max_cluster: int = 16  # blocks of a cluster, with cudaFuncAttributeNonPortableClusterSizeAllowed
    max_portable_cluster: int = 8  # blocks of a cluster without that attribute
    clusters: tuple[int, ...] = (1, 2, 4, 8, 16)  # the cluster sizes tile-resident prices
    # Threads per block of a resident kernel. Measured (results/h200/
    # resident_probe_threads.log, 128/256/512 on six steps): 256 is fastest or
    # within 1% on the aligned steps (online 13.99 -> 13.06 us against 128);
    # 512 wins 6-8% where the gemms take the scalar path (odd widths) and
    # loses 2-3% elsewhere. One block per SM, so more warps only hide latency:
    # every resident op is latency-bound (ncu: 6.3 cycles per issued
    # instruction at 128 threads, one warp per scheduler). tile-resident takes
    # resident_max_threads instead where ResidentCosts' branchy_elem_op_us
    # says the kernel's divisions and square roots pay for it (perf-log step 32).
    resident_threads: int = 256
    # One resident block per SM at ~120 registers a thread: 65536 / 128.
    resident_max_threads: int = 512
    # At most this many elements a thread per iteration of a resident map: their
    # reads are all issued before the first store (stores may alias reads as far
    # as the compiler knows, so each iteration waits one load latency). Each
    # element's ops are printed once per unrolled element: more is more code in
    # kernels that are fetch-bound on their own instructions (perf-log step 4).
    # The Adam/AdamW twins' parameter updates run 4 iterations of 8 (op timer,
    # run-fcbaea4-g3: ~9k cycles a map); 16 is to be measured (perf-log step 21).
    resident_map_unroll: int = 8
    # Resident kernels are launched with programmatic stream serialization and
    # wait (griddepcontrol.wait) before their first global access: a step's
    # launch and set-up overlap the previous step's kernel (GPU.md: an empty
    # graph node costs 0.5 us; a 20-step graph of 5 us steps pays it 20 times).
    programmatic_launch: bool = True
    # A resident kernel's training step (tk_step, called once a step by the
    # kernel's step loop): inlined into the loop, or a function of its own
    # (perf-log steps 42-44). Inlined, the step's loop-invariant addresses
    # stayed live across steps and the Adam twins spilled (128 registers).
    # Its buffers' pointers: "param" reads them through a generic pointer to
    # the kernel's parameters (a load of global latency before the first
    # copy of every step), "smem" from a table in shared memory that the
    # kernel fills once from its parameters.
    resident_step_inline: bool = False
    resident_step_pointers: str = "smem"
    # The step loop keeps what a step makes on chip for the next (perf-log step
    # 48): state homes stay in every block whose updates write them through
    # (clusters too), and what no later step stages again (outputs, kept state)
    # is stored to global memory by the last step alone. Off: as before step 48,
    # a cluster restages all its state every step and every step stores everything.
    step_loop_on_chip: bool = True
    # A cluster exchange's epilogue (tk::exchange) stores replicated homes in the
    # owner's copy, and all the owner's threads then copy them into the other
    # ranks' (tk::publish; perf-log step 49). Off: the epilogue's threads (one
    # an element of the owner's chunk) store into every rank themselves.
    exchange_publish: bool = True
    # Resident row reductions whose rows are short walk a row a thread (the
    # column reductions' loop) where the printer's count says it is cheaper than
    # a warp a row (perf-log step 50): the cross-entropy's reductions over ten
    # classes took ~1.7 k cycles each a warp a row. Measured (run b366d17-a):
    # classification-adamw-ce 24.53 -> 22.47 us a step, the others within 0.1.
    # A thread's sum folds in the warp's (and eager's) tree order (perf-log step
    # 55): with an index-order fold the twin's bits left eager's, 1e-7 -> 8e-3
    # after ten AdamW steps (run 78f37fc-d); with the tree the bits are the warp
    # form's (run b5812ef-a: 9.96e-8 both; classification-adamw-ce 24.65 -> 22.40).
    resident_thread_rows: bool = True
    # A resident column reduction (leading axes summed) with fewer outputs than
    # threads: each output on a group of lanes (a power of two, up to 32) that
    # walk its rows in turn, then a shuffle tree over the group, instead of one
    # thread walking all its rows (classification's db1: 64 dependent adds on one
    # warp at the end of p4, its db2 the same in p3). Another summation order
    # (the same on every run). Off until measured (perf-log step 111).
    resident_column_lanes: bool = False
    # Where a resident phase has several maps of a few elements a block (casts of
    # biases and scalars, the optimizer's scalars), each runs on a warp of its own
    # instead of all threads running them in turn (perf-log step 51). Measured
    # (run b366d17-a): online-adam -0.57, classification-adamw-ce -0.64 us a step.
    resident_warp_small_maps: bool = True
    # The ops of a resident phase start their work on different warps, chosen by
    # the printer's count of each warp's share (perf-log step 56): every op handed
    # out its units, rows or elements from warp 0, so the small ops of a phase
    # queued on the first warps (online's phase 3: a column sum, two products of
    # one and four units, a column sum, ~3.9 k cycles on warp 0 while warps 4-7
    # idled). The same bits either way. Off: as before (byte-identical kernels).
    resident_spread_ops: bool = True
    # A resident kernel leaves out the guards and clamps of a block's short or
    # empty slice where the cluster divides the split dimension (every slice
    # whole), and a map's clamp of elements past its end where its items divide
    # it (perf-log step 58): ~12% of the instructions of classification-adamw-ce's
    # W1 AdamW map (8-10 k cycles a step), and gemm extents known at compile time.
    # The same arithmetic on the same elements, the same bits on the H200;
    # measured -2.4 µs on online, -4.7 on classification-adamw-ce (run 90c86f4-a).
    static_slices: bool = True
    # A resident map whose items divide its elements and whose rows divide into
    # runs of four gives each thread runs of four consecutive elements instead
    # of elements a block apart (perf-log step 59): nvcc loads and stores a run's
    # operands as vectors (the W1 AdamW map of classification-adamw-ce, with
    # static_slices: PTX 331 -> 207 instructions an iteration). Measured slower
    # on every resident step (+0.1 to +1.1 µs, run 90c86f4-a): off.
    resident_map_groups: bool = False
    # Where a cluster does not divide a gemm's split dimension (short slices:
    # online at 33 x 100-300-7, 300 over 16), each rank runs the product at its
    # own extent as a compile-time constant (tk::with_slice_extent: c, the tail,
    # or 0), as static_slices gives the whole ones (perf-log step 60).
    constant_extents: bool = True
    # A resident map's divisions and square roots run their fast paths without
    # the branch to the slow path (tk::div_fast, tk::sqrt_fast: ptxas's own
    # instruction sequences), one test an iteration sending every element back
    # through `/` and sqrtf where an operand is outside their range: the
    # elements' chains interleave instead of running one after the other
    # (perf-log step 61; the Adam updates are latency-bound). The same bits;
    # measured (runs 719f12c-g, 1be1ae9-a): online-adam -0.43, classification-
    # adamw-ce -0.21 us a step, the SGD steps (no division) unchanged.
    fast_paths: bool = True
    # The step loop runs the ops whose results only the outputs that are not
    # state read (the loss, returned gradients: stored by the last step alone)
    # in its last step alone, and stores a temporary only those ops read in the
    # last step alone (plan_last_step_ops, perf-log step 62): online's loss sum,
    # a block reduction of 1024 squared errors, and their publication to the
    # cluster. The same bits; measured (run 1be1ae9-a): online -0.45,
    # classification -0.87, online-adam -0.29, tiny -0.17 us a step.
    last_step_outputs: bool = True
    # A step of a cluster's step loop ends with a block barrier instead of a
    # cluster barrier where no step but the last stores what a later step
    # stages: each step's first DSMEM push already waits for every block to
    # have started that step (the split arrive/wait at its start), the others
    # for that exchange's barriers (ResidentPrinter._steps_need_no_cluster_barrier,
    # perf-log step 63). One cluster barrier a step fewer. The same bits;
    # measured (run 1be1ae9-a): online-adam -0.38, classification-adamw-ce
    # -0.41, classification -0.20, online -0.10 us a step.
    step_block_barrier: bool = True
    # tile-resident keeps every state home (an input the kernel writes) to the
    # kernel's end where it fits, so that the step loop keeps it on chip instead
    # of staging it again from global memory: Adam's powers of the betas, which
    # a first-phase map updates, are staged anew every step, with the cluster
    # barriers that their store by rank 0 needs (perf-log step 63). Measured
    # with step_block_barrier (runs 1be1ae9-a/c): within +-0.1 us on every step
    # (the twins' two scalars are not where their time goes); with input casts
    # and cast copies (run 8ff8893-e): online-adam 8.01 -> 6.81, classification-
    # adamw-ce 14.30 -> 13.21 us, SGD steps within 0.05: on.
    keep_state_homes: bool = True
    # A resident gemm whose N is not a whole number of 16-column pairs (10
    # classes) reads its last pair whole where B's home rows are padded that far
    # (tk::smem_gemm's NREAD) and stores only the columns before N: ldmatrix and
    # mma instead of the scalar path's element loads (perf-log step 64; the same
    # mma on the same k order: the same bits). Measured (runs 1be1ae9-a/c):
    # mixed, classification -0.39 and +0.02, classification-adamw-ce +0.02 and
    # -0.38, classification at 50 x 100-300-10 +0.13 and +0.51 us a step: off.
    gemm_padded_columns: bool = False
    # A resident gemm's operand home whose rows are shorter than 16 bytes (a head
    # of 7 outputs in bf16) gets rows of 16 bytes (tile.home_pitch's narrow), so
    # that ldmatrix reads it and tk::smem_gemm's clamped path (perf-log step 115)
    # takes its products instead of the scalar path (perf-log step 116).
    pad_narrow_gemm_rows: bool = True
    # The first exchange of a cluster's step gets two receive buffers, used by
    # even and odd steps, past the placement's bytes where they fit: only the
    # first step then waits for every block to have started before its first
    # push (ResidentPrinter.plan_receive_copies, perf-log step 65). With
    # step_block_barrier, two cluster barriers a step instead of four. The same
    # bits; measured on top of step_block_barrier (run 1be1ae9-a): online -0.12,
    # classification -0.19, 33 x 100-300-7 -0.33, 50 x 100-300-10 -0.38 us a step.
    double_receive: bool = True
    # The step loop stages each step's batch during the step before: a second
    # copy of each batch home (past the placement's bytes, where they fit and no
    # other home shares the home's bytes), picked by the step's parity, into
    # which a step starts copying the next step's batch once its own is staged
    # (ResidentPrinter.plan_prefetched_inputs, perf-log step 66). ncu's samples
    # of a 20-step loop (run 9279374-g) put 23-24% of online's and
    # classification's stalls at the step's staging wait. Only where every batch
    # home copies in cp.async's 16-byte units (else nothing overlaps: +0.2..+0.5
    # us at three unseen shapes). Measured (run 33f6709-a), on top of steps
    # 67-68: online -0.08, online-adam -0.14, tiny -0.07 us a step (alone -0.34,
    # -0.10, -0.13); the same bits. classification's 20-byte label rows keep it
    # off there (-0.12 with them prefetched anyway).
    prefetch_step_inputs: bool = True
    # With prefetch_step_inputs: batch homes whose rows are 4- or 8-byte units
    # (classification's 20-byte label rows, 200-byte rows of odd widths) are
    # prefetched too, by 4- and 8-byte cp.async (tk::stage_input_rows, .ca:
    # nothing in the kernel writes a step input, so L1 holds nothing stale).
    # Off: only 16-byte units. Measured (perf-log step 92, run a34bdbb-q):
    # classification 50 x 100-300-10 -0.70, online 33 x 100-300-8 -1.09 us a
    # step; classification itself and 64 x 200-300-10 within the call's noise.
    prefetch_small_units: bool = True
    # With prefetch_step_inputs: the step input pointers that the next step's
    # prefetch copies from, read one step ahead (the step before loads them at its
    # start and leaves them in shared memory at its end) instead of from global
    # memory in the prologue, where each was a round trip that every thread
    # waited for before its copies (ncu, classification: two in a row, ~1.4k
    # cycles a step; perf-log step 107). Measured (run aefe117-h100-b): slower
    # where it was meant to gain, tiny +0.22, classification +0.24 µs a step
    # (122 registers against 109; the loads now at every step's start, the
    # row's second pointer still after the first copies), the Adam twins
    # -0.06 and -0.17: off.
    prefetch_step_pointers: bool = False
    # The same rows a step ahead, by an 8-byte cp.async a pointer into shared
    # memory issued with the next step's batch copies (the same staging wait
    # covers them) instead of a load held in a register through the step
    # (prefetch_step_pointers' 122 registers against 109). classification's
    # steps 2-4 spend 1.1-1.6k cycles in their prologue against 0.3k for the
    # first (the phase timer, run 9df86ff-h100-a): the pointers' round trip
    # before the copies, it seemed. Measured (perf-log step 125, run
    # f5ba586-h100-a): classification -0.05 (noise), classification at 50 x
    # 100-300-10 +0.40, online-adam +0.15 us a step: the wait is not the
    # pointers'. Off.
    prefetch_pointer_copies: bool = False
    # With prefetch_step_inputs (and not prefetch_step_pointers): the next step's
    # input pointers all loaded before the first of its copies. cp.async is a
    # memory barrier to the compiler, so a pointer loaded after the first home's
    # copies waited a second global round trip (ncu, classification: the label
    # rows' pointer after x's copies; perf-log step 112).
    # Measured (run ab0ea49-h100-a, with the copies as they were): classification
    # -0.19, online-adam -0.11, tiny -0.04 us a step, the rest within noise.
    prefetch_pointers_first: bool = True
    # With prefetch_step_inputs (not prefetch_step_pointers nor bulk rows): the
    # next step's input pointers loaded at the step's start as now, their copies
    # issued after the step's first phase with a product instead of right away,
    # so that the pointers' global round trip overlaps that phase instead of
    # every thread waiting for it before the step's work (ncu of classification,
    # run f6e2188-a: 4.8% of the step's warp samples, long scoreboard on the
    # copies' address arithmetic; perf-log step 120). Refuted (run
    # 144fa00-h100-a, two rounds interleaved, an H100): classification -0.14 and
    # +0.02 us a step, online +0.02/+0.04, tiny +0.03, 50 x 100-300-10
    # +0.25/+0.05: within noise or worse. Off.
    prefetch_copies_after_work: bool = False
    # A resident kernel's staging loops with its block size a compile-time constant
    # (TK_BLOCK_THREADS; tk::for_each_row_unit unrolls a thread's copies at constant
    # offsets where a row's units divide the block, else strides by a constant).
    # Measured (perf-log step 112, run ab0ea49-h100-a): online 33 x 100-300-7 -0.7,
    # online-adam -0.14, online -0.1, classification 50 x 100-300-10 -0.1, tiny
    # -0.06 us a step, but classification +0.21 and classification-adamw-ce +0.16
    # (8 copies a thread issued back to back). Measured again over step 114's
    # constant fragment pairs (run d5182e5-h100-a, 89 registers where 118 were):
    # classification -0.22, online-adam -0.16, online 33 x 100-300-7 -0.55,
    # classification-adamw-ce -0.06, classification 50 x 100-300-10 -0.07, online
    # -0.03, tiny +-0.01 us a step: on (perf-log "Steps 113 and 114 measured").
    stage_constant_threads: bool = True
    # With prefetch_step_inputs: the next step's batch homes of 16-byte units
    # copied a row a bulk copy (cp.async.bulk, issued by warp 0's lanes, counted
    # on an mbarrier the next step's staging wait waits on) instead of 16 bytes a
    # cp.async from every thread (tk::stage_rows_bulk; perf-log step 113).
    # Measured (run d5182e5-h100-a): online +3.5, online-adam +3.2, classification
    # +1.4, tiny +0.6 us a step, ~20-27 ns a row copy: warp 0's lanes wait while
    # the copy engine takes their bulk copies one after another. Off.
    prefetch_bulk_rows: bool = False
    # With prefetch_step_inputs, in a cluster kernel with an exchange: the next
    # step's batch homes that every block stages whole, in 16-byte units, copied
    # once for the cluster: block r issues rows r, r + C, ... as bulk copies
    # multicast into every block (tk::stage_rows_multicast), after the step's
    # first exchange (every block has left the step before, which read the copy
    # being filled). classification's prologue spends 1.1-1.6k cycles issuing
    # 32 KB of cp.async in each of its 16 blocks, 0.3k at the step that issues
    # none (phase timer, run 9df86ff-h100-a; perf-log step 127). Measured (run
    # df23f2e-h100-a, an H100): the prologue fell to 0.3k cycles as predicted, but
    # issuing the copies now costs ~0.65-0.7k in the phase after the exchange (the
    # copy engine takes each block's bulk copies one after another, ~40 ns each,
    # while their warps wait): classification -0.15..-0.24 us a step, online +0.30
    # and +0.35, online 24 x 64-200-8 +0.38 (8 copies a block of 256- and 32-byte
    # rows). Off.
    prefetch_multicast_rows: bool = False
    # With prefetch_multicast_rows: the multicast copies issued inside the first
    # exchange's publish wait (tk::exchange_async_published's `during`), where every
    # block has pushed and the block waits for the other owners' results anyway,
    # instead of after the phase's barrier, where the issuing warps held the next
    # phase ~0.7k cycles (run df23f2e-h100-a; perf-log step 128). Measured (run
    # f336e9e-h100-a, an H100) against as is: classification -0.23 us a step,
    # online-adam -0.22, online +0.37, online 24 x 64-200-8 +0.12: issuing the
    # copies costs ~0.5k cycles in the exchange instead of after it. Off.
    prefetch_multicast_in_publish: bool = False
    # With prefetch_multicast_rows: only homes whose bulk copies (a row of a padded
    # home, a cluster's share of a dense one, a home without rows whole) are at
    # least this many bytes go by multicast; the others keep every block's own
    # cp.async. The copy engine takes a block's bulk copies one after another
    # (~40 ns each): online's labels (32-byte rows) took 4 of each block's 8
    # copies for 2 KB (run df23f2e-h100-a; perf-log step 129). 16: every home of
    # 16-byte units.
    prefetch_multicast_min_copy_bytes: int = 16
    # A grid kernel's producer copies the operands of each phase's first wgmma
    # gemm that no op since the last grid barrier writes (the weights' casts,
    # the batch) into its first unit's stages before the barrier in front of
    # the phase, so that they are in flight while the grid meets
    # (tk::hopper::preissue_operands, CudaPrinter.plan_preissue, perf-log step
    # 93). The small steps' units take in a round of loads that drains at each
    # barrier (~50 B a cycle against ~80-100 streaming, step 91). Measured
    # slower on every grid step (run a6926fa-h100-q: small +0.3, mlp4 +0.6,
    # medium +4.3 us), and in its released-stages-only form too (step 100, run
    # 218a01b-h100-a: small +0.6, mlp4 +1.8, medium +2.9): off.
    preissue_ready_operands: bool = False
    # A value rounded to a bf16 or f16 result keeps its narrow form under a
    # name of its own (`v<n>_bits`), and a store of the value into a buffer of
    # that type writes those bits instead of rounding the widened float again:
    # the same bits (the float is exactly representable), without the second
    # conversion and its byte permute a stored element (SASS of small's kernel:
    # F2F, IMAD.U32, then F2FP.PACK_AB and PRMT before each STG.U16; perf-log
    # step 96). Measured (run 484c6f1-h100-r, an H100): small -0.26, mlp4
    # -1.92, medium -3.27, mlp4-adamw-ce -1.12 us a step, the resident steps
    # within 0.1 (their gemms' stores take the float path); the same bits.
    store_rounded_bits: bool = True
    # A cluster exchange's pushes are st.async stores that count their bytes on
    # an mbarrier of the owner, which waits on it instead of the exchange's first
    # cluster barrier (tk::exchange_async, perf-log step 67): ncu put half of the
    # exchange's stall samples (20-34% of a step) on that barrier's release fence
    # (membar), each thread waiting for its DSMEM stores to be acknowledged.
    # Measured (run 33f6709-a): online -0.28, classification -0.29, online-adam
    # -0.40, classification-adamw-ce -0.26, 1 x 130-250-5 -0.19 us a step.
    exchange_async_pushes: bool = True
    # With exchange_async_pushes: an exchange's publish (the owner's results into
    # the other ranks' copies of replicated homes) as st.async stores too, counted
    # on a publish mbarrier of each receiving block, which waits on it instead of
    # the exchange's second cluster barrier (tk::exchange_async_published,
    # perf-log step 68): no cluster barrier left in the exchange. Only where
    # every published home pairs into 32-bit words (fp32, or bf16/f16 pairs of
    # one row) and the epilogue stores into no other rank's split slice.
    # Measured on top of exchange_async_pushes (run 33f6709-a): online -0.64,
    # classification -0.54, online-adam -0.36, classification-adamw-ce -0.36,
    # 50 x 100-300-10 -0.41 us a step; 33 x 100-300-7 +0.08 (falls back to
    # step 67's form: the same kernel; the call's noise).
    exchange_async_publish: bool = True
    # An exchange's remote stores as wide as its layout allows (perf-log step
    # 118): a split gemm's partials pushed in fragment pairs (8 bytes; the
    # exchange's elements and each owner's chunk even), and the asynchronous
    # publish in runs of up to 16 bytes a home (the run's elements in one row
    # of every published home). Off: a 32-bit store each, the forms of steps
    # 67 and 68. ncu of online 64 x 128-256-256-16 (run f6e2188-a): its two
    # exchanges of 16,384 partials were 71% of the step's warp samples, ~1
    # remote 32-bit store a cycle a block. Measured (run 144fa00-h100-a, an
    # H100, perf-log step 121): online -0.36 us a step, classification -0.24,
    # online-adam -0.32, 16 x 64-128-128-8 -0.9; that 64 x 256 step's exchanges
    # 37.0 -> 23.6 us on 8 blocks: an st.async costs the same up to 16 bytes.
    exchange_wide_stores: bool = True
    # A resident step's homes whose rows cp.async cannot copy (not 16-byte units:
    # odd widths, 200-byte rows) go through registers, one global round trip per
    # iteration of tk::stage_rows's loop (its next load is not hoisted above its
    # shared store; SASS of online at 33 x 100-300-7: LDG then STS, x's 1650 words
    # in 7 round trips a step). With n > 1 a thread issues n loads (8-byte units
    # where they align) before it stores any (tk::stage_rows<n>, perf-log step
    # 69). 1: the loop as it was. Off until measured.
    stage_loads_in_flight: int = 1
    # The step loop carries the compute-dtype copies of the state from step to
    # step (perf-log step 52): tile-resident keeps the homes of casts of state
    # to the kernel's end where they fit, and the printer has each update write
    # the new value's cast there too (when another step follows), so a step
    # after the first does not cast the weights again. Measured (run b366d17-a):
    # tiny -0.27, classification -0.89, online-adam -0.54 us a step.
    carry_casts: bool = True
    # With carry_casts: a cast of state whose update shares a phase with its
    # last reader (the last layer's weight: dh = dy @ W^T and W's update both
    # follow dy), or whose home's bytes a later temporary reuses, is carried too,
    # in two copies the step's parity picks (past the placement's bytes where
    # they fit): the update writes the next step's copy while this step's
    # readers read the other (ResidentPrinter.plan_carried_casts, perf-log step
    # 73). Measured with tk-fuse's input casts (run 7000e65-a): online 5.01 ->
    # 4.80, classification 9.52 -> 9.10, tiny 3.17 -> 2.94 us: on.
    carried_cast_copies: bool = True
    # tk.div and tk.sqrt print as calls of out-of-line IEEE functions (tk::div_rn,
    # tk::sqrt_rn: the same bits) instead of inline at every element: mlp4-adamw-ce's
    # ptxas 2.6 -> 2.0 s on the CI machine (perf-log step 53), its cold compile
    # being the one over issue 10's 5 s. Off: the calls cost 0.1-2.1 us a step on
    # the H200 (run b366d17-a: mlp4-adamw-ce +1.6, online-adam +0.8).
    ieee_calls: bool = False
    # tile-stage-casts (resident kernels): a first-phase map that only casts a
    # staged input's home gives way to a home the prologue fills with the cast
    # (tile.smem_cast). Off: measured (perf-log step 45) 3-9 us a step SLOWER
    # on every resident step, and still 0.6-11 us slower with every cast
    # home's loads issued before any conversion (step 46, run 87ae420-a).
    stage_casts: bool = False
    # A resident gemm's epilogue stores elements (i, j) and (i, j + 1) of a
    # fragment as one 2-element store where every output's j is its unit-stride
    # axis (tk::store_pair; the address decides at run time). Off: measured
    # 0.2-1.6 us a step slower (perf-log step 47, run 87ae420-a; with the step
    # loop's last-step stores the pairs are mostly the homes').
    resident_pair_stores: bool = False
    # The Hopper gemm engine of grid kernels (tk/hopper_gemm.cuh: TMA, an
    # mbarrier pipeline, wgmma; sm_90a). A grid kernel uses it for all its
    # gemms or none (they share one pipeline, kept from gemm to gemm), at
    # 128 threads a warpgroup (a producer, wgmma_consumers consumers) and one
    # block per SM (the stages take ~200 KB). sched-to-tile prices both
    # engines with GridCosts and keeps the faster.
    wgmma: bool = True
    wgmma_arch: str = "sm_90a"  # the feature set its kernels are built for; they run on this arch less the "a"
    # The consumer warpgroups a wgmma kernel's block may have (tk::hopper::
    # kConsumers), each count sched-to-tile prices: the tile's BM is 64 a
    # consumer, the block has 128 threads more (the producer). 1: 64-row
    # tiles, twice the units of few-tile products, each loading half the A
    # rows (perf-log step 97); BN up to 128 then.
    wgmma_consumers: tuple[int, ...] = (2, 1)
    # BM, BN, BK of a wgmma kernel's tile (with wgmma_gemm_widths, its widest gemm's); for_wgmma sets BM from the consumers
    wgmma_tile: tuple[int, int, int] = (128, 128, 64)
    # The tile widths sched-to-tile tries (WGMMA_TILES has them); a kernel with
    # 256-wide tiles hands the producer's registers to the consumers during
    # each gemm (tk::hopper::grid_gemm_units) and ends with a grid barrier
    # (sched-to-tile: without it the in-place 20-step graph lost 30%, perf-log
    # step 15). GridCosts' wide-unit terms pick 256 for large, 128 for medium.
    # 64 wide too: where a step's products have few 128 x 128 tiles (small:
    # 16 units on 132 SMs, mlp4: 2-4), the cost model picks 64 for twice the
    # units, and the probe measured small 53.1 -> 38.6 us, mlp4 98.4 -> 68.6
    # (perf-log step 16); medium and large keep 128 and 256. 32 wide
    # (TileById<3>, B of x @ W in 64-byte-swizzled boxes): the model picks 64 x
    # 32 for small and mlp4, measured mlp4 26.75 -> 22.93 us, mlp4-adamw-ce
    # 39.98 -> 37.87, small 17.60 -> 17.51 (perf-log step 99, an H100).
    wgmma_tiles_n: tuple[int, ...] = (32, 64, 128, 256)
    # Each wgmma gemm of a kernel may be narrower than the kernel's tile (a width
    # of wgmma_tiles_n; none wider than 128 in such a kernel): sched-to-tile
    # narrows a gemm where the cost model's estimate of its phase on the chosen
    # grid falls (more units of fewer bytes where its 64-wide tiles leave blocks
    # idle), the others keep the kernel's width. They share the pipeline (the
    # widest tile's stages and stride: tk::hopper::TileShape's third parameter).
    # Measured with 32 offered (perf-log step 101, an H100): medium 88.22 ->
    # 81.37 us (h @ W2 at 128 x 32, K split 2), the small steps as with 32 alone.
    wgmma_gemm_widths: bool = True
    # The columns an item a grid kernel's column sum may take (each a divisor of
    # the threads): sched-to-tile takes the one with the smallest estimate of its
    # phase on the chosen grid, the widest on a tie. Fewer columns an item: more
    # items, each folding fewer rows a thread but more slices. small's db1 (32
    # items of 32 columns, 2.9k cycles in front of dW1's units on blocks 0-31):
    # 16 or 8 columns, ~2.1k by the model (perf-log step 131). Empty:
    # reduce_columns everywhere.
    column_sum_widths: tuple[int, ...] = ()
    # A grid kernel's wgmma gemms of tiles up to 128 wide call their producer
    # part out of line (tk::hopper::produce_units_call): one copy for each
    # layout instead of one for each gemm. Compile time (perf-log step 74, CI
    # machine): mlp4-adamw-ce's cicc 2.1-2.2 -> 1.8-1.9 s, ptxas 2.3-3.2 ->
    # 1.7-1.8 s, the one workload over issue 10's 5 s cold compile. The
    # consumers' code is unchanged; the run time is unmeasured: off until then.
    wgmma_producer_calls: bool = False
    # A grid kernel's reductions load a thread's elements full_reduce_loads (or
    # COLUMN_LOADS) at a time, then the rest one at a time, a global round trip
    # each: small's loss (16384 elements, 384 threads) leaves 11 a thread,
    # mlp4's bias-gradient slices (11 rows each) are all tail. With this, the
    # tail is one more batch, its loads guarded and issued together, folded in
    # the same order (the same bits; perf-log step 75). Measured with the other
    # grid winners (run 7000e65-c): on.
    batched_reduce_tails: bool = True
    # A grid kernel's casts of state (the fp32 weights' compute-dtype copies,
    # tile_resident.state_casts) are carried from one launch to the next within
    # one chain of launches (CompiledTrainingStep.capture: the launches of one
    # replay, where nothing else writes the state between them): the first
    # launch casts, every update also writes the cast of the new value for the
    # next launch (in two copies the launch's parity picks where a reader of
    # the cast shares a phase with the update), and a phase left with nothing
    # but such casts skips its grid barrier after the first launch
    # (CudaPrinter.plan_carried_casts, perf-log step 76). A plain call casts as
    # before. Measured with steps 70, 75, 77, 81 and 83 (run 7000e65-c): large
    # 716 -> 640, medium 96.5 -> 87.0, small 23.3 -> 20.7, mlp4 34.5 -> 30.9 us: on.
    grid_carried_casts: bool = True
    # A split-K gemm's fix-up shared by the tile's slices: each sums the row
    # walk's passes it owns (pass i to slice i % splits) once every slice has
    # stored its partial, instead of the last slice summing the whole tile
    # alone (medium's h @ W2: 8 x 64 KB read by one block while 127 wait).
    # The same additions per element: the same bits (tk::hopper::
    # splitk_shared_fixup, perf-log step 80). Measured (run 7000e65-c): medium
    # 87.0 -> 85.7 us with the other grid winners: on.
    split_k_shared_fixup: bool = True
    # Under the shared fix-up, a slice keeps the partial of the passes it owns in
    # registers: it stores only the passes other slices sum, and sums its own
    # from acc instead of reading back what it stored (TK_SPLITK_KEEP_OWN; the
    # same operands in the same order, so the same bits). small's p2 (64 x 32
    # tiles, K in 2 slices: one pass, slice 0 stores nothing) spent ~4k cycles
    # in its fix-up (perf-log step 102). Off until measured.
    split_k_keep_own_partial: bool = False
    # Under the shared fix-up, partials published as 8-byte words (the fp32 bits
    # under a tag, one single-copy-atomic store) that the owner of a pass polls
    # and zeroes after use: no fence, counter or reload on the chain, and a
    # publisher never waits (TK_SPLITK_TAGGED, tk::hopper::splitk_tagged_fixup;
    # the owner sums its own from registers, in slice order: the same bits).
    # small's p2 fix-up is ~4k cycles of four or five L2 round trips (perf-log
    # step 103). The workspace holds 8 bytes an element either way
    # (tile.gemm_partials_bytes). Polled by one lane a warp (step 105).
    # Measured (run a0555bf-h100-a) on top of the parts model: small -1.06,
    # medium -1.13, mlp4-adamw-ce -0.12, the odd steps +0.25 (200 rows) and
    # +0.8 (130 rows), still -0.39 and -2.75 against the model before step
    # 106; on.
    split_k_tagged_partials: bool = True
    # A grid kernel prefetches the tensor maps of each phase's wgmma gemms before
    # the grid barrier in front of the phase (prefetch.tensormap; the standalone
    # gemm kernel does it at its start): the first copy of a phase otherwise
    # waits for its map's fetch too (perf-log step 81). Measured with the other
    # grid winners (run 7000e65-c): on.
    prefetch_tensor_maps: bool = True
    # A grid kernel's cooperative launch also allows programmatic stream
    # serialization (cudaLaunchKernelEx with both attributes): the kernel calls
    # tk::launch_dependents and waits at tk::wait_prior_grid before its first
    # global access, as resident kernels do (programmatic_launch: -0.3..-0.7
    # us a step there, perf-log step 7). Whether the driver takes the two
    # together is the first thing the probe shows (perf-log step 82). Off
    # until measured.
    grid_programmatic_launch: bool = False
    # A grid kernel in a chain of launches (capture) stores the outputs that are
    # not state and that nothing in the kernel reads (the loss, the returned
    # gradients: large's 128 MB a step) in the chain's last launch alone, and
    # runs what only they need (the loss's sum) there alone: capture's outputs
    # are its last step's. The resident step loop does the same
    # (last_step_outputs). Perf-log step 83; measured with the other grid winners
    # (run 7000e65-c, large's share the largest): on.
    grid_last_launch_outputs: bool = True
    # A grid kernel on the wgmma engine launched in clusters of two (with the
    # cooperative attribute), every gemm walking its units as the pair's
    # lockstep (tk::hopper::pair_step): where the two blocks' units are tiles
    # (m, n) and (m', n) over the same K steps, rank 0 loads B once into both
    # by TMA multicast, halving B's L2 traffic (perf-log step 87; medium's and
    # large's products are L2-bound). The grid is even and each gemm's first
    # unit sits on an even block (tile.kernel's gemm_cluster = 2). Off until
    # measured.
    gemm_cluster_pairs: bool = False
    # Such a kernel's launch also asks for the cooperative attribute (every block
    # co-resident, or the launch fails) beside the cluster one. False launches the
    # clusters alone, for a driver that refuses the two together: the runtime's
    # grid is still no larger than the clusters that fit at once
    # (tk_max_active_clusters), so on an otherwise idle GPU all are resident,
    # but nothing guarantees it (another kernel on the SMs would hang the grid
    # barrier). The probe tries both (perf-log step 87).
    gemm_cluster_cooperative: bool = True
    # Split-K within a thread block cluster (grid kernels on the wgmma engine):
    # in each phase, the gemm with the most K steps a unit and too few tiles
    # for the grid's idle blocks splits K into slices that sit on consecutive
    # blocks of one cluster (up to its tile's consumer warps, each slice at
    # least cluster_ksplit_min_k of K, while the phase's items fit the grid),
    # and each slice's consumer warp pushes its fragment into the shared memory
    # of the slice that owns the warp's rows (tk::hopper::splitk_cluster_fixup:
    # st.async, one mbarrier wait; the same additions in the same order as the
    # shared fix-up, so the same bits). The kernel runs in clusters of the
    # largest such split (tile.kernel's fixup_cluster; the gemm's fixup =
    # "cluster"). The L2 fix-ups' one or two round trips (small's p2: 1.6-2.5k
    # cycles) are what kept split-K at ksplit_min_k = 512 (perf-log step 124).
    # Measured with step 126's pricing (small -0.35 and its 200-row step -0.77
    # us a step in clusters of 2, run 9df86ff-h100-d; -0.31 and -0.60 in run
    # f5ba586-h100-a; every other suite kernel unchanged): on.
    split_k_cluster_fixup: bool = True
    # Slices of 128 (two 64-deep K steps) lost: mlp4's four 2-way splits of
    # K = 256, +0.73 us a step, its units' first loads not shortened by the
    # split (perf-log step 124's run 4e256d9-h100-c; 256: nothing split there).
    cluster_ksplit_min_k: int = 256
    # Blocks of one SM each that can run at once in clusters of 2, 4 and 8: a
    # cluster's blocks share a GPC, and the GPCs' SM counts need not divide by
    # the cluster (the ingress probe's clusters of 4 ran 120 blocks on the H200,
    # perf-log step 91; a grid of 128 in clusters of 4 ran at 120 on an H100,
    # its 128-unit phases in two rounds: step 124's run). 8: from the GPC sizes
    # those imply (unmeasured). A cluster split whose kernel's grid exceeds
    # its cluster's count is not made.
    cluster_blocks: tuple[int, ...] = (132, 120, 112)
    # With split_k_cluster_fixup: the same slices meet through the workspace
    # (the shared or tagged fix-up), not the cluster: the probe's split without
    # the mechanism, and the tests' twin of the same additions (the same bits).
    cluster_fixup_through_l2: bool = False
    # A grid kernel's phases ordered by per-item flags instead of grid barriers
    # (tile-item-flags, issue 10.5): each work item waits for the flags of the
    # earlier items it reads after, writes after or overwrites
    # (trainkernel.item_deps), so a block starts the next phase's items as
    # soon as their own producers are done. A barrier stays where every item
    # after it needs every item before it. Off: the same bits and
    # sanitizer-clean, but 1.1-1.5x slower on every grid workload (an H100,
    # run 3c2d3b8-f-h100: an arrival's fence per item and warp, chains through
    # phases of few items; perf-log step 88).
    item_flags: bool = False
    # ... and where the barrier's modelled cost (grid_costs.grid_sync_us) is
    # under this share of the modelled time of the two phases it separates:
    # there flags can gain little, and such phases' many items make the
    # dependency analysis long (large in f32: ~20 s for 4096-32768 items a phase).
    item_flags_min_share: float = 0.0
    final_grid_sync: str = "wide"  # never | wide | always: see sched_to_tile.ends_with_grid_sync
    # The kernel parameters hold two 128-byte tensor maps a gemm; CUDA allows
    # 32764 bytes of parameters (12.1+), the buffers' pointers included.
    wgmma_max_gemms: int = 120
    # A grid kernel's gemms each on the engine it fits: where some products'
    # operand rows are not whole 16 bytes (a 10-class head), those take
    # mma.sync tiles (their shared memory after the wgmma pipeline's, the
    # worker count 128) and the rest the wgmma pipeline, instead of every
    # product on mma.sync (sched_to_tile.mma_beside_wgmma). A 64 x 256-256-256-10
    # step's all-mma.sync grid kernel measured 57 us a step against 17.4 for
    # the same step with 16 outputs on wgmma (run 144fa00-h100-a). Mixed, the
    # grid kernels of 128 x 512-1024-10 and 256 x 1024-2048-10 measured 70.9 ->
    # 45.6 and 108.3 -> 66.8 us a step, the same errors (run 9f45cee-h100-a;
    # perf-log step 122).
    mixed_gemm_engines: bool = True
    # A map item's elements per thread under the wgmma engine: one block of
    # 384 threads per SM, so each thread needs more loads in flight than on
    # the mma.sync grid (4 blocks of 128): 8 reached 1.1-2.0 TB/s on medium's
    # and large's casts (perf-log steps 9 and 11).
    wgmma_map_elems_per_thread: int = 32
    # A map with fewer items than the grid's SMs halves its elements a thread
    # (down to this) to spread over more blocks: its time is one item's load
    # latency, not bandwidth. All of mlp4's maps at 16 instead of 32: mlp4
    # 35.45 -> 34.90 us, mlp4-adamw-ce 47.78 -> 46.13 (perf-log step 41).
    map_min_elems_per_thread: int = 16
    # Loaded values a thread holds in flight in a map item (map_chunk_for).
    map_loads_per_thread: int = 32
    grid_costs: GridCosts = GridCosts()
    resident_costs: ResidentCosts = ResidentCosts()

    def __post_init__(self) -> None:
        if self.threads % 32 or not 32 <= self.threads <= self.max_threads:
            raise ValueError(f"target {self.name}: threads {self.threads} must be a multiple of 32 up to {self.max_threads}")
        if self.threads % self.reduce_columns:
            raise ValueError(f"target {self.name}: reduce_columns {self.reduce_columns} must divide threads {self.threads}")
        if max(self.clusters) > self.max_cluster:
            raise ValueError(f"target {self.name}: clusters {self.clusters} exceed max_cluster {self.max_cluster}")
        if self.final_grid_sync not in ("never", "wide", "always"):
            raise ValueError(f"target {self.name}: final_grid_sync must be never, wide or always, "
                             f"got {self.final_grid_sync!r}")
        if self.resident_step_pointers not in ("param", "smem"):
            raise ValueError(f"target {self.name}: resident_step_pointers must be param or smem, "
                             f"got {self.resident_step_pointers!r}")

    @property
    def map_chunk(self) -> int:
        """Elements of one tile.map work item that loads one array an element."""
        return self.map_chunk_for(1)

    def map_chunk_for(self, loads: int, numel: int | None = None) -> int:
        """Elements of one tile.map work item that loads `loads` arrays an
        element: the printer holds an item's loads in registers before its
        stores, so a thread's elements shrink to keep map_loads_per_thread
        values in flight (AdamW's merged update loads five: 32 elements a
        thread spilled, and 12288-element items left 126 of 132 blocks idle on
        mlp4's 65536-element weights; perf-log step 26). Given the map's
        `numel`, a map with fewer items than SMs halves its elements a thread
        while above map_min_elems_per_thread (perf-log step 41)."""
        elems = min(self.map_elems_per_thread, max(1, self.map_loads_per_thread // max(1, loads)))
        if numel is not None:
            items = lambda e: -(-numel // (self.threads * e))  # noqa: E731
            while elems // 2 >= self.map_min_elems_per_thread and items(elems) < self.sms \
                    and items(elems // 2) > items(elems):
                elems //= 2
        return self.threads * elems

    def blocks_in_clusters(self, size: int) -> int:
        """Blocks that clusters of `size` (2, 4 or 8) hold at once (cluster_blocks; 0 otherwise)."""
        return dict(zip((2, 4, 8), self.cluster_blocks)).get(size, 0)

    @property
    def max_grid(self) -> int:
        """The largest grid sched-to-tile sizes a kernel to."""
        return self.sms * self.max_blocks_per_sm

    def gemm_tile(self, mma: str) -> tuple[int, int, int]:
        """(BM, BN, BK) of the gemm tile of mma kind `mma`."""
        return dict(self.gemm_tiles)[mma]

    @staticmethod
    def wgmma_smem_bytes(bn: int, bm: int = 128) -> int:
        """Mirror of tk::hopper::TileShape::SMEM_BYTES for the bm x bn tile:
        alignment slack, the stages (A and B tiles of 64-wide K, bf16/f16), two
        mbarriers a stage, each consumer warpgroup's row epilogue scratch (64
        rows of 32 + 8 floats)."""
        stages = WGMMA_TILES[bn][1]
        return 1024 + stages * (bm + bn) * 64 * 2 + 16 * stages + (bm // 64) * 64 * 40 * 4

    def for_wgmma(self, bn: int | None = None, consumers: int | None = None) -> "TargetOptions":
        """The grid-kernel settings under the wgmma engine: its block size (the
        producer warpgroup and `consumers`, by default the first of
        wgmma_consumers), one block per SM, map items of
        wgmma_map_elems_per_thread, and the tile: BM 64 a consumer, `bn` wide."""
        consumers = self.wgmma_consumers[0] if consumers is None else consumers
        tile = (64 * consumers, self.wgmma_tile[1] if bn is None else bn, self.wgmma_tile[2])
        return dataclasses.replace(self, name=f"{self.name}+wgmma", threads=wgmma_threads(tile[0]), max_blocks_per_sm=1,
                                   map_elems_per_thread=self.wgmma_map_elems_per_thread, wgmma_tile=tile)

    def gemm_smem_bytes(self, mma: str) -> int:
        """Mirror of tk::gemm_smem_bytes: gemm_stages x (A tile + B tile), rows padded by 16 B."""
        bm, bn, bk = self.gemm_tile(mma)
        elem = 4 if mma == "simt.f32" else 2
        pad = 16 // elem
        # The larger of the two layouts (k-contiguous or m-contiguous) per operand.
        a = max(bm * (bk + pad), bk * (bm + pad))
        b = max(bn * (bk + pad), bk * (bn + pad))
        return self.gemm_stages * (a + b) * elem


H200 = TargetOptions("h200")
"""NVIDIA H200 (sm_90, 132 SMs), the machine of ../shared/GPU.md."""

DEFAULT = H200
"""The target of a pass run without `target=` (and of the tile verifier's hardware limits)."""

TARGETS: dict[str, TargetOptions] = {H200.name: H200}


def get_target(name: str) -> TargetOptions:
    """The target called `name` (a pass's `target=` option)."""
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; targets are {', '.join(sorted(TARGETS))}") from None


def pass_target(pass_name: str, name: str) -> TargetOptions:
    """The target a pass's `target=` option names; an unknown name is that
    pass's diagnostic (`pass-name: unknown target ...`)."""
    from xdsl.utils.exceptions import DiagnosticException

    try:
        return get_target(name)
    except ValueError as e:
        raise DiagnosticException(f"{pass_name}: {e}") from None


def pass_switched_on(pass_name: str, target_name: str, mode: str, field: str) -> bool:
    """Whether a pass with a `mode` option runs: "target" as the target's boolean
    `field` says, "on", "off". An unknown target or mode is that pass's diagnostic."""
    from xdsl.utils.exceptions import DiagnosticException

    target = pass_target(pass_name, target_name)
    if mode not in ("target", "on", "off"):
        raise DiagnosticException(f"{pass_name}: mode must be target, on or off, got {mode!r}")
    return mode == "on" or (mode == "target" and bool(getattr(target, field)))


def register(options: TargetOptions) -> TargetOptions:
    """Make `options` available by its name (replacing a target of that name)."""
    TARGETS[options.name] = options
    return options


def variant(name: str, base: TargetOptions = DEFAULT, **changes) -> TargetOptions:
    """A registered copy of `base` named `name`, with `changes` (TargetOptions
    fields; costs as whole `GridCosts` / `ResidentCosts` objects)."""
    return register(dataclasses.replace(base, name=name, **changes))
