"""NumPy's formats as the registry sees them before the codec is imported (standard library only)."""

from __future__ import annotations

from ...registry import Sniffer
from ...schemas.identity import NPY_MAGIC, NPY_VERSIONS, NPZ_MEMBER_SUFFIX, ZIP_LOCAL_MAGIC


def sniff_npy(head: bytes) -> bool:
    return head[:6] == NPY_MAGIC and tuple(head[6:8]) in NPY_VERSIONS


def npz_member(head: bytes) -> bool:
    """A zip archive whose first member is a ``.npy`` file (its local header's name, at byte 30)."""
    if head[:4] != ZIP_LOCAL_MAGIC or len(head) < 30:
        return False
    n = int.from_bytes(head[26:28], "little")
    return head[30:30 + n].endswith(NPZ_MEMBER_SUFFIX)


NPY = Sniffer("npy", (".npy",), sniff_npy, priority=0, lookups="the array (inspect, dump)")
NPZ = Sniffer("npz", (".npz",), npz_member, priority=0, lookups="arrays by name (inspect)")
FORMATS = (NPY, NPZ)
