"""The words of a file as rows: which occurrence of a repeated word lookups use, how many words repeat, and
the word -> row index (a dict, or :class:`WordIndex` for a model looked up one word at a time)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class DuplicateWordsWarning(UserWarning):
    """A file holds the same word more than once; lookups use one occurrence of it, the one the format's own
    tools use (:attr:`Embeddings.occurrence`: the first, as gensim and word-vectors; fastText the last)."""


# which occurrence of a repeated word lookups use (Embeddings.occurrence), and whose choice it is
OCCURRENCES = {"first": "as gensim and word-vectors do", "last": "fastText uses the last"}


def lookups_use(occurrence: str) -> str:
    """Which occurrence of a repeated word lookups use, in words: "the first occurrence (...)"."""
    return f"the {occurrence} occurrence ({OCCURRENCES[occurrence]})"


def word_rows(words: Sequence[str], occurrence: str = "first") -> dict[str, int]:
    """word -> the row lookups use: of its ``occurrence`` ("first" or "last") in ``words`` (a dict made at C
    speed: the later of equal keys overwrites, so the first is kept by making it from the end)."""
    if occurrence == "last":
        return dict(zip(words, range(len(words)), strict=True))
    n = len(words)
    return dict(zip(reversed(words), range(n - 1, -1, -1), strict=True))


def repeats(words: Sequence[str], occurrence: str = "first") -> dict[str, Any]:
    """What ``inspect`` says of a file's words: ``duplicates``, how many repeat another's, and when some do,
    ``lookups_use``, which occurrence lookups use (:func:`lookups_use`), and ``first_duplicate``, the first
    repeated word and the rows it is at."""
    n = count_duplicates(words)
    if not n:
        return {"duplicates": 0}
    at: dict[str, list[int]] = {}
    for i, w in enumerate(words):
        at.setdefault(w, []).append(i)
    word, rows = next((w, rows) for w, rows in at.items() if len(rows) > 1)
    return {"duplicates": n, "lookups_use": lookups_use(occurrence), "first_duplicate": {"word": word, "rows": rows}}


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


class WordIndex:
    """word -> the row of its ``occurrence`` (the first, or with "last" the last: as :func:`word_rows`), one
    word at a time, without a dict: an open-addressing table of
    int32 rows (at most 4 slots a word, load <= 1/2: 8-16 bytes a word, 2 MB for 200k words, where a dict and
    its int values take 16 MB), probed linearly from the word's ``hash`` (Python's, which the str keeps).
    A lookup costs a few tenths of a microsecond more than a dict's; a model looked up one word at a time
    (the mmap open of a large vocabulary) keeps this instead of building :attr:`Embeddings.vocab`."""

    def __init__(self, words: Sequence[str], occurrence: str = "first") -> None:
        n = len(words)
        size = 1 << max(3, (2 * n).bit_length())
        mask = size - 1
        kind = np.int32 if size < 2**31 else np.int64
        table = np.full(size, -1, kind)
        # inserted all at once, a probe step a round: of the rows that reach a free slot, the first takes it (the
        # last with occurrence "last"), so the occurrence lookups use of a repeated word comes first on its probe
        # path (equal words move in step), as in a table filled row after row (from the end, for "last").
        # Few temporaries (the first lookup of the mmap open of 200k words was its peak; issue 39): the hashes
        # masked in place, boolean masks where index arrays were, the round's contest held in the free slots
        # themselves (no scratch table the index's size). The slots stay int64, the hashes' own array: arrays of 8
        # bytes a word are large enough that glibc maps them and gives them back when freed, where int32 ones came
        # from its heap and 4 MB stayed resident after the build (benchmarks/mem_fasttext_open.py); the rows are
        # the table's kind, which keeps ``pick.at`` on numpy's fast path (mixed kinds made the build 1.6x slower)
        rows = np.arange(n, dtype=kind)
        at = np.fromiter(map(hash, words), np.int64, n)
        np.bitwise_and(at, mask, out=at)
        last = occurrence == "last"
        pick, none = (np.maximum, -1) if last else (np.minimum, n)
        while len(rows):
            free = table[at] < 0
            slots, candidates = at[free], rows[free]
            if not last:
                table[slots] = none  # (free slots hold -1: the contest for "first" starts above every row)
            pick.at(table, slots, candidates)
            won = table[slots] == candidates
            left = ~free  # (the rows whose slot was taken, and below those that lost the contest: the next round's)
            left[free] = ~won
            rows, at = rows[left], at[left]
            at += 1
            at &= mask
        self.table = table
        self.get = _probe(memoryview(table), words, mask)  # word -> row or None (its names are the closure's cells)


def _probe(table: memoryview, words: Sequence[str], mask: int) -> Callable[[str], int | None]:
    def get(word: str) -> int | None:
        at = hash(word) & mask
        while (i := table[at]) >= 0:
            if words[i] == word:
                return i
            at = (at + 1) & mask
        return None

    return get
