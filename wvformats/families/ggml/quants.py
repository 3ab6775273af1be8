"""ggml block (de)quantization as vectorised numpy, bit-identical to ggml's reference C functions.

Version 101 layouts (ggml today) and version 100 (ggml ff6e03cb: f32 scales for Q4_0/Q4_1/Q8_0, Q4_2,
interleaved nibbles, roundf in Q4_0/Q4_1). All arithmetic is float32 with one rounding per operation, as in C built
without FMA; quantizers use the unrounded float32 scale and store it rounded to fp16; integer casts
truncate toward zero; Q8_0 rounds half away from zero (C ``roundf``).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ...schemas.ggml import BLOCKS, GGML_NAME, LAYOUTS
from .iq_grids import grid

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
    if type_name in ("FP32", "FP16", "F32", "F16"):
        return b.astype(F32, copy=False)
    if type_name in ("F64", "I8", "I16", "I32", "I64"):
        return b  # not floats of a block type: their own values
    if type_name == "BF16":  # the upper half of a float32
        return (b["bf16"].astype(np.uint32) << 16).view(F32)
    if len(b) <= CHUNK:
        return _dequantize(b, type_name, version)
    per = _dequantize(b[:1], type_name, version).size
    out = np.empty(len(b) * per, F32)
    for i in range(0, len(b), CHUNK):
        out[i * per : (i + CHUNK) * per] = _dequantize(b[i : i + CHUNK], type_name, version)
    return out


def _dequantize(b: np.ndarray, type_name: str, version: int) -> np.ndarray:
    if type_name in K_DEQUANT:
        return K_DEQUANT[type_name](b).reshape(-1)
    d = b["d"].astype(F32, copy=False)[:, None]
    if type_name == "Q8_0":
        return (b["qs"].astype(F32, copy=False) * d).reshape(-1)
    if type_name in ("Q4_0", "Q4_1", "Q4_2"):
        q = _nibbles(b["qs"], version)
    elif type_name in ("Q5_0", "Q5_1"):
        q = _nibbles(b["qs"], version) | (_high_bits(b["qh"]).astype(np.int32) << 4)
    elif type_name == "Q8_1":
        return (b["qs"].astype(F32, copy=False) * d).reshape(-1)
    else:
        raise NotImplementedError(f"dequantizing {type_name} is not implemented")
    if type_name in ("Q4_0", "Q4_2"):
        return ((q - 8).astype(F32, copy=False) * d).reshape(-1)
    if type_name == "Q5_0":
        return ((q - 16).astype(F32, copy=False) * d).reshape(-1)
    m = b["m"].astype(F32, copy=False)[:, None]
    return (q.astype(F32, copy=False) * d + m).reshape(-1)


# K-quants (super-blocks of 256 values in sub-blocks of 16 or 32, 4- to 6-bit scales), read-only here:
# vectorised transcriptions of ggml's dequantize_row_q*_K, float32 with one rounding per operation.


def _k_scale_min(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K's 12 scale bytes -> 8 six-bit scales and 8 six-bit mins (ggml's get_scale_min_k4)."""
    q = scales.astype(np.uint8)
    sc = np.empty((len(q), 8), np.uint8)
    mn = np.empty((len(q), 8), np.uint8)
    sc[:, :4], mn[:, :4] = q[:, 0:4] & 63, q[:, 4:8] & 63
    sc[:, 4:] = (q[:, 8:12] & 0xF) | ((q[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (q[:, 8:12] >> 4) | ((q[:, 4:8] >> 6) << 4)
    return sc.astype(F32), mn.astype(F32)


def _q2_k(b: np.ndarray) -> np.ndarray:
    n = len(b)
    d, dmin = b["d"].astype(F32)[:, None, None], b["dmin"].astype(F32)[:, None, None]
    sc = b["scales"].reshape(n, 16, 1)
    dl, ml = d * (sc & 0xF).astype(F32), dmin * (sc >> 4).astype(F32)
    q = (b["qs"].reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)) & 3
    return dl * q.reshape(n, 16, 16).astype(F32) - ml


def _q3_k(b: np.ndarray) -> np.ndarray:
    n = len(b)
    raw = b["scales"]
    low = (raw[:, None, 0:8] >> np.array([0, 4], np.uint8)[None, :, None]).reshape(n, 16) & 0xF
    high = (raw[:, None, 8:12] >> np.array([0, 2, 4, 6], np.uint8)[None, :, None]).reshape(n, 16) & 3
    sc = (low | (high << 4)).astype(np.int8).astype(np.int32) - 32
    dl = b["d"].astype(F32)[:, None, None] * sc.astype(F32).reshape(n, 16, 1)
    q = (b["qs"].reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)) & 3
    hbit = (b["hmask"][:, None, :] >> np.arange(8, dtype=np.uint8)[None, :, None]) & 1  # bit 4h + j
    v = q.reshape(n, 8, 32).astype(np.int8) - ((hbit ^ 1) << 2).astype(np.int8)
    return dl * v.reshape(n, 16, 16).astype(F32)


def _q4_k(b: np.ndarray, qh: np.ndarray | None = None) -> np.ndarray:
    n = len(b)
    sc, mn = _k_scale_min(b["scales"])
    d1 = b["d"].astype(F32)[:, None] * sc
    m1 = b["dmin"].astype(F32)[:, None] * mn
    qs = b["qs"].reshape(n, 4, 1, 32)
    q = (qs >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)) & 0xF  # sub-block 2c: low, 2c + 1: high
    q = q.reshape(n, 8, 32)
    if qh is not None:  # Q5_K: bit s of qh[l] is the fifth bit of sub-block s
        q = q | (((qh[:, None, :] >> np.arange(8, dtype=np.uint8)[None, :, None]) & 1) << 4)
    return d1[:, :, None] * q.astype(F32) - m1[:, :, None]


