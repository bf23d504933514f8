"""The `tile` dialect: what each CUDA block of the megakernel does.

`tile.kernel` is the cooperative kernel: its block arguments are the external
buffers (as in `sched.program`), `sched.buffer`/`sched.view` give arena
temporaries, and the body is a sequence of tile ops separated by `tile.sync`.
All tile ops between two syncs share the grid: each is a persistent loop over
its own work items (GEMM output tiles, pointwise chunks, reduction rows), and
`offset` staggers where its loop starts so that small ops of one phase land on
different blocks.

Every tile op keeps its `tk` body (same region shape as `sched.compute`), and
the CUDA printer turns that body into per-element code.

```
tile.kernel @step(%w: memref<32x64xbf16>, ...) inputs 4 results [4, 0] arena 8192
    config {grid = 132 : i64, threads = 128 : i64, smem = 20480 : i64} {
  %h = sched.buffer offset 0 : memref<16x64xbf16>
  tile.gemm ins(%x, %w : ...) outs(%h : ...) config {tile = array<i64: 64, 64, 32>, mma = "mma.bf16", items = 1 : i64, offset = 0 : i64} {...}
  tile.sync grid
  ...
}
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    IntegerAttr,
    MemRefType,
    StringAttr,
)
from xdsl.ir import Attribute, BlockArgument, Dialect, OpResult, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from trainkernel.dialects.base import ComputeLikeOp, ProgramLikeOp, ScopedSyncOp
from trainkernel.dialects.sched import BufferOp, ViewOp
from trainkernel.elements import MMA_KINDS, find_mma
from trainkernel.target import DEFAULT as TARGET
from trainkernel.util import align_up, ceil_div, numel


INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _int(op: IRDLOperation, name: str) -> int:
    attr = op.properties.get(name)
    if not isinstance(attr, IntegerAttr):
        raise VerifyException(f"{op.name} needs an integer `{name}` in its config")
    value = attr.value.data
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise VerifyException(f"{op.name}: `{name} = {value}` is not a 64-bit integer (the printer pastes it into C++)")
    return value



def _yield_shapes(op: IRDLOperation) -> list[tuple[int, ...]]:
    term = op.body.block.last_op
    return [tuple(v.type.get_shape()) for v in (term.operands if term is not None else ())]


def _check_yields(op: IRDLOperation, space: tuple[int, ...], what: str, skip=None) -> None:
    """Every yielded value has the shape of the iteration space: the printer
    stores each output at the iteration index (a smaller output would be
    written past its end). `skip`: an op whose result is stored otherwise (a
    gemm's tk.column_partials, which verifies its own shape)."""
    term = op.body.block.last_op
    for v in (term.operands if term is not None else ()):
        shape = tuple(v.type.get_shape())
        if skip is not None and v.owner is skip:
            continue
        if shape != space:
            raise VerifyException(
                f"{op.name} yields a tensor of shape {list(shape)}, but every output must have the shape of {what} "
                f"{list(space)} (it is stored at the iteration index)"
            )


def reduced_axes_position(axes: list[int], rank: int) -> str:
    """Where a reduction's axes sit among the input's `rank` axes: "whole" (none
    kept), "leading" (a column sum: outputs after them), "trailing" (a row
    reduction: outputs before them) or "middle". sched-to-tile picks a
    tile.reduce's work items by it, and the verifier and printer read them by it."""
    axes = list(axes)
    if not axes or len(axes) == rank:
        return "whole"
    if axes == list(range(len(axes))):
        return "leading"
    if axes == list(range(rank - len(axes), rank)):
        return "trailing"
    return "middle"


def _check_items(op: "TileWorkOp", need: int, what: str) -> None:
    """`items` is exactly the number of work items of the iteration space: fewer
    leave outputs unwritten, more address past them (the interpreter ignores
    items, so the verifier is the only judge)."""
    need = max(1, need)
    if op.items != need:
        raise VerifyException(f"{op.name}: items = {op.items}, expected {need} ({what})")


class TileWorkOp(ComputeLikeOp):
    """A tile op: `items` work items (tiles, chunks or rows) handed out over the
    grid, the first to block `offset % grid`."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("items", "offset")
    items_ = prop_def(IntegerAttr, prop_name="items")
    offset_ = prop_def(IntegerAttr, prop_name="offset")
    split_ = opt_prop_def(IntegerAttr, prop_name="split")
    scratch_ = opt_prop_def(IntegerAttr, prop_name="scratch")

    @property
    def items(self) -> int:
        return _int(self, "items")

    @property
    def offset(self) -> int:
        return _int(self, "offset")

    @property
    def scratch(self) -> int | None:
        """Shared-memory offset of the fp32 partials of a split reduction (gemm k or a reduced axis)."""
        attr = self.properties.get("scratch")
        return attr.value.data if isinstance(attr, IntegerAttr) else None

    @property
    def split(self) -> int | None:
        """In a resident kernel, the iteration dimension split over the blocks of
        the cluster (-1: every block does all of it); None in a grid kernel."""
        attr = self.properties.get("split")
        return attr.value.data if isinstance(attr, IntegerAttr) else None

    def iteration_rank(self) -> int:
        """Number of iteration dimensions `split` may name."""
        raise NotImplementedError

    def splits_a_sum(self) -> bool:
        """Whether `split` divides a contraction or reduced dimension (each block
        then holds a partial result)."""
        return False

    def verify_(self) -> None:
        super().verify_()
        for key in self.REQUIRED:
            _int(self, key)
        if self.items < 1 or self.offset < 0:
            raise VerifyException(f"{self.name}: items must be >= 1 and offset >= 0")
        if "split" in self.properties:
            split = _int(self, "split")
            if not -1 <= split < self.iteration_rank():
                raise VerifyException(
                    f"{self.name}: split {split} names none of its {self.iteration_rank()} iteration dimensions"
                )


@irdl_op_definition
class GemmOp(TileWorkOp):
    """A matmul with its pointwise epilogue, tiled `tile = [BM, BN, BK]`; the body
    holds exactly one `tk.matmul`, whose operands are region arguments."""

    name = "tile.gemm"
    tile = prop_def(DenseArrayBase)
    mma_ = prop_def(StringAttr, prop_name="mma")
    ksplit_ = opt_prop_def(IntegerAttr, prop_name="ksplit")
    workspace_ = opt_prop_def(IntegerAttr, prop_name="workspace")
    engine_ = opt_prop_def(StringAttr, prop_name="engine")
    fixup_ = opt_prop_def(StringAttr, prop_name="fixup")

    @property
    def fixup(self) -> str:
        """Where a split gemm's slices meet: `cluster` (its slices on consecutive
        blocks of one cluster, each warp's rows summed by one slice from the
        others' pushes into its shared memory: tk::hopper::splitk_cluster_fixup;
        no workspace), or absent: through the workspace in global memory."""
        attr = self.properties.get("fixup")
        return attr.data if isinstance(attr, StringAttr) else "workspace"

    @property
    def engine(self) -> str:
        """`wgmma`: the Hopper tile (TMA, mbarrier pipeline, wgmma; grid kernels
        of the wgmma block size); absent: mma.sync / SIMT tiles (`mma`)."""
        attr = self.properties.get("engine")
        return attr.data if isinstance(attr, StringAttr) else "mma"

    @property
    def ksplit(self) -> int:
        """K slices per output tile (split-K, grid kernels): item t is slice t % ksplit
        of tile t / ksplit; 1 when absent."""
        attr = self.properties.get("ksplit")
        return attr.value.data if isinstance(attr, IntegerAttr) else 1

    @property
    def workspace(self) -> int | None:
        """Arena offset of a split gemm's fp32 partials ([ksplit][M][N]) and then its
        tiles' arrival counters (u32, zero between launches: gemm_workspace_bytes)."""
        attr = self.properties.get("workspace")
        return attr.value.data if isinstance(attr, IntegerAttr) else None

    def workspace_bytes(self) -> int:
        return gemm_workspace_bytes(self)

    @property
    def matmul(self):
        """The body's tk.matmul (the verifier holds it to exactly one)."""
        from trainkernel.dialects.tk import MatmulOp

        return next(op for op in self.body.block.ops if isinstance(op, MatmulOp))

    def verify_(self) -> None:
        super().verify_()
        from trainkernel.dialects.tk import MatmulOp

        mm = [op for op in self.body.block.ops if isinstance(op, MatmulOp)]
        if len(mm) != 1:
            raise VerifyException(f"tile.gemm body must hold exactly one tk.matmul, found {len(mm)}")
        if len(self.tile.get_values()) != 3:
            raise VerifyException("tile.gemm needs `tile = array<i64: BM, BN, BK>`")
        if any(int(v) < 1 for v in self.tile.get_values()):
            raise VerifyException(f"tile.gemm tile extents must be positive, got {list(self.tile.get_values())}")
        mma = self.properties.get("mma")
        if not isinstance(mma, StringAttr) or mma.data not in MMA_KINDS:
            raise VerifyException(f"tile.gemm mma must be one of {', '.join(MMA_KINDS)}")
        want = find_mma(mm[0].result.type)
        if want != mma.data:
            raise VerifyException(
                f"tile.gemm mma {mma.data!r} does not compute {mm[0].result.type.get_element_type()} "
                f"(that is {want!r})"
            )
        bm, bn, bk = self.tile_shape
        m, n = mm[0].result.type.get_shape()
        lhs = mm[0].lhs.type.get_shape()
        k = lhs[0] if mm[0].transpose_a is not None else lhs[1]
        if "engine" in self.properties:
            self._verify_wgmma(mm[0])
        ks = self.ksplit
        if "fixup" in self.properties:
            self._verify_cluster_fixup()
        elif ks < 1 or (ks > 1) != (self.workspace is not None):
            raise VerifyException(
                f"tile.gemm: ksplit {ks} must be >= 1, and a workspace is given exactly when ksplit > 1")
        if ks > 1 and (ks - 1) * ceil_div(ceil_div(k, ks), bk) * bk >= k:
            raise VerifyException(f"tile.gemm: ksplit {ks} leaves a K slice empty (K = {k}, slices of whole {bk}-steps)")
        if self.items < ceil_div(m, bm) * ceil_div(n, bn):
            raise VerifyException(f"tile.gemm: {self.items} items do not cover the {m}x{n} output in {bm}x{bn} tiles")
        _check_items(self, ceil_div(m, bm) * ceil_div(n, bn) * ks,
                     f"a {m}x{n} output in {bm}x{bn} tiles" + (f", {ks} K slices each" if ks > 1 else ""))
        if max(m, n, k) > INT32_MAX or max(self.tile_shape) > INT32_MAX:
            raise VerifyException(f"tile.gemm: extents {m}x{n}x{k} exceed the device GEMM's int extents ({INT32_MAX})")
        partials = self.column_partials()
        if partials is not None:
            self._verify_column_partials(partials)
        _check_yields(self, (m, n), "its matmul", skip=partials)

    def column_partials(self):
        """The body's (first) `tk.column_partials` (tile-column-partials), or None."""
        from trainkernel.dialects.tk import ColumnPartialsOp

        return next((op for op in self.body.block.ops if isinstance(op, ColumnPartialsOp)), None)

    def _verify_column_partials(self, partials) -> None:
        # The row walk of the wgmma engine sums them (tk::hopper::ColumnPartials);
        # it hands each thread one element of the body at a time: one run of rows,
        # of one value the body computes (stored or not: a full sum's partials
        # may replace the output they sum), yielded straight to an output.
        from trainkernel.dialects.tk import ColumnPartialsOp

        found = sum(1 for op in self.body.block.ops if isinstance(op, ColumnPartialsOp))
        if found > 1:
            raise VerifyException(f"tile.gemm: at most one tk.column_partials, found {found}")
        if self.engine != "wgmma":
            raise VerifyException("tile.gemm: tk.column_partials needs the wgmma engine (its row walk sums them)")
        term = self.body.block.last_op
        uses = [u for u in partials.result.uses]
        if len(uses) != 1 or uses[0].operation is not term:
            raise VerifyException("tile.gemm: a tk.column_partials result must only be yielded")
        if not isinstance(partials.input, OpResult) or partials.input.owner.parent_block() is not self.body.block:
            raise VerifyException("tile.gemm: tk.column_partials must sum a value its body computes")

    def _verify_cluster_fixup(self) -> None:
        # Each consumer warp's rows go to one slice (warp % ksplit): every slice
        # owns as many warps (the kernel verifier checks the cluster and offsets).
        ks, warps = self.ksplit, wgmma_tile_warps(self)
        if self.fixup != "cluster":
            raise VerifyException(f"tile.gemm: fixup {self.fixup!r} is not `cluster` (absent: the workspace's)")
        if self.engine != "wgmma" or ks < 2 or warps % ks or self.workspace is not None:
            raise VerifyException(
                f"tile.gemm: a cluster fix-up splits a wgmma gemm's K into 2 or more slices that divide its "
                f"{warps} consumer warps, without a workspace (engine {self.engine}, ksplit {ks}"
                + (", a workspace)" if self.workspace is not None else ")"))

    def _verify_wgmma(self, mm) -> None:
        from trainkernel.target import WGMMA_TILES, wgmma_tile_supported

        if self.engine != "wgmma":
            raise VerifyException(f"tile.gemm: engine {self.engine!r} is not one (only `wgmma`; mma.sync has none)")
        if self.mma not in ("mma.bf16", "mma.f16"):
            raise VerifyException(f"tile.gemm: the wgmma engine multiplies bf16 and f16, not {self.mma}")
        bm, bn, bk = self.tile_shape
        if bk != 64 or not wgmma_tile_supported(bm, bn):
            raise VerifyException(
                f"tile.gemm: a wgmma tile is 128 x {{{', '.join(map(str, sorted(WGMMA_TILES)))}}} x 64 "
                f"or 64 x {{{', '.join(str(n) for n in sorted(WGMMA_TILES) if wgmma_tile_supported(64, n))}}} x 64, "
                f"got {bm}x{bn}x{bk}")
        # TMA reads rows whose stride is a multiple of 16 bytes (8 bf16 / f16).
        for what, v in (("lhs", mm.lhs), ("rhs", mm.rhs)):
            rows = v.type.get_shape()
            if rows[-1] % 8:
                raise VerifyException(
                    f"tile.gemm: wgmma's TMA needs row strides of whole 16 bytes; the {what} rows are "
                    f"{rows[-1]} elements")

    def iteration_rank(self) -> int:
        return 3  # (m, n, k)

    def splits_a_sum(self) -> bool:
        return self.split == 2

    @property
    def tile_shape(self) -> tuple[int, int, int]:
        tile = self.properties["tile"]
        assert isinstance(tile, DenseArrayBase)
        bm, bn, bk = (int(v) for v in tile.get_values())
        return bm, bn, bk

    @property
    def mma(self) -> str:
        attr = self.properties["mma"]
        assert isinstance(attr, StringAttr)
        return attr.data


