"""Element types: the one table of what TrainKernel knows about each of them.

Every layer asks this module, never a table of its own:

| name | IR (xDSL)  | torch         | bytes | CUDA C type     | tile.gemm mma | tk tensors |
|------|------------|---------------|-------|-----------------|---------------|------------|
| f32  | `f32`      | torch.float32 | 4     | `float`         | `simt.f32`    | yes        |
| bf16 | `bf16`     | torch.bfloat16| 2     | `__nv_bfloat16` | `mma.bf16`    | yes        |
| f16  | `f16`      | torch.float16 | 2     | `__half`        | `mma.f16`     | yes        |
| f64  | `f64`      | torch.float64 | 8     | -               | -             | no         |
| i1   | `i1`       | torch.bool    | 1     | -               | -             | yes        |
| i8, i16, i32 | `iN` | torch.intN  | N/8   | -               | -             | no         |
| i64  | `i64`      | torch.int64   | 8     | `long long`     | -             | yes        |

f32, bf16 and f16 are the compute types (`COMPUTE`): the only ones `tk`
arithmetic accepts. f64 and the narrow integers exist for the CPU
interpreters (PyTorch computes with them) and for constant folding; no `tk`
tensor holds them.

torch is imported only when a torch dtype is asked for, so the dialects and
`trainkernel-opt` do not pay for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import DiagnosticException

from trainkernel.util import numel

if TYPE_CHECKING:
    import torch


class ElementTypeError(DiagnosticException, TypeError):
    """An element type (or a fact about it) that TrainKernel does not know."""


@dataclass(frozen=True)
class Element:
    """Everything about one element type; see the module docstring's table."""

    name: str
    ir: Attribute
    torch_name: str
    nbytes: int
    c_type: str | None = None
    mma: str | None = None
    in_tk: bool = False
    exponent_bits: int = 0  # floating point only: a conversion a -> b is exact
    mantissa_bits: int = 0  # when b has at least a's exponent and mantissa bits
    aliases: tuple[str, ...] = ()

    @property
    def is_float(self) -> bool:
        return self.mantissa_bits > 0

    @property
    def opmath(self) -> Element:
        """The type PyTorch computes this one in: f32 for bf16 and f16, else itself."""
        return F32 if self.is_float and self.nbytes < 4 else self

    @property
    def width(self) -> int:
        """Bits of an integer type (1 for i1), 0 for floating point."""
        return self.ir.width.data if isinstance(self.ir, IntegerType) else 0

    @property
    def torch(self) -> torch.dtype:
        import torch

        return getattr(torch, self.torch_name)

    def __str__(self) -> str:
        return self.name


F32 = Element("f32", Float32Type(), "float32", 4, "float", "simt.f32", True, 8, 23, ("fp32", "float32", "float"))
BF16 = Element("bf16", BFloat16Type(), "bfloat16", 2, "__nv_bfloat16", "mma.bf16", True, 8, 7, ("bfloat16",))
F16 = Element("f16", Float16Type(), "float16", 2, "__half", "mma.f16", True, 5, 10, ("fp16", "float16", "half"))
F64 = Element("f64", Float64Type(), "float64", 8, exponent_bits=11, mantissa_bits=52, aliases=("fp64", "float64", "double"))
I1 = Element("i1", IntegerType(1), "bool", 1, in_tk=True, aliases=("bool",))
I8 = Element("i8", IntegerType(8), "int8", 1, aliases=("int8",))
I16 = Element("i16", IntegerType(16), "int16", 2, aliases=("int16",))
I32 = Element("i32", IntegerType(32), "int32", 4, aliases=("int32",))
I64 = Element("i64", IntegerType(64), "int64", 8, "long long", in_tk=True, aliases=("int64",))

ELEMENTS: tuple[Element, ...] = (F32, BF16, F16, F64, I1, I8, I16, I32, I64)
TK_ELEMENTS: tuple[Element, ...] = tuple(e for e in ELEMENTS if e.in_tk)
"""What a `tk` tensor may hold."""
COMPUTE: tuple[Element, ...] = tuple(e for e in TK_ELEMENTS if e.is_float)
"""The floating-point compute types: f32, bf16, f16."""
MMA_KINDS: tuple[str, ...] = tuple(sorted(e.mma for e in ELEMENTS if e.mma is not None))
"""tile.gemm kinds: SIMT fp32, tensor-core mma.sync bf16 / f16 (f32 accumulate)."""


