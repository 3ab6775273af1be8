"""The safetensors format as the registry sees it before the codec is imported (standard library only)."""

from __future__ import annotations

from ...registry import Sniffer
from ...schemas.identity import SAFETENSORS_HEADER_LIMIT, SAFETENSORS_HEADER_START


def sniff_safetensors(head: bytes) -> bool:
    """A u64 header length within safetensors' limit, then a JSON object (after any spaces) that is a tensor
    table (its first key a quoted name, or ``{}``), and, where the head holds all of it, ending in ``}``
    before its padding."""
    n = int.from_bytes(head[:8], "little")
    text = head[8:8 + n].lstrip(b" \t\r\n")  # (the library takes spaces before the object)
    if len(head) < 10 or not 2 <= n <= SAFETENSORS_HEADER_LIMIT or text[:1] != SAFETENSORS_HEADER_START:
        return False
    text = text[1:].lstrip(b" \t\r\n")
    if not text.startswith((b'"', b"}")):
        return False
    return len(head) < 8 + n or text.rstrip(b" \t\r\n").endswith(b"}")


SAFETENSORS = Sniffer("safetensors", (".safetensors",), sniff_safetensors, priority=10,
                      lookups="tensors (inspect, dump)")
FORMATS = (SAFETENSORS,)