@irdl_op_definition
class MapOp(TileWorkOp):
    """Pointwise work over the shape of its outputs (all outputs share it);
    inputs broadcast into it. `items` chunks of `chunk` elements."""

    name = "tile.map"
    REQUIRED: ClassVar[tuple[str, ...]] = ("items", "offset", "chunk")
    chunk_ = prop_def(IntegerAttr, prop_name="chunk")

    @property
    def chunk(self) -> int:
        return _int(self, "chunk")

    def iteration_rank(self) -> int:
        term = self.body.block.last_op
        return len(term.operands[0].type.get_shape()) if term is not None and term.operands else 0

    def verify_(self) -> None:
        super().verify_()
        if self.chunk < 1 or self.chunk > INT32_MAX:
            raise VerifyException(f"tile.map chunk must be 1 to {INT32_MAX}, got {self.chunk}")
        shapes = _yield_shapes(self)
        if shapes:
            _check_yields(self, shapes[0], "its iteration space (its first output)")
        n = numel(shapes[0]) if shapes else 0
        if self.items * self.chunk < n:
            raise VerifyException(
                f"tile.map: {self.items} items of {self.chunk} elements do not cover its {n} elements"
            )
        _check_items(self, ceil_div(n, self.chunk), f"{n} elements in chunks of {self.chunk}")


@irdl_op_definition
class ReduceOp(TileWorkOp):
    """A reduction (tk.sum/max/argmax) with a pointwise prologue on its input and
    epilogue on its result; one work item per group of `rows` output elements."""

    name = "tile.reduce"
    REQUIRED: ClassVar[tuple[str, ...]] = ("items", "offset", "rows")
    rows_ = prop_def(IntegerAttr, prop_name="rows")

    @property
    def rows(self) -> int:
        return _int(self, "rows")

    def reduction(self):
        from trainkernel.dialects.tk import ArgmaxOp, MaxOp, SumOp

        return next(o for o in self.body.block.ops if isinstance(o, SumOp | MaxOp | ArgmaxOp))

    def is_argmax(self) -> bool:
        from trainkernel.dialects.tk import ArgmaxOp

        return isinstance(self.reduction(), ArgmaxOp)

    def iteration_rank(self) -> int:
        from trainkernel.dialects.tk import ArgmaxOp, MaxOp, SumOp

        reds = [o for o in self.body.block.ops if isinstance(o, SumOp | MaxOp | ArgmaxOp)]
        return len(reds[0].input.type.get_shape()) if reds else 0

    def is_row_reduction(self) -> bool:
        """rows > 1 over trailing axes: one warp an output (a column sum's axes lead)."""
        red = self.reduction()
        return self.rows > 1 and reduced_axes_position(red.axes_list, len(red.input.type.get_shape())) == "trailing"

    def is_column_sum(self) -> bool:
        """Over leading axes, `rows` columns an item (a bias gradient; an argmax takes one)."""
        red = self.reduction()
        return not self.is_argmax() and reduced_axes_position(red.axes_list, len(red.input.type.get_shape())) == "leading"

    def splits_a_sum(self) -> bool:
        return self.split is not None and self.split in self.reduction().axes_list

    def verify_(self) -> None:
        super().verify_()
        if self.rows < 1:
            raise VerifyException(f"tile.reduce rows must be >= 1, got {self.rows}")
        from trainkernel.dialects.tk import ArgmaxOp, MaxOp, SumOp

        reds = [o for o in self.body.block.ops if isinstance(o, SumOp | MaxOp | ArgmaxOp)]
        if len(reds) != 1:
            raise VerifyException(f"tile.reduce body must hold exactly one reduction, found {len(reds)}")
        red = reds[0]
        in_shape = tuple(red.input.type.get_shape())
        axes = list(red.axes_list)
        n_out = numel(red.result.type.get_shape())
        _check_yields(self, tuple(red.result.type.get_shape()), "its reduction")
        if self.rows > 1:
            position = reduced_axes_position(axes, len(in_shape))
            if position == "whole":
                raise VerifyException(
                    f"tile.reduce: rows = {self.rows} needs kept axes (outputs to share an item), got axes "
                    f"{axes} of {list(in_shape)}")
            # A column reduction: thread t of an item owns output column item * rows + t and
            # adds the rows (the reduced axes, which lead) in order. A row reduction: warp w
            # of an item folds output item * rows + w (the reduced axes trail); the kernel
            # has at least rows warps (verify_kernel_bounds).
            outputs = {"leading": "columns", "trailing": "rows"}.get(position)
            if outputs is None or (outputs == "columns" and isinstance(red, ArgmaxOp)):
                raise VerifyException(
                    f"tile.reduce: rows = {self.rows} needs reduced axes that lead (a column sum, not an argmax) "
                    f"or trail the kept ones (a row reduction), got axes {axes} of {list(in_shape)}"
                )
            _check_items(self, ceil_div(n_out, self.rows), f"{n_out} output {outputs}, {self.rows} per item")
        else:
            _check_items(self, n_out, f"one item per output element, {n_out} outputs")


