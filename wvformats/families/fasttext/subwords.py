"""fastText's subwords, vectorised over many words: character n-grams of ``<word>`` as fastText cuts them
(on UTF-8 lead bytes, so bytes that are not UTF-8 count as characters of their own), hashed with fastText's
FNV-1a (:func:`.hashing.fasttext_hash_many`) into buckets, through the prune index of a pruned
model; and word n-grams of a supervised line."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np

from ...compiled import kernel
from .hashing import BYTES, FNV_OFFSET, FNV_PRIME, SIGNED, fasttext_hash_many

_K = kernel(f"{__package__}._kernel")  # computeSubwords of one word in C (None: the Python loops below)

WORD_NGRAM_PRIME = 116049371  # Dictionary::addWordNgrams
EOS = "</s>"  # Dictionary::EOS: the token that ends each line, with no n-grams of its own
LABEL_PREFIX = "__label__"  # fastText's default -label (the file does not keep it)
_MASK = 0xFFFFFFFF
_FIRST = [((FNV_OFFSET ^ s) * FNV_PRIME) & _MASK for s in SIGNED]  # the hash after one byte




def encode(words: Sequence[str], bow: str = "", eow: str = "") -> tuple[np.ndarray, np.ndarray]:
    """The bytes fastText sees of each word between ``bow`` and ``eow`` (:data:`BYTES`), all in one blob: (blob
    as uint8, each one's length in bytes)."""
    joined = bow + (eow + bow).join(words) + eow if len(words) else ""
    blob = np.frombuffer(joined.encode("utf-8", BYTES), np.uint8)
    chars = np.fromiter(map(len, words), np.int64, len(words)) + len(bow) + len(eow)
    if len(blob) == len(joined):  # one byte a character
        return blob, chars
    # UTF-8 bytes of each character (an escaped byte, U+DC80..U+DCFF, is one), summed per word
    cps = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), "<u4")
    width = 1 + (cps >= 0x80).astype(np.int64) + (cps >= 0x800) + (cps >= 0x10000) - 2 * ((cps >= 0xDC80) & (cps <= 0xDCFF))
    ends = np.concatenate([[0], np.cumsum(width)])[np.cumsum(chars)]
    return blob, np.diff(ends, prepend=0)


# a pruned model's bucket -> row table is one int32 per bucket up to its largest kept key, made when it holds at
# most this many bytes (fastText's default 2M buckets fit) or _TABLE_RATIO entries per prune index pair (32 times
# the index's bytes); beyond (header values out of proportion to the file) the prune index is looked up as a dict
BUCKET_TABLE_BYTES = 8 << 20
_TABLE_RATIO = 64


class Kept(dict):
    """A pruned model's bucket -> row after the words, for buckets too many for a table: the prune index as a
    dict (-1 for a bucket it does not keep, as the table gives)."""

    def __missing__(self, key: int) -> int:
        return -1


