"""A shard's suffix array under a memory budget: sorted parts, then a k-way merge streamed to ``table``.

The tokenized file stays on disk. A *part* is a run of token positions ``[start, end)``; it is sorted by
libdivsufsort over the window ``[start, end + ext)`` read into memory (``ext``: an eighth of the part, at least
64 KiB, so that the window's order is the true one unless two suffixes agree on the whole rest of it). The pairs
it cannot decide (one suffix's window text a prefix of the next's) are found, and the stretch that shares that
text is put in order by comparing the suffixes in the corpus. A part is stored as two files read in step: the
shard's own k-byte pointers, and for each suffix a record (:data:`AUX_SIZE` bytes): its LCP with the suffix
before it in the part and the :data:`AUX_TAIL` bytes that follow that LCP. The merge (a loser tree that keeps
each suffix's LCP with the last one written, in C: ``_kernel.merge``) orders suffixes of different parts by
these alone nearly always, reads the corpus by ``pread`` where they tie past a tail, and writes the table in
large chunks, freeing the parts' bytes on disk as it consumes them. The result is the exact byte order of the
in-memory build, whatever the repeats (the real indexer's merge compares only the first 100,000 bytes). A
shard's merge can be split into ranges of the merged order (splitters sampled from the parts), each merged by
its own worker into its known offset of the table.

Memory (all of it counts, as ``top`` shows it): nothing is memory-mapped (the corpus, the parts and the
table are read and written by ``pread``/``pwrite``, so their pages stay in the page cache, outside the
process); a part's window and its int32 suffix array (5 bytes per byte of window); the merge's buffered
records; and BASELINE for the interpreter and its libraries. The C heap is trimmed after each part, so freed
arrays do not stay resident.

Every step writes its file atomically with a small JSON record beside it (its parameters and a CRC-32),
so an interrupted build keeps what it finished: a part or table whose record matches is verified and
reused, anything else is done again (a part whose bytes a merge freed fails its CRC and is sorted again).

Without the compiled kernel (``_kernel.c``), its twins here give the same files: :func:`records` in numpy and
Python, and the merge by batches of :func:`merge_runs`, slower.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ...compiled import kernel
from ...fileio import atomic_output
from ...schemas.infinigram import LCP_UNKNOWN, PART_TAIL, part_record, part_records, pointer
from . import pointers

_K = kernel("wvformats.families.infinigram._kernel")

# What every process holds before any part or batch: the interpreter, numpy and pydivsufsort (36-37 MB
# resident after the imports, anonymous and library pages alike, measured with /proc/self/status) and the
# code pages that sorting and merging fault in; kept out of the share of the budget that sizes parts and
# batches. With workers, the parent that spools the documents and hands out the tasks holds as much
# (measured: 40 MB while its workers run), and multiprocessing's resource tracker is one more interpreter, so a budget
# is split as BASELINE + TRACKER + N x (BASELINE + share).
BASELINE = 40 << 20
# With workers, multiprocessing's resource tracker: one more interpreter beside the parent (15.0 MB measured)
TRACKER = 16 << 20
AUX_TAIL = PART_TAIL  # bytes of each suffix after its LCP with the one before it in its part (the schema's)
AUX_SIZE = part_record.itemsize  # a record: the LCP (LCP_UNKNOWN when not known) and the tail
CHUNK = 1 << 16  # positions per step while a part's records are made (a few MB of buffers: FIXED)
FIXED = 6 << 20  # what a sort or merge process holds besides BASELINE and what scales with its share
HEAD = 64  # bytes of a splitter read once, against which a binary search compares (Corpus.cmp_head)
DEEP = 256  # bytes of a tie ordered by vectorised keys before a group is merged suffix by suffix
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(size: int | str) -> int:
    """``"400M"``, ``"2G"``, ``"1.5G"``, ``"65536"`` or an int -> bytes (binary units, an optional ``iB``/``B``)."""
    if isinstance(size, int):
        return size
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(size), re.IGNORECASE)
    if not m:
        raise ValueError(f"not a memory size: {size!r} (e.g. 400M, 2G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def _per_byte(width: int) -> int:
    """Bytes of memory per byte of part: the window (at most 9/8 L bytes) and its int32 suffix array (4 bytes
    per byte of window), rounded up."""
    return 6


def extension(length: int) -> int:
    """Bytes of corpus past a part of ``length`` bytes that its window holds."""
    return max(length // 8, min(length, 1 << 16))


def floor(width: int, workers: int = 1) -> int:
    """The smallest budget: each process's BASELINE and FIXED and room for a part of 4096 bytes (and, with
    workers, the parent's BASELINE and the TRACKER)."""
    one = BASELINE + FIXED + 4096 * _per_byte(width)
    return one if workers == 1 else BASELINE + TRACKER + workers * one


def part_length(budget: int, width: int) -> int:
    """Bytes of tokens per part for one process's ``budget`` (what is left after BASELINE and FIXED)."""
    length = (budget - BASELINE - FIXED) // _per_byte(width)
    if length < 4096:
        raise ValueError(f"a memory budget of {budget} bytes is too small: at least {floor(width)}")
    return length - length % width