class Home(IRDLOperation):
    """What every shared-memory home of a resident kernel has (tile.smem,
    tile.smem_cast): a byte `offset` in each block's dynamic shared memory, a
    `split` axis (-1: every block holds all of it) and an optional row
    `pitch`. Code that takes any home tests `isinstance(op, tile.Home)`; a
    written-through copy of an argument is a `tile.SmemOp` with a source."""

    SOURCE_SYNTAX: ClassVar[str]  # how the op names its argument (the verifier's messages)
    offset = prop_def(IntegerAttr[I64])
    split = prop_def(IntegerAttr[I64])
    pitch = opt_prop_def(IntegerAttr[I64])

    @property
    def pitch_value(self) -> int | None:
        return None if self.pitch is None else self.pitch.value.data

    def local_bytes(self, cluster: int) -> int:
        """Bytes of this home in one block (its slice, rows `pitch` apart)."""
        return local_bytes(self.result.type, self.split_axis, cluster, self.pitch_value)

    @property
    def offset_value(self) -> int:
        return self.offset.value.data

    @property
    def split_axis(self) -> int:
        return self.split.value.data

    def verify_(self) -> None:
        t = self.result.type
        if not isinstance(t, MemRefType):
            raise VerifyException(f"{self.name} must have a memref type, got {t}")
        if self.offset_value < 0 or self.offset_value % SMEM_ALIGNMENT:
            raise VerifyException(
                f"{self.name} offset {self.offset_value} must be a non-negative multiple of {SMEM_ALIGNMENT}"
            )
        if not -1 <= self.split_axis < len(t.get_shape()):
            raise VerifyException(f"{self.name} split {self.split_axis} is not an axis of {t}")
        parent = self.parent_op()
        if not isinstance(parent, KernelOp) or parent.cluster is None:
            raise VerifyException(f"{self.name} must be directly inside a resident tile.kernel (one with `cluster`)")
        if self.source is not None and self.source.owner is not parent.block:
            raise VerifyException(f"{self.SOURCE_SYNTAX} must name an argument of its tile.kernel")
        pitch = self.pitch_value
        if pitch is not None:
            from trainkernel.elements import byte_size as element_bytes

            local = local_shape(t, self.split_axis, parent.cluster)
            if len(local) != 2 or pitch < local[1] or (pitch * element_bytes(t.get_element_type())) % 16:
                raise VerifyException(
                    f"{self.name} pitch {pitch} must be a 2-D home's row stride: at least its local row of "
                    f"{local[-1]} elements and a multiple of 16 bytes ({t})")
        if self.offset_value + self.local_bytes(parent.cluster) > parent.smem:
            raise VerifyException(
                f"{self.name} at offset {self.offset_value} overruns the kernel's {parent.smem} bytes of shared memory"
            )

    @staticmethod
    def properties_of(offset: int, split: int, pitch: int | None) -> dict[str, Attribute]:
        props: dict[str, Attribute] = {"offset": IntegerAttr(offset, 64), "split": IntegerAttr(split, 64)}
        if pitch is not None:
            props["pitch"] = IntegerAttr(pitch, 64)
        return props


@irdl_op_definition
class SmemOp(Home):
    """A buffer's home in the shared memory of each block of a resident kernel,
    at a byte `offset` of the block's dynamic shared memory. `split = d`: block
    r of the cluster holds slice r of axis d (ceil(size/cluster) elements, the
    last slice shorter); -1: every block holds all of it. With `stage %arg` it
    is the on-chip copy of a kernel argument: loaded at kernel start when the
    argument is an input, and written through whenever the argument is.

    `pitch p` (2-D homes): rows are p elements apart instead of the local row
    length, p a multiple of 16 bytes, so every row starts 16-byte aligned
    (cp.async, ldmatrix) and, with an odd number of 16-byte units, eight
    consecutive rows fall in eight different bank groups.

    `%h = tile.smem offset 1024 split 1 : memref<16x64xbf16>`
    `%w = tile.smem stage %0 offset 0 split 1 pitch 40 : memref<32x64xf32>`
    """

    name = "tile.smem"
    SOURCE_SYNTAX: ClassVar[str] = "tile.smem stage"
    T: ClassVar = VarConstraint("T", AnyAttr())
    source = opt_operand_def(T)
    result = result_def(T)
    assembly_format = "(`stage` $source^)? `offset` $offset `split` $split (`pitch` $pitch^)? attr-dict `:` type($result)"

    def __init__(self, result_type: MemRefType, offset: int, split: int, source=None, pitch: int | None = None):
        super().__init__(operands=[[source] if source is not None else []], result_types=[result_type],
                         properties=self.properties_of(offset, split, pitch))


@irdl_op_definition
class SmemCastOp(Home):
    """A home that holds a kernel input cast to the home's element type: the
    prologue loads the argument and converts it (rounding as `tk.cast` does)
    into the home, in place of a phase that casts a staged copy. No op writes
    it and it is never written through: within a step it holds the argument's
    value at the step's start (the kernel verifier checks that nothing writes
    it; `tile-stage-casts` makes these homes).

    `%xb = tile.smem_cast %4 : memref<64x128xf32> offset 0 split -1 pitch 136 : memref<64x128xbf16>`
    """

    name = "tile.smem_cast"
    SOURCE_SYNTAX: ClassVar[str] = "tile.smem_cast"
    source = operand_def(MemRefType)
    result = result_def(MemRefType)
    assembly_format = ("$source `:` type($source) `offset` $offset `split` $split (`pitch` $pitch^)? attr-dict "
                       "`:` type($result)")

    def __init__(self, result_type: MemRefType, offset: int, split: int, source: SSAValue, pitch: int | None = None):
        super().__init__(operands=[source], result_types=[result_type], properties=self.properties_of(offset, split, pitch))

    def verify_(self) -> None:
        super().verify_()
        src, res = self.source.type, self.result.type
        assert isinstance(src, MemRefType) and isinstance(res, MemRefType)
        if src.get_shape() != res.get_shape() or src.get_element_type() == res.get_element_type():
            raise VerifyException(f"tile.smem_cast casts {src} to a home of its shape and another element type, "
                                  f"not {res}")
        for t in (src, res):
            if not isinstance(t.get_element_type(), Float32Type | Float16Type | BFloat16Type):
                raise VerifyException(f"tile.smem_cast casts between f32, f16 and bf16, not {t}")
        if self.source.index >= self.parent_op().num_inputs.data:
            raise VerifyException("tile.smem_cast must stage an input of its tile.kernel")


# The hardware limits the verifiers check are the target's (trainkernel.target):
SMEM_ALIGNMENT = TARGET.smem_alignment
"""Shared-memory homes start 16-byte aligned (cp.async 16-byte copies)."""

MAX_CLUSTER = TARGET.max_cluster
"""The largest thread block cluster Hopper runs (above 8 needs the non-portable attribute)."""

RESIDENT_MAX_ELEMENTS = 2**30
"""A resident kernel indexes in 32-bit `int`: every buffer, home and body tensor
holds at most this many elements, which leaves its loops (an extent plus a few
blocks of threads) and products (`i * n + j` below m * n) under 2**31 - 1.
Resident kernels keep their working set in shared memory, so real ones are
far below it; `tile-resident` never makes a larger kernel resident and the
kernel verifier rejects one."""


