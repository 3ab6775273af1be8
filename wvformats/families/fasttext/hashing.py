"""fastText's hash of a word or n-gram (``Dictionary::hash``): FNV-1a 32 over its UTF-8 bytes, each byte
sign-extended as fastText's ``int8_t`` does; one string at a time, and many at once in numpy. finalfusion's
fastText subword vocabulary uses it too."""

from __future__ import annotations

import codecs

import numpy as np

FNV_OFFSET, FNV_PRIME, MASK = 2166136261, 16777619, 0xFFFFFFFF
SIGNED = [b | 0xFFFFFF00 if b & 0x80 else b for b in range(256)]  # each byte as int8_t, then uint32_t


def _escape_or_pass(e: UnicodeError) -> tuple[bytes, int]:
    """Error handler of :data:`BYTES`: a surrogate escape (U+DC80..U+DCFF) is the byte it was read from, any other
    lone surrogate its 3-byte form (``surrogatepass``)."""
    if not isinstance(e, UnicodeEncodeError):
        raise e
    return b"".join(bytes([ord(c) - 0xDC00]) if 0xDC80 <= ord(c) <= 0xDCFF else c.encode("utf-8", "surrogatepass")
                    for c in e.object[e.start : e.end]), e.end


# str -> the bytes fastText sees: ``word.encode("utf-8", BYTES)``. Bytes that are not UTF-8 are read as surrogate
# escapes and hashed as the bytes they came from; a lone surrogate no byte gave (U+D800) is hashed by its
# surrogatepass form, as the finalfusion fastText vocabularies take it: every str has n-grams, and a .fifu
# converted from a model gives such a word the model's vector
BYTES = "wvformats.fasttext"
codecs.register_error(BYTES, _escape_or_pass)


def fasttext_bytes(text: str) -> bytes:
    """The bytes fastText hashes of a str: its UTF-8, each surrogate escape (U+DC80..U+DCFF, as ``surrogateescape``
    decoding gives a byte that is not UTF-8) the byte it came from, as fastText reads the word; any other lone
    surrogate, which no bytes gave, its 3-byte form (``surrogatepass``): ``text.encode("utf-8", BYTES)``."""
    return text.encode("utf-8", BYTES)


def fasttext_hash(ngram: str) -> int:
    """fastText's Dictionary::hash: FNV-1a-32 over the bytes (:func:`fasttext_bytes`: UTF-8, a surrogate escape
    the byte it came from), bytes >= 0x80 sign-extended."""
    h = FNV_OFFSET
    data = fasttext_bytes(ngram)
    if data.isascii():  # no byte to sign-extend; the low 32 bits of a product depend on the low 32 bits alone
        for b in data:
            h = (h ^ b) * FNV_PRIME
        return h & MASK
    for b in data:
        h = ((h ^ SIGNED[b]) * FNV_PRIME) & MASK
    return h


def fasttext_hash_many(blob: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`fasttext_hash` of many byte strings at once: string ``i`` is ``blob[starts[i]:][:lengths[i]]``.

    One numpy step per byte position across all strings (FNV-1a is sequential within a string only).
    """
    h = np.full(len(starts), FNV_OFFSET, np.uint32)
    if not len(starts):
        return h
    signed = blob.view(np.int8).astype(np.int32).view(np.uint32)  # each byte sign-extended, as int8_t
    prime = np.uint32(FNV_PRIME)
    longest = int(lengths.max())
    if longest < 256:  # longest first (a radix sort of one byte): the strings with a j-th byte are a prefix
        order = np.argsort((255 - lengths).astype(np.uint8), kind="stable")
        at = np.asarray(starts, np.int64)[order]
        live = np.searchsorted(-np.asarray(lengths, np.int64)[order], -np.arange(longest), "left").tolist()
        for j, c in enumerate(live):
            h[:c] ^= signed[at[:c] + j]
            h[:c] *= prime
        out = np.empty_like(h)
        out[order] = h
        return out
    for j in range(longest):
        live_at = np.flatnonzero(lengths > j)
        h[live_at] = (h[live_at] ^ signed[starts[live_at] + j]) * prime
    return h
