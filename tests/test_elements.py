"""The element-type table (`trainkernel.elements`) against PyTorch and xDSL.

Every layer reads its element-type facts from this one table, so the table is
checked against the libraries that define the facts: torch's own sizes and
conversions, xDSL's types, and the kinds the tile dialect accepts.
"""

from __future__ import annotations

import math

import pytest
import torch
from xdsl.dialects.builtin import IntegerType, MemRefType, Signedness, TensorType, bf16, f16, f32, f64, i1, i64

from trainkernel import elements as E
from trainkernel.util import align_up, ceil_div, numel


@pytest.mark.parametrize("e", E.ELEMENTS, ids=str)
def test_row_matches_torch(e):
    assert e.torch.itemsize == e.nbytes
    assert E.from_torch(e.torch) is e
    assert E.find(e.ir) is e
    assert E.from_name(e.name) is e
    assert all(E.from_name(a) is e for a in e.aliases)
    assert e.is_float == e.torch.is_floating_point
    if e.is_float:
        info = torch.finfo(e.torch)
        assert info.eps == 2.0 ** -e.mantissa_bits
        assert math.frexp(info.max)[1] == 2 ** (e.exponent_bits - 1)


def test_tk_and_compute_sets():
    assert [e.name for e in E.TK_ELEMENTS] == ["f32", "bf16", "f16", "i1", "i64"]
    assert [e.name for e in E.COMPUTE] == ["f32", "bf16", "f16"]
    assert E.is_tk_element_type(i64) and not E.is_tk_element_type(IntegerType(64, Signedness.SIGNED))
    assert not E.is_tk_element_type(f64) and not E.is_float(f64) and not E.is_float(i1)
    assert [e.opmath.name for e in E.COMPUTE] == ["f32", "f32", "f32"] and E.F64.opmath is E.F64
    assert E.MMA_KINDS == ("mma.bf16", "mma.f16", "simt.f32")
    assert [E.mma_kind(t) for t in (bf16, f16, f32)] == ["mma.bf16", "mma.f16", "simt.f32"]
    assert E.find_mma(i64) is None
    with pytest.raises(E.ElementTypeError, match="no matmul kernel"):
        E.mma_kind(f64)


def test_shaped_types_and_c_types():
    t = MemRefType(bf16, [3, 5])
    assert E.lookup(t) is E.BF16 and E.torch_dtype(TensorType(i1, [2])) is torch.bool
    assert E.nbytes(t) == 30 and E.byte_size(t) == 2
    assert [E.c_type(x) for x in (f32, bf16, f16, i64)] == ["float", "__nv_bfloat16", "__half", "long long"]
    with pytest.raises(E.ElementTypeError, match="cuda: no C type for i1"):
        E.c_type(TensorType(i1, [4]))
    with pytest.raises(TypeError, match="no torch dtype for element type"):
        E.torch_dtype(IntegerType(7))


def _all_values(e):
    """Every value of a 16-bit float type, else a spread of ordinary and extreme values."""
    if e.nbytes == 2:
        return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(e.torch)
    info = torch.finfo(e.torch)
    vals = [0.0, -0.0, 1.0, -2.5, info.max, -info.max, info.tiny, info.eps, 1 / 3, float("inf"), float("nan")]
    return torch.tensor(vals, dtype=e.torch)


@pytest.mark.parametrize("src", [E.F32, E.BF16, E.F16, E.F64, E.I1], ids=str)
@pytest.mark.parametrize("dst", [E.F32, E.BF16, E.F16, E.F64, E.I1, E.I64], ids=str)
def test_cast_is_exact_agrees_with_torch(src, dst):
    """Where the table says a conversion is exact, every value survives the round trip;
    where it says not, some value does not."""
    x = torch.tensor([0, 1], dtype=torch.bool) if src is E.I1 else _all_values(src)
    back = x.to(dst.torch).to(src.torch)
    if src.is_float:  # bit for bit (signed zeros differ), any NaN for a NaN
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[src.nbytes]
        same = (back.view(bits) == x.view(bits)) | (x.isnan() & back.isnan())
    else:
        same = back == x
    if E.cast_is_exact(src.ir, dst.ir):
        assert bool(same.all())
    elif src.is_float:  # float -> integer is never called exact (NaN has no integer)
        assert not bool(same.all())


def test_util_arithmetic():
    assert numel(()) == 1 and numel((3, 0, 2)) == 0 and numel([4, 5]) == 20
    assert [ceil_div(n, 4) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
    assert [align_up(n, 256) for n in (0, 1, 256, 257)] == [0, 256, 256, 512]
    with pytest.raises(ValueError):
        ceil_div(1, 0)
