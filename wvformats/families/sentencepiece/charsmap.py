"""The precompiled charsmap of a SentencePiece normalizer: its double-array trie of replacements, decoded, and
what sentencepiece refuses of one."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FormatError
from ...framework import parse
from ...schemas.sentencepiece import (
    CHARSMAP_TRIE_UNIT,
    precompiled_charsmap,
    precompiled_charsmap_head,
)

PATH = "normalizer_spec.precompiled_charsmap"  # where the blob lies in the model, for errors


class CharsMap:
    """A NormalizerSpec's ``precompiled_charsmap``, decoded as the schema declares it
    (``schemas.sentencepiece.precompiled_charsmap``): the trie's size, its darts-clone double-array units,
    the replacement strings.

    ``mapping()`` walks the double array (vectorised, one trie level at a time) and returns every source
    sequence with the string that replaces it, as sentencepiece's normalizer applies them (longest match).
    """

    def __init__(self, blob: bytes) -> None:
        try:
            parsed = parse(precompiled_charsmap, blob, format="sentencepiece")
        except FormatError as e:  # (its offsets are within the blob)
            raise e.located(prefix=PATH) from None
        self.trie_size = int(parsed.trie_size)
        self.units = parsed.trie
        self.normalized = bytes(parsed.normalized)

    @property
    def replacements(self) -> list[str]:
        """The replacement strings of the blob, in order."""
        return [x.decode("utf-8", "surrogateescape") for x in self.normalized.split(b"\0")[:-1]]

    def mapping(self) -> dict[str, str]:
        u = self.units.astype(np.int64)
        n = len(u)
        if not n:
            return {}
        label = u & ((1 << 31) | 0xFF)
        leaf = (u >> 8) & 1
        offset = (u >> 10) << ((u & (1 << 9)) >> 6)
        value = u & ((1 << 31) - 1)
        # unit j with label c (1-255) is the child c of every node whose offset is j ^ c: the units sorted by
        # that parent offset give each node's children as one slice, with no frontier x 255 candidate matrix
        j = np.flatnonzero((label >= 1) & (label <= 255))
        parent = j ^ label[j]
        order = np.argsort(parent, kind="stable")
        j, parent = j[order], parent[order]
        frontier, keys = np.array([offset[0]]), [b""]
        # darts-clone shares common subtrees (sentencepiece's charsmaps hold ~5 keys per unit), so a key count
        # far past the units is a cycle, whose walk would grow without end
        most, reached = 16 * n + (1 << 16), 0
        out: dict[str, str] = {}
        strings: dict[int, str] = {}
        for _ in range(256):  # a key is at most as deep as the longest source sequence
            if not frontier.size:
                break
            lo, hi = np.searchsorted(parent, frontier), np.searchsorted(parent, frontier, "right")
            counts = hi - lo
            reached += int(counts.sum())
            if reached > most:  # checked before the level is made
                raise FormatError(f"the trie of {n} units expands into more than {most} keys (a cycle)",
                                  format="sentencepiece", path=PATH)
            fi = np.repeat(np.arange(len(frontier)), counts)
            child = j[lo[fi] + np.arange(len(fi)) - np.repeat(np.cumsum(counts) - counts, counts)]
            nxt = child ^ offset[child]
            if nxt.size and int(nxt.max()) >= n:  # a corrupt trie: its units point outside it
                raise FormatError(f"the trie points at unit {int(nxt.max())} of {n}", format="sentencepiece",
                                  path=PATH)
            keys = [keys[f] + bytes((c,)) for f, c in zip(fi.tolist(), label[child].tolist(), strict=True)]
            for k, at in zip(keys, np.where(leaf[child] == 1, value[nxt], -1).tolist(), strict=True):
                if at >= 0:
                    if at not in strings:  # a few thousand replacements serve a few hundred thousand keys
                        end = self.normalized.find(b"\0", at)
                        strings[at] = self.normalized[at : end if end >= 0 else None].decode("utf-8",
                                                                                              "surrogateescape")
                    out[k.decode("utf-8", "surrogateescape")] = strings[at]
            frontier = nxt
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"trie_size": self.trie_size, "trie_units": len(self.units),
                "replacements": len(self.replacements), "normalized_bytes": len(self.normalized)}


def charsmap_problem(blob: bytes) -> str | None:
    """What sentencepiece's normalizer refuses in a non-empty precompiled charsmap (normalizer.cc), or None."""
    if len(blob) <= 4:
        return f"{len(blob)} bytes (sentencepiece: Blob for normalization rule is broken)"
    size = parse(precompiled_charsmap_head, blob, format="sentencepiece").trie_size
    if size >= len(blob) - 4:
        return f"a trie of {size} bytes in {len(blob)} (sentencepiece: Trie data size exceeds the input blob size)"
    if size < CHARSMAP_TRIE_UNIT or size % CHARSMAP_TRIE_UNIT:
        return (f"a trie of {size} bytes (sentencepiece: Trie data size is not divisible by "
                f"{CHARSMAP_TRIE_UNIT})")
    if blob[-1] != 0:
        return "the replacement strings do not end in NUL (sentencepiece: normalized block must be null terminated)"
    return None
