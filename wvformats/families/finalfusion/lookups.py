"""finalfusion lookups: subword n-grams, the finalfusion and fastText hashes, and OOV embeddings.

Exactly as finalfusion-rust and finalfusion-python compute them: n-grams over code points of ``<word>``,
for each start the longest first, duplicates kept; finalfusion FNV-1a-64 over ``u64le(len) + u32le(chars)``
masked to ``2^bucket_exp``; fastText FNV-1a-32 over sign-extended UTF-8 bytes modulo the bucket count;
floret MurmurHash3_x64_128 of the UTF-8 bytes with the vocabulary's seed, 1 to 4 of its 32-bit words modulo
the bucket count, for the whole bracketed word and each n-gram. An unknown word's embedding is the
L2-normalised sum of its n-gram rows (None when it has no n-gram).

Every str has n-gram rows, lone surrogates included (from ``surrogateescape`` decoding, say): the
finalfusion hash takes a surrogate's code point as it takes any other, as finalfusion-python does; the
fastText hash takes a surrogate escape as the byte it came from, as fastText (and a fastText model read here)
hashes the word (:func:`~wvformats.families.fasttext.hashing.fasttext_bytes`), and any other lone surrogate
in its 3-byte UTF-8 form; the floret hash takes a surrogate's 3-byte form (``surrogatepass``).
finalfusion-python raises UnicodeEncodeError for either (a finalfusion-rust string cannot hold one).

One unknown word at a time (``embedding(w)``) runs in the compiled kernel (``_kernel.c``) where it is built: a
bucket or fastText vocabulary's n-gram rows (``indexer``) and, over a float32 storage, the word's whole vector
(hashes, gather, sum, norm and division: one C call a word); the rows of an explicit or floret vocabulary, and a
quantized storage's reconstructed rows, are summed and normalised there too. The Python below is its twin, to
the same rows and bits (``WVFORMATS_PURE_PYTHON=1`` runs it; the tests run both); the batch paths are numpy.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Callable

import numpy as np

from ...compiled import kernel
from ..fasttext import fasttext_hash

_K = kernel("wvformats.families.finalfusion._kernel")  # None: the pure-Python twins below serve
_BUCKET, _FASTTEXT = 0, 1  # the kernel's vocabulary kinds
_ROWS_LIMIT = (1 << 63) - 1  # the kernel's rows are int64
_FNV64_OFFSET, _FNV64_PRIME, _MASK64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1
_MASK32 = (1 << 32) - 1


def ngrams(word: str, min_n: int, max_n: int, bow: str = "<", eow: str = ">") -> list[str]:
    """The n-grams of ``<word>`` in finalfusion's order (each start, longest first)."""
    w = f"{bow}{word}{eow}"
    return [w[i:j] for i, j in _spans(len(w), min_n, max_n)]


@functools.lru_cache(maxsize=256)
def _spans(size: int, min_n: int, max_n: int) -> tuple[tuple[int, int], ...]:
    """(start, end) of every n-gram of a string of ``size`` characters, in finalfusion's order."""
    return tuple((i, i + n) for i in range(size - min_n + 1) for n in range(min(max_n, size - i), min_n - 1, -1))


@functools.lru_cache(maxsize=64)
def _length_state(n: int) -> int:
    h = _FNV64_OFFSET
    for b in n.to_bytes(8, "little"):
        h = ((h ^ b) * _FNV64_PRIME) & _MASK64
    return h


_FNV64_PRIME2, _FNV64_PRIME3, _FNV64_PRIME4 = (pow(_FNV64_PRIME, k, 1 << 64) for k in (2, 3, 4))