def task_budget(budget: int, workers: int, width: int = 1) -> int:
    """One worker's share of a machine's ``budget`` (the parent that hands out the tasks holds BASELINE);
    a budget below :func:`floor` is refused, naming what it has to hold."""
    if budget < floor(width, workers):
        procs = "one process" if workers == 1 else f"a parent and {workers} workers"
        raise ValueError(
            f"a memory budget of {budget / 2**20:.1f} MiB is too small for {procs}: each process holds "
            f"{BASELINE >> 20} MiB before any work (the interpreter, numpy, libdivsufsort), a worker {FIXED >> 20} "
            f"MiB of buffers and room for a part{'' if workers == 1 else f', the resource tracker {TRACKER >> 20} MiB'}"
            f"; at least {floor(width, workers) / 2**20:.1f} MiB")
    return budget if workers == 1 else (budget - BASELINE - TRACKER) // workers


def plan(size: int, width: int, budget: int | None) -> list[tuple[int, int]]:
    """The parts ``[(start, end), ...]`` of a tokenized file of ``size`` bytes (one part when it fits)."""
    if budget is None or size <= part_length(budget, width):
        return [(0, size)]
    length = part_length(budget, width)
    return [(s, min(s + length, size)) for s in range(0, size, length)]


def crc32(path: Path, start: int = 0, length: int | None = None) -> int:
    """The CRC-32 of ``path``'s bytes from ``start``, ``length`` of them (None: to the end), read 1 MB at a time."""
    crc = 0
    with open(path, "rb") as f:
        f.seek(start)
        while (length is None or length > 0) and (chunk := f.read(1 << 20 if length is None else
                                                                min(length, 1 << 20))):
            crc = zlib.crc32(chunk, crc)
            if length is not None:
                length -= len(chunk)
    return crc