def largest_extent(kernel: "KernelOp") -> int:
    """The most elements of any argument, buffer, home, view or tensor in a tile
    op's body of `kernel` (the iteration spaces are among the body tensors)."""
    from trainkernel.dialects.tk import shape_of

    most = max((numel(a.type.get_shape()) for a in kernel.block.args), default=0)
    for op in kernel.block.ops:
        for r in op.results:
            if isinstance(r.type, MemRefType):
                most = max(most, numel(r.type.get_shape()))
        if isinstance(op, TileWorkOp):
            for v in list(op.body.block.args) + [r for inner in op.body.block.ops for r in inner.results]:
                most = max(most, numel(shape_of(v)))
    return most


def shard_extent(size: int, parts: int) -> int:
    """Elements of one block's slice when `size` is split over `parts` blocks."""
    return ceil_div(size, parts)


def local_shape(t: MemRefType, split: int, cluster: int) -> tuple[int, ...]:
    shape = list(t.get_shape())
    if split >= 0:
        shape[split] = shard_extent(shape[split], cluster)
    return tuple(shape)


def local_bytes(t: MemRefType, split: int, cluster: int, pitch: int | None = None) -> int:
    """Bytes of one block's slice of a home (rows `pitch` elements apart, if given)."""
    from trainkernel.elements import byte_size as element_bytes

    local = list(local_shape(t, split, cluster))
    if pitch is not None:
        local[-1] = pitch
    return numel(local) * element_bytes(t.get_element_type())


def home_pitch(t: MemRefType, split: int, cluster: int, narrow: bool = False) -> int | None:
    """The row stride tile-resident gives a 2-D home: its local row rounded up to
    16 bytes, plus 16 when that is an even number of 16-byte units (a row of
    256 bytes puts all eight rows an 8x8 ldmatrix reads in one bank group;
    an odd number of units spreads them over eight). None: kept dense (rows
    of at most 16 bytes, or not 2-D). narrow (a home a tile.gemm reads): rows
    of 16-bit elements shorter than 16 bytes are padded to 16 too, the row
    ldmatrix reads (tk::smem_gemm's clamped path, perf-log step 116; a class
    head of 7 outputs took the scalar path in every product it entered)."""
    from trainkernel.elements import byte_size as element_bytes

    local = local_shape(t, split, cluster)
    if len(local) != 2 or local[0] < 2:
        return None
    esize = element_bytes(t.get_element_type())
    units = ceil_div(local[1] * esize, 16)
    if units <= 1 and not (narrow and esize == 2):
        return None
    if units % 2 == 0:
        units += 1
    pitch = units * 16 // esize
    return None if pitch == local[1] else pitch


# ---------------------------------------------------------------- an exchange's remote stores
# How wide the remote stores of a resident exchange (tk::exchange_async and its
# publish) are: the printer emits them by these rules and tile-resident's cost
# model counts them by the same (an st.async costs about the same whatever its
# width up to 16 bytes, perf-log step 121).


def pair_pushes(n: int, cols: int, cluster: int, wide: bool) -> bool:
    """Whether a split gemm pushes its fragments' column pairs as one 8-byte store
    (target.exchange_wide_stores): smem_gemm's pairs start at even columns, so
    with `cols` (the product's columns) even both elements of a pair are
    consecutive partials, and with each owner's chunk of the exchange's `n`
    even they share an owner and an 8-byte aligned slot (receive buffers start
    SMEM_ALIGNMENT-aligned)."""
    return wide and cols % 2 == 0 and ceil_div(n, cluster) % 2 == 0


def publish_run(n: int, cluster: int, homes: list[tuple[int, int, tuple[int, ...]]], wide: bool) -> int | None:
    """Elements a call of the asynchronous publish's copy carries, from the
    published homes' (element bytes, row length, row strides): 1 where every
    home is fp32, 2 where one is bf16/f16 (a pair: one 32-bit word), and with
    `wide` (target.exchange_wide_stores) the longest run of at most
    SMEM_ALIGNMENT bytes of the narrowest home that the layout allows (the
    exchange's elements, each owner's chunk, every home's rows and row strides
    multiples of it, so that a run lies in one row, aligned for its bytes:
    homes start SMEM_ALIGNMENT-aligned). None: no run of 32-bit words fits."""
    sizes = {size for size, _, _ in homes}
    if not homes or not sizes <= {2, 4}:
        return None

    def runs(step: int) -> bool:
        return n % step == 0 and ceil_div(n, cluster) % step == 0 and all(
            row % step == 0 and all(st % step == 0 for st in strides) for _, row, strides in homes)

    least = 4 // min(sizes)
    step = SMEM_ALIGNMENT // min(sizes) if wide else least
    while step > least and not runs(step):
        step //= 2
    return step if step == 1 or runs(step) else None


def publish_store_bytes(step: int, esize: int, wide: bool) -> int:
    """Bytes of each remote store that publishes a run of `step` elements of
    `esize` bytes: 32-bit words, or with `wide` the run in stores of up to
    SMEM_ALIGNMENT bytes."""
    return min(step * esize, SMEM_ALIGNMENT) if wide else 4


@irdl_op_definition
class SyncOp(ScopedSyncOp):
    """The end of a phase: `tile.sync grid` (a grid-wide barrier), `tile.sync
    block`, or `tile.sync items` (a grid kernel's: no barrier; each item after
    it waits for the flags of the earlier items it depends on, as
    trainkernel.item_deps computes them from the IR; tile-item-flags)."""

    name = "tile.sync"
    SCOPES: ClassVar[tuple[str, ...]] = ("grid", "block", "items")


