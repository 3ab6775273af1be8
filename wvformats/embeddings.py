"""The model object that every embedding format reads into and writes from."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


class DuplicateWordsWarning(UserWarning):
    """A file holds the same word more than once; lookups use the first occurrence."""


def count_duplicates(words: Sequence[str]) -> int:
    """How many of ``words`` equal an earlier one: the strings' hashes are sorted in numpy, and only words
    whose hash occurs twice are compared (about half the time of building the word index)."""
    n = len(words)
    if n < 2:
        return 0
    hashes = np.fromiter(map(hash, words), np.int64, n)
    ordered = np.sort(hashes)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if not repeated.size:
        return 0
    suspects = [words[i] for i in np.flatnonzero(np.isin(hashes, repeated)).tolist()]
    return len(suspects) - len(set(suspects))


class Embeddings:
    """Words in file order and one float32 row per word.

    Duplicate words keep all their rows in ``.words``/``.vectors`` (nothing is dropped), and lookups by word
    use the first occurrence, as gensim and word-vectors do; ``.duplicates`` counts the shadowed rows.
    Format-specific parts (finalfusion vocab details, norms, metadata) live in ``.extra``.
    """

    def __init__(
        self,
        words: Sequence[str],
        vectors: Any,
        *,
        norms: np.ndarray | None = None,
        metadata: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        vectors = np.asarray(vectors)
        if vectors.ndim != 2:
            if vectors.size == 0:
                vectors = vectors.reshape(len(words), 0) if len(words) else vectors.reshape(0, 0)
            else:
                raise ValueError(f"vectors must be a 2-D matrix, got shape {vectors.shape}")
        if vectors.shape[0] != len(words):
            raise ValueError(f"{len(words)} words but {vectors.shape[0]} vector rows")
        self.words: list[str] = list(words)
        self.vectors: np.ndarray = vectors
        self.norms = norms
        self.metadata = metadata
        self.extra: dict[str, Any] = dict(extra or {})
        self._index: dict[str, int] | None = None
        self._duplicates: int | None = None

    # -- lookups -------------------------------------------------------------------------------------------

    @property
    def vocab(self) -> dict[str, int]:
        """word -> row of its first occurrence (built on first use, as reading and converting need none)."""
        if self._index is None:
            n = len(self.words)
            # built from the last word to the first, so that the first occurrence is the one kept (C speed)
            index = dict(zip(reversed(self.words), range(n - 1, -1, -1), strict=True))
            self._duplicates = n - len(index)
            self._index = index
        return self._index

    @property
    def duplicates(self) -> int:
        """How many rows repeat an earlier word (lookups never reach them)."""
        if self._duplicates is None:
            self._duplicates = count_duplicates(self.words)
        return self._duplicates

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.vocab

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vectors[self.vocab[word]]

    def index(self, word: str) -> int:
        """The row of ``word`` (its first occurrence); KeyError when absent."""
        return self.vocab[word]

    def get(self, word: str, default: Any = None) -> Any:
        i = self.vocab.get(word)
        return default if i is None else self.vectors[i]

    def embedding(self, word: str) -> np.ndarray | None:
        """The vector of ``word``; for subword vocabularies an unknown word is composed from its n-grams.

        None when the word is unknown and nothing can be composed.
        """
        i = self.vocab.get(word)
        if i is not None:
            return self.vectors[i]
        oov = self.extra.get("oov")
        return oov(word) if oov else None

    def embedding_batch(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of many words at once: a (len(words), dim) float32 matrix and a boolean ``found``
        mask (rows of words that are unknown and cannot be composed are zero). Known words give their rows;
        unknown ones are composed from their n-grams exactly as :meth:`embedding` does, vectorised over the
        whole batch where the vocabulary allows (finalfusion bucket vocabularies)."""
        words = list(words)
        out = np.zeros((len(words), self.vectors.shape[1]), np.float32)
        found = np.zeros(len(words), bool)
        vocab = self.vocab
        known = [(i, vocab[w]) for i, w in enumerate(words) if w in vocab]
        if known:
            at, rows = np.array(known, np.intp).T
            out[at], found[at] = self.vectors[rows], True
        unknown = [i for i in range(len(words)) if not found[i]]
        batch = self.extra.get("oov_batch")
        if batch is not None and unknown:
            vecs, ok = batch([words[i] for i in unknown])
            out[unknown], found[unknown] = vecs, ok
        elif self.extra.get("oov") is not None:
            for i in unknown:
                v = self.extra["oov"](words[i])
                if v is not None:
                    out[i], found[i] = v, True
        return out, found

    def subword_indices(self, word: str) -> list[int]:
        """The storage rows an unknown word's embedding sums (empty without a subword vocabulary)."""
        rows_of = self.extra.get("subword_indices")
        return rows_of(word) if rows_of else []

    def _unit_rows(self) -> np.ndarray:
        if self.extra.get("_unit") is None:
            m = np.asarray(self.vectors, dtype=np.float32)
            norms = np.linalg.norm(m, axis=1, keepdims=True)
            self.extra["_unit"] = m / np.where(norms > 0, norms, 1)
        return self.extra["_unit"]

    def _nearest(self, query: np.ndarray, skip: set[str], limit: int) -> list[tuple[str, float]]:
        unit = self._unit_rows()
        q = np.asarray(query, np.float32)
        norm = np.linalg.norm(q)
        sims = unit @ (q / norm if norm > 0 else q)
        order = np.argsort(-sims, kind="stable")
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for i in order.tolist():
            w = self.words[i]
            if w in skip or w in seen:
                continue
            seen.add(w)
            out.append((w, float(sims[i])))
            if len(out) == limit:
                break
        return out

    def most_similar(self, word: str, limit: int = 10) -> list[tuple[str, float]]:
        """The ``limit`` words with the highest cosine similarity to ``word`` (excluding it)."""
        v = self.embedding(word)
        if v is None:
            raise KeyError(word)
        return self._nearest(v, {word}, limit)

    def analogy(self, a: str, b: str, c: str, limit: int = 10) -> list[tuple[str, float]]:
        """``a`` is to ``b`` as ``c`` is to ...: nearest words to unit(b) - unit(a) + unit(c), inputs excluded."""
        vecs = []
        for w in (a, b, c):
            v = self.embedding(w)
            if v is None:
                raise KeyError(w)
            n = np.linalg.norm(v)
            vecs.append(v / n if n > 0 else v)
        return self._nearest(vecs[1] - vecs[0] + vecs[2], {a, b, c}, limit)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __repr__(self) -> str:
        return f"<Embeddings {len(self)} x {self.dim} {self.vectors.dtype}>"

    def warn_duplicates(self) -> None:
        """Count duplicates now and warn once if there are any."""
        if self.duplicates:
            warnings.warn(
                f"{self.duplicates} duplicate word(s); lookups use the first occurrence",
                DuplicateWordsWarning,
                stacklevel=3,
            )

    # -- construction helpers ------------------------------------------------------------------------------

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, Any]]) -> Embeddings:
        words, rows = [], []
        for w, v in pairs:
            words.append(w)
            rows.append(np.asarray(v, dtype=np.float32))
        mat = np.vstack(rows) if rows else np.zeros((0, 0), np.float32)
        return cls(words, mat)

    def astype(self, dtype: Any) -> Embeddings:
        out = Embeddings(self.words, self.vectors.astype(dtype), norms=self.norms, metadata=self.metadata,
                         extra=self.extra)
        return out
