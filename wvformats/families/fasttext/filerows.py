"""Rows of a memory-mapped input matrix read with ``pread``, where reading them through the map would make the
process hold far more of the file than the rows.

A lookup of one word reads its own row and its n-grams' (~10 rows, each in a part of the file of its own), and
Linux maps each page-cache folio that a fault lands in whole: up to 2 MB for a row of 400 bytes when the file is
cached in large folios. Through the map, opening a 200k x 100 model and looking one word up held ~12 MB of the
file; with ``pread`` it holds none of it. A row is read with ``pread`` the first time a lookup of one word reads a
row in its 2 MB region of the file, through the map after (a region read twice is likely read again: mapped, its
rows cost a load rather than a system call, ~1 us): one ``pread`` a region in the model's life, and once every
region has been read the file is closed. The batch paths (composed chunks, ``embedding_batch``, ``predict``) read
through the map.

The file is found from the map (``/proc/self/maps``: Linux) and opened again, checked to be the mapped one (its
device and inode); elsewhere, or when it is not at its path any more, rows are read through the map as before.
"""

from __future__ import annotations

import mmap
import os
import weakref
from typing import Any

import numpy as np

REGION_BITS = 21  # the kernel's REGION_BITS: a region is 2 MB of the file, the largest folio x86-64 maps at once


class FileRows:
    """The file a matrix is a read-only map of, open for ``pread`` (closed with this object): ``fd``, ``first``
    (the file offset of the matrix's row 0) and ``regions`` (a byte for each region of the file up to the matrix's
    end, 0 until a row of it is read), as the kernel's ``mean_file_rows`` takes them."""

    def __init__(self, fd: int, first: int, end: int) -> None:
        self.fd, self.first = fd, first
        self.regions = bytearray(((end - 1) >> REGION_BITS) + 1 if end > 0 else 0)
        self._close = weakref.finalize(self, os.close, fd)

    def close(self) -> None:
        self._close()

    def rows(self, matrix: np.ndarray, rows: list[int]) -> np.ndarray:
        """The kernel's reads in Python: ``matrix[rows]``, each row in a region not read before read with
        ``pread`` (its region marked), others (and one ``pread`` does not give whole) through the map."""
        out = np.empty((len(rows), matrix.shape[1]), np.float32)
        width, stride = 4 * matrix.shape[1], matrix.strides[0]
        for k, r in enumerate(rows):
            at = self.first + r * stride
            lo, hi = at >> REGION_BITS, (at + width - 1) >> REGION_BITS
            if width and not (self.regions[lo] and self.regions[hi]):
                self.regions[lo] = self.regions[hi] = 1
                try:
                    if os.preadv(self.fd, [out[k]], at) == width:  # (a row of the file is at most 2 GB)
                        continue
                except OSError:
                    pass
            out[k] = matrix[r]
        return out


def file_rows(matrix: np.ndarray) -> FileRows | None:
    """A :class:`FileRows` for a matrix of contiguous rows that is a view of a read-only ``mmap.mmap`` of a file,
    or None (a matrix in memory, a system without ``/proc/self/maps``, a file renamed or replaced since)."""
    if not _mapped_read_only(matrix) or matrix.ndim != 2 or not matrix.size or matrix.strides[1] != 4 \
            or matrix.strides[0] < 4 * matrix.shape[1]:
        return None
    start = matrix.__array_interface__["data"][0]
    end = start + (matrix.shape[0] - 1) * matrix.strides[0] + 4 * matrix.shape[1]
    found = _mapping(start, end)
    if found is None:
        return None
    first, dev, inode, path = found
    try:
        fd = os.open(path, os.O_RDONLY)  # (not inherited by programs this process runs)
    except OSError:
        return None
    st = os.fstat(fd)
    if (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) != (*dev, inode) \
            or st.st_size < first + (end - start):
        os.close(fd)
        return None
    return FileRows(fd, first, first + (end - start))


def mapping(a: np.ndarray) -> mmap.mmap | None:
    """The ``mmap.mmap`` an array is a view of (through arrays and memoryviews), or None."""
    base: Any = a
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    return base if isinstance(base, mmap.mmap) and not base.closed else None


def _mapped_read_only(a: np.ndarray) -> bool:
    """Whether ``a`` is a view of a read-only ``mmap.mmap`` (which shows the file as ``pread`` reads it: a
    copy-on-write map would show its own writes)."""
    if (m := mapping(a)) is None:
        return False
    with memoryview(m) as view:
        return view.readonly


def _mapping(start: int, end: int) -> tuple[int, tuple[int, int], int, str] | None:
    """The file offset at address ``start``, the file's device (major, minor), inode and path, from the line of
    ``/proc/self/maps`` whose mapping holds the addresses ``[start, end)``; None without one."""
    try:
        with open("/proc/self/maps", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(maxsplit=5)  # start-end perms offset dev inode [path]
        lo, _, hi = fields[0].partition(b"-")
        if not int(lo, 16) <= start < int(hi, 16):
            continue
        if end > int(hi, 16) or len(fields) < 6 or fields[5].endswith(b" (deleted)"):
            return None
        major, _, minor = fields[3].partition(b":")
        return (int(fields[2], 16) + start - int(lo, 16), (int(major, 16), int(minor, 16)), int(fields[4]),
                os.fsdecode(fields[5]))
    return None
