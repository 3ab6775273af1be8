"""What the word-vector record tables share: the read options a table takes from its context, rows gathered
from the file into a matrix faulted in ahead, and the checks of a header's dimension and of a matrix written.

The tables themselves are in :mod:`.binary` (Leader, word2vec binary) and :mod:`.text` (word2vec text, GloVe,
fastText ``.vec``). Parsed values are ``Container(words=[...], vectors=ndarray(n, dim) <f4, ...layout
details...)``; the layout details (newlines between binary records, the number style of text files) make the
rebuild byte-exact.
"""

from __future__ import annotations

import mmap
from concurrent.futures import Future
from typing import Any

import numpy as np

from ...errors import BuildError, ValueMismatchError
from ...framework.fields import evaluate
from ...framework.located import fail, tell
from ...framework.records import selected_rows
from ...framework.streams import background, release
from ...framework.strings import decode_spans
from .wordvec_lines import MAX_DIM

F32 = np.dtype("<f4")


def _params(context: Any) -> Any:
    return getattr(context, "_params", None) or {}


def _limit(context: Any, count: int) -> int:
    limit = _params(context).get("limit")
    return count if limit is None else min(count, int(limit))


def _errors(context: Any) -> str:
    return _params(context).get("unicode_errors", "strict")


def _text_dtype(context: Any) -> np.dtype:
    """What text numbers are parsed into: float64 when the ``dtype`` read option asks for more than float32
    (gensim's ``datatype``; files with 17-digit numbers keep them), else float32."""
    wanted = np.dtype(_params(context).get("dtype") or F32)
    return np.dtype("<f8") if wanted.kind == "f" and wanted.itemsize > 4 else F32


def _gather_rows(buf: Any, vstarts: np.ndarray, dim: int, out: np.ndarray | None = None) -> np.ndarray:
    """Copy ``dim`` little-endian float32 values starting at each byte offset into one (n, dim) matrix (into
    ``out`` when it has that shape).

    Rows sit at arbitrary byte offsets: every window of ``4 * dim`` bytes of the buffer is a row of a
    strided view, and indexing it copies the wanted windows (a memcpy per row), a few MB at a time.
    """
    n = len(vstarts)
    if out is None or out.shape != (n, dim):
        out = np.empty((n, dim), F32)
    if n == 0 or dim == 0:
        return out
    u8 = np.frombuffer(buf, np.uint8)
    windows = np.lib.stride_tricks.sliding_window_view(u8, 4 * dim)
    dest = out.view(np.uint8).reshape(n, 4 * dim)
    idx = np.asarray(vstarts, np.intp)
    step = max(1, (4 << 20) // (4 * dim))  # rows per copy: a 4 MB temporary stays in cache
    ordered = n < 2 or bool((idx[1:] >= idx[:-1]).all())
    for a in range(0, n, step):
        dest[a : a + step] = windows[idx[a : a + step]]
        if ordered:  # rows in file order: the pages behind them are done with
            release(buf, int(idx[min(a + step, n) - 1]))
    return out


_AHEAD_BYTES = 1 << 22  # matrices from this size on are allocated ahead and filled beside the word decoding


def _touched(shape: tuple[int, int], dtype: np.dtype = F32) -> np.ndarray:
    """An uninitialised matrix (float32 by default) with every page already faulted in (one write per page)."""
    out = np.empty(shape, dtype)
    out.reshape(-1).view(np.uint8)[:: mmap.PAGESIZE] = 0
    return out


def _matrix_ahead(context: Any, count: int, dim: int, least: int, room: int) -> Future[Any] | None:
    """Start allocating the (count, dim) result while the record offsets are found, when the table is big
    and ``count`` records of at least ``least`` bytes fit in the ``room`` bytes left (a hostile count gets
    nothing ahead: the matrix is then allocated for the records really found)."""
    if _params(context).get("vocab") is not None or count * 4 * dim < _AHEAD_BYTES or count * least > room:
        return None
    return background(_touched, (count, dim))


def _dimension(dim: Any, context: Any, path: str, stream: Any) -> int:
    """The header's dimension, refused when absurd (an empty table would otherwise carry it unchecked to
    lookups that allocate ``words x dim``)."""
    value = int(evaluate(dim, context))
    if value > MAX_DIM:
        raise fail(path, tell(stream), f"dimension {value} is larger than 2^24", ValueMismatchError)
    return value


def _keep_vocab(context: Any, words: list[str]) -> list[int] | None:
    """Rows to keep for the ``vocab`` read option (first occurrence of each wanted word), or None."""
    return selected_rows(words, vocab=_params(context).get("vocab"))


def _table(context: Any, buf: Any, wstarts: Any, wends: Any, vstarts: Any, dim: int,
           path: str, base: int, ahead: Future[Any] | None = None,
           sep: bytes | None = None) -> tuple[list[str], np.ndarray]:
    """Words and vectors of a binary table from the record offsets found by a parse loop (``ahead``: the
    matrix being allocated by :func:`_matrix_ahead`; ``sep``: the byte that ends every word, as
    :func:`decode_spans` takes it).

    The rows are copied on a worker thread while this one decodes the words; with the ``vocab`` option the
    words come first, to choose the rows."""
    ws = np.asarray(wstarts, np.int64)
    we = np.asarray(wends, np.int64)
    vs = np.asarray(vstarts, np.int64)
    if _params(context).get("vocab") is None:
        out = ahead.result() if ahead is not None else None
        if out is None and len(vs) * 4 * dim < _AHEAD_BYTES:
            return decode_spans(buf, ws, we, _errors(context), path, base, sep=sep), _gather_rows(buf, vs, dim)
        rows = background(_gather_rows, buf, vs, dim, out)
        try:
            words = decode_spans(buf, ws, we, _errors(context), path, base, sep=sep)
        except BaseException:
            rows.exception()  # the copy reads ``buf``: it ends before the error leaves here
            raise
        return words, rows.result()
    words = decode_spans(buf, ws, we, _errors(context), path, base, sep=sep)
    keep = _keep_vocab(context, words)
    if keep is not None:
        words = [words[i] for i in keep]
        vs = vs[np.array(keep, np.int64)]
    return words, _gather_rows(buf, vs, dim)


def _matrix(vectors: Any, n: int, dim: int, path: str, stream: Any) -> np.ndarray:
    arr = np.asarray(vectors)
    if arr.size == 0 and n == 0:
        return np.zeros((0, dim), F32)
    if arr.dtype.kind not in "biuf":
        raise fail(path, tell(stream), f"vectors must be numeric, not {arr.dtype}", BuildError)
    arr = np.ascontiguousarray(arr, dtype=F32)  # explicit cast: float64 input never makes a corrupt file
    if arr.shape != (n, dim):
        raise fail(path, tell(stream), "vector matrix does not match the header", BuildError,
                   expected=(n, dim), found=arr.shape)
    return arr