class Buckets:
    """n-gram bucket -> input row, for one model's nwords, bucket count and prune index."""

    def __init__(self, nwords: int, bucket: int, pruneidx: np.ndarray | None) -> None:
        self.nwords, self.bucket = nwords, bucket
        self.pruned = pruneidx is not None
        self._table: memoryview | Kept | None = None
        if self.pruned:
            order = np.argsort(pruneidx[:, 0], kind="stable")
            self.keys, self.values = pruneidx[order, 0].astype(np.int64), pruneidx[order, 1].astype(np.int64)

    def rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of bucket ids (``Dictionary::pushHash``) and which ids have one (all, unless pruned). A bucket
        listed twice in the prune index maps as fastText's ``pruneidx_[first] = second`` leaves it: the last."""
        ids = ids.astype(np.int64)
        if not self.pruned:
            return ids + self.nwords, np.ones(len(ids), bool)
        if not len(self.keys):  # pruned to nothing: fastText's pushHash drops every n-gram
            return np.full(len(ids), self.nwords, np.int64), np.zeros(len(ids), bool)
        at = np.maximum(np.searchsorted(self.keys, ids, "right") - 1, 0)
        kept = (self.keys[at] == ids) if len(self.keys) else np.zeros(len(ids), bool)
        return self.values[at] + self.nwords, kept

    def table(self) -> memoryview | Kept:
        """A pruned model's bucket -> row after the words, -1 where the prune index drops the bucket (keys outside
        the buckets, which no hash reaches, left out), made on first use and read an item at a time as a Python
        int: one int32 a bucket up to the largest kept one (8 MB for 2M buckets), the kernels' form; a
        :class:`Kept` dict of the prune index where such a table would be out of proportion to it
        (:data:`BUCKET_TABLE_BYTES`; the bucket count and the keys are header values)."""
        if self._table is None:
            hit = (self.keys >= 0) & (self.keys < self.bucket)
            keys, values = self.keys[hit], self.values[hit]
            size = int(keys[-1]) + 1 if len(keys) else 0  # (sorted: no bucket past the last key is kept)
            if size * 4 <= max(BUCKET_TABLE_BYTES, _TABLE_RATIO * 4 * len(keys)):
                table = np.full(size, -1, np.int32)  # (the kernels drop a bucket past its end)
                table[keys] = values  # (a key listed twice: the last, as fastText's map keeps it)
                self._table = memoryview(table)
            else:
                self._table = Kept(zip(keys.tolist(), values.tolist(), strict=True))  # (in order: the last wins)
        return self._table


def through(table: memoryview | Kept, ids: list[int], offset: int) -> list[int]:
    """Bucket ids mapped through a pruned model's :meth:`Buckets.table`, plus ``offset``; the buckets it drops
    (-1, or past the end of a table) left out."""
    if isinstance(table, Kept):
        return [offset + r for r in map(table.get, ids, repeat(-1)) if r >= 0]
    size = len(table)
    return [offset + r for x in ids if x < size and (r := table[x]) >= 0]


def char_ngrams(words: Sequence[str], minn: int, maxn: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every character n-gram of each ``<word>`` in ``Dictionary::computeSubwords``'s order (each start,
    shortest first; the single ``<`` and ``>`` left out): (blob, starts, lengths, owner)."""
    blob, sizes = encode(words, "<", ">")
    empty = np.zeros(0, np.int64)
    if maxn <= 0 or not len(blob):
        return blob, empty, empty, empty
    is_lead = (blob & 0xC0) != 0x80  # a character starts here (continuation bytes join the one before)
    lead = np.flatnonzero(is_lead)
    count_c = np.diff(np.cumsum(is_lead)[np.cumsum(sizes) - 1], prepend=0)  # characters of each word
    first_c = np.cumsum(count_c) - count_c
    owner_c = np.repeat(np.arange(len(words)), count_c)
    pos = np.arange(len(lead)) - first_c[owner_c]  # each character's place in its word
    left = count_c[owner_c] - pos  # characters from it to the word's end
    # n-grams of lo..hi characters start at each character; single ones neither at the word's start nor end
    lo = np.where(pos == 0, 2, 1) if minn <= 1 else np.full(len(lead), minn)
    hi = np.where(left == 1, 0, np.minimum(left, maxn)) if minn <= 1 else np.minimum(left, maxn)
    count = np.maximum(hi - lo + 1, 0)
    start_c = np.repeat(np.arange(len(lead)), count)
    n = np.repeat(lo - (np.cumsum(count) - count), count) + np.arange(len(start_c))
    ends = np.append(lead[1:], len(blob))  # a character ends where the next one starts ("<" starts a word)
    starts = lead[start_c]
    return blob, starts, ends[start_c + n - 1] - starts, owner_c[start_c]


def subword_rows(words: Sequence[str], minn: int, maxn: int, buckets: Buckets) -> tuple[np.ndarray, np.ndarray]:
    """Input rows of the character n-grams of many words, in fastText's order: (rows, owner)."""
    blob, starts, lengths, owner = char_ngrams(words, minn, maxn)
    if not len(starts) or buckets.bucket <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ids = fasttext_hash_many(blob, starts, lengths) % np.uint32(buckets.bucket)
    rows, kept = buckets.rows(ids)
    return (rows[kept], owner[kept]) if buckets.pruned else (rows, owner)