@irdl_op_definition
class KernelOp(ProgramLikeOp):
    """The cooperative megakernel: launch shape in `config` (grid = most blocks
    any phase can use, threads = threads per block, smem = dynamic shared bytes;
    `cluster`: a resident kernel's one cluster; `gemm_cluster` = 2: a grid
    kernel launched in clusters of two whose wgmma gemms walk their units as a
    pair, sharing B's loads by TMA multicast where both units read the same)."""

    name = "tile.kernel"
    grid_ = prop_def(IntegerAttr, prop_name="grid")
    threads_ = prop_def(IntegerAttr, prop_name="threads")
    smem_ = prop_def(IntegerAttr, prop_name="smem")
    cluster_ = opt_prop_def(IntegerAttr, prop_name="cluster")
    gemm_cluster_ = opt_prop_def(IntegerAttr, prop_name="gemm_cluster")
    fixup_cluster_ = opt_prop_def(IntegerAttr, prop_name="fixup_cluster")

    def verify_(self) -> None:
        super().verify_()
        if self.grid < 1 or self.threads < 32 or self.threads % 32 or self.threads > TARGET.max_threads:
            raise VerifyException(f"tile.kernel: grid >= 1 and block a multiple of 32 up to {TARGET.max_threads}")
        if self.smem < 0 or self.smem > TARGET.smem_per_block:
            raise VerifyException(
                f"tile.kernel: smem {self.smem} exceeds the {TARGET.smem_per_block // 1024} KiB a Hopper block may use"
            )
        cluster = self.cluster
        if cluster is not None:
            # Resident: one cluster; every value a phase reads was made by the same
            # block (the residency pass proves it), so block barriers order phases.
            if not 1 <= cluster <= MAX_CLUSTER or self.grid != cluster:
                raise VerifyException(
                    f"tile.kernel: a resident kernel is one cluster of 1 to {MAX_CLUSTER} blocks and its grid "
                    f"is that cluster (cluster {cluster}, grid {self.grid})"
                )
            for op in self.block.ops:
                if isinstance(op, TileWorkOp) and op.split is None:
                    raise VerifyException(f"tile.kernel: {op.name} of a resident kernel needs a `split`")
                if isinstance(op, ReduceOp) and cluster > 1 and op.splits_a_sum() and op.is_argmax():
                    raise VerifyException(
                        "tile.kernel: a tk.argmax cannot split its reduced axis over the cluster (the cluster "
                        "combines partial sums and maxima, not indices)"
                    )
                if isinstance(op, TileWorkOp) and cluster > 1 and op.splits_a_sum() and op.scratch is None:
                    raise VerifyException(
                        f"tile.kernel: {op.name} splits a sum over the cluster and needs `scratch` for its partials"
                    )
                if isinstance(op, SyncOp) and op.scope.data != "block":
                    raise VerifyException("tile.kernel: phases of a resident kernel are ordered by `tile.sync block`")
            most = largest_extent(self)
            if most > RESIDENT_MAX_ELEMENTS:
                raise VerifyException(
                    f"tile.kernel: a resident kernel indexes in 32 bits, but one of its buffers or tensors holds "
                    f"{most} elements (at most {RESIDENT_MAX_ELEMENTS})"
                )
        if self.gemm_cluster is not None:
            # The pair's lockstep walk needs whole clusters and the wgmma pipeline in every gemm.
            gemms = [op for op in self.block.ops if isinstance(op, GemmOp)]
            if cluster is not None or self.gemm_cluster != 2 or self.grid % 2:
                raise VerifyException(
                    f"tile.kernel: gemm_cluster is 2, for a grid kernel of an even grid (gemm_cluster "
                    f"{self.gemm_cluster}, grid {self.grid}{', a resident kernel' if cluster is not None else ''})")
            if not gemms or any(op.engine != "wgmma" for op in gemms):
                raise VerifyException("tile.kernel: gemm_cluster pairs the wgmma engine's gemms; this kernel has "
                                      + ("none" if not gemms else "gemms on another engine"))
        self._verify_fixup_cluster()
        if any(isinstance(op, SyncOp) and op.scope.data == "items" for op in self.block.ops) and (
                cluster is not None or self.gemm_cluster is not None or self.fixup_cluster is not None):
            raise VerifyException("tile.kernel: `tile.sync items` orders a grid kernel's phases; a resident kernel "
                                  "or one of cluster pairs (gemm_cluster) orders them by barriers")
        for op in self.block.ops:
            if not isinstance(op, BufferOp | ViewOp | Home | TileWorkOp | SyncOp):
                raise VerifyException(f"tile.kernel may hold buffers, views, tile ops and syncs, not {op.name}")
        verify_kernel_contract(self)

    def _verify_fixup_cluster(self) -> None:
        # A cluster fix-up's slices of a tile sit on one cluster in one round:
        # whole clusters, the gemm's first unit on a multiple of its split, a
        # unit a block at most; and its slots are reused only across a grid
        # barrier: one such gemm a phase (tk::hopper::splitk_cluster_fixup).
        c = self.fixup_cluster
        split = [op for op in self.block.ops if isinstance(op, GemmOp) and "fixup" in op.properties]
        if c is None:
            if split:
                raise VerifyException("tile.gemm: a cluster fix-up needs its kernel's fixup_cluster")
            return
        if self.cluster is not None or self.gemm_cluster is not None or c not in (2, 4, 8) or self.grid % c:
            raise VerifyException(
                f"tile.kernel: fixup_cluster is 2, 4 or 8 blocks, for a grid kernel of whole clusters and no "
                f"gemm_cluster (fixup_cluster {c}, grid {self.grid})")
        if not split:
            raise VerifyException("tile.kernel: fixup_cluster without a gemm whose fix-up is the cluster's")
        for ops in self.phases():
            mine = [op for op in ops if op in split]
            if len(mine) > 1:
                raise VerifyException("tile.kernel: two gemms of a phase with a cluster fix-up (one a phase)")
            for op in mine:
                if c % op.ksplit or op.offset % op.ksplit or op.items > self.grid:
                    raise VerifyException(
                        f"tile.gemm: a cluster fix-up's {op.ksplit} slices must divide the cluster ({c}), start on "
                        f"a multiple of them (offset {op.offset}) and take a block each ({op.items} items, grid "
                        f"{self.grid})")

    def phases(self) -> list[list["TileWorkOp"]]:
        """The tile work ops of each phase, in order (a tile.sync ends a phase;
        a phase without work is an empty list)."""
        groups: list[list[TileWorkOp]] = [[]]
        for op in self.block.ops:
            if isinstance(op, SyncOp):
                groups.append([])
            elif isinstance(op, TileWorkOp):
                groups[-1].append(op)
        return groups

    @property
    def cluster(self) -> int | None:
        """Blocks of the one cluster a resident kernel runs as; None for a grid kernel."""
        attr = self.properties.get("cluster")
        return attr.value.data if isinstance(attr, IntegerAttr) else None

    @property
    def gemm_cluster(self) -> int | None:
        """2: a grid kernel launched in clusters of two whose gemms walk as pairs; None otherwise."""
        attr = self.properties.get("gemm_cluster")
        return attr.value.data if isinstance(attr, IntegerAttr) else None

    @property
    def fixup_cluster(self) -> int | None:
        """Blocks a cluster of a grid kernel whose split gemms' fix-ups are the
        cluster's (tile.gemm's fixup); None otherwise."""
        attr = self.properties.get("fixup_cluster")
        return attr.value.data if isinstance(attr, IntegerAttr) else None

    @property
    def launch_cluster(self) -> int | None:
        """Blocks a cluster of a grid kernel launched in clusters (gemm_cluster's
        pairs or fixup_cluster's); None for one launched without."""
        return self.gemm_cluster or self.fixup_cluster

    @property
    def grid(self) -> int:
        return _int(self, "grid")

    @property
    def threads(self) -> int:
        return _int(self, "threads")

    @property
    def smem(self) -> int:
        return _int(self, "smem")


# ------------------------------------------------------------------ kernel contract
#
# What the CUDA printer relies on at this level and does not check itself,
# run by `KernelOp.verify_` after the op-level rules (one function per rule):
# the arena and launch bounds, names, and the phase rules on byte ranges:
# no two ops of a phase (between two `tile.sync`s) touch bytes one of them
# writes; no two arena buffers or shared-memory homes whose bytes overlap are
# live in a common phase; every value read was written before; an op that
# updates a buffer in place reads it at the very elements it writes; and, in
# a resident kernel of several blocks, every access stays in the slice of a
# split home that its block holds (so block barriers order its phases).


def verify_kernel_contract(kernel: "KernelOp") -> None:
    from trainkernel.dialects import sched

    verify_kernel_bounds(kernel)
    verify_home_names(kernel)
    if kernel.cluster is None:
        sched.verify_arena_liveness(kernel)
    accesses = {op: op_accesses(kernel, op) for op in kernel.block.ops if isinstance(op, TileWorkOp)}
    if kernel.cluster is not None:
        verify_resident_reads(kernel, accesses)
        verify_cast_homes(kernel, accesses)
    verify_phase_hazards(kernel, accesses)
    verify_home_liveness(kernel, accesses)
    verify_tile_reads_after_writes(kernel, accesses)
    verify_in_place_updates(kernel, accesses)
    if (kernel.cluster or 1) > 1:
        verify_partition(kernel, accesses)
    if kernel.cluster is None and kernel.grid > 1:
        verify_row_local_phases(kernel, accesses)


