"""fastText's subwords, vectorised over many words: character n-grams of ``<word>`` as fastText cuts them
(on UTF-8 lead bytes, so bytes that are not UTF-8 count as characters of their own), hashed with fastText's
FNV-1a (:func:`..finalfusion.lookups.fasttext_hash_many`) into buckets, through the prune index of a pruned
model; and word n-grams of a supervised line."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..finalfusion.lookups import fasttext_hash_many

WORD_NGRAM_PRIME = 116049371  # Dictionary::addWordNgrams


def encode(words: Sequence[str]) -> list[bytes]:
    """The bytes fastText sees of each word (bytes read as surrogate escapes come back)."""
    return [w.encode("utf-8", "surrogateescape") for w in words]


class Buckets:
    """n-gram bucket -> input row, for one model's nwords, bucket count and prune index."""

    def __init__(self, nwords: int, bucket: int, pruneidx: np.ndarray | None) -> None:
        self.nwords, self.bucket = nwords, bucket
        self.pruned = pruneidx is not None
        if self.pruned:
            order = np.argsort(pruneidx[:, 0], kind="stable")
            self.keys, self.values = pruneidx[order, 0].astype(np.int64), pruneidx[order, 1].astype(np.int64)

    def rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of bucket ids (``Dictionary::pushHash``) and which ids have one (all, unless pruned)."""
        ids = ids.astype(np.int64)
        if not self.pruned:
            return ids + self.nwords, np.ones(len(ids), bool)
        at = np.minimum(np.searchsorted(self.keys, ids), max(len(self.keys) - 1, 0))
        kept = (self.keys[at] == ids) if len(self.keys) else np.zeros(len(ids), bool)
        return self.values[at] + self.nwords, kept


def char_ngrams(raw: list[bytes], minn: int, maxn: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every character n-gram of each ``<word>`` in ``Dictionary::computeSubwords``'s order (each start,
    shortest first; the single ``<`` and ``>`` left out): (blob, starts, lengths, owner)."""
    bracketed = [b"<" + w + b">" for w in raw]
    sizes = np.fromiter(map(len, bracketed), np.int64, len(bracketed))
    blob = np.frombuffer(b"".join(bracketed), np.uint8)
    empty = np.zeros(0, np.int64)
    if maxn <= 0 or not len(blob):
        return blob, empty, empty, empty
    word_end = np.cumsum(sizes)
    lead = np.flatnonzero((blob & 0xC0) != 0x80)  # where each character starts
    owner_c = np.searchsorted(word_end, lead, "right")
    # each character's end: the next lead byte of the same word, or the word's end
    nxt = np.append(lead[1:], len(blob))
    last_of_word = np.append(owner_c[1:] != owner_c[:-1], True)
    nxt = np.where(last_of_word, word_end[owner_c], nxt)
    chars_left = np.empty(len(lead), np.int64)  # characters from this one to the word's end
    first_c = np.searchsorted(owner_c, np.arange(len(raw)))
    count_c = np.bincount(owner_c, minlength=len(raw))
    k = np.arange(len(lead))
    chars_left[:] = count_c[owner_c] - (k - first_c[owner_c])
    n_per = np.minimum(chars_left, maxn)  # n-grams of 1..n_per characters from each start
    start_c = np.repeat(k, n_per)
    n = np.arange(int(n_per.sum())) - np.repeat(np.cumsum(n_per) - n_per, n_per) + 1
    end_c = start_c + n - 1  # the last character of the n-gram
    first = start_c == first_c[owner_c[start_c]]
    at_end = end_c == first_c[owner_c[start_c]] + count_c[owner_c[start_c]] - 1
    keep = (n >= minn) & ~((n == 1) & (first | at_end))
    start_c, end_c = start_c[keep], end_c[keep]
    starts = lead[start_c]
    return blob, starts, nxt[end_c] - starts, owner_c[start_c]


def subword_rows(raw: list[bytes], minn: int, maxn: int, buckets: Buckets) -> tuple[np.ndarray, np.ndarray]:
    """Input rows of the character n-grams of many words, in fastText's order: (rows, owner)."""
    blob, starts, lengths, owner = char_ngrams(raw, minn, maxn)
    if not len(starts) or buckets.bucket <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ids = fasttext_hash_many(blob, starts, lengths) % np.uint32(buckets.bucket)
    rows, kept = buckets.rows(ids)
    return rows[kept], owner[kept]


def token_hashes(raw: list[bytes]) -> np.ndarray:
    """fastText's hash of each whole token (``Dictionary::hash``), as uint32."""
    blob = np.frombuffer(b"".join(raw), np.uint8)
    lengths = np.fromiter(map(len, raw), np.int64, len(raw))
    return fasttext_hash_many(blob, np.cumsum(lengths) - lengths, lengths)


def word_ngram_rows(hashes: np.ndarray, line: np.ndarray, n: int, buckets: Buckets) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the word n-grams of many lines (``Dictionary::addWordNgrams``), vectorised: for each token i
    and each j in (i, i + n) on the same line, the hash chained over tokens i..j in u64 (``h * 116049371 +
    hash``, token hashes as fastText keeps them: int32, sign-extended), modulo the buckets. ``line``: each
    token's line (sorted). Returns (rows, line of each row), each line's rows in fastText's order."""
    empty = np.zeros(0, np.int64)
    if n <= 1 or len(hashes) < 2 or buckets.bucket <= 0:
        return empty, empty
    h64 = hashes.astype(np.uint32).view(np.int32).astype(np.int64).view(np.uint64)
    prime = np.uint64(WORD_NGRAM_PRIME)
    chained = h64.copy()
    at, ds, out = [], [], []
    for d in range(1, n):
        i = np.flatnonzero(line[d:] == line[:-d]) if d < len(line) else empty
        chained = chained[: len(h64) - d] * prime + h64[d:]  # tokens i..i+d, for every i
        at.append(i)
        ds.append(np.full(len(i), d))
        out.append(chained[i])
    i, d, h = np.concatenate(at), np.concatenate(ds), np.concatenate(out)
    order = np.lexsort((d, i))  # token by token, shorter n-grams first
    ids = (h[order] % np.uint64(buckets.bucket)).astype(np.int64)
    rows, kept = buckets.rows(ids)
    return rows[kept], line[i[order]][kept]
