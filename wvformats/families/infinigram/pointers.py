"""What building and reading an infini-gram index share: the separator token of a token width, and k-byte
little-endian unsigned integers (suffix-array pointers) as numpy arrays, vectorised.

infini-gram tables store each pointer in the fewest whole bytes that hold the largest byte offset; numpy
has no k-byte integer type, so the bytes are read as a ``(n, k)`` uint8 view and widened to ``<u8``.
"""

from __future__ import annotations

import numpy as np

from ...schemas.infinigram import pointer


def sep(width: int) -> int:
    """The separator token of ``width``-byte tokens (all bits set), which starts every document."""
    return (1 << (8 * width)) - 1


def decode(raw: np.ndarray | bytes | memoryview, k: int) -> np.ndarray:
    """``n * k`` bytes -> ``n`` little-endian unsigned values as ``uint64``."""
    u8 = np.frombuffer(raw, np.uint8) if not isinstance(raw, np.ndarray) else raw.reshape(-1).view(np.uint8)
    if k < 1 or k > 8 or u8.size % k:
        raise ValueError(f"{u8.size} bytes are not whole {k}-byte pointers")
    wide = np.zeros((u8.size // k, 8), np.uint8)
    wide[:, :k] = u8.reshape(-1, k)
    return wide.view("<u8").reshape(-1)


def encode(values: np.ndarray, k: int) -> np.ndarray:
    """Values -> their low ``k`` little-endian bytes each, as a flat uint8 array (checked to fit)."""
    v = np.ascontiguousarray(values, "<u8")
    if k < 8 and v.size and int(v.max()) >> (8 * k):
        raise ValueError(f"a value does not fit in {k} bytes")
    return v.view(np.uint8).reshape(-1, 8)[:, :k].reshape(-1).copy()


def at(raw: bytes | memoryview, k: int, i: int) -> int:
    """The ``i``-th pointer, without decoding the table (for binary searches over an mmap)."""
    return pointer(raw[i * k : (i + 1) * k])