def row_partition(op: "TileWorkOp") -> tuple[int, int] | None:
    """(R, rows an item) of a grid op whose work item k covers rows k * rows ..
    (k + 1) * rows - 1 of an iteration space of R rows (its leading axis), or
    None: a tile.map whose item holds whole rows of its iteration space, or a
    row reduction of a rank-2 input (warp w of item k folds row k * rows + w;
    rows = 1: the block folds row k)."""
    if isinstance(op, MapOp):
        shape = iteration_space(op)
        if not shape:
            return None
        per_row = numel(shape[1:])
        return (shape[0], op.chunk // per_row) if per_row and op.chunk % per_row == 0 else None
    if isinstance(op, ReduceOp):
        red = op.reduction()
        shape = tuple(red.input.type.get_shape())
        if len(shape) == 2 and tuple(red.axes_list) == (1,):
            return shape[0], op.rows
    return None


def row_local_regions(kernel: "KernelOp") -> list[list[list["TileWorkOp"]]]:
    """The runs of two or more phases of a grid kernel joined by `tile.sync block`
    (each a list of its phases' ops)."""
    regions: list[list[list[TileWorkOp]]] = [[[]]]
    for op in kernel.block.ops:
        if isinstance(op, SyncOp):
            if op.scope.data == "block":
                regions[-1].append([])
            else:
                regions.append([[]])
        elif isinstance(op, TileWorkOp):
            regions[-1][-1].append(op)
    return [r for r in regions if len(r) > 1]


def row_local_violation(kernel: "KernelOp", ops: list["TileWorkOp"], accesses) -> str | None:
    """Why block barriers cannot order `ops` (the ops of consecutive phases of a
    grid kernel) in place of grid barriers, or None: every op has the same row
    partition (row_partition, the same rows an item) and offset, so work item k
    of every op runs on one block; every buffer written among them is read and
    written only row by row (its leading axis at the iteration's row); no bytes
    written among them are touched through another buffer. Then what a block
    reads after a block barrier, the same block wrote (tile-row-local)."""
    parts = {op: row_partition(op) for op in ops}
    for op, part in parts.items():
        if part is None:
            return f"{op.name} is not row-partitioned (a map of whole rows an item, or a row reduction of a rank-2 input)"
    first = ops[0]
    for op in ops[1:]:
        if parts[op] != parts[first] or op.offset != first.offset:
            return (f"{op.name} (rows {parts[op][0]}, {parts[op][1]} an item, offset {op.offset}) does not share "
                    f"{first.name}'s partition (rows {parts[first][0]}, {parts[first][1]} an item, offset {first.offset})")
    rows = parts[first][0]
    written = {a.root for op in ops for a in accesses[op] if a.write}
    for op in ops:
        for a in accesses[op]:
            if a.root not in written:
                continue
            shape = tuple(a.value.type.get_shape())
            if a.value is not a.root or a.dims is None or not shape or shape[0] != rows or a.dims[0] != 0:
                return (f"{op.name} {'writes' if a.write else 'reads'} {a.value.type}, which the region writes, "
                        "other than row by row")
    homes = _homes_of(kernel)
    touched = {a.root for op in ops for a in accesses[op]}
    for w in written:
        for mem, lo, hi, label in _ranges(kernel, w, True, homes):
            for other in touched - {w}:
                for mem2, lo2, hi2, label2 in _ranges(kernel, other, False, homes):
                    if mem == mem2 and lo < hi2 and lo2 < hi:
                        return f"{label} (written) shares bytes with {label2}"
    return None


def verify_row_local_phases(kernel: "KernelOp", accesses) -> None:
    """A grid kernel orders phases with `tile.sync block` only inside a row-local
    region (row_local_violation)."""
    for region in row_local_regions(kernel):
        why = row_local_violation(kernel, [op for phase in region for op in phase], accesses)
        if why is not None:
            raise VerifyException(f"tile.kernel: `tile.sync block` orders phases of a kernel of several blocks only "
                                  f"within a row-local region: {why}")


def verify_kernel_bounds(kernel: "KernelOp") -> None:
    """A kernel's arena is allocated (0 to INT64_MAX bytes; a resident kernel has
    none, and no arena buffers); `grid` fits the launch (CUDA's gridDim.x and the
    launcher's int); a column reduction's `rows` columns are one thread each."""
    arena = kernel.arena_bytes.data
    if arena < 0:
        raise VerifyException(
            f"tile.kernel: arena {arena}: a kernel's arena is allocated, 0 to {INT64_MAX} bytes "
            "(run sched-allocate before sched-to-tile)"
        )
    if kernel.grid > INT32_MAX:
        raise VerifyException(f"tile.kernel: grid {kernel.grid} exceeds the {INT32_MAX} blocks a launch may have")
    if kernel.cluster is not None:
        if arena != 0:
            raise VerifyException(f"tile.kernel: a resident kernel has no global arena (arena 0), got arena {arena}")
        for op in kernel.block.ops:
            if isinstance(op, BufferOp):
                raise VerifyException("tile.kernel: a resident kernel keeps its temporaries in tile.smem, not sched.buffer")
            if isinstance(op, TileWorkOp) and op.scratch is not None:
                lo, size = op.scratch, _scratch_bytes(op)
                if lo < 0 or lo % SMEM_ALIGNMENT or lo + size > kernel.smem:
                    raise VerifyException(
                        f"{op.name}: scratch {lo} ({size} bytes of partials) must be a multiple of {SMEM_ALIGNMENT} "
                        f"inside the kernel's {kernel.smem} bytes of shared memory"
                    )
    for op in kernel.block.ops:
        if isinstance(op, GemmOp) and op.ksplit > 1 and op.workspace is not None:  # (a cluster fix-up has none)
            lo, size = op.workspace, op.workspace_bytes()
            if kernel.cluster is not None:
                raise VerifyException("tile.gemm: split-K (ksplit) is for grid kernels; a resident kernel splits k over its cluster")
            if lo < 0 or lo % 16 or lo + size > arena:
                raise VerifyException(
                    f"tile.gemm: workspace {lo} ({size} bytes: partials and tile counters) must be a multiple of 16 "
                    f"inside the kernel's {arena}-byte arena")
            # Its counters must stay zero between launches and its partials live
            # across the whole op: the workspace shares bytes with nothing else.
            from trainkernel.elements import nbytes

            for other in kernel.block.ops:
                if isinstance(other, BufferOp):
                    b_lo = other.offset_value or 0
                    b_hi = b_lo + nbytes(other.result.type)
                    if b_lo < lo + size and lo < b_hi:
                        raise VerifyException(
                            f"tile.gemm: workspace bytes {lo}..{lo + size} overlap arena buffer bytes {b_lo}..{b_hi}")
                elif isinstance(other, GemmOp) and other is not op and other.workspace is not None:
                    o_lo = other.workspace
                    if o_lo < lo + size and lo < o_lo + other.workspace_bytes():
                        raise VerifyException(f"tile.gemm: two split gemms share workspace bytes (at {lo} and {o_lo})")
    verify_wgmma_kernel(kernel)
    for op in kernel.block.ops:
        if not (isinstance(op, ReduceOp) and op.rows > 1 and kernel.cluster is None):
            continue
        if op.is_row_reduction():
            if op.rows * 32 > kernel.threads:
                raise VerifyException(
                    f"tile.reduce: rows {op.rows} (one warp an output row) needs {op.rows * 32} threads, the "
                    f"kernel has {kernel.threads}")
        elif kernel.threads % op.rows:
            raise VerifyException(
                f"tile.reduce: rows {op.rows} must divide the kernel's {kernel.threads} threads (one thread per "
                "column in each group of rows threads, the groups splitting the rows)"
            )


def wgmma_pipeline_tile(gemms: "list[GemmOp]") -> tuple[int, int, int]:
    """The tile of a wgmma kernel's pipeline (its stages, stride and shared
    memory): its widest gemm's; narrower gemms share it (target.wgmma_gemm_widths)."""
    return max((op.tile_shape for op in gemms), key=lambda shape: shape[1])


def verify_wgmma_kernel(kernel: "KernelOp") -> None:
    """The wgmma engine's gemms share one pipeline per block (tk::hopper::
    gemm_units, its state kept from gemm to gemm): a grid kernel whose wgmma
    gemms have one tile shape, a producer warpgroup and two consumers (384
    threads), the stages and barriers inside its shared memory (and after them
    the mma.sync tiles of the gemms off the pipeline, in a mixed kernel), and
    arena operands where TMA can address them (16-byte aligned)."""
    from trainkernel.dialects import sched
    from trainkernel.target import TargetOptions, wgmma_hands_registers_back, wgmma_threads

    gemms = [op for op in kernel.block.ops if isinstance(op, GemmOp)]
    wgmma = [op for op in gemms if op.engine == "wgmma"]
    if not wgmma:
        return
    if kernel.cluster is not None:
        raise VerifyException("tile.gemm: the wgmma engine is for grid kernels; a resident kernel uses mma.sync")
    # Gemms off the pipeline (a mixed kernel, target.mixed_gemm_engines) take
    # mma.sync tiles in the shared memory after it.
    off_pipeline = [op for op in gemms if op.engine != "wgmma"]
    # One pipeline: one height (the kernel's consumer warpgroups), and widths that
    # may differ only where none hands the producer's registers to the consumers
    # (the narrower gemms take the widest's stages: target.wgmma_gemm_widths).
    shapes = {op.tile_shape for op in wgmma}
    widest = wgmma_pipeline_tile(wgmma)
    if len({(bm, bk) for bm, _, bk in shapes}) > 1 or (len(shapes) > 1 and wgmma_hands_registers_back(widest[1])):
        raise VerifyException(f"tile.kernel: the wgmma gemms of a kernel share one tile height, and one width where "
                              f"a tile is wider than 128, got {sorted(shapes)}")
    threads = wgmma_threads(wgmma[0].tile_shape[0])
    if kernel.threads != threads:
        raise VerifyException(
            f"tile.kernel: a kernel of {wgmma[0].tile_shape[0]}-row wgmma tiles runs {threads} threads (a producer "
            f"warpgroup and a consumer for each 64 rows), not {kernel.threads}")
    need = TargetOptions.wgmma_smem_bytes(widest[1], widest[0])
    beside = max((TARGET.gemm_smem_bytes(op.mma) for op in off_pipeline), default=0)
    if kernel.smem < need + beside:
        after = f" and, after it, its mma.sync tiles' {beside}" if beside else ""
        raise VerifyException(f"tile.kernel: smem {kernel.smem} is short of the wgmma pipeline's {need} bytes{after}")
    for op in wgmma:
        mm = op.matmul
        for arg in (mm.lhs, mm.rhs):
            buf = sched.root_buffer(op.ins[arg.index]).owner
            if isinstance(buf, sched.BufferOp) and (buf.offset_value or 0) % 16:
                raise VerifyException(
                    f"tile.gemm: a wgmma operand's arena offset {buf.offset_value} is not 16-byte aligned (TMA)")


def verify_resident_reads(kernel: "KernelOp", accesses) -> None:
    """A resident kernel's ops read shared memory only (`tile.smem` homes and
    their views): its phases are ordered by block barriers, which order no
    global memory another block wrote."""
    for op, accs in accesses.items():
        for a in accs:
            if not a.write and not isinstance(a.root.owner, Home):
                what = f"argument {a.root.index}" if isinstance(a.root, BlockArgument) else "a buffer"
                raise VerifyException(
                    f"tile.kernel: {op.name} of a resident kernel reads {what} from global memory; it must read "
                    "its shared-memory home (tile.smem stage)"
                )


def verify_home_names(kernel: "KernelOp") -> None:
    """SSA names of homes are printed into the CUDA (`s7_<name>`), as buffers' are."""
    from trainkernel.dialects.base import check_c_identifier

    staged: dict[SSAValue, SmemOp] = {}
    for op in kernel.block.ops:
        if isinstance(op, Home):
            if op.result.name_hint is not None:
                check_c_identifier("tile.kernel: home name", op.result.name_hint)
            if isinstance(op, SmemOp) and op.source is not None:
                if op.source in staged:
                    raise VerifyException(
                        f"tile.kernel: argument {op.source.index} has two shared-memory homes (it is written through to one)"
                    )
                staged[op.source] = op


def verify_cast_homes(kernel: "KernelOp", accesses) -> None:
    """A cast home (tile.smem_cast) is filled by the prologue only: no op
    writes it (so within a step it always holds its argument's value at the
    step's start, cast, whatever later phases write to the argument)."""
    casts = {op.result for op in kernel.block.ops if isinstance(op, SmemCastOp)}
    for op, accs in accesses.items():
        for a in accs:
            if a.write and a.root in casts:
                raise VerifyException(f"tile.kernel: {op.name} writes a cast home (tile.smem_cast), "
                                      "which only the prologue fills")


# ---- accesses


@dataclass(frozen=True)
class Access:
    """One buffer an op reads or writes. `dims[a]`: the iteration dimension that
    indexes axis `a` of `value` (None: a size-1 axis, read at 0); `dims` is None
    when the op reads it in a way that follows no iteration dimension (a slice,
    a reshape). `kind`: "pointwise" (read at the iteration index, broadcast),
    "transpose", "matmul" (a GEMM operand, read across k), "reduction" (the
    reduction's input, read across the reduced axes), "gather", "store"."""

    value: SSAValue
    root: SSAValue
    write: bool
    kind: str
    dims: tuple[int | None, ...] | None


def iteration_space(op: TileWorkOp) -> tuple[int, ...]:
    """gemm: (m, n, k); reduce: the reduction's input shape; map: its first output's shape."""
    if isinstance(op, GemmOp):
        mm = op.matmul
        m, n = mm.result.type.get_shape()
        lhs = mm.lhs.type.get_shape()
        return (m, n, lhs[0] if mm.transpose_a is not None else lhs[1])
    if isinstance(op, ReduceOp):
        return tuple(op.reduction().input.type.get_shape())
    shapes = _yield_shapes(op)
    return shapes[0] if shapes else ()


def _broadcast(shape: tuple[int, ...], ctx: list[int]) -> tuple[int | None, ...] | None:
    lead = len(ctx) - len(shape)
    if lead < 0:
        return None
    return tuple(None if d == 1 else ctx[lead + a] for a, d in enumerate(shape))


def op_accesses(kernel: "KernelOp", op: TileWorkOp) -> list[Access]:
    """Every buffer `op` reads or writes, with the iteration dimensions that index
    it, as the printer indexes it (value_at / load / store_outputs)."""
    from trainkernel.dialects import sched
    from trainkernel.dialects.tk import ExpandOp, MatmulOp, ReductionOp, ReshapeOp, SliceOp, TransposeOp

    space = iteration_space(op)
    full = list(range(len(space)))
    out_ctx = full
    chain: set = set()  # ops of a reduction's input chain (read at the full index)
    if isinstance(op, GemmOp):
        out_ctx = [0, 1]
    elif isinstance(op, ReduceOp):
        red = op.reduction()
        kept = [d for d in full if d not in red.axes_list]
        out_ctx = full if red.keepdim is not None else kept
        chain.add(red)
        v = red.input
        while not isinstance(v, BlockArgument) and isinstance(v.owner, TransposeOp | SliceOp | ExpandOp):
            chain.add(v.owner)
            v = v.owner.input
    out: list[Access] = []
    for arg in op.body.block.args:
        buf = op.ins[arg.index]
        root = sched.root_buffer(buf)
        shape = tuple(buf.type.get_shape())
        for use in arg.uses:
            user = use.operation
            in_chain = user in chain
            ctx = full if (in_chain or isinstance(op, MapOp)) else out_ctx
            if isinstance(op, GemmOp) and isinstance(user, MatmulOp):
                ta, tb = user.transpose_a is not None, user.transpose_b is not None
                dims = ((2, 0) if ta else (0, 2)) if use.index == 0 else ((1, 2) if tb else (2, 1))
                out.append(Access(buf, root, False, "matmul", dims))
            elif isinstance(user, TransposeOp):
                rshape = tuple(user.result.type.get_shape())
                lead = len(ctx) - len(rshape)
                if lead < 0:
                    out.append(Access(buf, root, False, "gather", None))
                    continue
                dims_t: list[int | None] = [None] * len(shape)
                for k, p in enumerate(user.perm_list):
                    dims_t[p] = None if rshape[k] == 1 else ctx[lead + k]
                out.append(Access(buf, root, False, "reduction" if in_chain else "transpose", tuple(dims_t)))
            elif isinstance(user, SliceOp | ReshapeOp | MatmulOp) or (isinstance(user, ReductionOp) and not in_chain):
                out.append(Access(buf, root, False, "gather", None))
            else:  # a pointwise op, an expand, the yield (a copy), or the reduction itself
                dims_b = _broadcast(shape, ctx)
                kind = "reduction" if in_chain else "pointwise"
                out.append(Access(buf, root, False, kind if dims_b is not None else "gather", dims_b))
    partials = op.column_partials() if isinstance(op, GemmOp) else None
    term = op.body.block.last_op
    for buf, v in zip(op.outs, term.operands):
        # A gemm's column partials are stored a run of rows to an element, not at the iteration index.
        dims = None if partials is not None and v.owner is partials else _broadcast(tuple(buf.type.get_shape()), out_ctx)
        out.append(Access(buf, sched.root_buffer(buf), True, "store", dims))
    return out


def _homes_of(kernel: "KernelOp") -> dict[SSAValue, SmemOp]:
    return {op.source: op for op in kernel.block.ops if isinstance(op, SmemOp) and op.source is not None}


def gemm_k_slice(k: int, ksplit: int, bk: int) -> int:
    """Length of each K slice of a split gemm (whole BK steps; the last takes the rest)."""
    return ceil_div(ceil_div(k, ksplit), bk) * bk


def _gemm_tiles(op: "GemmOp") -> int:
    m, n, _ = iteration_space(op)
    bm, bn, _ = op.tile_shape
    return ceil_div(m, bm) * ceil_div(n, bn)


def gemm_partials_bytes(op: "GemmOp") -> int:
    """Where a split gemm's tile counters start in its workspace: after the fp32
    partials ([ksplit][M][N]; for the wgmma engine whole tiles [tile][ksplit][BM
    x BN] in fragment order, tk::hopper's, 8 bytes an element: room for the
    tagged fix-up's words, target.split_k_tagged_partials, whatever the target
    that prints it), 16-byte aligned."""
    if op.engine == "wgmma":
        bm, bn, _ = op.tile_shape
        return align_up(_gemm_tiles(op) * op.ksplit * bm * bn * 8, 16)
    m, n, _ = iteration_space(op)
    return align_up(op.ksplit * m * n * 4, 16)


def wgmma_tile_warps(op: "GemmOp") -> int:
    """Consumer warps of a wgmma tile (tk::hopper::kTileWarps): a warpgroup of
    four for each 64 rows of BM. A split wgmma tile gets one arrival counter per
    consumer warp: each warp votes on its own (the split-K fix-up and row
    epilogue go by warp)."""
    return op.tile_shape[0] // 16


def cluster_fixup_bytes(op: "GemmOp") -> int:
    """Shared memory of a cluster fix-up (tk::hopper::cluster_fixup_bytes): the
    consumer warps' mbarriers, then the tile's fp32 partial's worth of slots."""
    bm, bn, _ = op.tile_shape
    return 8 * wgmma_tile_warps(op) + 4 * bm * bn


def gemm_workspace_bytes(op: "GemmOp") -> int:
    """A split gemm's arena workspace: its partials (`gemm_partials_bytes`), then
    its output tiles' u32 arrival counters (one a tile; wgmma: wgmma_tile_warps a
    tile); 0 when not split."""
    if op.ksplit <= 1:
        return 0
    counters = _gemm_tiles(op) * (wgmma_tile_warps(op) if op.engine == "wgmma" else 1)
    return gemm_partials_bytes(op) + 4 * counters


def _scratch_bytes(op: TileWorkOp) -> int:
    if isinstance(op, GemmOp):
        m, n, _ = iteration_space(op)
        return 4 * m * n
    return 4 * numel(op.reduction().result.type.get_shape())


def _ranges(kernel: "KernelOp", root: SSAValue, write: bool, homes) -> list[tuple[object, int, int, str]]:
    """(memory, first byte, end byte, label) of what an access of `root` touches:
    an argument (its own memory), arena bytes, or shared-memory bytes; a write
    of an argument with a home also writes the home (write-through)."""
    from trainkernel.elements import nbytes

    if isinstance(root, BlockArgument):
        label = f"argument %{root.name_hint}" if root.name_hint else f"argument {root.index}"
        out = [(("arg", root.index), 0, nbytes(root.type), label)]
        home = homes.get(root)
        if write and home is not None:
            out += _ranges(kernel, home.result, False, homes)
        return out
    owner = root.owner
    name = f" %{root.name_hint}" if root.name_hint else ""
    if isinstance(owner, BufferOp):
        off = owner.offset_value or 0
        end = off + nbytes(root.type)
        return [("arena", off, end, f"arena buffer{name} (bytes {off}..{end})")]
    if isinstance(owner, Home):
        off = owner.offset_value
        end = off + owner.local_bytes(kernel.cluster or 1)
        return [("smem", off, end, f"shared-memory home{name} (bytes {off}..{end})")]
    return []


def verify_phase_hazards(kernel: "KernelOp", accesses) -> None:
    """The ops of a phase run concurrently (over the grid, or over a block's
    threads with no barrier between them): none may touch bytes another one
    writes. On byte ranges (arena offsets, shared-memory offsets), so two
    buffers that share bytes conflict whatever their SSA roots."""
    homes = _homes_of(kernel)
    for i, ops in enumerate(kernel.phases()):
        touched = []
        for op in ops:
            mine = []
            for a in accesses[op]:
                for mem, lo, hi, label in _ranges(kernel, a.root, a.write, homes):
                    mine.append((mem, lo, hi, label, a.write))
            if op.scratch is not None:
                lo = op.scratch
                mine.append(("smem", lo, lo + _scratch_bytes(op), f"its partials (shared-memory bytes {lo}..{lo + _scratch_bytes(op)})", True))
            for other, theirs in touched:
                for mem, lo, hi, label, w in mine:
                    for mem2, lo2, hi2, label2, w2 in theirs:
                        if mem == mem2 and lo < hi2 and lo2 < hi and (w or w2) and hi > lo and hi2 > lo2:
                            writer, reader = (op, other) if w else (other, op)
                            wl, rl = (label, label2) if w else (label2, label)
                            how = "writes" if (w and w2) else "reads"
                            raise VerifyException(
                                f"tile.kernel: phase {i}: {writer.name} writes {wl} and {reader.name} {how} "
                                f"{rl} in the same phase (a tile.sync must separate them)"
                            )
            touched.append((op, mine))


def verify_home_liveness(kernel: "KernelOp", accesses) -> None:
    """No two shared-memory homes (or an op's partials) whose bytes overlap are
    live in a common phase. A home is live from the first to the last phase
    that touches it, a staged input's home from the kernel's start (the
    prologue loads it), an argument's home also wherever the argument is
    written (written through)."""
    if kernel.cluster is None:
        return
    homes = _homes_of(kernel)
    n_in = kernel.num_inputs.data
    live: dict[SSAValue, list[int]] = {}
    for op in kernel.block.ops:
        if isinstance(op, Home) and op.source is not None and op.source.index < n_in:
            live[op.result] = [0, 0]
    spans: list[tuple[int, int, int, int, str]] = []
    for i, ops in enumerate(kernel.phases()):
        for op in ops:
            for a in accesses[op]:
                roots = [a.root] + ([homes[a.root].result] if a.write and a.root in homes else [])
                for r in roots:
                    if isinstance(r.owner, Home):
                        span = live.setdefault(r, [i, i])
                        span[0], span[1] = min(span[0], i), max(span[1], i)
            if op.scratch is not None:
                spans.append((op.scratch, op.scratch + _scratch_bytes(op), i, i, f"the partials of {op.name} in phase {i}"))
    for op in kernel.block.ops:
        if isinstance(op, Home) and op.result in live:
            (_, lo, hi, label), = _ranges(kernel, op.result, False, homes)
            spans.append((lo, hi, live[op.result][0], live[op.result][1], label))
    for k, a in enumerate(spans):
        for b in spans[:k]:
            if a[0] < b[1] and b[0] < a[1] and a[2] <= b[3] and b[2] <= a[3] and a[1] > a[0] and b[1] > b[0]:
                raise VerifyException(
                    f"tile.kernel: {b[4]}, live in phases {b[2]}..{b[3]}, and {a[4]}, live in phases "
                    f"{a[2]}..{a[3]}, overlap while both are live"
                )


def verify_tile_reads_after_writes(kernel: "KernelOp", accesses) -> None:
    """Every buffer a phase reads holds a value: a step input, a staged input's
    home or cast home (the prologue loads it), or what an earlier phase wrote
    (writing an argument writes its home)."""
    homes = _homes_of(kernel)
    n_in = kernel.num_inputs.data
    defined: set[SSAValue] = set(kernel.block.args[:n_in])
    defined |= {h.result for a, h in homes.items() if a.index < n_in}
    defined |= {op.result for op in kernel.block.ops if isinstance(op, SmemCastOp)}
    for i, ops in enumerate(kernel.phases()):
        for op in ops:
            for a in accesses[op]:
                if not a.write and a.root not in defined:
                    (_, _, _, label), *_ = _ranges(kernel, a.root, False, homes)
                    raise VerifyException(
                        f"tile.kernel: phase {i} ({op.name}) reads {label} before any earlier phase writes it"
                    )
        for op in ops:
            for a in accesses[op]:
                if a.write:
                    defined.add(a.root)
                    if a.root in homes:
                        defined.add(homes[a.root].result)


def verify_in_place_updates(kernel: "KernelOp", accesses) -> None:
    """An op that writes a buffer it also reads (an in-place update) reads it only
    at the elements it writes: pointwise, with the written value's shape. Read
    across a GEMM's k, a reduction, a transpose or a slice, other blocks (or
    threads) would see elements already overwritten."""
    homes = _homes_of(kernel)

    def bytes_of(a: Access):
        roots = [a.root] + ([homes[a.root].result] if a.write and a.root in homes else [])
        return {r for r in roots}

    for op, accs in accesses.items():
        writes = [a for a in accs if a.write]
        for r in (a for a in accs if not a.write):
            for w in writes:
                if not (bytes_of(r) & bytes_of(w)):
                    continue
                same = r.kind == "pointwise" and r.value.type == w.value.type and r.dims == w.dims
                if not same:
                    (_, _, _, label), *_ = _ranges(kernel, r.root, False, homes)
                    how = _HOW.get(r.kind, r.kind) if r.kind != "pointwise" else f"as {r.value.type}, broadcast"
                    raise VerifyException(
                        f"tile.kernel: {op.name} updates {label} in place but reads it {how}, not at the elements of its "
                        f"{w.value.type} output: elements not read yet may already be overwritten"
                    )


_HOW = {
    "transpose": "transposed",
    "matmul": "as a GEMM operand (across k)",
    "reduction": "as the reduction's input",
    "gather": "through a slice or reshape",
}


def squeeze_map(src: tuple[int, ...], dst: tuple[int, ...]) -> dict[int, int] | None:
    """dst axis -> src axis when the shapes differ only by size-1 axes (None otherwise)."""
    s = [k for k, d in enumerate(src) if d != 1]
    t = [k for k, d in enumerate(dst) if d != 1]
    if [src[k] for k in s] != [dst[k] for k in t]:
        return None
    return dict(zip(t, s))


def split_axes(kernel: "KernelOp") -> dict[SSAValue, int]:
    """The split axis of every home, argument with a home, and view of one (-1:
    every block holds all of it); a view that moves a split axis is an error."""
    out: dict[SSAValue, int] = {}
    for op in kernel.block.ops:
        if isinstance(op, Home):
            out[op.result] = op.split_axis
            if isinstance(op, SmemOp) and op.source is not None:
                out[op.source] = op.split_axis
        elif isinstance(op, ViewOp) and op.source in out:
            src = out[op.source]
            if src < 0:
                out[op.result] = -1
                continue
            m = squeeze_map(tuple(op.source.type.get_shape()), tuple(op.result.type.get_shape()))
            inverse = {v: k for k, v in (m or {}).items()}
            if src not in inverse:
                raise VerifyException(
                    f"tile.kernel: a view {op.source.type} to {op.result.type} moves the split axis {src} of a home"
                )
            out[op.result] = inverse[src]
    return out


def verify_partition(kernel: "KernelOp", accesses) -> None:
    """In a resident kernel of several blocks, block r holds slice r of a split
    home's split axis and does slice r of its op's split dimension; block
    barriers order phases only because every access stays in what the block
    holds. So: a split home is accessed only by an op split on the iteration
    dimension that indexes its split axis (same extent); a home every block
    holds is written whole on every block (by an op that splits nothing, or a
    split contraction, whose epilogue runs on the whole result)."""
    splits = split_axes(kernel)
    for op, accs in accesses.items():
        split = op.split if op.split is not None else -1
        space = iteration_space(op)
        partial = op.splits_a_sum()
        for a in accs:
            axis = splits.get(a.value)
            if axis is None:
                continue  # global memory without a home: written (stores), never read
            if axis >= 0:
                dim = a.dims[axis] if a.dims is not None else None
                if split < 0 or dim != split or space[split] != a.value.type.get_shape()[axis]:
                    raise VerifyException(
                        f"tile.kernel: {op.name} (split {split}) {'writes' if a.write else 'reads'} {a.value.type} "
                        f"split on axis {axis} over the cluster, but "
                        + (f"its axis {axis} is indexed by iteration dimension {dim}" if dim is not None else
                           f"it reads it {a.kind}")
                        + ": a block would address slices it does not hold"
                    )
            elif a.write and split >= 0 and not partial:
                raise VerifyException(
                    f"tile.kernel: {op.name} (split {split}) writes {a.value.type}, which every block holds whole, "
                    "but each block makes only its slice of it"
                )


def config(**values: int | str | tuple[int, ...]) -> dict[str, Attribute]:
    """Build a tile op's `config` properties from Python values."""
    from xdsl.dialects.builtin import i64

    out: dict[str, Attribute] = {}
    for k, v in values.items():
        if isinstance(v, str):
            out[k] = StringAttr(v)
        elif isinstance(v, tuple):
            out[k] = DenseArrayBase.from_list(i64, list(v))
        else:
            out[k] = IntegerAttr(v, i64)
    return out


TILE = Dialect("tile", [KernelOp, GemmOp, MapOp, ReduceOp, SmemOp, SmemCastOp, SyncOp], [])