def _finalfusion_rows(mask: int, offset: int) -> Callable[[str], int]:
    """n-gram -> ``offset + (finalfusion_hash(ngram) & mask)``; an ASCII n-gram from a table of the state after its
    length and first character (per length, made on first use), each further character one step, the 64-bit
    truncation taken once at the end (the low 64 bits of a product depend on the low 64 bits alone)."""
    first: dict[int, list[int]] = {}

    def row(ngram: str) -> int:
        if not ngram or not ngram.isascii():  # (an empty n-gram: a file's min_n of 0)
            return offset + (finalfusion_hash(ngram) & mask)
        data = ngram.encode("ascii")
        n = len(data)
        table = first.get(n)
        if table is None:
            state = _length_state(n)
            table = first[n] = [((state ^ c) * _FNV64_PRIME4) & _MASK64 for c in range(128)]
        h = table[data[0]]
        for c in data[1:]:
            h = (h ^ c) * _FNV64_PRIME4
        return offset + (h & _MASK64 & mask)

    return row


def finalfusion_hash(ngram: str) -> int:
    """FNV-1a-64 over u64le(char count) followed by u32le(code point) of each character.

    A zero byte leaves the xor as it is, so a character's trailing zero bytes are one multiplication by a
    power of the prime: a code point under 256 is one step, under 65536 two (the same value, four times fewer
    operations for most text)."""
    h = _length_state(len(ngram))
    for c in map(ord, ngram):
        if c < 0x100:
            h = ((h ^ c) * _FNV64_PRIME4) & _MASK64
        elif c < 0x10000:
            h = ((((h ^ (c & 0xFF)) * _FNV64_PRIME) ^ (c >> 8)) * _FNV64_PRIME3) & _MASK64
        else:
            for b in c.to_bytes(4, "little"):
                h = ((h ^ b) * _FNV64_PRIME) & _MASK64
    return h


_C1, _C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F


def _fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _MASK64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _MASK64
    return k ^ (k >> 33)


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK64


def murmur3_x64_128(data: bytes, seed: int) -> tuple[int, int]:
    """MurmurHash3_x64_128 (Appleby's reference): the two 64-bit halves (h1, h2)."""
    n = len(data)
    h1 = h2 = seed & 0xFFFFFFFF
    nblocks = n // 16
    for i in range(nblocks):
        k1 = int.from_bytes(data[16 * i : 16 * i + 8], "little")
        k2 = int.from_bytes(data[16 * i + 8 : 16 * i + 16], "little")
        h1 ^= (_rotl64((k1 * _C1) & _MASK64, 31) * _C2) & _MASK64
        h1 = ((_rotl64(h1, 27) + h2) * 5 + 0x52DCE729) & _MASK64
        h2 ^= (_rotl64((k2 * _C2) & _MASK64, 33) * _C1) & _MASK64
        h2 = ((_rotl64(h2, 31) + h1) * 5 + 0x38495AB5) & _MASK64
    tail = data[16 * nblocks :]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (_rotl64((k2 * _C2) & _MASK64, 33) * _C1) & _MASK64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (_rotl64((k1 * _C1) & _MASK64, 31) * _C2) & _MASK64
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    h1, h2 = _fmix64(h1), _fmix64(h2)
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    return h1, h2


@functools.lru_cache(maxsize=1 << 18)
def floret_hashes(ngram: str, seed: int) -> tuple[int, int, int, int]:
    """The four 32-bit words of MurmurHash3_x64_128(UTF-8 bytes, seed), low word of h1 first (floret's and
    finalfusion-rust's order). Uses the ``mmh3`` package when it is installed (C speed), else pure Python."""
    data = ngram.encode("utf-8", "surrogatepass")
    try:
        import mmh3
    except ImportError:
        h1, h2 = murmur3_x64_128(data, seed)
    else:
        h = mmh3.hash128(data, seed=seed, x64arch=True, signed=False)
        h1, h2 = h & _MASK64, h >> 64
    return h1 & _MASK32, h1 >> 32, h2 & _MASK32, h2 >> 32


_MEMO_NGRAMS = 1 << 18  # n-gram -> row memos are cleared when they reach this size (~0.1 KB an entry: ~30 MB)
_MEMO_VECTORS_BYTES = 16 << 20  # the per-word vector cache of :func:`oov_lookup` holds at most this many bytes


