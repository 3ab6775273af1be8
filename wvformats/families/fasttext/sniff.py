"""fastText binary models as the registry sees them before the codec is imported (standard library only):
the name, extensions and sniffer."""

from __future__ import annotations

import struct

from ...registry import Sniffer
from ...schemas.identity import FASTTEXT_MAGIC, FASTTEXT_VERSIONS


def sniff(head: bytes) -> bool:
    """Current releases by their magic; older ones (no magic) only when their args are fastText's: dim and
    ws small and positive, loss 1-4, model 1-3, n-gram lengths and the dictionary counts consistent."""
    if len(head) < 8:
        return False
    magic, version = struct.unpack_from("<2i", head)
    if magic == FASTTEXT_MAGIC:
        return version in FASTTEXT_VERSIONS
    if len(head) < 56 + 20:
        return False
    dim, ws, epoch, min_count, neg, word_ngrams, loss, model, bucket, minn, maxn, lr_rate = \
        struct.unpack_from("<12i", head)
    size, nwords, nlabels = struct.unpack_from("<3i", head, 56)
    return (0 < dim <= 1 << 16 and 0 < ws <= 1000 and 0 < epoch and 0 <= min_count and 0 <= neg
            and 0 < word_ngrams <= 100 and 1 <= loss <= 4 and 1 <= model <= 3 and 0 <= bucket
            and 0 <= minn <= maxn <= 1000 and 0 < lr_rate and 0 <= nwords and 0 <= nlabels
            and nwords + nlabels == size)


def resembles(head: bytes) -> bool:
    """fastText's magic with a version it does not read: the fastText schema names the versions it reads."""
    return len(head) >= 8 and struct.unpack_from("<i", head)[0] == FASTTEXT_MAGIC


FASTTEXT = Sniffer("fasttext", (".bin", ".ftz"), sniff, priority=5, resembles=resembles,
                   lookups="similar, analogy (unknown words from subwords)")
FORMATS = (FASTTEXT,)