def _key(t: Attribute) -> object:
    # Integers by width (signedness does not change storage or the torch type).
    return ("i", t.width.data) if isinstance(t, IntegerType) else type(t)


_BY_IR = {_key(e.ir): e for e in ELEMENTS}
_BY_NAME = {n: e for e in ELEMENTS for n in (e.name, *e.aliases)}
_BY_TORCH_NAME = {e.torch_name: e for e in ELEMENTS}


def element_type(t: Attribute) -> Attribute:
    """The element type of a tensor or memref type; any other type is its own."""
    return t.get_element_type() if isinstance(t, TensorType | MemRefType) else t


def find(t: Attribute) -> Element | None:
    """The table row of an element type (or of a tensor/memref type's element type)."""
    return _BY_IR.get(_key(element_type(t)))


def lookup(t: Attribute) -> Element:
    e = find(t)
    if e is None:
        raise ElementTypeError(f"unknown element type {element_type(t)}")
    return e


def from_torch(dtype: torch.dtype) -> Element | None:
    """The row of a torch dtype (None for one TrainKernel does not know)."""
    return _BY_TORCH_NAME.get(str(dtype).removeprefix("torch."))


def from_name(name: str) -> Element | None:
    """The row of a spelling: `f32`, `bf16`, `fp16`, `float32`, `half`, ... (any case)."""
    return _BY_NAME.get(name.lower())


def torch_dtype(t: Attribute) -> torch.dtype:
    """The torch dtype of an element type (or of a tensor/memref type's)."""
    e = find(t)
    if e is None:
        raise ElementTypeError(f"no torch dtype for element type {element_type(t)}")
    return e.torch


def byte_size(t: Attribute) -> int:
    """Bytes of one element of `t` (an element, tensor or memref type)."""
    e = find(t)
    if e is None:
        raise ElementTypeError(f"no storage size known for element type {element_type(t)}")
    return e.nbytes


def nbytes(t: TensorType | MemRefType) -> int:
    """Bytes of a whole (static) tensor or memref."""
    return numel(t.get_shape()) * byte_size(t)


def c_type(t: Attribute) -> str:
    """The CUDA C type a buffer of element type `t` is declared with."""
    e = find(t)
    if e is None or e.c_type is None:
        raise ElementTypeError(f"cuda: no C type for {element_type(t)}")
    return e.c_type


def find_mma(t: Attribute) -> str | None:
    """The tile.gemm kind that multiplies matrices of element type `t`, or None."""
    e = find(t)
    return e.mma if e is not None else None


def mma_kind(t: Attribute) -> str:
    """`find_mma`, as an error where there is no kind."""
    kind = find_mma(t)
    if kind is None:
        raise ElementTypeError(f"no matmul kernel (mma kind) for element type {element_type(t)}")
    return kind


def is_float(t: Attribute) -> bool:
    """A floating-point compute type of `tk`: f32, bf16 or f16."""
    e = find(t)
    return e is not None and e.in_tk and e.is_float


def is_tk_element_type(t: Attribute) -> bool:
    """f32, bf16, f16, or signless i1 / i64."""
    e = find(t)
    if e is None or not e.in_tk:
        return False
    return e.ir == t  # exactly: a signed i64 is not a tk element type


def cast_is_exact(src: Attribute, dst: Attribute) -> bool:
    """Whether converting element type `src` to `dst` keeps every value exactly
    (so a later conversion sees the original value)."""
    a, b = find(src), find(dst)
    if a is None or b is None:
        return False
    if src == dst:
        return True
    if a.is_float and b.is_float:
        return b.exponent_bits >= a.exponent_bits and b.mantissa_bits >= a.mantissa_bits
    # i1 (0 or 1) is exact in every float type and every wider integer.
    return a.width == 1 and (b.is_float or b.width > 1)