def _q5_k(b: np.ndarray) -> np.ndarray:
    return _q4_k(b, b["qh"])


def _q6_k(b: np.ndarray) -> np.ndarray:
    n = len(b)
    ql = b["ql"].reshape(n, 2, 2, 32)
    ql4 = np.concatenate([ql & 0xF, ql >> 4], axis=2)  # q1..q4: low/high nibbles of ql[0:32], ql[32:64]
    qh4 = (b["qh"].reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)) & 3
    q = (ql4 | (qh4 << 4)).astype(np.int8) - np.int8(32)
    sc = b["scales"].reshape(n, 2, 4, 2, 1).astype(F32)  # q_g of row l uses scale 2g + l // 16
    ds = b["d"].astype(F32)[:, None, None, None, None] * sc
    return ds * q.reshape(n, 2, 4, 2, 16).astype(F32)


def _q8_k(b: np.ndarray) -> np.ndarray:
    return b["d"].astype(F32)[:, None] * b["qs"].astype(F32)


# GGUF's further types with a small table or none
_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], F32)  # kvalues_iq4nl
_FP4 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], F32)  # kvalues_mxfp4: 2 x E2M1
_POW3 = np.array([1, 3, 9, 27, 81], np.uint8)


def _e8m0_half(e: np.ndarray) -> np.ndarray:
    """ggml's GGML_E8M0_TO_FP32_HALF: 2^(e - 128) as float32 bits (subnormal for e < 2)."""
    e = e.astype(np.uint32)
    return np.where(e < 2, np.uint32(0x00200000) << e, (e - 1) << 23).astype(np.uint32).view(F32)


# TQ1_0's base-3 digits of each fixed-point byte, most significant first (``(q * 3^n mod 256) * 3 >> 8``),
# minus 1, as float32: one gather per byte instead of the arithmetic
_TRITS = ((((np.arange(256, dtype=np.uint16)[:, None] * _POW3) & 0xFF) * 3 >> 8).astype(F32) - 1).T.copy()


