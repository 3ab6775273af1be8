"""The safetensors format as the registry sees it before the codec is imported (standard library only)."""

from __future__ import annotations

import os
from pathlib import Path

from ...framework import scalar, scalar_size
from ...registry import Sniffer
from ...schemas.identity import SAFETENSORS_HEADER_LENGTH, SAFETENSORS_HEADER_LIMIT, SAFETENSORS_HEADER_START


def sniff_safetensors(head: bytes) -> bool:
    """A u64 header length within safetensors' limit, then a JSON object (after any spaces) that is a tensor
    table (its first key a quoted name, or ``{}``), and, where the head holds all of it, ending in ``}``
    before its padding."""
    n, at = scalar(SAFETENSORS_HEADER_LENGTH, head), scalar_size(SAFETENSORS_HEADER_LENGTH)
    if n is None or len(head) < at + 2 or not 2 <= n <= SAFETENSORS_HEADER_LIMIT:
        return False
    text = head[at:at + n].lstrip(b" \t\r\n")  # (the library takes spaces before the object)
    if text[:1] != SAFETENSORS_HEADER_START:
        return False
    text = text[1:].lstrip(b" \t\r\n")
    if not text.startswith((b'"', b"}")):
        return False
    return len(head) < at + n or text.rstrip(b" \t\r\n").endswith(b"}")


INDEX_SUFFIX = ".safetensors.index.json"  # a sharded checkpoint's index, as transformers and huggingface_hub name it


def index_of(path: Path) -> Path:
    """A sharded checkpoint's index: the file itself, or the one ``*.safetensors.index.json`` in a folder."""
    path = Path(path)
    if not path.is_dir():
        return path
    found = sorted(path.glob(f"*{INDEX_SUFFIX}"))
    if len(found) != 1:
        from ...errors import FormatError

        named = ", ".join(p.name for p in found) or "none"
        raise FormatError(f"{path}: a sharded checkpoint's folder holds one *{INDEX_SUFFIX} (found: {named}); "
                          "name the index", format=SHARDED_NAME, path="index")
    return found[0]


def sniff_sharded(path: Path) -> bool:
    """A folder holding one ``*.safetensors.index.json``, or such a file, whose text is a JSON object."""
    try:
        if not os.fspath(path).endswith(INDEX_SUFFIX) and not os.path.isdir(path):
            return False  # (every file read is asked first whether it is an index: told by its name alone)
        path = Path(path)
        index = index_of(path) if path.is_dir() else path
        if not index.name.endswith(INDEX_SUFFIX):
            return False
        with open(index, "rb") as f:
            return f.read(64).lstrip()[:1] == SAFETENSORS_HEADER_START
    except Exception:  # noqa: BLE001 - a folder that cannot be told is not this format
        return False


SHARDED_NAME = "safetensors-sharded"
# priority 4, before fastText's 5: the two never take the same file (a fastText head's bytes 4-7, its version or
# the old args' ws, are at least 1, so its first eight bytes as safetensors' u64 header length are at least 2^32,
# past SAFETENSORS_HEADER_LIMIT), and a safetensors file is then not asked fastText's two tests first
SAFETENSORS = Sniffer("safetensors", (".safetensors",), sniff_safetensors, priority=4,
                      lookups="tensors (inspect, dump)", fast="wvformats.families.safetensors.model:fast_read")
SHARDED = Sniffer(SHARDED_NAME, (".json",), sniff_sharded, priority=20, is_directory=True, entry=index_of,
                  lookups="tensors by name across the shards (inspect, dump of the index)")
FORMATS = (SAFETENSORS, SHARDED)
