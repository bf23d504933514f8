"""Small arithmetic shared by every layer: element counts, rounding up.

Plain Python, no imports of the rest of the package (any module may use it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def numel(shape: Iterable[int]) -> int:
    """Number of elements of a tensor of this shape (1 for a scalar, shape ())."""
    return math.prod(int(d) for d in shape)


def strides(shape: Iterable[int]) -> list[int]:
    """Element strides of a dense row-major tensor of this shape."""
    out, acc = [], 1
    for d in reversed(list(shape)):
        out.append(acc)
        acc *= int(d)
    return out[::-1]


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, for a >= 0 and b > 0 (how many b-sized pieces cover a)."""
    if b <= 0:
        raise ValueError(f"ceil_div by {b}")
    return -(-a // b)


def align_up(n: int, alignment: int) -> int:
    """The smallest multiple of `alignment` that is >= n."""
    return ceil_div(n, alignment) * alignment
