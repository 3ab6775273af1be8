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

The file is the one :mod:`wvformats.fileio` mapped (it records each map's path, device and inode with
``framework.mapped.remember_file``), opened again and checked to be that file (``open_mapped``); where it is not at
its path any more (removed, replaced), or the map is not one fileio made, or the system has no ``preadv``, rows are
read through the map as before.
"""

from __future__ import annotations

import mmap
import os
import weakref
from typing import Any

import numpy as np

from ...framework.mapped import open_mapped

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

    def all_read(self) -> bool:
        """Whether every region has been read (the file is then closed: its rows come from the map from now on)."""
        if 0 in self.regions:
            return False
        self.close()
        return True

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
    """A :class:`FileRows` for a matrix of contiguous rows that is a view of a read-only map :mod:`~wvformats.fileio`
    made of a file, or None (a matrix in memory, a system without ``preadv``, a file removed or replaced since)."""
    m = mapping(matrix)
    if m is None or not _read_only(m) or matrix.ndim != 2 or not matrix.size \
            or matrix.strides[1] != 4 or matrix.strides[0] < 4 * matrix.shape[1]:
        return None
    start = matrix.__array_interface__["data"][0]
    first = start - np.frombuffer(m, np.uint8, 1).__array_interface__["data"][0]  # (the map's start: offset 0)
    size = (matrix.shape[0] - 1) * matrix.strides[0] + 4 * matrix.shape[1]
    fd = open_mapped(m, first + size)
    if fd is None:
        return None
    return FileRows(fd, first, first + size)


def mapping(a: np.ndarray) -> mmap.mmap | None:
    """The ``mmap.mmap`` an array is a view of (through arrays and memoryviews), or None."""
    base: Any = a
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    return base if isinstance(base, mmap.mmap) and not base.closed else None


def _read_only(m: mmap.mmap) -> bool:
    """Whether a map is read-only (it then shows the file as ``pread`` reads it: a copy-on-write map would show its
    own writes)."""
    with memoryview(m) as view:
        return view.readonly
