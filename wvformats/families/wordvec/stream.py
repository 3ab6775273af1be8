"""Compressed text tables (word2vec text, fastText ``.vec``, GloVe) read as a stream of line blocks.

The decompressed bytes come in blocks of whole lines (:func:`wvformats.compression.line_blocks`); each block
is parsed by the same :class:`~wvformats.framework.texttable.TextRecords` as a plain file, its rows copied into one matrix
allocated for the header's count (grown in place without one), so memory holds the vectors, the words and
one block, never the decompressed file. A block's errors and warnings are moved to the file's line numbers;
their offsets are already those of the decompressed stream. ``limit`` stops the decompression early.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from typing import Any

import construct as cs
import numpy as np

from ... import framework
from ...compression import memory_cap
from ...errors import FormatError, TruncatedError
from ...framework import HeaderLine, TextRecords
from ...framework.located import fail

_LINE = re.compile(r"\brecords\[(\d+)\]")


class _Block:
    """A block of lines as the text tables read a stream: ``window`` takes the rest of its bytes (without a
    copy from its start) and the offset of the first in the decompressed stream. ``read`` does not move:
    the tables read the window, then seek to where they stop."""

    def __init__(self, data: bytes, base: int) -> None:
        self.data, self.base, self.pos = data, base, base

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: 0, 1: self.pos, 2: self.base + len(self.data)}[whence] + offset
        return self.pos

    def read(self, n: int = -1) -> bytes:
        return self.data[self.pos - self.base :]


def read_stream(name: str, blocks: Iterator[tuple[int, bytes]], *, limit: int | None = None, vocab: Any = None,
                unicode_errors: str | None = None, dtype: Any = None, **_: Any) -> cs.Container:
    """The parse of a text table from its blocks of decompressed lines, as the schema's parse gives it for
    the whole buffer (``trailer`` None: what follows the records is not read)."""
    out_dtype = np.dtype(np.float32 if dtype is None else dtype)
    wanted = None if vocab is None else set(vocab)
    params = {k: v for k, v in (("unicode_errors", unicode_errors), ("dtype", dtype)) if v is not None}
    header = declared = dim = None
    words: list[str] = []
    out: np.ndarray | None = None
    lines = rows = end = 0
    layout: list[Any] = []
    try:
        for base, data in blocks:
            block = _Block(data, base)
            del data  # (the block's bytes go once it is parsed, before the next is decompressed)
            if name == "word2vec-text" and header is None:
                header = framework.parse(cs.Struct("header" / HeaderLine()), block, format=name).header
                declared, dim = header.count, header.dim
            want = _least(declared, limit)
            if want is not None and lines >= want:
                break
            in_block = block.data.count(b"\n", block.pos - base) + (not block.data.endswith(b"\n"))
            block_params = dict(params)
            if want is not None and in_block > want - lines:
                block_params["limit"] = want - lines  # (only then: a limit turns pyarrow's parser off)
            if wanted is not None:
                block_params["vocab"] = wanted
            parsed = _parse(name, dim, block, lines, **block_params).records
            dim = parsed.vectors.shape[1] if dim is None else dim
            out = _append(out, rows, parsed.vectors, _least(want, None if wanted is None else rows + len(wanted)),
                          out_dtype)
            words += parsed.words
            rows += len(parsed.words)
            if wanted is not None:
                wanted.difference_update(parsed.words)
            lines += min(in_block, block_params.get("limit", in_block))
            end = block.pos
            block.data = b""  # (the parse's context holds the block in a reference cycle: not its bytes)
            layout.append(parsed.layout)
    except FormatError as e:
        raise e.located(format=name) from None
    if header is None and name == "word2vec-text":  # an empty file: the header's own error
        framework.parse(cs.Struct("header" / HeaderLine()), b"", format=name)
    want = _least(declared, limit)
    if declared is not None and want is not None and lines < want:
        raise fail(f"records[{lines}]", end, "fewer lines than the header declares", TruncatedError,
                   expected=declared, found=lines).located(format=name)
    vectors = np.zeros((0, dim or 0), out_dtype) if out is None else out
    if len(vectors) != rows:
        vectors.resize((rows, vectors.shape[1]), refcheck=False)  # in place: no second copy
    records = cs.Container(words=words, vectors=vectors, layout=_joined(layout))
    if name == "glove":
        return cs.Container(records=records)
    return cs.Container(header=header, records=records, trailer=None)


def _least(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _parse(name: str, dim: int | None, block: _Block, lines: int, **params: Any) -> Any:
    """One block's records, its errors and warnings naming the file's line (``records[lines + i]``)."""
    def moved(text: str) -> str:
        return _LINE.sub(lambda m: f"records[{int(m.group(1)) + lines}]", text)

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            return framework.parse(cs.Struct("records" / TextRecords(None, dim)), block, format=name, **params)
    except FormatError as e:
        e.path = e.path and moved(e.path)
        raise
    finally:
        for w in caught:  # (once the recording has ended)
            warnings.warn_explicit(w.category(moved(str(w.message))), w.category, w.filename, w.lineno)


def _append(out: np.ndarray | None, rows: int, part: np.ndarray, most: int | None, dtype: np.dtype) -> np.ndarray:
    """``out`` with ``part`` copied in after its first ``rows`` rows: allocated for ``most`` rows when that is
    known and can be held, else grown geometrically in place (``ndarray.resize``: realloc, no second copy)."""
    dim = part.shape[1]
    if out is None:
        size = len(part) if most is None or not _fits(most * dim * dtype.itemsize) else most
        out = np.empty((max(size, len(part)), dim), dtype)
    if rows + len(part) > len(out):
        out.resize((max(rows + len(part), 2 * len(out)), dim), refcheck=False)
    out[rows : rows + len(part)] = part
    return out


def _fits(nbytes: int) -> bool:
    """Whether a matrix of ``nbytes`` may be allocated ahead (a hostile header count gets rows as found)."""
    cap = memory_cap()
    return cap is None or nbytes <= cap


def _joined(layouts: list[Any]) -> cs.Container:
    """The layout of the whole table from its blocks'."""
    full = [lay for lay in layouts if lay is not None]
    if not full:
        return cs.Container(style="repr", trailing_space=False, crlf=False, final_newline=True)
    return cs.Container(style=full[0].style, trailing_space=all(lay.trailing_space for lay in full),
                        crlf=all(lay.crlf for lay in full), final_newline=full[-1].final_newline)
