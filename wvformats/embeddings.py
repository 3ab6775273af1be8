"""The model object that every embedding format reads into and writes from: :class:`Embeddings`, the parts
every family fills (:class:`Subwords`, :class:`Storage`, :class:`LazyRows`), and what a write does to its values
(:func:`unnormalized`). Which row a word is lives in :mod:`wvformats.words`, what bytes it is in
:mod:`wvformats.spelling`; their names are also importable from here."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import BuildError
from .queries import KeyedVectorsMixin
from .spelling import as_read, decoded, decoded_all, spells, word_encoding, written_words
from .words import (
    OCCURRENCES,
    DuplicateWordsWarning,
    WordIndex,
    count_duplicates,
    lookups_use,
    repeats,
    word_rows,
)

__all__ = [
    "OCCURRENCES",
    "DuplicateWordsWarning",
    "Embeddings",
    "LazyRows",
    "Storage",
    "Subwords",
    "ValuesChangedWarning",
    "WordIndex",
    "as_read",
    "count_duplicates",
    "decoded",
    "decoded_all",
    "lookups_use",
    "repeats",
    "spells",
    "unnormalized",
    "warn_if_changed",
    "word_encoding",
    "word_rows",
    "written_words",
]


class ValuesChangedWarning(UserWarning):
    """A write changed the numbers of the rows it was given (``normalize``, ``unnormalize``)."""


def warn_if_changed(option: str, how: str, before: np.ndarray, after: np.ndarray) -> None:
    """One ValuesChangedWarning line when ``after`` is not ``before`` bit for bit: the option, what it did, and
    the largest change (a conversion keeps the numbers unless an option asks otherwise, and then says so)."""
    if before.shape == after.shape and np.array_equal(before, after, equal_nan=True):
        return
    change = np.abs(np.asarray(after, np.float64) - before)
    largest = float(change[~np.isnan(change)].max(initial=0))
    warnings.warn(f"{option}: {how}; values changed by up to {largest:.3g}", ValuesChangedWarning, stacklevel=4)


def unnormalized(obj: Embeddings, unnormalize: bool | None, format: str) -> Embeddings:
    """The embeddings a format without norms gets: the rows times their stored norms (finalfusion's NdNorms,
    the lengths the rows had before they were L2-normalised) when there are norms, the default; the rows as
    stored with ``unnormalize=False``; ``unnormalize=True`` refuses embeddings without norms. A
    ValuesChangedWarning line says when the values change (float32 products: each value within an ulp of
    the dense row it was normalised from, 2 from a quantized one)."""
    if unnormalize is False or obj.norms is None:
        if unnormalize:
            raise BuildError("unnormalize needs norms, and these embeddings have none", format=format)
        return obj
    vectors = np.asarray(obj.vectors, np.float32)
    scaled = vectors * np.asarray(obj.norms, np.float32)[:, None]
    warn_if_changed("unnormalize", "rows multiplied by their stored norms", vectors, scaled)
    return Embeddings(obj.words, scaled, metadata=obj.metadata, subwords=obj.subwords, kept=obj.kept)


class LazyRows:
    """Rows made on demand, for storages that are not a matrix in the file (finalfusion's quantized arrays):
    ``take(rows)`` makes the rows at an index array or slice. Embeddings built on it look words up without
    making the whole matrix; ``.vectors`` makes it on first use."""

    def __init__(self, shape: tuple[int, int], take: Callable[[Any], np.ndarray]) -> None:
        self.shape = shape
        self.take = take


@dataclass
class Subwords:
    """A subword vocabulary: how a word the vocabulary lacks is composed from n-gram rows stored after the words'.
    Every embedding family with subwords fills it; every writer that keeps subwords reads it.

    ``kind`` names the vocabulary as finalfusion does (``bucket_subword_vocab``: finalfusion's FNV-1a buckets,
    ``fasttext_subword_vocab``: fastText's hash, ``explicit_subword_vocab``, ``floret_subword_vocab``) and
    ``settings`` holds its n-gram settings under finalfusion's field names (``min_n``, ``max_n``, ``buckets`` or
    ``bucket_exp``, ``ngrams``, ...). ``rows`` are the n-gram rows (an array, or a function making it when first
    asked for: a quantized or pruned storage reconstructs them). ``indices(word)`` gives the storage rows an
    unknown word sums, ``lookup(word)`` its vector (None when nothing composes it) and ``lookup_batch(words)``,
    where the family has one, the vectors and a found mask of many at once.
    """

    kind: str
    settings: dict[str, Any]
    rows: Any = None
    indices: Callable[[str], list[int]] | None = None
    lookup: Callable[[str], np.ndarray | None] | None = None
    lookup_batch: Callable[[list[str]], tuple[np.ndarray, np.ndarray]] | None = None

    def matrix(self) -> np.ndarray | None:
        """The n-gram rows, made (once) if they were given as a function."""
        if callable(self.rows):
            self.rows = self.rows()
        return self.rows


@dataclass
class Storage:
    """How the rows are held when not only as the words' matrix: ``matrix``, the whole storage (the words' rows
    then the n-gram rows) when it is one array, written back in one piece while ``vectors`` is its head; and
    ``quantized``, product-quantized rows as finalfusion's quantized array holds them (``codes``,
    ``subquantizers``, ``norms``, ``projection`` and their flags; or a function making it), written back as
    they are while the word rows are the ones they reconstruct; ``rows``, the storage rows at an index list."""

    matrix: np.ndarray | None = None
    quantized: Any = None
    # the storage rows (words' then n-grams') at an index list, made alone (a quantized row reconstructed)
    rows: Callable[[Any], np.ndarray] | None = None

    def quantized_array(self) -> Any:
        """The quantized array, made (once) if it was given as a function."""
        if callable(self.quantized):
            self.quantized = self.quantized()
        return self.quantized


class Embeddings(KeyedVectorsMixin):
    """Words in file order and one float32 row per word.

    Duplicate words keep all their rows in ``.words``/``.vectors`` (nothing is dropped), and lookups by word
    use one occurrence, :attr:`occurrence`: the first, as gensim and word-vectors do (a fastText model the
    last, as fastText does); ``.duplicates`` counts the shadowed rows.
    ``vectors`` may be a :class:`LazyRows`: lookups then make only the rows they return, and ``.vectors`` is the
    whole matrix, made when first asked for.

    The declared parts every embedding family fills and every writer reads: ``subwords`` (a
    :class:`Subwords`, or None), ``storage`` (a :class:`Storage`, or None for the words' matrix alone),
    ``norms`` (each word row's length before it was normalised, or None) and ``metadata`` (a table). ``kept``
    holds what the format that read the file keeps to write it back byte for byte (its own business: no other
    format reads it). ``encoding`` is the encoding the words were read in (None: UTF-8): the writers of formats
    whose words are bytes in no fixed encoding (word2vec, GloVe, Leader, fastText) write them in it again.
    ``copy=False`` keeps ``words`` itself where it is a list (a reader's, handed over: a copy of 400,000 words
    costs a few ms), not a copy of it.
    """

    encoding: str | None = None
    # which occurrence of a repeated word every lookup by word uses ("first" or "last"): the format's own
    # tools' choice (a family's model class sets it; ``vocab``, ``deduplicated`` and the messages follow it)
    occurrence: str = "first"

    def __init__(
        self,
        words: Sequence[str],
        vectors: Any,
        *,
        norms: np.ndarray | None = None,
        metadata: dict[str, Any] | None = None,
        subwords: Subwords | None = None,
        storage: Storage | None = None,
        kept: dict[str, Any] | None = None,
        duplicates: int | None = None,
        copy: bool = True,
    ) -> None:
        self._lazy: LazyRows | None = None
        if isinstance(vectors, LazyRows):
            if len(vectors.shape) != 2 or vectors.shape[0] != len(words):
                raise ValueError(f"{len(words)} words but lazy rows of shape {vectors.shape}")
            self._lazy, vectors = vectors, None
        else:
            vectors = self._matrix(vectors, len(words))
        self.words: list[str] = words if not copy and type(words) is list else list(words)
        self._vectors: np.ndarray | None = vectors
        self.norms = norms
        self.metadata = metadata
        self.subwords = subwords
        self.storage = storage
        self.kept: dict[str, Any] = dict(kept or {})
        self._unit_cache: np.ndarray | None = None
        self._index: dict[str, int] | None = None
        self._duplicates: int | None = duplicates  # (a reader that counted them already: see .duplicates)

    @staticmethod
    def _matrix(vectors: Any, n: int) -> np.ndarray:
        vectors = np.asarray(vectors)
        if vectors.ndim != 2:
            if vectors.size == 0:
                vectors = vectors.reshape(n, 0) if n else vectors.reshape(0, 0)
            else:
                raise ValueError(f"vectors must be a 2-D matrix, got shape {vectors.shape}")
        if vectors.shape[0] != n:
            raise ValueError(f"{n} words but {vectors.shape[0]} vector rows")
        return vectors

    @property
    def vectors(self) -> np.ndarray:
        """One row per word (for lazy rows, the whole matrix is made here, once)."""
        if self._vectors is None:
            assert self._lazy is not None
            self._vectors = self._matrix(self._lazy.take(slice(0, len(self.words))), len(self.words))
        return self._vectors

    @vectors.setter
    def vectors(self, value: Any) -> None:
        self._vectors, self._lazy = self._matrix(value, len(self.words)), None
        self._unit_cache = None  # (the similarity queries' unit rows were the old matrix's)

    def check_parts(self, format: str | None = None) -> None:
        """Refuse embeddings whose parts disagree (``words`` edited after the rows were made, norms that are not
        one per word): a BuildError naming them, which every writer raises before it writes a byte."""
        n = len(self.words)
        rows = self._lazy.shape[0] if self._vectors is None else len(self._vectors)  # type: ignore[union-attr]
        if rows != n:
            raise BuildError(f"{n} words but {rows} vector rows", format=format, path="words")
        if self.norms is not None:
            shape = np.shape(self.norms)
            if shape != (n,):
                found = f"{shape[0]} norms" if len(shape) == 1 else f"norms of shape {shape}"
                raise BuildError(f"{found} for {n} words", format=format, path="norms")

    @property
    def lazy(self) -> bool:
        """True while the rows come from a :class:`LazyRows` and ``.vectors`` has not been made."""
        return self._vectors is None

    def _row(self, i: int) -> np.ndarray:
        """Row ``i``: a view of the matrix, or made alone when the matrix is lazy."""
        if self._vectors is None:
            return self.rows([i])[0]
        return self._vectors[i]

    def rows(self, rows: Any) -> np.ndarray:
        """The rows at an index array (or slice), made alone when the matrix is lazy."""
        if self._vectors is None:
            assert self._lazy is not None
            return self._lazy.take(np.asarray(rows, np.intp) if not isinstance(rows, slice) else rows)
        return self._vectors[rows]

    # -- lookups -------------------------------------------------------------------------------------------

    @property
    def vocab(self) -> dict[str, int]:
        """word -> the row lookups use, of its :attr:`occurrence` (built on first use, as reading and converting
        need none)."""
        if self._index is None:
            index = word_rows(self.words, self.occurrence)
            self._duplicates = len(self.words) - len(index)
            self._index = index
        return self._index

    @property
    def duplicates(self) -> int:
        """How many rows repeat another row's word (lookups reach one row of each word: :attr:`occurrence`)."""
        if self._duplicates is None:
            self._duplicates = count_duplicates(self.words)
        return self._duplicates

    def __len__(self) -> int:
        return len(self.words)

    def index(self, word: str) -> int:
        """The row of ``word`` (the occurrence lookups use); KeyError when absent."""
        return self.vocab[word]

    def get(self, word: str, default: Any = None) -> Any:
        i = self.vocab.get(word)
        return default if i is None else self._row(i)

    def embedding(self, word: str) -> np.ndarray | None:
        """The vector of ``word``; for subword vocabularies an unknown word is composed from its n-grams.

        None when the word is unknown and nothing can be composed. Any str has n-grams, lone surrogates
        included (:mod:`wvformats.finalfusion` says how each hash takes them).
        """
        i = self.vocab.get(word)
        if i is not None:
            return self._row(i)
        lookup = self._unknown_lookups()[0]
        return lookup(word) if lookup else None

    def embedding_batch(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of many words at once: a (len(words), dim) float32 matrix and a boolean ``found``
        mask (rows of words that are unknown and cannot be composed are zero). Known words give their rows;
        unknown ones are composed from their n-grams exactly as :meth:`embedding` does, vectorised over the
        whole batch where the vocabulary allows (finalfusion bucket vocabularies)."""
        words = list(words)
        out = np.zeros((len(words), self.dim), np.float32)
        found = np.zeros(len(words), bool)
        vocab = self.vocab
        known = [(i, vocab[w]) for i, w in enumerate(words) if w in vocab]
        if known:
            at, rows = np.array(known, np.intp).T
            out[at], found[at] = self.rows(rows), True
        unknown = np.flatnonzero(~found)
        lookup, lookup_batch = self._unknown_lookups()
        if lookup_batch is not None and len(unknown):
            vecs, ok = lookup_batch([words[i] for i in unknown.tolist()])
            out[unknown], found[unknown] = vecs, ok
        elif lookup is not None:
            for i in unknown.tolist():
                v = lookup(words[i])
                if v is not None:
                    out[i], found[i] = v, True
        return out, found

    def _unknown_lookups(self) -> tuple[Any, Any]:
        """How a word the vocabulary lacks is looked up, one and many at a time: the subword vocabulary's
        (None, None without one); a model that finds other words (fastText's labels) says so here."""
        sw = self.subwords
        return (sw.lookup, sw.lookup_batch) if sw is not None else (None, None)

    def subword_indices(self, word: str) -> list[int]:
        """The storage rows an unknown word's embedding sums (empty without a subword vocabulary)."""
        rows_of = self.subwords.indices if self.subwords is not None else None
        return rows_of(word) if rows_of else []

    def _unit_rows(self) -> np.ndarray:
        if self._unit_cache is None:
            m = np.asarray(self.vectors, dtype=np.float32)
            norms = np.linalg.norm(m, axis=1, keepdims=True)
            self._unit_cache = m / np.where(norms > 0, norms, 1)
        return self._unit_cache

    def _ranked(self, sims: np.ndarray, skip: set[str], limit: int, offset: int = 0) -> list[tuple[str, float]]:
        """The ``limit`` words of highest similarity (``sims[i]``: row ``offset + i``'s), those in ``skip``
        left out and a repeated word ranked by the row lookups use (gensim's ``most_similar`` ranking: gensim
        keeps one row of a word)."""
        wanted = limit + len(skip) + self.duplicates  # enough candidates whatever is left out
        if wanted < len(sims):  # the best ``wanted`` found in linear time, then only those sorted
            best = np.argpartition(-sims, wanted)[: wanted + 1]
            order = best[np.lexsort((best, -sims[best]))]  # by similarity, ties in row order as a stable sort
        else:
            order = np.argsort(-sims, kind="stable")
        out: list[tuple[str, float]] = []
        looked_up = self.vocab if self.duplicates else None  # (a shadowed row is no word's vector)
        for i in order.tolist():
            w = self.words[offset + i]
            if w in skip or looked_up is not None and looked_up[w] != offset + i:
                continue
            out.append((w, float(sims[i])))
            if len(out) == limit:
                break
        return out

    @property
    def dim(self) -> int:
        shape = self._vectors.shape if self._vectors is not None else self._lazy.shape  # type: ignore[union-attr]
        return int(shape[1])

    def __repr__(self) -> str:
        dtype = np.float32 if self._vectors is None else self._vectors.dtype
        return f"<Embeddings {len(self)} x {self.dim} {np.dtype(dtype)}{' lazy' if self.lazy else ''}>"

    def warn_duplicates(self) -> None:
        """Count duplicates now and warn once if there are any."""
        if self.duplicates:
            warnings.warn(
                f"{self.duplicates} duplicate word(s); lookups use {lookups_use(self.occurrence)}",
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

    def _plain(self, words: list[Any], vectors: np.ndarray) -> Embeddings:
        return Embeddings(words, vectors)

    def deduplicated(self) -> Embeddings:
        """One row of each word, the one lookups use (:attr:`occurrence`: the first, a fastText model's last),
        with its norm, in file order, with the subword vocabulary (its n-gram rows follow the words' and are the
        same whichever words are dropped) and the words' encoding; ``self`` when no word repeats. Lookups of the
        result give what they gave. ``deduplicate=True`` (``--dedupe``) writes this, to any format."""
        if not self.duplicates:
            return self
        rows = sorted(self.vocab.values())
        norms = None if self.norms is None else np.asarray(self.norms)[rows]
        out = Embeddings([self.words[i] for i in rows], self.rows(np.array(rows, np.intp)), norms=norms,
                         metadata=self.metadata, subwords=self.subwords)
        out.encoding = self.encoding
        return out

    def astype(self, dtype: Any) -> Embeddings:
        """The same rows in ``dtype``, looked up as ``self`` (the same :attr:`occurrence` of a repeated word)."""
        out = Embeddings(self.words, self.vectors.astype(dtype), norms=self.norms, metadata=self.metadata,
                         subwords=self.subwords, storage=self.storage, kept=self.kept)
        out.occurrence = self.occurrence
        return out