def _tq1_0(b: np.ndarray) -> np.ndarray:
    n = len(b)
    out = np.empty((n, 256), F32)
    # value 32 digit + byte, gathered straight into the output's (digit, block, byte) view (np.take with
    # out=: 2x faster than a fancy-indexed copy, then a transposed assignment); bytes are < 256, so "clip"
    # checks nothing
    np.take(_TRITS, b["qs"][:, :32], axis=1, out=out[:, :160].reshape(n, 5, 32).transpose(1, 0, 2), mode="clip")
    np.take(_TRITS, b["qs"][:, 32:48], axis=1, out=out[:, 160:240].reshape(n, 5, 16).transpose(1, 0, 2),
            mode="clip")
    np.take(_TRITS[:4], b["qh"], axis=1, out=out[:, 240:].reshape(n, 4, 4).transpose(1, 0, 2), mode="clip")
    out *= b["d"].astype(F32)[:, None]
    return out


def _tq2_0(b: np.ndarray) -> np.ndarray:
    n = len(b)
    q = (b["qs"].reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)) & 3
    return (q.reshape(n, 256).astype(np.int8) - 1).astype(F32) * b["d"].astype(F32)[:, None]


def _mxfp4(b: np.ndarray) -> np.ndarray:
    q = np.concatenate([b["qs"] & 0xF, b["qs"] >> 4], axis=1)
    return _FP4[q] * _e8m0_half(b["e"])[:, None]


def _ue4m3_half() -> np.ndarray:
    """ggml_ue4m3_to_fp32 of every byte (exponent bits 3-6, bias 7; 0 and 0x7F are 0), halved as kvalues_mxfp4
    are doubled: all exact in float32."""
    x = np.arange(256)
    exp, man = (x >> 3) & 0xF, x & 7
    raw = np.where(exp == 0, man * 2.0**-9, (1 + man / 8) * 2.0 ** (exp - 7))
    raw[[0, 0x7F]] = 0
    return (raw * 0.5).astype(F32)


_UE4M3_HALF = _ue4m3_half()


def _nvfp4(b: np.ndarray) -> np.ndarray:
    n = len(b)
    qs = b["qs"].reshape(n, 4, 8)  # 4 sub-blocks of 16 values: low nibbles first, then high
    q = np.concatenate([qs & 0xF, qs >> 4], axis=2)
    return _FP4[q] * _UE4M3_HALF[b["d"]][:, :, None]


def _iq4_nl(b: np.ndarray) -> np.ndarray:
    q = np.concatenate([b["qs"] & 0xF, b["qs"] >> 4], axis=1)
    return b["d"].astype(F32)[:, None] * _IQ4NL[q]