def _record(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def finished(path: Path, **params: Any) -> dict[str, Any] | None:
    """The record of ``path`` if the file was finished with these ``params`` and still has its CRC."""
    rec = _record(path)
    try:
        meta = json.loads(rec.read_text())
    except (OSError, ValueError):
        return None
    if any(meta.get(k) != v for k, v in params.items()) or not path.exists():
        return None
    if path.stat().st_size != meta.get("size") or crc32(path) != meta.get("crc32"):
        return None
    return meta


_ZEROS: list[list[int]] = []  # the GF(2) matrices of 2^i zero bytes, i = 0, 1, ... (made when first needed)


def _times(mat: list[int], vec: int) -> int:
    out, i = 0, 0
    while vec:
        if vec & 1:
            out ^= mat[i]
        vec, i = vec >> 1, i + 1
    return out


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of ``a + b`` from ``crc1`` of ``a``, ``crc2`` of ``b`` and ``len2 = len(b)`` (zlib's
    ``crc32_combine``, which Python's zlib does not offer): ``crc1`` moved past ``len2`` zero bytes by the
    matrices of 2^i zero bytes for the bits i of ``len2`` (squares of the matrix of one zero bit, kept: 2.5 ms
    a call when they were squared each time, which made sealing a table of 16 ranges 40 ms of a serial step)."""
    if len2 <= 0:
        return crc1
    if not _ZEROS:
        one = [0xEDB88320] + [1 << i for i in range(31)]  # one zero bit
        for _ in range(3):
            one = [_times(one, row) for row in one]
        _ZEROS.append(one)
    i = 0
    while len2:
        while i >= len(_ZEROS):
            _ZEROS.append([_times(_ZEROS[-1], row) for row in _ZEROS[-1]])
        if len2 & 1:
            crc1 = _times(_ZEROS[i], crc1)
        len2, i = len2 >> 1, i + 1
    return crc1 ^ crc2


def seal(path: Path, crc: int | None = None, **params: Any) -> dict[str, Any]:
    """Record ``path`` as finished (written after the file itself, so a record always has its file); ``crc``: its
    CRC-32 when the writer computed it (else the file is read)."""
    meta = {**params, "size": path.stat().st_size, "crc32": crc32(path) if crc is None else crc}
    with atomic_output(_record(path), fsync=False) as f:
        f.write(json.dumps(meta).encode())
    return meta


class Corpus:
    """A tokenized file read by ``pread`` into bounded buffers, never memory-mapped: a mapped file's pages
    count in the resident set, and a recent kernel maps a whole large folio of the page cache (hundreds of
    KB, measured 0.1-0.7 MB per random 32-byte read on Linux 6.18/ext4) at each fault."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.n = os.path.getsize(path)
        self.memo: dict[int, tuple[int, int, int]] = {}
        self.fd = os.open(path, os.O_RDONLY)

    def close(self) -> None:
        os.close(self.fd)

    def cmp(self, x: int, y: int) -> int:
        """-1, 0 or 1 as the suffix at ``x`` is before, the same as or after the suffix at ``y``.

        A comparison that ran ``L`` bytes also decides the pairs ``(x + d, y + d)`` for ``d < L`` (the
        same bytes, then the same mismatch): remembered, so the suffixes of two copies of a long
        document are compared once, not once per position."""
        if x == y:
            return 0
        if x > y:
            return -self.cmp(y, x)
        known = self.memo.get(y - x)
        if known is not None and known[0] <= x < known[1]:
            return known[2]
        off, step = 0, 64
        while True:
            a, b = os.pread(self.fd, step, x + off), os.pread(self.fd, step, y + off)
            if a != b:
                result = -1 if a < b else 1
                if off >= 256:
                    m = min(len(a), len(b))
                    diff = np.flatnonzero(np.frombuffer(a, np.uint8, m) != np.frombuffer(b, np.uint8, m))
                    if len(self.memo) > 1 << 12:  # (a bound on its memory: under 1 MB)
                        self.memo.clear()
                    self.memo[y - x] = (x, x + off + (int(diff[0]) if len(diff) else m), result)
                return result
            off, step = off + step, min(step * 2, 1 << 20)

    def cmp_head(self, x: int, y: int, head: bytes) -> int:
        """:meth:`cmp` of the suffixes at ``x`` and ``y``, given ``head``, the first HEAD bytes at ``y`` (fewer where
        it ends): one read at ``x`` nearly always decides (bytes compare as suffixes do: a shorter read is a
        suffix that ends, first)."""
        a = os.pread(self.fd, HEAD, x)
        if a != head:
            return -1 if a < head else 1
        return 0 if len(a) < HEAD else self.cmp(x, y)

    def keys(self, pos: np.ndarray, off: int, words: int, chunk: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``8 * words`` bytes at ``pos + off`` as big-endian u64 columns (zero past the end), and how
        many of them exist: equal columns with fewer bytes mean a suffix that ends there (sorts first).
        Read by one ``pread`` per position, ``chunk`` bytes of reads at a time."""
        nb = 8 * words
        q = pos + off
        lens = np.clip(self.n - q, 0, nb).astype(np.int64)
        out = np.zeros((len(q), nb), np.uint8)
        fd, pread = self.fd, os.pread
        idx = np.flatnonzero(lens == nb)
        step = max(1, chunk // (nb + 80))  # (a bytes object costs ~80 bytes besides its data)
        for s in range(0, len(idx), step):
            sel = idx[s : s + step]
            out[sel] = np.frombuffer(b"".join([pread(fd, nb, p) for p in q[sel].tolist()]), np.uint8).reshape(-1, nb)
        for i in np.flatnonzero((lens < nb) & (lens > 0)).tolist():
            out[i, : lens[i]] = np.frombuffer(pread(fd, int(lens[i]), int(q[i])), np.uint8)
        return out.view(">u8"), lens


def merge_runs(corpus: Corpus, runs: list[np.ndarray], gather: int = 1 << 16, mem: int = 64 << 20) -> np.ndarray:
    """Positions of several runs, each in suffix order, merged into suffix order (exact).

    Sorted by their first 32 bytes, then groups that still tie and hold suffixes of more than one run by the
    next 32, 64, ... bytes (as many as ``mem`` bytes of keys allow); ties within one run keep the run's
    order (the sort is stable)."""
    runs = [r for r in runs if len(r)]
    if len(runs) <= 1:
        return runs[0] if runs else np.zeros(0, np.int64)
    pos = np.concatenate(runs)
    src = np.repeat(np.arange(len(runs)), [len(r) for r in runs])
    order = np.arange(len(pos))
    sel = order.copy()  # slots of `order` still to sort, group by group (groups are contiguous)
    gid = np.zeros(len(pos), np.int64)
    off, words = 0, 4  # 32 bytes at first: most suffixes of text part within them
    while len(sel):
        if off >= DEEP:  # long ties (repeats): a merge of each group's runs, compared in C
            _merge_deep(corpus, pos, order, sel, gid, src)
            break
        els = order[sel]
        cols, lens = corpus.keys(pos[els], off, words, gather)
        o = np.lexsort((lens, *(cols[:, w] for w in range(words - 1, -1, -1)), gid))
        els, cols, lens, g = els[o], cols[o], lens[o], gid[o]
        order[sel] = els
        same = (g[1:] == g[:-1]) & (lens[1:] == lens[:-1]) & (lens[1:] == 8 * words)
        same &= (cols[1:] == cols[:-1]).all(axis=1)
        new = np.concatenate([[0], np.cumsum(~same)])
        s = src[els]
        # a group stays if it holds more than one run: compare each member's run with the group's first
        first = np.concatenate([[True], ~same])
        starts = np.flatnonzero(first)
        mixed = np.bincount(new, weights=s != s[starts][new], minlength=len(starts)) > 0
        keep = mixed[new]
        sel, gid = sel[keep], new[keep]
        off += 8 * words
        words = max(1, min(max(words * 2, 4), mem // (32 * max(len(sel), 1))))
    return pos[order]


class _Suffix:
    """A position ordered by its suffix (for heapq.merge)."""

    __slots__ = ("corpus", "pos", "el")

    def __init__(self, corpus: Corpus, pos: int, el: int) -> None:
        self.corpus, self.pos, self.el = corpus, pos, el

    def __lt__(self, other: _Suffix) -> bool:
        return self.corpus.cmp(self.pos, other.pos) < 0


def _merge_deep(corpus: Corpus, pos: np.ndarray, order: np.ndarray, sel: np.ndarray, gid: np.ndarray,
                src: np.ndarray) -> None:
    """Order the groups still tied after ``DEEP`` bytes: each is a few runs, each run already in order, so a
    heap merge of them (m log runs suffix comparisons, each a memcmp as long as the tie) puts them right."""
    import heapq

    bounds = np.flatnonzero(np.diff(gid)) + 1
    for slots in np.split(sel, bounds):
        els = order[slots].tolist()
        if len(els) == 2:
            if corpus.cmp(int(pos[els[0]]), int(pos[els[1]])) > 0:
                order[slots] = els[::-1]
        else:
            by_run: dict[int, list[_Suffix]] = {}
            for e in els:
                by_run.setdefault(int(src[e]), []).append(_Suffix(corpus, int(pos[e]), e))
            order[slots] = [s.el for s in heapq.merge(*by_run.values())]


def _read_window(path: str | os.PathLike[str], start: int, end: int) -> np.ndarray:
    """Bytes ``start:end`` of ``path``, read into one array by Python's I/O (not ``np.fromfile``: a SIGTERM whose
    handler raises while numpy checks its argument came out as a TypeError, not the build's stop)."""
    out = np.empty(end - start, np.uint8)
    view = memoryview(out)
    with open(path, "rb", buffering=0) as f:
        f.seek(start)
        done = 0
        while done < len(out):
            got = f.readinto(view[done:])
            if not got:
                raise EOFError(f"{path}: {len(out) - done} bytes short of {end}")
            done += got
    return out


def records(win: np.ndarray, pos: np.ndarray, start: int, k: int, at_end: bool,
            prev: int = -1) -> tuple[list[int], bytes, bytes]:
    """The twin of ``_kernel.part_records``: the pointers and records of the window offsets ``pos`` (in suffix
    order, ``prev`` the offset before them; -1: none), and the indices whose predecessor's window text is a
    proper prefix of theirs while the window stops short of the corpus's end (``at_end`` false)."""
    w = len(win)
    data = win.tobytes()
    ties: list[int] = []
    lcps: list[int] = []
    tails: list[bytes] = []
    for i, b in enumerate(pos.tolist()):
        a = int(pos[i - 1]) if i else prev
        lcp, known = 0, True
        if a >= 0:
            lim = min(w - a, w - b)
            diff = np.flatnonzero(win[a : a + lim] != win[b : b + lim])
            lcp = int(diff[0]) if len(diff) else lim
            if lcp == lim and not at_end:
                known = False
                if w - a < w - b:
                    ties.append(i)
        if lcp >= LCP_UNKNOWN or (not at_end and b + lcp + AUX_TAIL > w):
            known = False
        lcps.append(lcp if known else LCP_UNKNOWN)
        tails.append(data[b + lcp : b + lcp + AUX_TAIL] if known else b"")
    ptr = pointers.encode(pos.astype(np.int64) + start, k).tobytes() if len(pos) else b""
    return ties, ptr, part_records(lcps, tails)


def _part_records(win: np.ndarray, pos: np.ndarray, start: int, k: int, at_end: bool, prev: int,
                  want: bool) -> tuple[list[int], bytes | bytearray, bytes | bytearray]:
    """``_kernel.part_records`` (its twin without the kernel); ``want``: the pointers and records too."""
    if _K is None:
        return records(win, pos, start, k, at_end, prev)
    ptr = bytearray(len(pos) * k) if want else None
    aux = bytearray(len(pos) * AUX_SIZE) if want else None
    ties = _K.part_records(win, pos, start, k, at_end, ptr, aux, prev)
    return ties, ptr or b"", aux or b""


def _order_ties(corpus_path: str, win: np.ndarray, pos: np.ndarray, start: int, ties: list[int],
                mem: int = 2 << 20) -> int:
    """Put in order the stretches of ``pos`` the window could not: from each suffix whose window text is a
    prefix of the next one's, every following suffix that shares that text (they are contiguous), ordered by
    the corpus bytes after that text (:func:`_order_by_reads`). Returns the number of suffixes reordered."""
    w, m = len(win), len(pos)
    spans: list[list[int]] = []  # [first, last, bytes all of them share]
    for j in ties:
        a = int(pos[j - 1])
        if spans and j - 1 <= spans[-1][1]:  # (within a stretch: one text is a prefix of the other)
            span = spans[-1]
            span[1], span[2] = max(span[1], j), min(span[2], w - a)
        else:
            span = [j - 1, j, w - a]
            spans.append(span)
        text = win[a : a + span[2]]
        e = span[1]
        while e + 1 < m and (q := int(pos[e + 1])) + len(text) <= w and np.array_equal(win[q : q + len(text)], text):
            e += 1
        span[1] = e
    fd = os.open(corpus_path, os.O_RDONLY)
    try:
        for lo, hi, shared in spans:
            members = (pos[lo : hi + 1] + start).tolist()
            pos[lo : hi + 1] = np.array(_order_by_reads(fd, members, shared, mem)) - start
    finally:
        os.close(fd)
    return sum(hi + 1 - lo for lo, hi, _ in spans)


def _order_by_reads(fd: int, members: list[int], off: int, mem: int) -> list[int]:
    """Corpus positions whose suffixes agree on their first ``off`` bytes, in suffix order: sorted by the next
    bytes read (as many as ``mem`` allows, at least 64), groups that still agree by the bytes after those. A
    suffix that ends sorts before the ones it is a prefix of (a shorter read)."""
    out: list[int] = []
    todo: list[tuple[list[int], int]] = [(members, off)]
    while todo:
        group, at = todo.pop()
        if len(group) == 1:
            out.append(group[0])
            continue
        step = max(64, min(1 << 20, mem // len(group)))
        keys = {x: os.pread(fd, step, x + at) for x in group}
        ordered = sorted(group, key=keys.__getitem__)
        runs: list[list[int]] = []
        for x in ordered:
            if runs and keys[x] == keys[runs[-1][0]]:
                runs[-1].append(x)  # (equal keys are full reads: suffixes that end differ in length)
            else:
                runs.append([x])
        del keys
        todo += [(r, at + step) for r in reversed(runs)]
    return out


def ready() -> None:
    """Nothing but the imports a sort needs (a worker started ahead of its first part)."""
    from pydivsufsort import divsufsort  # noqa: F401


def sort_part(corpus_path: str, width: int, k: int, start: int, end: int, out: str,
              early: bool = False) -> dict[str, Any]:
    """Sort the token positions ``[start, end)`` of a tokenized file into ``out`` (k-byte pointers) and its
    records (:func:`aux_path`). ``early``: the file is still being written (past the window): a part whose window
    leaves ties is given up (``{"deferred": True}``, nothing kept), as ordering them reads the corpus further."""
    params = {"start": start, "end": end, "width": width, "k": k}
    path = Path(out)
    if (done := finished(path, start=start, end=end, width=width)) is not None and aux_path(path).exists() and \
            crc32(aux_path(path)) == done.get("aux"):
        if done.get("k") == k:
            return {**done, "reused": True}
        if (meta := _rewidth(path, done, k)) is not None:
            return meta
    from pydivsufsort import divsufsort

    n = os.path.getsize(corpus_path)
    wend = min(n, end + extension(end - start))
    at_end = wend == n
    win = _read_window(corpus_path, start, wend)
    with one_thread():
        sa = divsufsort(win)
    filled = 0
    for s in range(0, len(sa), CHUNK):  # keep the positions that start a token of this part, in place
        c = sa[s : s + CHUNK]
        if width > 1:
            c = c[(c < end - start) & (c % width == 0)]
        elif wend > end:
            c = c[c < end - start]
        sa[filled : filled + len(c)] = c
        filled += len(c)
    pos = sa[:filled]
    reordered = 0
    for attempt in range(2):  # the records; once more when stretches of the window's order were reordered
        prev, crc_ptr, crc_aux = -1, 0, 0
        with atomic_output(path, fsync=False) as fp, atomic_output(aux_path(path), fsync=False) as fa:
            ties: list[int] = []
            for s in range(0, filled, CHUNK):
                c = pos[s : s + CHUNK]
                found, ptr, aux = _part_records(win, c, start, k, at_end, prev, True)
                ties += [s + i for i in found]
                fp.write(ptr)
                fa.write(aux)
                crc_ptr, crc_aux = zlib.crc32(ptr, crc_ptr), zlib.crc32(aux, crc_aux)
                prev = int(c[-1])
        if not ties or attempt:
            break
        if early:
            for f in (path, aux_path(path)):
                f.unlink(missing_ok=True)
            del win, sa, pos
            trim()
            return {"deferred": True}
        reordered = _order_ties(corpus_path, win, pos, start, ties)
    del win, sa, pos
    trim()
    meta = seal(path, crc_ptr, **params, reordered=reordered, aux=crc_aux)
    return {**meta, "early": True} if early else meta


def _rewidth(path: Path, done: dict[str, Any], k: int) -> dict[str, Any] | None:
    """A finished part whose pointers have another width (``done``: its record) rewritten with ``k`` bytes each, its
    records kept (they do not depend on the width): a part sorted while the documents spooled, before the corpus's
    final size was known. None when a pointer does not fit in ``k`` bytes or the record has no width (then it is
    sorted again)."""
    old, crc = done.get("k"), 0
    if type(old) is not int or not 1 <= old <= 8:
        return None
    try:
        with open(path, "rb") as src, atomic_output(path, fsync=False) as dst:
            while raw := src.read(CHUNK * old):
                ptr = pointers.encode(pointers.decode(raw, old), k).tobytes()
                dst.write(ptr)
                crc = zlib.crc32(ptr, crc)
    except ValueError:
        return None
    keep = {key: v for key, v in done.items() if key not in ("k", "size", "crc32")}
    return {**seal(path, crc, **keep, k=k), "rewidth": old}


def aux_path(part: Path) -> Path:
    """The file of a part's records (AUX_SIZE bytes per pointer, in the same order)."""
    return part.with_name(part.name + ".aux")


class _Run:
    """One sorted part during the merge, read from a cursor (pread: its pages never enter the process)."""

    def __init__(self, path: Path, k: int, lo: int = 0, hi: int | None = None) -> None:
        self.k = k
        self.fd = os.open(path, os.O_RDONLY)
        self.cur, self.size = lo, os.path.getsize(path) // k if hi is None else hi

    def at(self, i: int) -> int:
        return pointer(os.pread(self.fd, self.k, i * self.k))

    def after(self, corpus: Corpus, pivot: int, lo: int, hi: int) -> int:
        """The first index in ``[lo, hi)`` whose suffix is after the suffix at ``pivot`` (or ``hi``)."""
        head = os.pread(corpus.fd, HEAD, pivot)
        while lo < hi:
            mid = (lo + hi) // 2
            if corpus.cmp_head(self.at(mid), pivot, head) <= 0:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def take(self, hi: int) -> np.ndarray:
        """The pointers up to ``hi``, the cursor moved on."""
        raw = os.pread(self.fd, (hi - self.cur) * self.k, self.cur * self.k)
        self.cur = hi
        return pointers.decode(raw, self.k).astype(np.int64) if raw else np.zeros(0, np.int64)

    def close(self) -> None:
        os.close(self.fd)


_OMP: Any = None


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """libdivsufsort on one thread while inside: pydivsufsort's OpenMP runtime (libgomp, found among the
    process's mapped libraries) otherwise leaves its second thread spinning after each call, which cost a
    quarter of the CPU of sorting a part of 1 MB (measured 41 ms instead of 31, no faster in wall time).
    Elsewhere (no libgomp found) nothing."""
    global _OMP
    if _OMP is None:
        _OMP = False
        try:
            with open("/proc/self/maps") as f:
                found = sorted({line.split()[-1] for line in f if "/libgomp" in line})
            mine = [p for p in found if "divsufsort" in p] or found[:1]
            if mine:
                import ctypes

                lib = ctypes.CDLL(mine[0])
                _OMP = (lib.omp_get_max_threads, lib.omp_set_num_threads)
        except (OSError, AttributeError):
            pass
    if not _OMP:
        yield
        return
    threads = _OMP[0]()
    _OMP[1](1)
    try:
        yield
    finally:
        _OMP[1](threads)


_TRIM: Any = None


def trim() -> None:
    """Give the freed parts of the C heap back to the system (glibc's ``malloc_trim``; elsewhere nothing).

    glibc serves arrays of a few MB from its heap once one such array was freed (its mmap threshold
    rises), and a heap keeps freed pages resident: without this the resident set of a sort or merge
    process drifts up by the largest arrays it ever freed (measured: 22 MB above the baseline for parts
    that need 10 MB)."""
    global _TRIM
    if _TRIM is None:
        import ctypes

        try:
            _TRIM = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


def merge_shares(share: int) -> tuple[int, int, int]:
    """How the twin's merge spends its ``share`` of memory: elements per batch (~160 bytes each while a batch
    is ordered: half the share), bytes of keys per ordering round and of reads in flight (a quarter each)."""
    return max(1024, share // 2 // 160), share // 4, max(1 << 16, share // 16)


def merge_range(corpus_path: str, parts: list[str], k: int, budget: int, out: str, offset: int,
                los: list[int], his: list[int], progress: Any = None, punch: bool = False) -> int:
    """Merge the slices ``[los[i], his[i])`` of the sorted ``parts`` (pointer indices) and write them at
    pointer ``offset`` of the existing file ``out`` (``pwrite``: its pages stay in the page cache, out of
    this process). ``punch``: free the parts' bytes on disk as they are consumed (they cannot be merged
    again). Returns the number of pointers written."""
    share = max(budget - BASELINE - FIXED, 1 << 20)
    if _K is not None:
        n = os.path.getsize(corpus_path)
        flags = os.O_RDWR if punch else os.O_RDONLY
        fds: list[int] = []
        try:
            cfd = os.open(corpus_path, os.O_RDONLY)
            fds.append(cfd)
            pfds = [os.open(p, flags) for p in parts]
            fds += pfds
            afds = [os.open(aux_path(Path(p)), flags) for p in parts]
            fds += afds
            ofd = os.open(out, os.O_WRONLY)
            fds.append(ofd)
            # (half the share buffers the parts' records: what the sorts left on the heap stays resident)
            return _K.merge(cfd, n, k, pfds, afds, los, his, ofd, offset, share // 2, punch)
        finally:
            for fd in fds:
                os.close(fd)
    batch, mem, gather = merge_shares(share)
    corpus = Corpus(corpus_path)
    runs = [_Run(Path(p), k, lo, hi) for p, lo, hi in zip(parts, los, his, strict=True)]
    fd = os.open(out, os.O_WRONLY)
    at = offset * k
    try:
        while live := [r for r in runs if r.cur < r.size]:
            q = max(1, batch // len(live))
            # the pivot: the smallest of each run's q-th next suffix; then every run gives what is <= it
            cands = [(r, r.at(min(r.cur + q, r.size) - 1)) for r in live]
            pivot = cands[0][1]
            for _, p in cands[1:]:
                if corpus.cmp(p, pivot) < 0:
                    pivot = p
            taken = [r.take(r.after(corpus, pivot, r.cur, min(r.cur + q, r.size))) for r, _ in cands]
            merged = merge_runs(corpus, taken, gather, mem)
            data = memoryview(pointers.encode(merged, k))
            del taken, merged
            while len(data):
                wrote = os.pwrite(fd, data, at)
                data, at = data[wrote:], at + wrote
            del data
            trim()
            if progress is not None:
                progress(at // k - offset)
    finally:
        os.close(fd)
        for r in runs:
            r.close()
        corpus.close()
    return at // k - offset


def split(corpus_path: str, parts: list[str], k: int, pieces: int, samples: int = 256,
          taper: int = 0) -> list[list[int]]:
    """Where ``pieces`` ranges of the merged order begin in each part: ``[[b_0 per part], [b_1 per part],
    ..., [sizes]]`` with ``b_0`` all zero. The splitters are sampled from the parts (every part's pointers at even
    steps, each part's steps shifted by a fraction of a step, merged in suffix order, taken at even ranks, or with
    ``taper`` the last ``taper`` ranges halving in size one after the other, the last two equal:
    :func:`range_shares`); part ``i`` gives range ``j`` its suffixes after splitter ``j - 1`` and up to splitter
    ``j``, searched between the part's two samples around the splitter. Every suffix is distinct (suffixes
    differ in length), so the ranges concatenated are exactly the merged order."""
    runs = [_Run(Path(p), k) for p in parts]
    corpus = Corpus(corpus_path)
    try:
        sizes = [r.size for r in runs]
        bounds = [[0] * len(runs)]
        if pieces > 1 and sum(sizes):
            step = max(1, sum(sizes) // (pieces * samples))
            # (part q sampled from q * step / parts on: on one grid, parts alike in content put a splitter at the
            # same offset between two of their samples, and those errors of up to a step added up, 77 steps over
            # 77 parts, a third of a range at 64 MiB; staggered, they cancel)
            first = [q * step // len(runs) for q in range(len(runs))]
            sampled = [np.array([r.at(i) for i in range(a, r.size, step)], np.int64)
                       for a, r in zip(first, runs, strict=True)]
            order = merge_runs(corpus, sampled, 1 << 16, 8 << 20).tolist()
            part_of = {p: q for q, s in enumerate(sampled) for p in s.tolist()}  # (a position is in one part)
            ends = np.cumsum(range_shares(pieces, taper))
            seen, at = [0] * len(runs), 0  # each part's samples up to the splitter: at or before it
            for j in range(1, pieces):
                if not order:
                    break
                rank = min(len(order) - 1, int(ends[j - 1] / ends[-1] * len(order)))
                for p in order[at : rank + 1]:
                    seen[part_of[p]] += 1
                at = max(at, rank + 1)
                row = []
                for q, (r, lo) in enumerate(zip(runs, bounds[-1], strict=True)):
                    a = max(lo, first[q] + (seen[q] - 1) * step + 1 if seen[q] else 0)  # (after its sample before)
                    b = min(r.size, first[q] + seen[q] * step)  # (at its sample after: past the splitter)
                    row.append(r.after(corpus, order[rank], a, max(a, b)))
                bounds.append(row)
        bounds.append(sizes)
        return bounds
    finally:
        for r in runs:
            r.close()
        corpus.close()


def range_shares(pieces: int, taper: int) -> list[float]:
    """The relative sizes of a merge's ``pieces`` ranges: equal, but for the last ``taper`` (at most
    ``pieces - 1``), which halve one after the other, the last two equal. Workers take the ranges in order as
    they finish, so the range that ends the merge alone is small: with 16 equal ranges on 2 workers, one worker
    idled 0.1 to 0.3 s at the end (a range is 0.35 to 0.5 s of CPU at 64 MiB, and their costs differ)."""
    taper = max(0, min(taper, pieces - 1))
    shares = [1.0] * (pieces - taper) + [0.5 ** (i + 1) for i in range(taper)]
    if taper >= 2:
        shares[-1] = shares[-2]
    return shares


def _piece_record(out: Path, j: int) -> Path:
    return out.with_name(f"{out.name}.piece{j}.json")


def merge_piece(corpus_path: str, parts: list[str], k: int, budget: int, out: str, j: int, bounds: list[list[int]],
                progress: Any = None, punch: bool = False) -> dict[str, Any]:
    """Range ``j`` of a shard's merge (:func:`split`), written at its place in ``out`` and recorded beside it
    (its bounds and the CRC-32 of its bytes), so that an interrupted merge redoes only unfinished ranges
    (``punch``: see :func:`merge_range`; the parts then fail their CRC and are sorted again on a resume)."""
    path = Path(out)
    los, his = bounds[j], bounds[j + 1]
    offset, count = sum(los), sum(his) - sum(los)
    params = {"j": j, "los": los, "his": his}
    rec = _piece_record(path, j)
    try:
        meta = json.loads(rec.read_text())
        if all(meta.get(key) == v for key, v in params.items()) and \
                crc32(path, offset * k, count * k) == meta.get("crc32"):
            return {**meta, "reused": True}
    except (OSError, ValueError):
        pass
    merge_range(corpus_path, parts, k, budget, out, offset, los, his, progress, punch)
    meta = {**params, "crc32": crc32(path, offset * k, count * k)}
    with atomic_output(rec, fsync=False) as f:
        f.write(json.dumps(meta).encode())
    return meta


def prepare_merge(corpus_path: str, parts: list[str], ranges: list[tuple[int, int]], width: int, k: int,
                  pieces: int, table: str, taper: int = 0) -> list[list[int]]:
    """Split the parts' merge into ``pieces`` ranges (``taper``: see :func:`split`) and make the file they are
    written into (``table`` + ``.merging``, kept with the records of finished ranges when it has the right size)."""
    bounds = split(corpus_path, parts, k, pieces, taper=taper)
    merging = Path(table + ".merging")
    size = sum(bounds[-1]) * k
    if not merging.exists() or merging.stat().st_size != size:
        for old in merging.parent.glob(merging.name + ".piece*.json"):
            old.unlink()
        with open(merging, "wb") as f:
            f.truncate(size)
    return bounds


def _pieces_crc(merging: Path, k: int) -> int | None:
    """The CRC-32 of the merged file from its ranges' records (each range's CRC, combined in order), or None
    when they do not cover it end to end (then the file is read)."""
    crc = at = j = 0
    while (rec := _piece_record(merging, j)).exists():
        try:
            meta = json.loads(rec.read_text())
            lo, hi, piece = sum(meta["los"]) * k, sum(meta["his"]) * k, meta["crc32"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if lo != at:
            return None
        crc, at, j = crc32_combine(crc, piece, hi - lo), hi, j + 1
    return crc if j and at == merging.stat().st_size else None


def seal_table(corpus_path: str, parts: list[str], k: int, table: str) -> dict[str, Any]:
    """The merged file becomes the shard's table (recorded); the parts and the range records go."""
    n = os.path.getsize(corpus_path)
    out, merging = Path(table), Path(table + ".merging")
    crc = _pieces_crc(merging, k)
    os.replace(merging, out)
    meta = seal(out, crc, n=n, k=k)
    for old in out.parent.glob(merging.name + ".piece*.json"):
        old.unlink()
    for p in parts:
        for f in (Path(p), _record(Path(p)), aux_path(Path(p))):
            f.unlink(missing_ok=True)
    return meta


def table_done(corpus_path: str, k: int, table: str) -> dict[str, Any] | None:
    return finished(Path(table), n=os.path.getsize(corpus_path), k=k)


def merge(corpus_path: str, parts: list[Path], k: int, budget: int, out: Path, pieces: int = 1) -> None:
    """The k-way merge of sorted ``parts`` into the table ``out``, in ``pieces`` ranges one
    after the other (written into ``out.merging``, then renamed)."""
    names = [str(p) for p in parts]
    bounds = split(corpus_path, names, k, pieces)
    merging = Path(str(out) + ".merging")
    with open(merging, "wb") as f:
        f.truncate(sum(bounds[-1]) * k)
    for j in range(len(bounds) - 1):
        merge_range(corpus_path, names, k, budget, str(merging), sum(bounds[j]), bounds[j], bounds[j + 1])
    os.replace(merging, out)


def finish_shard(corpus_path: str, parts: list[str], ranges: list[tuple[int, int]], width: int, k: int,
                 budget: int, table: str, pieces: int = 1) -> dict[str, Any]:
    """A shard's table from its sorted parts in one process (split, merged; one part is the table)."""
    if (done := table_done(corpus_path, k, table)) is not None:
        return {**done, "reused": True}
    if len(parts) == 1:
        os.replace(parts[0], table + ".merging")
        return seal_table(corpus_path, parts, k, table)
    bounds = prepare_merge(corpus_path, parts, ranges, width, k, pieces, table)
    for j in range(len(bounds) - 1):
        merge_piece(corpus_path, parts, k, budget, table + ".merging", j, bounds, punch=True)
    return seal_table(corpus_path, parts, k, table)
