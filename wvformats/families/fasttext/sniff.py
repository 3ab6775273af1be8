"""fastText binary models as the registry sees them before the codec is imported (standard library only):
the name, extensions and sniffer."""

from __future__ import annotations

from ...registry import Sniffer
from ...schemas.identity import FASTTEXT_HEAD, FASTTEXT_MAGIC, FASTTEXT_OLD_HEAD


def sniff(head: bytes) -> bool:
    """Current releases by their magic; older ones (no magic) only when their args and dictionary counts are
    plausible as the schema's identity declares them (``FASTTEXT_OLD_HEAD``)."""
    if resembles(head):
        return FASTTEXT_HEAD.plausible(head)
    return FASTTEXT_OLD_HEAD.plausible(head)


def resembles(head: bytes) -> bool:
    """fastText's magic with a version it does not read: the fastText schema names the versions it reads."""
    return (FASTTEXT_HEAD.read(head) or {}).get("magic") == FASTTEXT_MAGIC


FASTTEXT = Sniffer("fasttext", (".bin", ".ftz"), sniff, priority=5, resembles=resembles,
                   lookups="similar, analogy (unknown words from subwords)")
FORMATS = (FASTTEXT,)
