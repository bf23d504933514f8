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

from xdsl.dialects.builtin import BFloat16Type, DenseArrayBase, Float16Type, Float32Type, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException
from xdsl.irdl import IRDLOperation

from trainkernel.dialects.sched import BufferOp, ComputeLikeOp, ProgramLikeOp, ScopedSyncOp, ViewOp

MMA_KINDS = ("mma.bf16", "mma.f16", "simt.f32")
"""Tensor-core mma.sync (bf16/f16 in, f32 accumulate) or SIMT fp32."""

MMA_FOR_TYPE = {BFloat16Type: "mma.bf16", Float16Type: "mma.f16", Float32Type: "simt.f32"}


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

    @property
    def items(self) -> int:
        return _int(self, "items")

    @property
    def offset(self) -> int:
        return _int(self, "offset")

    def verify_(self) -> None:
        super().verify_()
        for key in self.REQUIRED:
            _int(self, key)
        if self.items < 1 or self.offset < 0:
            raise VerifyException(f"{self.name}: items must be >= 1 and offset >= 0")


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
        want = MMA_FOR_TYPE.get(type(mm[0].result.type.get_element_type()))
        if want != mma.data:
            raise VerifyException(
                f"tile.gemm mma {mma.data!r} does not compute {mm[0].result.type.get_element_type()} "
                f"(that is {want!r})"
            )
        bm, bn, _ = self.tile_shape
        m, n = mm[0].result.type.get_shape()
        if self.items < -(-m // bm) * -(-n // bn):
            raise VerifyException(f"tile.gemm: {self.items} items do not cover the {m}x{n} output in {bm}x{bn} tiles")

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

    def verify_(self) -> None:
        super().verify_()
        if self.rows < 1:
            raise VerifyException(f"tile.reduce rows must be >= 1, got {self.rows}")


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

    def verify_(self) -> None:
        super().verify_()
        if self.grid < 1 or self.threads < 32 or self.threads % 32 or self.threads > 1024:
            raise VerifyException("tile.kernel: grid >= 1 and block a multiple of 32 up to 1024")
        if self.smem < 0 or self.smem > 227 * 1024:
            raise VerifyException(f"tile.kernel: smem {self.smem} exceeds the 227 KiB a Hopper block may use")
        if self.grid > 1 and any(isinstance(op, SyncOp) and op.scope.data == "block" for op in self.block.ops):
            raise VerifyException("tile.kernel: `tile.sync block` cannot order phases of a kernel of several blocks")
        for op in self.block.ops:
            if not isinstance(op, BufferOp | ViewOp | TileWorkOp | SyncOp):
                raise VerifyException(f"tile.kernel may hold buffers, views, tile ops and syncs, not {op.name}")

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


TILE = Dialect("tile", [KernelOp, GemmOp, MapOp, ReduceOp, SyncOp], [])