def one_word_ngrams(word: str, minn: int, maxn: int, buckets: Buckets, offset: int = 0) -> list[int]:
    """:func:`subword_rows` of one word without numpy, less ``nwords`` (rows past the words; a lookup of one
    word pays no numpy call), in C (``_kernel.ngram_rows``) or, without the kernel, in plain Python: the
    character n-grams of ``<word>`` hashed as each is cut, FNV-1a carried from one length to the next, each
    taken modulo the buckets (then through the prune index of a pruned model). ``offset`` is added to each
    (``nwords``: input rows)."""
    bucket = buckets.bucket
    if maxn <= 0 or bucket <= 0:
        return []
    b = ("<" + word + ">").encode("utf-8", BYTES)
    table = buckets.table() if buckets.pruned else None
    if _K is not None:
        if isinstance(table, Kept):
            return through(table, _K.ngram_rows(b, minn, maxn, bucket, 0, None), offset)
        return _K.ngram_rows(b, minn, maxn, bucket, offset, table)
    out: list[int] = []
    add, prime, mask, signed = out.append, FNV_PRIME, _MASK, SIGNED  # (locals: the loops below are the cost)
    if word.isascii() and minn >= 2:  # every byte a character, no byte sign-extended, no single "<" or ">"
        first = _FIRST
        for i in range(len(b) - minn + 1):
            h = first[b[i]]
            for c in b[i + 1 : i + minn - 1]:
                h = (h ^ c) * prime  # (the low 32 bits of a product depend on the low 32 bits alone)
            for c in b[i + minn - 1 : i + maxn]:
                h = ((h ^ c) * prime) & mask
                add(h % bucket)
    else:  # Dictionary::computeSubwords, line by line
        n = len(b)
        for i in range(n):
            if b[i] & 0xC0 == 0x80:
                continue
            h, j, k = FNV_OFFSET, i, 0
            while j < n and k < maxn:
                h = ((h ^ signed[b[j]]) * prime) & mask
                j += 1
                while j < n and b[j] & 0xC0 == 0x80:
                    h = ((h ^ signed[b[j]]) * prime) & mask
                    j += 1
                k += 1
                if k >= minn and not (k == 1 and (i == 0 or j == n)):
                    add(h % bucket)
    if table is not None:
        return through(table, out, offset)
    return [offset + r for r in out] if offset else out


def token_hashes(words: Sequence[str]) -> np.ndarray:
    """fastText's hash of each whole token (``Dictionary::hash``), as uint32."""
    blob, lengths = encode(words)
    return fasttext_hash_many(blob, np.cumsum(lengths) - lengths, lengths)


def word_ngram_rows(hashes: np.ndarray, line: np.ndarray, n: int, buckets: Buckets) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the word n-grams of many lines (``Dictionary::addWordNgrams``), vectorised: for each token i
    and each j in (i, i + n) on the same line, the hash chained over tokens i..j in u64 (``h * 116049371 +
    hash``, token hashes as fastText keeps them: int32, sign-extended), modulo the buckets. ``line``: each
    token's line (sorted). Returns (rows, line of each row), each line's rows in fastText's order."""
    empty = np.zeros(0, np.int64)
    if n <= 1 or len(hashes) < 2 or buckets.bucket <= 0:
        return empty, empty
    n = min(n, int(np.bincount(line - line[0]).max()))  # (no n-gram is longer than the longest line)
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
