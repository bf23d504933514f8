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

from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    MemRefType,
    StringAttr,
)
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from trainkernel.dialects.base import ComputeLikeOp, ProgramLikeOp, ScopedSyncOp
from trainkernel.dialects.sched import BufferOp, ViewOp
from trainkernel.elements import MMA_KINDS, find_mma


def _int(op: IRDLOperation, name: str) -> int:
    attr = op.properties.get(name)
    if not isinstance(attr, IntegerAttr):
        raise VerifyException(f"{op.name} needs an integer `{name}` in its config")
    return attr.value.data


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
        bm, bn, _ = self.tile_shape
        m, n = mm[0].result.type.get_shape()
        if self.items < -(-m // bm) * -(-n // bn):
            raise VerifyException(f"tile.gemm: {self.items} items do not cover the {m}x{n} output in {bm}x{bn} tiles")

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
        if self.chunk < 1:
            raise VerifyException(f"tile.map chunk must be >= 1, got {self.chunk}")
        term = self.body.block.last_op
        n = 0
        for v in term.operands if term is not None else ():
            size = 1
            for d in v.type.get_shape():
                size *= d
            n = max(n, size)
        if self.items * self.chunk < n:
            raise VerifyException(
                f"tile.map: {self.items} items of {self.chunk} elements do not cover its {n} elements"
            )


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

    def iteration_rank(self) -> int:
        return len(self.reduction().input.type.get_shape())

    def splits_a_sum(self) -> bool:
        return self.split is not None and self.split in self.reduction().axes_list

    def verify_(self) -> None:
        super().verify_()
        if self.rows < 1:
            raise VerifyException(f"tile.reduce rows must be >= 1, got {self.rows}")


@irdl_op_definition
class SmemOp(IRDLOperation):
    """A buffer's home in the shared memory of each block of a resident kernel,
    at a byte `offset` of the block's dynamic shared memory. `split = d`: block
    r of the cluster holds slice r of axis d (ceil(size/cluster) elements, the
    last slice shorter); -1: every block holds all of it. With `stage %arg` it
    is the on-chip copy of a kernel argument: loaded at kernel start when the
    argument is an input, and written through whenever the argument is.

    `%h = tile.smem offset 1024 split 1 : memref<16x64xbf16>`
    `%w = tile.smem stage %0 offset 0 split 1 : memref<32x64xf32>`
    """

    name = "tile.smem"
    T: ClassVar = VarConstraint("T", AnyAttr())
    source = opt_operand_def(T)
    offset = prop_def(IntegerAttr[I64])
    split = prop_def(IntegerAttr[I64])
    result = result_def(T)
    assembly_format = "(`stage` $source^)? `offset` $offset `split` $split attr-dict `:` type($result)"

    def __init__(self, result_type: MemRefType, offset: int, split: int, source=None):
        super().__init__(
            operands=[[source] if source is not None else []],
            result_types=[result_type],
            properties={"offset": IntegerAttr(offset, 64), "split": IntegerAttr(split, 64)},
        )

    @property
    def offset_value(self) -> int:
        return self.offset.value.data

    @property
    def split_axis(self) -> int:
        return self.split.value.data

    def verify_(self) -> None:
        t = self.result.type
        if not isinstance(t, MemRefType):
            raise VerifyException(f"tile.smem must have a memref type, got {t}")
        if self.offset_value < 0 or self.offset_value % SMEM_ALIGNMENT:
            raise VerifyException(
                f"tile.smem offset {self.offset_value} must be a non-negative multiple of {SMEM_ALIGNMENT}"
            )
        if not -1 <= self.split_axis < len(t.get_shape()):
            raise VerifyException(f"tile.smem split {self.split_axis} is not an axis of {t}")
        parent = self.parent_op()
        if not isinstance(parent, KernelOp) or parent.cluster is None:
            raise VerifyException("tile.smem must be directly inside a resident tile.kernel (one with `cluster`)")
        if self.source is not None and self.source.owner is not parent.block:
            raise VerifyException("tile.smem stage must name an argument of its tile.kernel")
        if self.offset_value + local_bytes(t, self.split_axis, parent.cluster) > parent.smem:
            raise VerifyException(
                f"tile.smem at offset {self.offset_value} overruns the kernel's {parent.smem} bytes of shared memory"
            )


SMEM_ALIGNMENT = 16
"""Shared-memory homes start 16-byte aligned (cp.async 16-byte copies)."""

MAX_CLUSTER = 16
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

    def count(shape) -> int:
        n = 1
        for d in shape:
            n *= d
        return n

    most = max((count(a.type.get_shape()) for a in kernel.block.args), default=0)
    for op in kernel.block.ops:
        for r in op.results:
            if isinstance(r.type, MemRefType):
                most = max(most, count(r.type.get_shape()))
        if isinstance(op, TileWorkOp):
            for v in list(op.body.block.args) + [r for inner in op.body.block.ops for r in inner.results]:
                most = max(most, count(shape_of(v)))
    return most


def shard_extent(size: int, parts: int) -> int:
    """Elements of one block's slice when `size` is split over `parts` blocks."""
    return -(-size // parts)


def local_shape(t: MemRefType, split: int, cluster: int) -> tuple[int, ...]:
    shape = list(t.get_shape())
    if split >= 0:
        shape[split] = shard_extent(shape[split], cluster)
    return tuple(shape)


def local_bytes(t: MemRefType, split: int, cluster: int) -> int:
    from trainkernel.elements import byte_size as element_bytes

    n = 1
    for d in local_shape(t, split, cluster):
        n *= d
    return n * element_bytes(t.get_element_type())


@irdl_op_definition
class SyncOp(ScopedSyncOp):
    """Barrier between phases: `tile.sync grid` (grid-wide) or `tile.sync block`."""

    name = "tile.sync"


@irdl_op_definition
class KernelOp(ProgramLikeOp):
    """The cooperative megakernel: launch shape in `config` (grid = most blocks
    any phase can use, threads = threads per block, smem = dynamic shared bytes)."""

    name = "tile.kernel"
    grid_ = prop_def(IntegerAttr, prop_name="grid")
    threads_ = prop_def(IntegerAttr, prop_name="threads")
    smem_ = prop_def(IntegerAttr, prop_name="smem")
    cluster_ = opt_prop_def(IntegerAttr, prop_name="cluster")

    def verify_(self) -> None:
        super().verify_()
        if self.grid < 1 or self.threads < 32 or self.threads % 32 or self.threads > 1024:
            raise VerifyException("tile.kernel: grid >= 1 and block a multiple of 32 up to 1024")
        if self.smem < 0 or self.smem > 227 * 1024:
            raise VerifyException(f"tile.kernel: smem {self.smem} exceeds the 227 KiB a Hopper block may use")
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
        elif self.grid > 1 and any(isinstance(op, SyncOp) and op.scope.data == "block" for op in self.block.ops):
            raise VerifyException("tile.kernel: `tile.sync block` cannot order phases of a kernel of several blocks")
        for op in self.block.ops:
            if not isinstance(op, BufferOp | ViewOp | SmemOp | TileWorkOp | SyncOp):
                raise VerifyException(f"tile.kernel may hold buffers, views, tile ops and syncs, not {op.name}")

    @property
    def cluster(self) -> int | None:
        """Blocks of the one cluster a resident kernel runs as; None for a grid kernel."""
        attr = self.properties.get("cluster")
        return attr.value.data if isinstance(attr, IntegerAttr) else None

    @property
    def grid(self) -> int:
        return _int(self, "grid")

    @property
    def threads(self) -> int:
        return _int(self, "threads")

    @property
    def smem(self) -> int:
        return _int(self, "smem")


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


TILE = Dialect("tile", [KernelOp, GemmOp, MapOp, ReduceOp, SmemOp, SyncOp], [])
