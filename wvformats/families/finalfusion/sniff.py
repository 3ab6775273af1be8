"""The finalfusion format as the registry sees it before the codec is imported (standard library only)."""

from __future__ import annotations

from ...registry import Sniffer
from ...schemas.identity import FINALFUSION_HEAD


def sniff_finalfusion(head: bytes) -> bool:
    return FINALFUSION_HEAD.plausible(head)


FINALFUSION = Sniffer("finalfusion", (".fifu",), sniff_finalfusion, priority=0, magic=FINALFUSION_HEAD.prefix,
                      lookups="similar, analogy (unknown words from subwords)")
FORMATS = (FINALFUSION,)
