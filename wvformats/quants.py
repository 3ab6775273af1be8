"""ggml block (de)quantization as vectorised numpy, bit-identical to ggml's reference C functions.

Version 101 layouts (ggml today) and version 100 (ggml ff6e03cb: f32 scales for Q4_0/Q4_1/Q8_0, Q4_2,
interleaved nibbles, roundf in Q4_0/Q4_1). All arithmetic is float32 with one rounding per operation, as in C built
without FMA; quantizers use the unrounded float32 scale and store it rounded to fp16; integer casts
truncate toward zero; Q8_0 rounds half away from zero (C ``roundf``).
"""

from __future__ import annotations

import numpy as np

from .schemas.ggml import BLOCKS

F32 = np.float32


def _blocks(x: np.ndarray, size: int) -> np.ndarray:
    x = np.asarray(x, F32)
    if x.size % size:
        raise ValueError(f"{x.size} values do not fill blocks of {size}")
    return x.reshape(-1, size)


def _nibbles(qs: np.ndarray, version: int = 101) -> np.ndarray:
    """u8[k] per block -> 2k values. v101: low nibbles are the first half, high nibbles the second;
    v100: interleaved (``qs[i] = q[2i] | q[2i+1] << 4``)."""
    lo, hi = (qs & 0x0F).astype(np.int32), (qs >> 4).astype(np.int32)
    if version == 100:
        return np.stack([lo, hi], axis=2).reshape(len(qs), -1)
    return np.concatenate([lo, hi], axis=1)


def _pack_nibbles(q: np.ndarray, version: int = 101) -> np.ndarray:
    half = q.shape[1] // 2
    if version == 100:
        return ((q[:, 0::2] & 0xF) | ((q[:, 1::2] & 0xF) << 4)).astype(np.uint8)
    return ((q[:, :half] & 0xF) | ((q[:, half:] & 0xF) << 4)).astype(np.uint8)


def _high_bits(qh: np.ndarray) -> np.ndarray:
    return ((qh[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int32)


def _pack_high_bits(q: np.ndarray) -> np.ndarray:
    bits = ((q >> 4) & 1).astype(np.uint32)
    return (bits << np.arange(32, dtype=np.uint32)).sum(axis=1, dtype=np.uint64).astype("<u4")


def dequantize(blocks: np.ndarray, type_name: str, version: int = 101) -> np.ndarray:
    """Blocks of ``type_name`` (a structured array in the layout of ``version``) -> float32 values, flat."""
    b = np.asarray(blocks).reshape(-1)
    if type_name == "FP32":
        return b.astype(F32)
    if type_name == "FP16":
        return b.astype(F32)
    d = b["d"].astype(F32)[:, None]
    if type_name == "Q8_0":
        return (b["qs"].astype(F32) * d).reshape(-1)
    if type_name in ("Q4_0", "Q4_1", "Q4_2"):
        q = _nibbles(b["qs"], version)
    elif type_name in ("Q5_0", "Q5_1"):
        q = _nibbles(b["qs"], version) | (_high_bits(b["qh"]) << 4)
    else:
        raise NotImplementedError(f"dequantizing {type_name} is not implemented")
    if type_name in ("Q4_0", "Q4_2"):
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


def _roundf(v: np.ndarray) -> np.ndarray:
    """C roundf: half away from zero, exactly (floor(v + 0.5) would round 0.49999997 up in float32)."""
    t = np.trunc(v)
    return t + np.where(np.abs(v - t) >= F32(0.5), np.sign(v), F32(0))


def _trunc_i8(v: np.ndarray) -> np.ndarray:
    """C's (int8_t) cast of a float: truncation toward zero (values here stay in range)."""
    return np.trunc(v).astype(np.int32)


def quantize(values: np.ndarray, type_name: str, version: int = 101) -> np.ndarray:
    """float32 values -> blocks of ``type_name`` in the layout of ``version``, as ggml's reference quantizer."""
    found = [v for v in BLOCKS[version].values() if v[0] == type_name]
    if not found:
        raise ValueError(f"version {version} has no type {type_name}")
    _, block, dtype = found[0]
    if type_name in ("FP32", "FP16"):
        return np.asarray(values, dtype).reshape(-1)
    x = _blocks(values, block)
    out = np.zeros(len(x), dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if type_name == "Q8_0":
            d = (np.abs(x).max(axis=1) / F32(127)).astype(F32)
            out["qs"] = _roundf((x * _inverse(d)[:, None]).astype(F32)).astype(np.int8)
        elif type_name == "Q4_0" and version == 100:
            d = (_signed_max(x) / F32(-8)).astype(F32)
            v = (x * _inverse(d)[:, None]).astype(F32)
            out["qs"] = _pack_nibbles(np.minimum(15, _roundf(v).astype(np.int32) + 8), version)
        elif type_name in ("Q4_0", "Q5_0", "Q4_2"):
            half = 16 if type_name == "Q5_0" else 8
            d = (_signed_max(x) / F32(-half)).astype(F32)
            v = (x * _inverse(d)[:, None]).astype(F32) + F32(half + 0.5)
            q = np.minimum(2 * half - 1, _trunc_i8(v.astype(F32)))
            out["qs"] = _pack_nibbles(q, version)
            if type_name == "Q5_0":
                out["qh"] = _pack_high_bits(q)
        elif type_name in ("Q4_1", "Q5_1"):
            top = 15 if type_name == "Q4_1" else 31
            lo, hi = np.nanmin(x, axis=1), np.nanmax(x, axis=1)
            d = ((hi - lo) / F32(top)).astype(F32)
            v = ((x - lo[:, None]).astype(F32) * _inverse(d)[:, None]).astype(F32)
            if type_name == "Q4_1" and version == 100:
                q = _roundf(v).astype(np.int32)  # roundf, no clamp
            else:
                q = _trunc_i8((v + F32(0.5)).astype(F32))
                if type_name == "Q4_1":
                    q = np.minimum(15, q)
            out["qs"] = _pack_nibbles(q, version)
            out["m"] = lo.astype(out.dtype["m"])
            if type_name == "Q5_1":
                out["qh"] = _pack_high_bits(q)
        else:
            raise NotImplementedError(f"quantizing {type_name} is not implemented")
        out["d"] = d.astype(out.dtype["d"])
    return out
