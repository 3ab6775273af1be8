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
    q = q.astype(np.uint8) & 0xF
    if version == 100:
        return q[:, 0::2] | (q[:, 1::2] << 4)
    half = q.shape[1] // 2
    return q[:, :half] | (q[:, half:] << 4)


def _high_bits(qh: np.ndarray) -> np.ndarray:
    """u32 per block -> its 32 bits, bit j for value j."""
    qh = np.ascontiguousarray(qh, "<u4")
    return np.unpackbits(qh.view(np.uint8).reshape(-1, 4), axis=1, bitorder="little")


def _pack_high_bits(q: np.ndarray) -> np.ndarray:
    bits = ((q >> 4) & 1).astype(np.uint8)
    return np.packbits(bits, axis=1, bitorder="little").view("<u4").reshape(-1)


CHUNK = 4096  # blocks per step: temporaries stay in cache (2-3x faster than whole-matrix passes)


def dequantize(blocks: np.ndarray, type_name: str, version: int = 101) -> np.ndarray:
    """Blocks of ``type_name`` (a structured array in the layout of ``version``) -> float32 values, flat."""
    b = np.asarray(blocks).reshape(-1)
    if type_name in ("FP32", "FP16"):
        return b.astype(F32, copy=False)
    if len(b) <= CHUNK:
        return _dequantize(b, type_name, version)
    per = _dequantize(b[:1], type_name, version).size
    out = np.empty(len(b) * per, F32)
    for i in range(0, len(b), CHUNK):
        out[i * per : (i + CHUNK) * per] = _dequantize(b[i : i + CHUNK], type_name, version)
    return out


def _dequantize(b: np.ndarray, type_name: str, version: int) -> np.ndarray:
    d = b["d"].astype(F32, copy=False)[:, None]
    if type_name == "Q8_0":
        return (b["qs"].astype(F32, copy=False) * d).reshape(-1)
    if type_name in ("Q4_0", "Q4_1", "Q4_2"):
        q = _nibbles(b["qs"], version)
    elif type_name in ("Q5_0", "Q5_1"):
        q = _nibbles(b["qs"], version) | (_high_bits(b["qh"]).astype(np.int32) << 4)
    else:
        raise NotImplementedError(f"dequantizing {type_name} is not implemented")
    if type_name in ("Q4_0", "Q4_2"):
        return ((q - 8).astype(F32, copy=False) * d).reshape(-1)
    if type_name == "Q5_0":
        return ((q - 16).astype(F32, copy=False) * d).reshape(-1)
    m = b["m"].astype(F32, copy=False)[:, None]
    return (q.astype(F32, copy=False) * d + m).reshape(-1)


def _signed_max(x: np.ndarray) -> np.ndarray:
    """Per block, the first value (in index order) with the strictly greatest magnitude."""
    return x[np.arange(len(x)), np.argmax(np.abs(x), axis=1)]


def _inverse(d: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(d != 0, F32(1) / np.where(d != 0, d, F32(1)), F32(0)).astype(F32, copy=False)


def _roundf(v: np.ndarray) -> np.ndarray:
    """C roundf: half away from zero, exactly. ``rint`` rounds ties to even; only exact ties (v - rint(v)
    = +-0.5, exact in float32) are moved away from zero (floor(v + 0.5) would round 0.49999997 up)."""
    r = np.rint(v)
    tie = np.flatnonzero(np.abs(v - r) == F32(0.5))
    if tie.size:
        flat, fv = r.reshape(-1), v.reshape(-1)
        flat[tie] = fv[tie] + np.copysign(F32(0.5), fv[tie])
    return r


def _trunc_i8(v: np.ndarray) -> np.ndarray:
    """C's (int8_t) cast of a float: truncation toward zero (values here stay in range), as numpy's cast."""
    return v.astype(np.int32)


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
    for i in range(0, len(x), CHUNK):
        _quantize(x[i : i + CHUNK], out[i : i + CHUNK], type_name, version)
    return out


def _quantize(x: np.ndarray, out: np.ndarray, type_name: str, version: int) -> None:
    with np.errstate(over="ignore", invalid="ignore"):
        if type_name == "Q8_0":
            d = (np.abs(x).max(axis=1) / F32(127)).astype(F32, copy=False)
            out["qs"] = _roundf((x * _inverse(d)[:, None]).astype(F32, copy=False)).astype(np.int8)
        elif type_name == "Q4_0" and version == 100:
            d = (_signed_max(x) / F32(-8)).astype(F32, copy=False)
            v = (x * _inverse(d)[:, None]).astype(F32, copy=False)
            out["qs"] = _pack_nibbles(np.minimum(15, _roundf(v).astype(np.int32) + 8), version)
        elif type_name in ("Q4_0", "Q5_0", "Q4_2"):
            half = 16 if type_name == "Q5_0" else 8
            d = (_signed_max(x) / F32(-half)).astype(F32, copy=False)
            v = (x * _inverse(d)[:, None]).astype(F32, copy=False) + F32(half + 0.5)
            q = np.minimum(2 * half - 1, _trunc_i8(v.astype(F32, copy=False)))
            out["qs"] = _pack_nibbles(q, version)
            if type_name == "Q5_0":
                out["qh"] = _pack_high_bits(q)
        elif type_name in ("Q4_1", "Q5_1"):
            top = 15 if type_name == "Q4_1" else 31
            lo, hi = np.fmin.reduce(x, axis=1), np.fmax.reduce(x, axis=1)  # NaNs skipped, as C's compares
            d = ((hi - lo) / F32(top)).astype(F32, copy=False)
            v = ((x - lo[:, None]).astype(F32, copy=False) * _inverse(d)[:, None]).astype(F32, copy=False)
            if type_name == "Q4_1" and version == 100:
                q = _roundf(v).astype(np.int32)  # roundf, no clamp
            else:
                q = _trunc_i8((v + F32(0.5)).astype(F32, copy=False))
                if type_name == "Q4_1":
                    q = np.minimum(15, q)
            out["qs"] = _pack_nibbles(q, version)
            out["m"] = lo.astype(out.dtype["m"])
            if type_name == "Q5_1":
                out["qh"] = _pack_high_bits(q)
        else:
            raise NotImplementedError(f"quantizing {type_name} is not implemented")
        out["d"] = d.astype(out.dtype["d"])
