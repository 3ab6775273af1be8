"""The arithmetic that reproduces fastText's floats, a leaf of the family: the C library's ``expf``, ``exp`` and
``log`` as fastText calls them (each numpy value rounded to float32 and checked against the C library's near a
rounding boundary), ``Loss``'s sigmoid table, and ``Loss::findKBest`` with its heap's order of ties. The model
and its predictor (:mod:`.predict`) both compute with these; neither is imported here."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import struct
from typing import Any

import numpy as np

from .heap import pop_heap, push_heap, sort_heap

MAX_SIGMOID, SIGMOID_TABLE_SIZE = 8, 512  # Loss's sigmoid table: 513 values over [-8, 8]


# -- the C library's expf and log, as fastText calls them --------------------------------------------------

def _libm() -> Any:
    name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(name)
        lib.expf.restype, lib.expf.argtypes = ctypes.c_float, [ctypes.c_float]
        return lib
    except (OSError, TypeError, AttributeError):  # no C math library to load: numpy's values, unchecked
        return None


_LIBM = _libm()
expf_c = _LIBM.expf if _LIBM is not None else lambda x: float(np.float32(np.exp(np.float32(x))))
_F32 = struct.Struct("<f")


def r32(x: float, _pack: Any = _F32.pack, _unpack: Any = _F32.unpack) -> float:
    """A Python float rounded to float32."""
    return _unpack(_pack(x))[0]


def threshold32(threshold: float) -> float:
    """A predict threshold as fastText takes it: a float32 (``(float)`` of the double: infinite past float32's
    range); NaN as -inf, which it acts as (fastText's comparisons with NaN are all false: every label kept)."""
    t = float(threshold)
    if t != t:
        return -math.inf
    try:  # (C's (float) of the double, as numpy's float32 rounds it: packing raises where that is infinite)
        return r32(t)
    except OverflowError:
        return math.copysign(math.inf, t)


def log32(threshold: float) -> float:
    """``Loss::std_log`` of a :func:`threshold32` value (``log(t + 1e-5)`` in double, as float32), -inf where the C
    library's log is -inf or NaN (a threshold at or below -1e-5: fastText's comparisons with NaN are false)."""
    x = threshold + 1e-5
    return r32(math.log(x)) if x > 0 else -math.inf

# numpy's float64 exp and log (SIMD, within a few double ulps) are rounded to float32 and kept where the
# value is not near a float32 rounding boundary; the rest (about 1 in 200 for exp, fewer for log) are the
# C library's own. glibc's expf is within 2^-33 of exp (relative, 2^19 double ulps) before its last rounding;
# numpy's exp and log within 4 double ulps of the C library's double exp and log.
_EXP_SLACK, _LOG_SLACK = 1 << 21, 1 << 4
# one value: its float32 rounding is settled when it is further than 2^-7 float32 ulps from a boundary, a
# float32 ulp being 2^29 double ulps of the same binade (math.ulp of the value itself: below a power of two
# the smaller one)
SETTLED = (0.5 - 2.0**-7) * 2.0**29


def _unsettled(v: np.ndarray, slack: int) -> np.ndarray:
    """Where float64 values ``v`` lie within ``slack`` double ulps of a float32 rounding boundary (the 29
    mantissa bits float32 drops near 2^28), or outside float32's normal range, where another function's
    value that close could round otherwise. Indices into ``v.reshape(-1)``."""
    bits = v.reshape(-1).view(np.uint64)
    near = ((bits & np.uint64((1 << 29) - 1)) - np.uint64((1 << 28) - slack)) < np.uint64(2 * slack)
    exponent = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    outside = (exponent - np.uint64(1023 - 126)) >= np.uint64(253)  # (wraps below 2^-126)
    return np.flatnonzero(near | outside)


def expf(x: np.ndarray) -> np.ndarray:
    """``std::exp`` of float32 values (the C library's ``expf``), as float32."""
    x = np.asarray(x, np.float32)
    v = np.exp(x.astype(np.float64))
    with np.errstate(over="ignore"):  # past float32's range: inf, and the check below asks the C library
        out = v.astype(np.float32)
    if _LIBM is not None:
        at = _unsettled(v.reshape(-1), _EXP_SLACK)
        if len(at):
            out.reshape(-1)[at] = list(map(_LIBM.expf, x.reshape(-1)[at].tolist()))
    return out


def exp_to_float(x: np.ndarray) -> np.ndarray:
    """C's double ``exp`` of float32 values stored back as float32 (fastText's unqualified ``exp(float)``)."""
    d = np.asarray(x, np.float32).astype(np.float64)
    v = np.exp(d)
    with np.errstate(over="ignore"):
        out = v.astype(np.float32)
    at = _unsettled(v, _LOG_SLACK)
    if len(at):
        out.reshape(-1)[at] = [_exp_or_inf(t) for t in d.reshape(-1)[at].tolist()]
    return out


def _exp_or_inf(t: float) -> float:
    try:
        return math.exp(t)
    except OverflowError:
        return math.inf


def std_log(x: np.ndarray) -> np.ndarray:
    """fastText's ``Loss::std_log`` of float32 values: ``log(x + 1e-5)`` in double, as float32."""
    d = np.asarray(x, np.float32).astype(np.float64) + 1e-5
    v = np.log(d)
    out = v.astype(np.float32)
    at = _unsettled(v.reshape(-1), _LOG_SLACK)
    if len(at):
        out.reshape(-1)[at] = list(map(math.log, d.reshape(-1)[at].tolist()))
    return out


def sigmoid_hs(dots: np.ndarray) -> np.ndarray:
    """``1. / (1 + std::exp(-f))`` of float32 dots: expf, the sum in float32, the quotient in double."""
    s = expf(-dots) + np.float32(1)
    return (1.0 / s.astype(np.float64)).astype(np.float32)


# Loss's t_sigmoid_: 1.0 / (1.0 + std::exp(-x)) with x a float (expf), in double, stored as float
_SIGMOID_X = np.array([np.float32(i * 2 * MAX_SIGMOID) / SIGMOID_TABLE_SIZE - MAX_SIGMOID
                       for i in range(SIGMOID_TABLE_SIZE + 1)], np.float32)
SIGMOID_TABLE = (1.0 / (1.0 + expf(-_SIGMOID_X).astype(np.float64))).astype(np.float32)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """``Loss::sigmoid``: fastText's table of 513 values, 0 below -8 and 1 above 8."""
    x = x.astype(np.float32)
    inside = np.clip(x, -MAX_SIGMOID, MAX_SIGMOID)
    at = ((inside + np.float32(MAX_SIGMOID)) * np.float32(SIGMOID_TABLE_SIZE) / np.float32(MAX_SIGMOID)
          / np.float32(2)).astype(np.int64)
    out = SIGMOID_TABLE[np.clip(at, 0, SIGMOID_TABLE_SIZE)]
    return np.where(x < -MAX_SIGMOID, np.float32(0), np.where(x > MAX_SIGMOID, np.float32(1), out))


def k_best_all(p: np.ndarray, k: int, threshold: float) -> tuple[list[list[int]], list[np.ndarray]]:
    """:func:`k_best` of every row of ``p`` (lines x labels), found for all rows at once: each row's label
    ids and their probabilities (float64). A row where the threshold cuts or ties reach the k-th place
    goes through :func:`k_best`."""
    if not len(p) or k == 0:
        return [[] for _ in range(len(p))], [np.zeros(0) for _ in range(len(p))]
    scores = std_log(p)
    if k + 1 < p.shape[1]:  # the k + 1 best of each row, then in order (their ties go to _k_best below)
        best = np.argpartition(-scores, k, axis=1)[:, : k + 1]
        order = np.take_along_axis(best, np.argsort(-np.take_along_axis(scores, best, axis=1), axis=1), axis=1)
    else:
        order = np.argsort(-scores, axis=1, kind="stable")[:, : k + 1]
    top = np.take_along_axis(scores, order, axis=1)
    probs = np.take_along_axis(p, order, axis=1)
    exact = (top[:, 1:] == top[:, :-1]).any(axis=1) | (probs[:, :k] < np.float32(threshold)).any(axis=1)
    ids, out_p = order[:, :k].tolist(), list(expf(top[:, :k]).astype(np.float64))
    for r in np.flatnonzero(exact).tolist():
        (ids[r],), (out_p[r],) = columns([k_best(p[r], k, threshold)])
    return ids, out_p


def columns(found: list[list[tuple[int, float]]]) -> tuple[list[list[int]], list[np.ndarray]]:
    """(label id, probability) pairs of each line as (the ids of each line, its probabilities)."""
    return [[i for i, _ in f] for f in found], [np.array([q for _, q in f], np.float64) for f in found]


def k_best(p: np.ndarray, k: int, threshold: float) -> list[tuple[int, float]]:
    """``Loss::findKBest``: labels with p >= threshold, the k best by log(p + 1e-5); probabilities as the
    Python module gives them (exp of that score). Equal scores come out in the order fastText's heap
    leaves them: where ties reach the k-th place, its heap is replayed."""
    ok = np.flatnonzero(p >= np.float32(threshold))
    scores = std_log(p[ok])
    order = np.argsort(-scores, kind="stable")
    top = scores[order[: k + 1]]
    if len(np.unique(top)) < len(top):  # ties among the best: the order is the heap's
        heap: list[tuple[float, int]] = []
        for s, i in zip(scores.tolist(), ok.tolist(), strict=True):
            if len(heap) == k and s < heap[0][0]:
                continue
            heap.append((s, i))
            push_heap(heap)
            if len(heap) > k:
                pop_heap(heap, len(heap))
                heap.pop()
        return [(i, float(expf(np.float32(s)))) for s, i in sort_heap(heap)]
    return [(int(ok[i]), float(expf(scores[i]))) for i in order[:k]]


def expf_one(x: float) -> float:
    """The C library's ``expf`` of a float32 value: Python's exp rounded to float32 where that rounding is
    settled (its double is further from a float32 rounding boundary than the two functions can differ), else
    the C library's own (about 1 in 200 values; near overflow and in the subnormal range always)."""
    if -80.0 < x < 80.0:
        v = math.exp(x)
        e = _F32.unpack(_F32.pack(v))[0]
        if abs(v - e) <= SETTLED * math.ulp(v):
            return e
    return expf_c(x)
