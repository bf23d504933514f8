"""Element types of the IR <-> torch dtypes."""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IntegerType
from xdsl.ir import Attribute

_FLOATS = {Float32Type: torch.float32, BFloat16Type: torch.bfloat16, Float16Type: torch.float16}


def torch_dtype(element_type: Attribute) -> torch.dtype:
    for cls, dtype in _FLOATS.items():
        if isinstance(element_type, cls):
            return dtype
    if isinstance(element_type, IntegerType):
        return {1: torch.bool, 64: torch.int64}[element_type.width.data]
    raise TypeError(f"no torch dtype for IR element type {element_type}")