def _memo_rows(row_of: Callable[[str], int], min_n: int, max_n: int) -> Callable[[str], list[int]]:
    """word -> the rows of its n-grams, each n-gram's row computed once (n-grams repeat across words) and
    looked up in one C-level pass over the word's n-grams afterwards."""
    memo: dict[str, int] = {}

    def rows(word: str) -> list[int]:
        grams = ngrams(word, min_n, max_n)
        got = list(map(memo.get, grams))
        if None in got:
            if len(memo) > _MEMO_NGRAMS:
                memo.clear()
            for k, g in enumerate(grams):
                if got[k] is None:
                    got[k] = memo[g] = row_of(g)
        return got  # type: ignore[return-value]

    return rows


def oov_lookup(rows_of: Callable[[str], list[int]], storage_rows: Callable[[list[int]], np.ndarray],
               dim: int, data: np.ndarray | None = None) -> Callable[[str], np.ndarray | None]:
    """:func:`composed` of one unknown word, each word's vector kept once made (a copy is returned): the
    cache holds up to :data:`_MEMO_VECTORS_BYTES` of vectors (16 MB: 41k words of 100 dims, 14k of 300) and
    is cleared when full. ``data``: the storage as a dense float32 matrix, whose rows are summed and
    normalised by the kernel (hashed there too for a bucket or fastText vocabulary: one C call a word), or
    without it in four numpy calls (:func:`_dense_composed`), to :func:`composed`'s bits."""
    cache: dict[str, np.ndarray] = {}
    limit = max(1, _MEMO_VECTORS_BYTES // max(4 * dim, 1))
    make = _composer(rows_of, storage_rows, data)

    def lookup(word: str) -> np.ndarray | None:
        v = cache.get(word)
        if v is None:
            v = make(word)
            if v is None:
                return None
            if len(cache) >= limit:
                cache.clear()
            cache[word] = v
        return v.copy()

    lookup.cache = cache  # type: ignore[attr-defined]  (to see what it holds)
    return lookup


def _composer(rows_of: Callable[[str], list[int]], storage_rows: Callable[[list[int]], np.ndarray],
              data: np.ndarray | None) -> Callable[[str], np.ndarray | None]:
    """word -> :func:`composed`, the fastest way the storage and the kernel allow."""
    floats = data is not None and data.ndim == 2 and data.dtype == np.float32
    if _K is not None and floats:
        empty, dim = np.empty, data.shape[1]  # type: ignore[union-attr]
        if isinstance(rows_of, functools.partial) and rows_of.func is _K.ngram_rows:  # hashed in C too
            embedding = functools.partial(_K.embedding, *rows_of.args, data)

            def hashed(word: str) -> np.ndarray | None:
                out = empty(dim, np.float32)
                return out if embedding(word, out) else None

            return hashed
        compose = _K.compose

        def gathered(word: str) -> np.ndarray | None:
            rows = rows_of(word)
            if not rows:
                return None
            out = empty(dim, np.float32)
            compose(data, rows, out)
            return out

        return gathered
    if floats and data.shape[1] > 1 and data.flags.aligned and data.flags.c_contiguous:  # type: ignore[union-attr]
        return _dense_composed(rows_of, data)  # type: ignore[arg-type]  (finalfusion pads to its alignment)
    return lambda word: composed(rows_of, storage_rows, word)


def _dense_composed(rows_of: Callable[[str], list[int]], data: np.ndarray) -> Callable[[str], np.ndarray | None]:
    """:func:`composed` over a dense, aligned float32 matrix with the fewest numpy calls: the rows gathered by
    np.take, summed down the rows onto +0.0 (whole rows in order), the squares summed as :func:`_finished` sums
    them (numpy's pairwise sum), the square root in double rounded to float32 (a correctly rounded root either
    way), the division in place."""
    take, add, multiply, divide, sqrt, zero = data.take, np.add.reduce, np.multiply, np.divide, math.sqrt, np.float32(0)
    rounded = struct.Struct("<f")

    def make(word: str) -> np.ndarray | None:
        rows = rows_of(word)
        if not rows:
            return None
        sums = add(take(rows, axis=0), axis=0, initial=zero)
        norm = rounded.unpack(rounded.pack(sqrt(float(add(multiply(sums, sums))))))[0]
        if norm > 0:
            divide(sums, norm, out=sums)
        return sums

    return make


def indexer(vocab_type: str, vocab: dict, n_words: int) -> Callable[[str], list[int]] | None:
    """A function word -> storage rows of its n-grams for a subword vocabulary (None for a simple one): the
    kernel's ``ngram_rows`` for a bucket or fastText vocabulary (a partial, which :func:`oov_lookup` takes
    to hash and sum in one call), else the memoised Python hashes."""
    if vocab_type == "bucket_subword_vocab":
        mask, lo, hi = (1 << int(vocab["bucket_exp"])) - 1, int(vocab["min_n"]), int(vocab["max_n"])
        if _K is not None and mask <= _ROWS_LIMIT - n_words:
            return functools.partial(_K.ngram_rows, _BUCKET, lo, hi, mask, n_words)
        return _memo_rows(_finalfusion_rows(mask, n_words), lo, hi)
    if vocab_type == "fasttext_subword_vocab":
        buckets, lo, hi = int(vocab["buckets"]), int(vocab["min_n"]), int(vocab["max_n"])
        if _K is not None and 0 < buckets <= _ROWS_LIMIT - n_words:
            return functools.partial(_K.ngram_rows, _FASTTEXT, lo, hi, buckets, n_words)
        return _memo_rows(lambda g: n_words + fasttext_hash(g) % buckets, lo, hi)
    if vocab_type == "explicit_subword_vocab":
        table: dict[str, int] = {}
        for g, i in zip(vocab["ngrams"]["strings"], vocab["ngrams"]["indices"].tolist(), strict=True):
            table.setdefault(g, i)
        lo, hi = int(vocab["min_n"]), int(vocab["max_n"])
        return lambda word: [n_words + table[g] for g in ngrams(word, lo, hi) if g in table]
    if vocab_type == "floret_subword_vocab":
        # every n-gram and the whole bracketed word, each to its first n_hashes hash words mod n_buckets
        buckets, k, seed = int(vocab["n_buckets"]), int(vocab["n_hashes"]), int(vocab["seed"])
        lo, hi, bow, eow = int(vocab["min_n"]), int(vocab["max_n"]), str(vocab["bow"]), str(vocab["eow"])

        def floret_rows(word: str) -> list[int]:
            grams = [f"{bow}{word}{eow}", *ngrams(word, lo, hi, bow, eow)]
            return [n_words + h % buckets for g in grams for h in floret_hashes(g, seed)[:k]]

        return floret_rows
    return None


def subword_rows(vocab_type: str, vocab: dict) -> int:
    """How many storage rows after the words a subword vocabulary can address (0 for a simple one)."""
    if vocab_type == "bucket_subword_vocab":
        return 1 << int(vocab["bucket_exp"])
    if vocab_type == "fasttext_subword_vocab":
        return int(vocab["buckets"])
    if vocab_type == "explicit_subword_vocab":
        indices = vocab["ngrams"]["indices"]
        return int(indices.max()) + 1 if len(indices) else 0
    if vocab_type == "floret_subword_vocab":
        return int(vocab["n_buckets"])
    return 0


def sum_rows(rows: np.ndarray) -> np.ndarray:
    """The float32 sum of ``rows`` (k >= 1 of them) row after row onto +0.0, as finalfusion-rust and fastText add
    rows to a zero vector; a column of -0.0 sums to +0.0. A C-contiguous float32 matrix of two columns or more
    is reduced along its first axis, which numpy does whole row after whole row (its reductions sum pairwise
    only along a contiguous axis); otherwise a running sum (whose order no shape changes: a matrix of one
    column is contiguous along its rows), which costs a temporary of the rows' size (16 us against 2 for
    34 rows of 100)."""
    if rows.ndim == 2 and rows.shape[1] > 1 and rows.dtype == np.float32 and rows.flags.c_contiguous:
        return np.add.reduce(rows, axis=0, initial=np.float32(0))
    return np.cumsum(rows, axis=0, dtype=np.float32)[-1] + np.float32(0)


def composed(rows_of: Callable[[str], list[int]], storage_rows: Callable[[list[int]], np.ndarray],
             word: str) -> np.ndarray | None:
    """The L2-normalised sum of a word's n-gram rows (summed and normalised by the kernel where it is built);
    None when it has no n-gram."""
    rows = rows_of(word)
    if not rows:
        return None
    matrix = storage_rows(rows)
    if _K is not None and matrix.ndim == 2 and matrix.dtype == np.float32:
        out = np.empty(matrix.shape[1], np.float32)
        _K.compose(matrix, None, out)
        return out
    return _finished(sum_rows(matrix), len(rows))


def _finished(sums: np.ndarray, counts: int | np.ndarray, mean: bool = False) -> np.ndarray:
    """Sums of rows (one, or one per word along the last axis) as the lookups return them: L2-normalised (a
    zero sum stays zero; the norm a pairwise sum along the row), or ``mean=True`` times float32(1 / count), as
    fastText's ``Vector::mul`` makes its means."""
    if mean:
        return sums * (1.0 / np.asarray(counts)).astype(np.float32)[..., None]
    if sums.ndim == 1:  # one word: the same pairwise sum and division, as scalars (a third of the time)
        norm = np.sqrt((sums * sums).sum())
        return sums / norm if norm > 0 else sums
    norms = np.sqrt((sums * sums).sum(axis=-1, keepdims=True))
    return sums / np.where(norms > 0, norms, 1)


def _fnv64_many(cps: np.ndarray, first: np.ndarray, lengths: np.ndarray, min_n: int, max_n: int) -> np.ndarray:
    """finalfusion_hash of many n-grams at once: n-gram ``i`` is ``cps[first[i] : first[i] + lengths[i]]``.

    FNV-1a-64 is sequential over bytes but independent across n-grams: one numpy step per character
    position, grouped by n-gram length (the hash starts from the state after the u64le length).
    """
    out = np.empty(len(lengths), np.uint64)
    prime = np.uint64(_FNV64_PRIME)
    prime4 = np.uint64(pow(_FNV64_PRIME, 4, 1 << 64))
    byte = np.uint64(0xFF)
    latin1 = not len(cps) or int(cps.max()) < 256  # then three of each character's four bytes are zero
    for n in range(min_n, max_n + 1):
        sel = np.flatnonzero(lengths == n)
        if not sel.size:
            continue
        at = first[sel]
        h = np.full(sel.size, _length_state(n), np.uint64)
        for j in range(n):
            c = cps[at + j].astype(np.uint64)
            if latin1:  # xor with 0 changes nothing: (h ^ c) * p * p * p * p, with p^4 taken mod 2^64
                h ^= c
                h *= prime4
                continue
            for shift in (0, 8, 16, 24):
                h ^= (c >> np.uint64(shift)) & byte
                h *= prime
        out[sel] = h
    return out


def bucket_rows_batch(words: list[str], min_n: int, max_n: int, bucket_exp: int, n_words: int,
                      bow: str = "<", eow: str = ">") -> tuple[np.ndarray, np.ndarray]:
    """Storage rows of the n-grams of many words, vectorised: (rows, owner) with ``owner[i]`` the index of
    the word that n-gram ``i`` belongs to, in finalfusion's n-gram order within each word."""
    bracketed = [f"{bow}{w}{eow}" for w in words]
    sizes = np.fromiter(map(len, bracketed), np.int64, len(bracketed))
    # no n-gram is longer than the longest word: a file's max_n of 2^24 must not mean 2^24 passes below
    max_n = min(max_n, max(min_n, int(sizes.max()) if len(sizes) else 0))
    cps = np.frombuffer("".join(bracketed).encode("utf-32-le", "surrogatepass"), "<u4")
    word_at = np.cumsum(sizes) - sizes
    # every (word, start): the n-gram lengths from min(max_n, size - start) down to min_n
    n_starts = np.maximum(sizes - min_n + 1, 0)
    owner_s = np.repeat(np.arange(len(words)), n_starts)
    start = np.arange(int(n_starts.sum())) - np.repeat(np.cumsum(n_starts) - n_starts, n_starts)
    longest = np.minimum(max_n, sizes[owner_s] - start)
    count = np.maximum(longest - min_n + 1, 0)  # none when max_n < min_n, as the per-word indexer gives
    owner = np.repeat(owner_s, count)
    first = np.repeat(word_at[owner_s] + start, count)
    lengths = np.repeat(longest, count) - (np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count))
    mask = np.uint64((1 << bucket_exp) - 1) if bucket_exp < 64 else np.uint64(_MASK64)
    hashes = _fnv64_many(cps, first, lengths, min_n, max_n)
    return (hashes & mask).astype(np.int64) + n_words, owner


