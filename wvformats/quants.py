"""ggml block (de)quantization as vectorised numpy, bit-identical to ggml's reference C functions.

Version 101 layouts (ggml today). All arithmetic is float32 with one rounding per operation, as in C built
without FMA; quantizers use the unrounded float32 scale and store it rounded to fp16; integer casts
truncate toward zero; Q8_0 rounds half away from zero (C ``roundf``).
"""

from __future__ import annotations

import numpy as np

from .schemas.ggml import BLOCKS_V101

F32 = np.float32


def _blocks(x: np.ndarray, size: int) -> np.ndarray:
    x = np.asarray(x, F32)
    if x.size % size:
        raise ValueError(f"{x.size} values do not fill blocks of {size}")
    return x.reshape(-1, size)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """u8[16] per block -> 32 values: low nibbles are the first half, high nibbles the second."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int32)


def _pack_nibbles(q: np.ndarray) -> np.ndarray:
    return ((q[:, :16] & 0xF) | ((q[:, 16:] & 0xF) << 4)).astype(np.uint8)


def _high_bits(qh: np.ndarray) -> np.ndarray:
    return ((qh[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int32)


def _pack_high_bits(q: np.ndarray) -> np.ndarray:
    bits = ((q >> 4) & 1).astype(np.uint32)
    return (bits << np.arange(32, dtype=np.uint32)).sum(axis=1, dtype=np.uint64).astype("<u4")


def dequantize(blocks: np.ndarray, type_name: str) -> np.ndarray:
    """Blocks of ``type_name`` (a structured array in the v101 layout) -> float32 values, flat."""
    b = np.asarray(blocks).reshape(-1)
    if type_name == "FP32":
        return b.astype(F32)
    if type_name == "FP16":
        return b.astype(F32)
    d = b["d"].astype(F32)[:, None]
    if type_name == "Q8_0":
        return (b["qs"].astype(F32) * d).reshape(-1)
    if type_name in ("Q4_0", "Q4_1"):
        q = _nibbles(b["qs"])
    elif type_name in ("Q5_0", "Q5_1"):
        q = _nibbles(b["qs"]) | (_high_bits(b["qh"]) << 4)
    else:
        raise NotImplementedError(f"dequantizing {type_name} is not implemented")
    if type_name == "Q4_0":
        return ((q - 8).astype(F32) * d).reshape(-1)
    if type_name == "Q5_0":
        return ((q - 16).astype(F32) * d).reshape(-1)
    m = b["m"].astype(F32)[:, None]
    return (q.astype(F32) * d + m).reshape(-1)


def _signed_max(x: np.ndarray) -> np.ndarray:
    """Per block, the first value (in index order) with the strictly greatest magnitude."""
    return x[np.arange(len(x)), np.argmax(np.abs(x), axis=1)]


def _inverse(d: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(d != 0, F32(1) / np.where(d != 0, d, F32(1)), F32(0)).astype(F32)


def _trunc_i8(v: np.ndarray) -> np.ndarray:
    """C's (int8_t) cast of a float: truncation toward zero (values here stay in range)."""
    return np.trunc(v).astype(np.int32)


def quantize(values: np.ndarray, type_name: str) -> np.ndarray:
    """float32 values -> blocks of ``type_name`` in the v101 layout, as ggml's quantize_row_*_ref."""
    name, block, dtype = next(v for v in BLOCKS_V101.values() if v[0] == type_name)
    if type_name in ("FP32", "FP16"):
        return np.asarray(values, dtype).reshape(-1)
    x = _blocks(values, block)
    out = np.zeros(len(x), dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if type_name == "Q8_0":
            d = (np.abs(x).max(axis=1) / F32(127)).astype(F32)
            v = x * _inverse(d)[:, None]
            out["qs"] = np.where(v < 0, -np.floor(-v + F32(0.5)), np.floor(v + F32(0.5))).astype(np.int8)
        elif type_name in ("Q4_0", "Q5_0"):
            half = 8 if type_name == "Q4_0" else 16
            d = (_signed_max(x) / F32(-half)).astype(F32)
            v = (x * _inverse(d)[:, None]).astype(F32) + F32(half + 0.5)
            q = np.minimum(2 * half - 1, _trunc_i8(v.astype(F32)))
            out["qs"] = _pack_nibbles(q)
            if type_name == "Q5_0":
                out["qh"] = _pack_high_bits(q)
        elif type_name in ("Q4_1", "Q5_1"):
            top = 15 if type_name == "Q4_1" else 31
            lo, hi = np.nanmin(x, axis=1), np.nanmax(x, axis=1)
            d = ((hi - lo) / F32(top)).astype(F32)
            v = ((x - lo[:, None]).astype(F32) * _inverse(d)[:, None]).astype(F32) + F32(0.5)
            q = _trunc_i8(v.astype(F32)) if type_name == "Q5_1" else np.minimum(15, _trunc_i8(v.astype(F32)))
            out["qs"] = _pack_nibbles(q)
            out["m"] = lo.astype(np.float16)
            if type_name == "Q5_1":
                out["qh"] = _pack_high_bits(q)
        else:
            raise NotImplementedError(f"quantizing {type_name} is not implemented")
        out["d"] = d.astype(np.float16)
    return out
