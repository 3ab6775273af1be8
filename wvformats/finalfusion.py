"""finalfusion lookups: subword n-grams, the finalfusion and fastText hashes, and OOV embeddings.

Exactly as finalfusion-rust and finalfusion-python compute them: n-grams over code points of ``<word>``,
for each start the longest first, duplicates kept; finalfusion FNV-1a-64 over ``u64le(len) + u32le(chars)``
masked to ``2^bucket_exp``; fastText FNV-1a-32 over sign-extended UTF-8 bytes modulo the bucket count. An
unknown word's embedding is the L2-normalised sum of its n-gram rows (None when it has no n-gram).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

_FNV64_OFFSET, _FNV64_PRIME, _MASK64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1
_FNV32_OFFSET, _FNV32_PRIME, _MASK32 = 2166136261, 16777619, (1 << 32) - 1


def ngrams(word: str, min_n: int, max_n: int) -> list[str]:
    """The n-grams of ``<word>`` in finalfusion's order (each start, longest first)."""
    w = f"<{word}>"
    out = []
    for i in range(0, len(w) - min_n + 1):
        for n in range(min(max_n, len(w) - i), min_n - 1, -1):
            out.append(w[i : i + n])
    return out


@functools.lru_cache(maxsize=64)
def _length_state(n: int) -> int:
    h = _FNV64_OFFSET
    for b in n.to_bytes(8, "little"):
        h = ((h ^ b) * _FNV64_PRIME) & _MASK64
    return h


@functools.lru_cache(maxsize=1 << 18)
def finalfusion_hash(ngram: str) -> int:
    """FNV-1a-64 over u64le(char count) followed by u32le(code point) of each character.

    Cached: the n-grams of real vocabularies repeat across words, as fastText's own tables exploit.
    """
    h = _length_state(len(ngram))
    for b in ngram.encode("utf-32-le"):
        h = ((h ^ b) * _FNV64_PRIME) & _MASK64
    return h


@functools.lru_cache(maxsize=1 << 18)
def fasttext_hash(ngram: str) -> int:
    """fastText's Dictionary::hash: FNV-1a-32 over UTF-8 bytes, bytes >= 0x80 sign-extended."""
    h = _FNV32_OFFSET
    for b in ngram.encode("utf-8"):
        h = ((h ^ (b | 0xFFFFFF00 if b & 0x80 else b)) * _FNV32_PRIME) & _MASK32
    return h


def indexer(vocab_type: str, vocab: dict, n_words: int) -> Callable[[str], list[int]] | None:
    """A function word -> storage rows of its n-grams for a subword vocabulary (None for a simple one)."""
    if vocab_type == "bucket_subword_vocab":
        mask, lo, hi = (1 << int(vocab["bucket_exp"])) - 1, int(vocab["min_n"]), int(vocab["max_n"])
        return lambda word: [n_words + (finalfusion_hash(g) & mask) for g in ngrams(word, lo, hi)]
    if vocab_type == "fasttext_subword_vocab":
        buckets, lo, hi = int(vocab["buckets"]), int(vocab["min_n"]), int(vocab["max_n"])
        return lambda word: [n_words + fasttext_hash(g) % buckets for g in ngrams(word, lo, hi)]
    if vocab_type == "explicit_subword_vocab":
        table: dict[str, int] = {}
        for g, i in zip(vocab["ngrams"]["strings"], vocab["ngrams"]["indices"].tolist(), strict=True):
            table.setdefault(g, i)
        lo, hi = int(vocab["min_n"]), int(vocab["max_n"])
        return lambda word: [n_words + table[g] for g in ngrams(word, lo, hi) if g in table]
    return None


def composed(rows_of: Callable[[str], list[int]], storage_rows: Callable[[list[int]], np.ndarray],
             word: str) -> np.ndarray | None:
    """The L2-normalised sum of a word's n-gram rows; None when it has no n-gram."""
    rows = rows_of(word)
    if not rows:
        return None
    v = storage_rows(rows).sum(axis=0, dtype=np.float32)
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else v