_SUM_BLOCK_BYTES = 1 << 20  # composed_batch sums this many bytes of rows at a time
_FEW_WORDS = 4  # or one word at a time, for at most this many (a lookup of one word pays no per-row-rank loop)


def as_row_items(data: np.ndarray) -> np.ndarray:
    """The rows of a matrix as one opaque item each, for np.take: a void item has no alignment to keep, so
    the rows of an unaligned matrix (a fastText file's starts at any byte) are copied as they are (np.take
    would copy the whole matrix first to align it, and fancy indexing makes a temporary of every gather)."""
    data = np.ascontiguousarray(data)  # (a view unless strided)
    size = data.shape[1] * data.itemsize
    return data.view(np.uint8).reshape(len(data), size).view(np.dtype((np.void, size)))[:, 0]


def composed_batch(rows: np.ndarray, owner: np.ndarray, n: int, data: np.ndarray,
                   mean: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """For ``n`` words, the L2-normalised sum of their n-gram rows, to the bits of :func:`composed`, and
    which words had any n-gram (``owner`` is sorted: each word's n-grams are together, in order).
    ``mean=True``: the sum times float32(1 / count) instead, as fastText's ``Vector::mul`` makes its means.

    Each word's first row (added to +0.0), then its j-th row for j = 1, 2, ... across all words that have
    one: the same float32 additions in the same order as a row-by-row sum onto a zero vector, gathered
    straight from the storage. Words
    are taken longest first, so that the words with a j-th row are always a leading slice of the block.
    """
    out = np.zeros((n, data.shape[1]), np.float32)
    counts = np.bincount(owner, minlength=n)
    found = counts > 0
    order = np.argsort(-counts, kind="stable")[: int(found.sum())]  # words with n-grams, most first
    if not order.size or not data.shape[1]:
        return out, found
    if int(rows.min()) < 0 or int(rows.max()) >= len(data):  # checked once: the gathers below clip
        raise IndexError(f"row {int(rows.min()) if rows.min() < 0 else int(rows.max())} is outside the "
                         f"{len(data)} rows of the storage")
    starts = (np.cumsum(counts) - counts)[order]
    cnt = counts[order]
    if len(order) <= _FEW_WORDS:  # each word's rows gathered at once and summed in order: the same additions
        sums = np.stack([sum_rows(data[rows[s : s + c]]) for s, c in zip(starts.tolist(), cnt.tolist(), strict=True)])
        out[order] = _finished(sums, cnt, mean)
        return out, found
    block = max(1, _SUM_BLOCK_BYTES // max(4 * data.shape[1], 1))  # words whose sums stay in the CPU cache
    acc_buf = np.empty((min(block, len(order)), data.shape[1]), np.float32)
    row_buf = np.empty_like(acc_buf)  # the j-th rows of a block of words
    items, acc_items, row_items = as_row_items(data.astype(np.float32, copy=False)), as_row_items(acc_buf), \
        as_row_items(row_buf)
    for a in range(0, len(order), block):
        first, c = starts[a : a + block], cnt[a : a + block]
        acc, row = acc_buf[: len(c)], row_buf[: len(c)]
        np.take(items, rows[first], out=acc_items[: len(c)], mode="clip")
        acc += np.float32(0)  # the peers add the first row to a zero vector: -0.0 becomes +0.0
        having = np.searchsorted(-c, -np.arange(1, int(c[0])), side="left")  # words with a j-th row, j >= 1
        for j, m in enumerate(having.tolist(), 1):
            np.take(items, rows[first[:m] + j], out=row_items[:m], mode="clip")
            acc[:m] += row[:m]
        out[order[a : a + block]] = _finished(acc, c, mean)
    return out, found
