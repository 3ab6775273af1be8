"""fastText's product-quantized input matrix as finalfusion's quantized array, where one maps onto the other.

finalfusion gives a word of its vocabulary its storage row as it is (the row's centroids side by side, times
the row's norm: finalfusion-rust ``QuantizedArray::embedding``, finalfusion-python ``reconstruct`` then
``norms * out``); fastText gives it the mean of its own input row and its character n-gram rows. The two
meet when the model has no character n-grams (maxn 0, the default of supervised models, which are the only
ones fastText quantizes): a word's vector is then its own row, ``0 + norm * centroid`` (``addcode``) times
float32(1 / 1), which is finalfusion's ``centroid * norm`` to the bit but for the sign of a zero (fastText's
sum starts at +0.0). The norms are the norm quantizer's centroids, one per row; the bucket rows, which only a
supervised line's word n-grams reach, are left out as they are from a dense model. With character n-grams a
word's vector is a mean of several coded rows, which no row of codes holds: the words are written dense.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import construct as cs
import numpy as np

from ...schemas.fasttext import KSUB

if TYPE_CHECKING:
    from .model import FastText


def finalfusion_quantized(m: FastText) -> Any:
    """The finalfusion quantized array (chunk body) of the model's word rows, or None with a warning saying
    why the words are written dense."""
    reason = _unmapped(m)
    if reason:
        warnings.warn(f"fastText quantized input to finalfusion: written dense: {reason}", UserWarning,
                      stacklevel=2)
        return None
    inp, n = m.input, m.nwords
    part, dim = inp.part, inp.shape[1]
    # finalfusion's sub-quantizers all have one width: fastText's (dsub columns, the last lastdsub) are cut into
    # pieces of gcd(dsub, lastdsub) columns, each coded by its fastText sub-quantizer's code
    width = math.gcd(inp.dsub, inp.lastdsub)
    # the matrix's centroid tables (256 rows of a sub-quantizer's width per sub-quantizer), each row cut in pieces
    subquantizers = np.ascontiguousarray(np.concatenate([
        table.reshape(-1, KSUB, table.shape[1] // width, width).transpose(0, 2, 1, 3).reshape(-1, KSUB, width)
        for _, table in inp._tables]), "<f4")
    sub = np.minimum(np.arange(0, dim, width) // inp.dsub, inp.nsubq - 1)  # each piece's fastText sub-quantizer
    codes = inp.codes[:n] if width == inp.dsub else inp.codes[:n, sub]
    norms = np.asarray(part["npq"]["centroids"][part["norm_codes"][:n]], "<f4") if part["qnorm"] else None
    return cs.Container(use_projection=0, use_norms=int(norms is not None), quantized_len=dim // width,
                        reconstructed_len=dim, n_centroids=KSUB, n_embeddings=n, quantized_type=1,
                        reconstructed_type=10, padding=None, projection=None, subquantizers=subquantizers,
                        norms=norms, codes=np.ascontiguousarray(codes, "u1"))


def _unmapped(m: FastText) -> str | None:
    """Why the model's word vectors are not rows of its input matrix's codes (None: they are)."""
    if int(m.args["maxn"]) > 0 and int(m.args["bucket"]) > 0:
        return ("its words' vectors are means of their own and their character n-gram input rows, which no "
                "row of codes holds (finalfusion gives a word its stored row)")
    return None
