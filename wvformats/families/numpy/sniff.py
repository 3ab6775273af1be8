"""NumPy's formats as the registry sees them before the codec is imported (standard library only)."""

from __future__ import annotations

from ...registry import Sniffer
from ...schemas.identity import NPY_MAGIC, NPY_VERSIONS, NPZ_MEMBER_SUFFIX, ZIP_LOCAL_MAGIC, zip_first_member

EMBEDDINGS_FIRST = b"words.npy"  # an embeddings .npz: the words (a unicode array), then the vectors


def sniff_npy(head: bytes) -> bool:
    """The magic, then a version (major, minor) numpy reads."""
    at = len(NPY_MAGIC)
    return head[:at] == NPY_MAGIC and tuple(head[at : at + 2]) in NPY_VERSIONS


def npz_member(head: bytes) -> bool:
    """A zip archive whose first member is a ``.npy`` file."""
    return (zip_first_member(head) or b"").endswith(NPZ_MEMBER_SUFFIX)


def embeddings_npz(head: bytes) -> bool:
    """An .npz of word embeddings as wvformats writes them: ``words.npy`` first, then ``vectors.npy``."""
    return zip_first_member(head) == EMBEDDINGS_FIRST


NPY = Sniffer("npy", (".npy",), sniff_npy, priority=0, lookups="the array (inspect, dump)", magic=NPY_MAGIC,
              fast="wvformats.families.numpy.fast:fast_read")
EMBEDDINGS_NPZ = Sniffer("npz-embeddings", (".npz",), embeddings_npz, priority=0,  # (before npz: a kind of it)
                         magic=ZIP_LOCAL_MAGIC)
NPZ = Sniffer("npz", (".npz",), npz_member, priority=1, lookups="arrays by name (inspect)", magic=ZIP_LOCAL_MAGIC)
FORMATS = (NPY, EMBEDDINGS_NPZ, NPZ)
