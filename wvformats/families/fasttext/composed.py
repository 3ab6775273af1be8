"""A fastText model's composed word vectors (``get_word_vector`` of each word of the dictionary), made once
and kept, a chunk of words at a time, so that a word of the vocabulary is looked up at the speed of an array
row; and the read-only array type that says why they cannot be edited."""

from __future__ import annotations

import mmap
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

CHUNK_BITS = 12  # words are composed and kept CHUNK = 4096 at a time
CHUNK = 1 << CHUNK_BITS
UNSEEN, SEEN, MADE = 0, 1, 2  # a chunk's state: none of its words looked up, one lookup, composed and kept

READ_ONLY = ("a fastText model's word vectors are composed from its input matrix (each the mean of the word's "
             "own row and its character n-gram rows) and the file holds no composed vectors to write them back "
             "to: they are read-only. To edit vectors, copy them into Embeddings "
             "(wv.Embeddings(ft.words, np.array(ft.vectors))) and write those")


class ComposedVectors(np.ndarray):
    """A fastText model's composed vectors, read-only: an assignment into them (``v[0] = 0``, ``v += 1``)
    raises ValueError saying why. Arithmetic on them gives plain arrays."""

    def __setitem__(self, key: Any, value: Any) -> None:
        if not self.flags.writeable:
            raise ValueError(READ_ONLY)
        super().__setitem__(key, value)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is not None:
            if any(isinstance(o, ComposedVectors) and not o.flags.writeable for o in out):
                raise ValueError(READ_ONLY)
            kwargs["out"] = tuple(_plain(o) for o in out)
        return getattr(ufunc, method)(*map(_plain, inputs), **kwargs)


def _plain(x: Any) -> Any:
    return x.view(np.ndarray) if isinstance(x, ComposedVectors) else x


class ComposedTable:
    """Composed rows of ``n`` words, kept once made: ``compose(ids)`` makes the rows of word ids (fastText's
    float32 sums, bit for bit). A chunk of :data:`CHUNK` words is composed in one go the second time one of its
    words is looked up; the first lookup makes its word alone (:meth:`seen` says which), so that opening a
    model and looking a word up touches a handful of rows, not the matrix.

    Memory: one anonymous mapping of ``n * dim`` float32 (the size of the words' own input rows), of which
    the kernel allots the pages of the chunks made; never more than that, nothing at all until a chunk is made.
    """

    def __init__(self, n: int, dim: int, compose: Callable[[np.ndarray], np.ndarray]) -> None:
        self.n, self.dim, self._compose = n, dim, compose
        self.state = bytearray((n + CHUNK - 1) >> CHUNK_BITS)
        self.rows: np.ndarray | None = None  # read-only view of the table, once a chunk is made
        self._table: np.ndarray | None = None
        self._making = threading.Lock()  # one thread makes the table and a chunk at a time (lookups need none)

    def seen(self, i: int) -> bool:
        """Whether a word of ``i``'s chunk was looked up before (and marks it looked up)."""
        c = i >> CHUNK_BITS
        if self.state[c] == UNSEEN:
            self.state[c] = SEEN
            return False
        return True

    def make(self, chunks: Any) -> np.ndarray:
        """Compose the chunks not yet made among ``chunks``; the read-only table."""
        with self._making:
            if self._table is None:
                size = self.n * self.dim
                buf = mmap.mmap(-1, max(4 * size, 1), flags=mmap.MAP_PRIVATE)  # pages allotted as written
                self._table = np.frombuffer(buf, np.float32, size).reshape(self.n, self.dim)
                rows = self._table.view(ComposedVectors)
                rows.flags.writeable = False
                self.rows = rows
            for c in chunks:
                if self.state[c] != MADE:
                    at = slice(c << CHUNK_BITS, min(self.n, (c + 1) << CHUNK_BITS))
                    self._table[at] = self._compose(np.arange(at.start, at.stop))
                    self.state[c] = MADE  # (after its rows: a lookup that sees MADE reads them whole)
        assert self.rows is not None
        return self.rows

    def made(self, ids: np.ndarray) -> np.ndarray:
        """Which of the word ids are in a chunk already made (bool mask)."""
        return np.frombuffer(self.state, np.uint8)[ids >> CHUNK_BITS] == MADE if len(self.state) else \
            np.zeros(len(ids), bool)

    def whole(self) -> np.ndarray:
        """Every word's row (the chunks not made yet are made now)."""
        return self.make(range(len(self.state)))
