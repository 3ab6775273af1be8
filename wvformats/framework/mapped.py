"""The files behind memory maps: which file a read-only map of a whole file shows, for a reader that reads part of
it with ``pread`` rather than through the map (standard library only: the maps are recorded as they are made,
before numpy or construct is imported)."""

from __future__ import annotations

import mmap
import os
import weakref
from typing import Any

# the file each read-only map of a whole file shows: (its absolute path, device, inode), for as long as the map lives
# (a reader that reads part of a mapped file with ``pread``, not through the map, opens it again and checks it is
# that file)
_MAPPED: weakref.WeakKeyDictionary[mmap.mmap, tuple[str, int, int]] = weakref.WeakKeyDictionary()


def remember_file(m: mmap.mmap, path: str, st: os.stat_result) -> None:
    """Record that the read-only map ``m`` shows the whole file at ``path`` whose status is ``st``."""
    _MAPPED[m] = (os.path.abspath(path), st.st_dev, st.st_ino)


def mapped_file(buf: Any) -> tuple[str, int, int] | None:
    """(absolute path, device, inode) of the file a map recorded by :func:`remember_file` shows, or None."""
    try:
        return _MAPPED.get(buf)
    except TypeError:  # (not hashable: not one of ours)
        return None


def open_mapped(buf: Any, least: int) -> int | None:
    """A descriptor, for ``pread``, of the file the map ``buf`` shows (see :func:`remember_file`), opened again and
    checked to be that file (device and inode) and at least ``least`` bytes long; None where ``buf`` is not such a
    map, the system has no ``preadv``, or the file is gone from its path or replaced. The caller closes it."""
    found = mapped_file(buf)
    if found is None or not hasattr(os, "preadv"):
        return None
    path, dev, inode = found
    try:
        fd = os.open(path, os.O_RDONLY)  # (not inherited by programs this process runs)
    except OSError:
        return None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (dev, inode) or st.st_size < least:
        os.close(fd)
        return None
    return fd