def _iq4_xs(b: np.ndarray) -> np.ndarray:
    n = len(b)
    ib = np.arange(8)
    low = (b["scales_l"][:, ib // 2] >> (4 * (ib % 2)).astype(np.uint8)) & 0xF
    high = (b["scales_h"][:, None].astype(np.int32) >> (2 * ib)) & 3
    dl = b["d"].astype(F32)[:, None] * ((low.astype(np.int32) | (high << 4)) - 32).astype(F32)
    qs = b["qs"].reshape(n, 8, 16)
    q = np.concatenate([qs & 0xF, qs >> 4], axis=2)
    return dl[:, :, None] * _IQ4NL[q]


# IQ2/IQ3/IQ1: super-blocks of 256 values whose groups of 8 (IQ3: 4) are one entry of a lattice grid
# (iq_grids.py), scaled per 32 or 16 values. Transcriptions of ggml's dequantize_row_iq*: every product
# of a fp16 scale, a sub-block factor and a grid byte has at most 24 significant bits, so it is exact in
# float32 whatever the order, and the signs are multiplied in as +-1 from a table.

# ksigns_iq2xs: 7 sign bits and an eighth that makes the count of minus signs even
_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")  # bit j of each byte
_KSIGNS = (np.arange(128) | ((_BITS[:128].sum(axis=1, dtype=np.int64) & 1) << 7)).astype(np.uint8)
_SIGNS8 = np.where(_BITS == 1, F32(-1), F32(1))  # a sign byte -> its 8 signs (kmask_iq2xs[j] = 1 << j)
_SIGNS7 = _SIGNS8[_KSIGNS]  # 7 stored sign bits -> 8 signs
_SHIFT7 = np.array([0, 7, 14, 21], np.uint32)


@cache
def _lattice(name: str) -> np.ndarray:
    """ggml's grid ``name`` as float32; iq1s_grid as two tables, its values + IQ1S_DELTA then - IQ1S_DELTA,
    indexed by the delta's sign bit above the 11 bits of the entry."""
    g = grid(name).astype(F32)
    if name == "iq1s_grid":
        g = np.concatenate([g + F32(0.125), g - F32(0.125)])
    g.flags.writeable = False
    return g


def _nibble_scales(scales: np.ndarray) -> np.ndarray:
    """u8[k] -> 2k four-bit factors, low nibble first, as float32."""
    return np.stack([scales & 0xF, scales >> 4], axis=-1).reshape(len(scales), 2 * scales.shape[1]).astype(F32)


def _quarter(b: np.ndarray, k: np.ndarray, half: float = 0.25) -> np.ndarray:
    """ggml's ``d * (0.5f + k) * 0.25f`` (IQ3_XXS: ``* 0.5f``) for each block's fp16 d."""
    return b["d"].astype(F32)[:, None] * (F32(0.5) + k.astype(F32)) * F32(half)


def _iq2_xxs(b: np.ndarray) -> np.ndarray:
    n = len(b)
    raw = np.ascontiguousarray(b["qs"]).view(np.uint8).reshape(n, 8, 8)  # per 32 values: 4 grid bytes, aux
    aux = raw.view("<u4")[:, :, 1]  # 4 x 7 sign bits, then the 4-bit factor
    db = _quarter(b, aux >> 28)
    out = _lattice("iq2xxs_grid")[raw[:, :, :4]]
    out *= _SIGNS7[(aux[:, :, None] >> _SHIFT7) & 127]
    out *= db[:, :, None, None]
    return out


def _iq2_xs(b: np.ndarray) -> np.ndarray:
    n = len(b)
    qs = b["qs"]  # 9 bits of grid entry, 7 sign bits
    db = _quarter(b, _nibble_scales(b["scales"]))  # one per 16 values
    out = _lattice("iq2xs_grid")[qs & 511]
    out *= _SIGNS7[qs >> 9]
    out.reshape(n, 16, 16)[...] *= db[:, :, None]
    return out


def _iq2_s(b: np.ndarray) -> np.ndarray:
    n = len(b)
    qs = b["qs"]  # 32 low bytes of grid entries, then 32 sign bytes
    high = (b["qh"][:, :, None] >> np.array([0, 2, 4, 6], np.uint8)) & 3  # bits 8-9 of entry 4 i + l
    idx = qs[:, :32].astype(np.uint16) | (high.reshape(n, 32).astype(np.uint16) << 8)
    db = _quarter(b, _nibble_scales(b["scales"]))
    out = _lattice("iq2s_grid")[idx]
    out *= _SIGNS8[qs[:, 32:]]
    out.reshape(n, 16, 16)[...] *= db[:, :, None]
    return out


def _iq3_xxs(b: np.ndarray) -> np.ndarray:
    n = len(b)
    qs = b["qs"]  # 64 grid bytes (4 values each), then 8 u32: 4 x 7 sign bits and a 4-bit factor
    aux = np.ascontiguousarray(qs[:, 64:]).view("<u4")
    db = _quarter(b, aux >> 28, 0.5)
    out = _lattice("iq3xxs_grid")[qs[:, :64]].reshape(n, 8, 4, 8)
    out *= _SIGNS7[(aux[:, :, None] >> _SHIFT7) & 127]
    out *= db[:, :, None, None]
    return out


def _iq3_s(b: np.ndarray) -> np.ndarray:
    n = len(b)
    high = np.unpackbits(b["qh"], axis=1, bitorder="little")  # bit 8 of entry k: bit k % 8 of qh[k // 8]
    idx = b["qs"].astype(np.uint16) | (high.astype(np.uint16) << 8)
    db = b["d"].astype(F32)[:, None] * (1 + 2 * _nibble_scales(b["scales"]))  # d * (1 + 2 k)
    out = _lattice("iq3s_grid")[idx].reshape(n, 32, 8)
    out *= _SIGNS8[b["signs"]]
    out.reshape(n, 8, 32)[...] *= db[:, :, None]
    return out


def _iq1_s(b: np.ndarray) -> np.ndarray:
    n = len(b)
    qh = b["qh"]  # per 32 values: 4 x 3 high bits of the entries, a 3-bit factor, the delta's sign
    high = (qh[:, :, None] >> np.array([0, 3, 6, 9], np.uint16)) & 7
    idx = b["qs"].reshape(n, 8, 4).astype(np.uint16) | (high << 8) | ((qh[:, :, None] >> 15) << 11)
    dl = b["d"].astype(F32)[:, None] * (2 * ((qh >> 12) & 7) + 1).astype(F32)
    out = _lattice("iq1s_grid")[idx]
    out *= dl[:, :, None, None]
    return out


def _iq1_m(b: np.ndarray) -> np.ndarray:
    n = len(b)
    sc = np.ascontiguousarray(b["scales"]).view("<u2")  # 4 x (4 x 3-bit factors, a nibble of the fp16 d)
    d = ((sc[:, 0] >> 12) | ((sc[:, 1] >> 8) & 0xF0) | ((sc[:, 2] >> 4) & 0xF00) | (sc[:, 3] & 0xF000))
    factors = (sc[:, :, None] >> np.array([0, 3, 6, 9], np.uint16)) & 7  # one per 16 values
    dl = d.view("<f2").astype(F32)[:, None] * (2 * factors.reshape(n, 16) + 1).astype(F32)
    nib = np.stack([b["qh"] & 0xF, b["qh"] >> 4], axis=-1).reshape(n, 32)  # 3 high bits, the delta's sign
    idx = b["qs"].astype(np.uint16) | (nib.astype(np.uint16) << 8)
    out = _lattice("iq1s_grid")[idx].reshape(n, 16, 16)
    out *= dl[:, :, None]
    return out


K_DEQUANT = {"Q2_K": _q2_k, "Q3_K": _q3_k, "Q4_K": _q4_k, "Q5_K": _q5_k, "Q6_K": _q6_k, "Q8_K": _q8_k,
             "TQ1_0": _tq1_0, "TQ2_0": _tq2_0, "MXFP4": _mxfp4, "NVFP4": _nvfp4, "IQ4_NL": _iq4_nl,
             "IQ4_XS": _iq4_xs, "IQ2_XXS": _iq2_xxs, "IQ2_XS": _iq2_xs, "IQ2_S": _iq2_s, "IQ3_XXS": _iq3_xxs,
             "IQ3_S": _iq3_s, "IQ1_S": _iq1_s, "IQ1_M": _iq1_m}


# The scales follow ggml's C loops on NaN and signed zero too (gguf's numpy port does not, see the tests). Only
# per-block work is added: blocks with a NaN or a zero extreme are few, and they alone are looked at again.


def _signed_max(x: np.ndarray) -> np.ndarray:
    """Per block, the first value (in index order) with the strictly greatest magnitude, as ggml's
    ``if (amax < fabsf(v)) { amax = fabsf(v); max = v; }`` from ``amax = max = 0.0f``: the compare skips NaNs,
    and a block with no magnitude above 0 keeps +0.0 (even when its first value is -0.0)."""
    m = x[np.arange(len(x)), np.argmax(np.abs(x), axis=1)]  # argmax takes the first NaN for the greatest
    nan = np.flatnonzero(np.isnan(m))
    if nan.size:
        m[nan] = x[nan, np.argmax(np.fmax(np.abs(x[nan]), F32(0)), axis=1)]  # fmax: NaN -> 0
    m[~(np.abs(m) > 0)] = 0
    return m


def _abs_max(x: np.ndarray) -> np.ndarray:
    """Per block, ggml's ``amax = MAX(amax, fabsf(v))`` from 0 with ``MAX(a, b) = a > b ? a : b``: a NaN
    becomes amax and gives way to the next value, so only the values after a block's last NaN count (amax is
    that NaN when it is the last value)."""
    a = np.abs(x).max(axis=1)  # NaN for a block with a NaN
    nan = np.flatnonzero(np.isnan(a))
    if nan.size:
        v = np.abs(x[nan])
        last = v.shape[1] - 1 - np.argmax(np.isnan(v)[:, ::-1], axis=1)
        after = np.where(np.arange(v.shape[1]) > last[:, None], v, F32(0)).max(axis=1)
        a[nan] = np.where(last == v.shape[1] - 1, v[np.arange(len(v)), last], after)
    return a


def _min_max(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per block, ggml's ``if (v < min) min = v; if (v > max) max = v;`` from ``min = FLT_MAX``,
    ``max = -FLT_MAX``: NaNs and infinities past the initial values are skipped, and a zero extreme is the
    block's first zero, with its sign (the first of equal values stays)."""
    top = F32(np.finfo(F32).max)
    lo, hi = np.fmin.reduce(x, axis=1, initial=top), np.fmax.reduce(x, axis=1, initial=-top)
    for ext in (lo, hi):
        zero = np.flatnonzero(ext == 0)
        if zero.size:
            ext[zero] = x[zero, np.argmax(x[zero] == 0, axis=1)]
    return lo, hi


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


# the GGUF types quantize() writes (the k-quants, i-quants, NVFP4, Q1_0 and Q2_0 are read only)
WRITTEN = ("F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
           "TQ1_0", "TQ2_0", "MXFP4")


def quantize(values: np.ndarray, type_name: str, version: int = 101) -> np.ndarray:
    """float32 values -> blocks of ``type_name`` in the layout of ``version``, as ggml's reference quantizer.

    ``version`` 100 or 101 are rwkv.cpp's layouts; GGUF's are 101's, with every ggml type (``LAYOUTS``)."""
    if version == 100:
        found = [v[1:] for v in BLOCKS[version].values() if v[0] == type_name]
    else:
        found = [LAYOUTS[GGML_NAME.get(type_name, type_name)]] if GGML_NAME.get(type_name, type_name) in LAYOUTS \
            else []
    if not found:
        raise ValueError(f"version {version} has no type {type_name}")
    block, dtype = found[0]
    if type_name in ("FP32", "FP16", "F32", "F16", "F64", "I8", "I16", "I32", "I64"):
        return np.asarray(values, dtype).reshape(-1)
    if type_name == "BF16":
        return _bf16(np.asarray(values, F32).reshape(-1)).view(dtype)
    x = _blocks(values, block)
    out = np.zeros(len(x), dtype)
    for i in range(0, len(x), CHUNK):
        _quantize(x[i : i + CHUNK], out[i : i + CHUNK], type_name, version)
    return out


def _pack_trits(q: np.ndarray) -> np.ndarray:
    """(blocks, 5, m) digits 0..2, most significant first -> m bytes: the base-3 number as a fixed-point
    fraction of 256, rounded up (TQ1_0's ``(q * 256 + 242) / 243``)."""
    n = np.zeros(q[:, 0].shape, np.int32)
    for k in range(5):
        n = (n * 3 + q[:, k]) & 0xFF  # (a uint8 in ggml)
    return ((n * 256 + 242) // 243).astype(np.uint8)


def _bf16(x: np.ndarray) -> np.ndarray:
    """ggml's fp32 -> bf16: round to nearest even on the upper 16 bits; a NaN keeps its upper bits, made quiet."""
    n = x.view(np.uint32)
    nan = (n & 0x7FFFFFFF) > 0x7F800000
    rounded = n + ((n >> 16) & 1)  # (no overflow short of a NaN, which is replaced below)
    rounded += 0x7FFF
    out = (rounded >> 16).astype(np.uint16)
    if nan.any():
        out[nan] = (n[nan] >> 16) | 64
    return out


# midpoints between the positive E2M1 codes (0, 1, 2, 3, 4, 6, 8, 12), in units of the block's scale
_FP4_MIDS = (_FP4[:7] + _FP4[1:8]) / F32(2)


def _nearest_fp4(a: np.ndarray, half: np.ndarray) -> np.ndarray:
    """ggml's best_index_mxfp4 over the positive codes for magnitudes ``a`` (NaN: 0): the first code of least
    error ``|k e - a|``, counted as the midpoints ``a`` is above (a tie is the lower code). Exact for a finite
    block maximum: then ``a <= 16 e``, the two codes around ``a`` are within a factor of two of it, so
    their errors are exact float32 differences (Sterbenz), and a farther code's error is greater by ``e``."""
    j = np.zeros(a.shape, np.uint8)
    for mid in _FP4_MIDS:
        j += a > mid * half  # (mid * half: a small multiple of a power of two, exact)
    return j


def _quantize(x: np.ndarray, out: np.ndarray, type_name: str, version: int) -> None:
    with np.errstate(over="ignore", invalid="ignore"):
        if type_name in ("Q8_0", "Q8_1"):
            d = (_abs_max(x) / F32(127)).astype(F32, copy=False)
            out["qs"] = _roundf((x * _inverse(d)[:, None]).astype(F32, copy=False)).astype(np.int8)
            if type_name == "Q8_1":  # s = fp16(sum(qs) * d), the sum as a C int
                out["s"] = (out["qs"].sum(axis=1, dtype=np.int32).astype(F32) * d).astype(out.dtype["s"])
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
            lo, hi = _min_max(x)
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
        elif type_name in ("TQ1_0", "TQ2_0"):
            d = _abs_max(x)
            q = (_roundf((x * _inverse(d)[:, None]).astype(F32, copy=False)) + 1).astype(np.int32)
            if type_name == "TQ2_0":  # value 128 j + 32 n + m in bits 2n of byte 32 j + m
                v = (q.reshape(-1, 2, 4, 32) & 3).astype(np.uint8)
                out["qs"] = (v[:, :, 0] | (v[:, :, 1] << 2) | (v[:, :, 2] << 4) | (v[:, :, 3] << 6)).reshape(-1, 64)
            else:
                out["qs"][:, :32] = _pack_trits(q[:, :160].reshape(-1, 5, 32))
                out["qs"][:, 32:] = _pack_trits(q[:, 160:240].reshape(-1, 5, 16))
                out["qh"] = _pack_trits(np.concatenate([q[:, 240:].reshape(-1, 4, 4),
                                                        np.zeros((len(q), 1, 4), np.int32)], axis=1))
        elif type_name == "MXFP4":
            amax = np.fmax.reduce(np.abs(x), axis=1, initial=F32(0))  # NaNs skipped, as ggml's amax loop
            e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, F32(1)))) - 2 + 127, 0)
            e = e.astype(np.int32).astype(np.uint8)
            half = _e8m0_half(e)[:, None]
            j = _nearest_fp4(np.abs(x), half)
            odd = np.flatnonzero(np.isinf(amax))  # (a garbage exponent, as in ggml: the errors decide)
            if odd.size:
                err = np.abs((_FP4[None, None, :8] * half[odd, :, None]).astype(F32) - np.abs(x[odd])[:, :, None])
                j[odd] = np.argmin(err, axis=2)  # first of equal errors (a NaN: the first, 0)
            q = np.where((x < 0) & (j > 0), j + 8, j).astype(np.uint8)
            out["e"] = e
            out["qs"] = q[:, :16] | (q[:, 16:] << 4)
            return
        else:
            raise NotImplementedError(f"quantizing {type_name} is not implemented")
        out["d"] = d.astype(out.dtype["d"])
