"""Quantized storage: the rows a finalfusion QuantizedArray's codes, centroids, projection and norms make."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FormatError
from .chunks import NAME


def reconstruct(q: Any, rows: Any = None) -> np.ndarray:
    """Dense rows of a QuantizedArray body: centroid concat, optional projection, optional norms."""
    codes = q["codes"] if rows is None else q["codes"][rows]
    sub = q["subquantizers"]  # (quantized_len, n_centroids, sub_len)
    nq, nc, width = sub.shape
    codes = codes.reshape(-1, nq)
    if codes.size and int(codes.max()) >= nc:  # checked on the rows made: opening never reads every code
        raise FormatError(f"a code picks centroid {int(codes.max())} of {nc}", format=NAME,
                          path="chunks.storage.codes")
    # one gather: code j of a row picks centroid (j, code) from the flattened table; rows come out concatenated
    # (np.take copies the centroids twice as fast as indexing with the same array)
    at = codes.astype(np.intp)
    at += np.arange(0, nq * nc, nc)
    x = np.take(sub.reshape(nq * nc, width), at, axis=0).reshape(len(codes), nq * width)
    x = x.astype(np.float32, copy=False)
    if q["use_projection"]:
        x = x @ q["projection"].T
    if q["use_norms"]:
        norms = q["norms"] if rows is None else q["norms"][rows]
        x *= norms[:, None]
    return x.astype(np.float32, copy=False)
