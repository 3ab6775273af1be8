"""A shard's suffix array under a memory budget: sorted parts, then a k-way merge streamed to ``table``.

The tokenized file stays on disk. A *part* is a run of token positions ``[start, end)``; it is sorted by
libdivsufsort over the window ``[start, end + ext)`` (``ext`` = the part length) read into memory, and
stored as k-byte pointers (the shard's own pointer width) in a file of its own. The window sorts two
suffixes of the part exactly unless they agree on all of it, which needs a common prefix of at least
``ext`` bytes: such neighbours are found (and their runs recorded as *segments*), and once the next part
is final, each segment is put in the order of the suffixes ``D`` bytes further on (``D`` = the distance
from the segment's first position to the part's end, at most ``ext``, so inside the common prefix), which
all start in the next part and are ranked there. The merge takes a batch from every part up to a pivot,
orders the batch by the suffixes' bytes read 8, 16, 32, ... at a time (only while suffixes of different
parts still tie; a part's own order breaks the rest) and appends it to the table. The result is the exact
byte order of the in-memory build, whatever the repeats (the real indexer's merge compares only the first
100,000 bytes). Memory: the window (2 part lengths), its suffix array and the part's positions in the
sort; the batch and the corpus pages it touches (the memory map is told to drop them after each gather,
so they leave the resident set) in the merge.

Every step writes its file atomically with a small JSON record beside it (its parameters and a CRC-32),
so an interrupted build keeps what it finished: a part or table whose record matches is verified and
reused, anything else is done again.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ...fileio import atomic_output
from . import pointers

# What a process holds besides its parts and batches: the interpreter, numpy and pydivsufsort (30 MB
# resident after the imports) and the library code pages that sorting and merging fault in (~10 MB more,
# measured); kept out of the share of the budget that sizes parts and batches. A parent that only hands
# out tasks to worker processes holds PARENT.
BASELINE = 40 << 20
PARENT = 32 << 20
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


def part_length(budget: int, width: int) -> int:
    """Bytes of tokens per part for one process's ``budget``: the window (2L bytes), its int32 suffix
    array (8L), and the part's int64 positions (8L/W) with their k-byte copy."""
    per_byte = 2 + 8 + 16 // width + 2
    length = (budget - BASELINE) // per_byte
    if length < 4096:
        raise ValueError(f"a memory budget of {budget} bytes is too small: at least {BASELINE + 4096 * per_byte}")
    return length - length % width


def task_budget(budget: int, workers: int) -> int:
    """One worker's share of a machine's ``budget`` (the parent that hands out the tasks holds PARENT)."""
    return budget if workers == 1 else (budget - PARENT) // workers


def plan(size: int, width: int, budget: int | None) -> list[tuple[int, int]]:
    """The parts ``[(start, end), ...]`` of a tokenized file of ``size`` bytes (one part when it fits)."""
    if budget is None or size <= part_length(budget, width):
        return [(0, size)]
    length = part_length(budget, width)
    return [(s, min(s + length, size)) for s in range(0, size, length)]


def crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
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


def seal(path: Path, **params: Any) -> dict[str, Any]:
    """Record ``path`` as finished (written after the file itself, so a record always has its file)."""
    meta = {**params, "size": path.stat().st_size, "crc32": crc32(path)}
    with atomic_output(_record(path), fsync=False) as f:
        f.write(json.dumps(meta).encode())
    return meta


class Corpus:
    """A tokenized file as a read-only memory map whose pages are dropped from the process after use."""

    def __init__(self, path: str | os.PathLike[str], keep: int = 0) -> None:
        self.n, self.keep = os.path.getsize(path), keep
        with open(path, "rb") as f:
            self.mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if self.n else None
        self.a = np.frombuffer(self.mm, np.uint8) if self.mm is not None else np.zeros(0, np.uint8)
        self.memo: dict[int, tuple[int, int, int]] = {}
        self.fd = os.open(path, os.O_RDONLY)

    def release(self) -> None:
        """Drop the pages this process touched (they stay in the page cache; re-reading them is cheap),
        unless the whole corpus fits in what it may keep."""
        if self.mm is not None and self.n > self.keep:
            self.mm.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        os.close(self.fd)
        self.a = np.zeros(0, np.uint8)
        if self.mm is not None:
            self.mm.close()
            self.mm = None

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
        while True:  # (pread, not the map: nothing stays resident)
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

    def keys(self, pos: np.ndarray, off: int, words: int, chunk: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``8 * words`` bytes at ``pos + off`` as big-endian u64 columns (zero past the end), and how
        many of them exist: equal columns with fewer bytes mean a suffix that ends there (sorts first).
        Gathered ``chunk`` positions at a time, the map's pages dropped in between."""
        nb = 8 * words
        q = pos + off
        lens = np.clip(self.n - q, 0, nb).astype(np.int64)
        out = np.zeros((len(q), nb), np.uint8)
        full = lens == nb
        if full.any():
            idx = np.flatnonzero(full)
            step = np.arange(nb)
            for s in range(0, len(idx), chunk):
                sel = idx[s : s + chunk]
                out[sel] = np.take(self.a, q[sel, None] + step)  # (1-D gathers: far faster than 2-D rows)
                self.release()
        for i in np.flatnonzero(~full & (lens > 0)).tolist():
            out[i, : lens[i]] = self.a[q[i] : q[i] + lens[i]]
        self.release()
        return out.view(">u8"), lens


def merge_runs(corpus: Corpus, runs: list[np.ndarray], gather: int = 1 << 16, mem: int = 64 << 20) -> np.ndarray:
    """Positions of several runs, each in suffix order, merged into suffix order (exact).

    Sorted by 8 bytes, then groups that still tie and hold suffixes of more than one run by the next
    16, 32, ... bytes (as many as ``mem`` bytes of keys allow); ties within one run keep the run's order
    (the sort is stable)."""
    runs = [r for r in runs if len(r)]
    if len(runs) <= 1:
        return runs[0] if runs else np.zeros(0, np.int64)
    pos = np.concatenate(runs)
    src = np.repeat(np.arange(len(runs)), [len(r) for r in runs])
    order = np.arange(len(pos))
    sel = order.copy()  # slots of `order` still to sort, group by group (groups are contiguous)
    gid = np.zeros(len(pos), np.int64)
    off, words = 0, 4  # 32 bytes at first: most suffixes of text part within them (one page fault each)
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
        words = max(1, min(words * 2, mem // (32 * max(len(sel), 1))))
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
    corpus.release()


def _read_window(path: str | os.PathLike[str], start: int, end: int) -> np.ndarray:
    with open(path, "rb") as f:
        f.seek(start)
        return np.fromfile(f, np.uint8, end - start)


def sort_part(corpus_path: str, width: int, k: int, start: int, end: int, out: str) -> dict[str, Any]:
    """Sort the token positions ``[start, end)`` of a tokenized file into ``out`` (k-byte pointers), and
    record the segments of neighbours that agree on the whole window (to be ordered by :func:`settle`)."""
    params = {"start": start, "end": end, "width": width, "k": k}
    path = Path(out)
    if (done := finished(path, **params)) is not None:
        return {**done, "reused": True}
    from pydivsufsort import divsufsort

    n = os.path.getsize(corpus_path)
    ext = end - start
    wend = min(n, end + ext)
    win = _read_window(corpus_path, start, wend)
    sa = divsufsort(win)
    local = np.empty((end - start) // width, np.int64)
    filled = 0
    for s in range(0, len(sa), 1 << 18):  # keep the positions that start a token of this part
        c = sa[s : s + (1 << 18)]
        c = c[(c < end - start) & (c % width == 0)] if width > 1 or wend > end else c
        local[filled : filled + len(c)] = c
        filled += len(c)
    del sa
    segments: list[list[int]] = []
    if wend < n and len(local) > 1:
        # neighbours in this order that agree on `ext` bytes (the window may have misplaced them)
        x, y = local[:-1], local[1:]
        cand = np.ones(len(x), bool)
        for probe in sorted({0, (ext // 2) & ~7, ext - 8} if ext >= 8 else {0}):
            span = min(8, ext - probe)
            for b in range(span):
                cand &= win[x + probe + b] == win[y + probe + b]
        link = np.zeros(len(x), bool)
        for i in np.flatnonzero(cand).tolist():
            link[i] = np.array_equal(win[x[i] : x[i] + ext], win[y[i] : y[i] + ext])
        if link.any():
            edges = np.diff(np.concatenate([[0], link.astype(np.int8), [0]]))
            segments = [[int(a), int(b)] for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1),
                                                          strict=True)]  # slots a .. b inclusive
    del win
    with atomic_output(path, fsync=False) as f:
        for s in range(0, len(local), 1 << 18):
            f.write(pointers.encode(local[s : s + (1 << 18)] + start, k))
    return seal(path, **params, segments=segments, settled=not segments)


def _positions(path: Path, k: int) -> np.ndarray:
    raw = np.fromfile(path, np.uint8)
    return pointers.decode(raw, k).astype(np.int64) if len(raw) else np.zeros(0, np.int64)


def settle(parts: list[Path], ranges: list[tuple[int, int]], width: int, k: int, n: int) -> None:
    """Put each recorded segment of each part in its final order, from the last part to the first: the
    order of the suffixes ``D`` bytes on, which start in the next (already final) part."""
    for i in range(len(parts) - 2, -1, -1):
        meta = json.loads(_record(parts[i]).read_text())
        if meta.get("settled"):
            continue
        start, end = ranges[i]
        pos = _positions(parts[i], k)
        nxt = _positions(parts[i + 1], k)
        rank = np.empty(len(nxt), np.int64)
        rank[(nxt - end) // width] = np.arange(len(nxt))
        for a, b in meta["segments"]:
            seg = pos[a : b + 1]
            shifted = seg + (end - int(seg.min()))
            r = np.where(shifted >= n, -1, rank[np.minimum((shifted - end) // width, len(rank) - 1)])
            pos[a : b + 1] = seg[np.argsort(r, kind="stable")]
        del nxt, rank
        with atomic_output(parts[i], fsync=False) as f:
            f.write(pointers.encode(pos, k))
        meta.pop("size"), meta.pop("crc32")
        seal(parts[i], **{**meta, "settled": True})


class _Run:
    """One sorted part during the merge, read from a cursor (pread: its pages never enter the process)."""

    def __init__(self, path: Path, k: int) -> None:
        self.k, self.size = k, os.path.getsize(path) // k
        self.fd = os.open(path, os.O_RDONLY)
        self.cur = 0

    def at(self, i: int) -> int:
        return int.from_bytes(os.pread(self.fd, self.k, i * self.k), "little")

    def take(self, hi: int) -> np.ndarray:
        raw = os.pread(self.fd, (hi - self.cur) * self.k, self.cur * self.k)
        self.cur = hi
        return pointers.decode(raw, self.k).astype(np.int64) if raw else np.zeros(0, np.int64)


def merge(corpus_path: str, parts: list[Path], k: int, budget: int, out: Path,
          progress: Any = None) -> None:
    """The k-way merge of sorted ``parts`` into the table ``out`` (written atomically)."""
    share = max(budget - BASELINE, 1 << 20)
    corpus = Corpus(corpus_path, keep=share // 4)
    runs = [_Run(p, k) for p in parts]
    batch = max(1024, share // 2 // 160)  # ~160 bytes per element while a batch is ordered
    # positions gathered between two drops: the kernel maps up to 64 KB around each page fault of a file
    # (fault-around; MADV_RANDOM does not stop it), so each costs up to 64 KB of resident pages until dropped
    gather = max(16, share // 4 // (1 << 16))
    try:
        with atomic_output(out, fsync=False) as f:
            while live := [r for r in runs if r.cur < r.size]:
                q = max(1, batch // len(live))
                # the pivot: the smallest of each run's q-th next suffix; then every run gives what is <= it
                cands = [(r, r.at(min(r.cur + q, r.size) - 1)) for r in live]
                pivot = cands[0][1]
                for _, p in cands[1:]:
                    if corpus.cmp(p, pivot) < 0:
                        pivot = p
                taken = []
                for r, _ in cands:
                    lo, hi = r.cur, min(r.cur + q, r.size)
                    while lo < hi:  # first index whose suffix is after the pivot
                        mid = (lo + hi) // 2
                        if corpus.cmp(r.at(mid), pivot) <= 0:
                            lo = mid + 1
                        else:
                            hi = mid
                    taken.append(r.take(lo))
                corpus.release()
                merged = merge_runs(corpus, taken, gather, share // 4)
                f.write(pointers.encode(merged, k))
                if progress is not None:
                    progress(len(merged))
    finally:
        for r in runs:
            os.close(r.fd)
        corpus.close()


def finish_shard(corpus_path: str, parts: list[str], ranges: list[tuple[int, int]], width: int, k: int,
                 budget: int, table: str) -> dict[str, Any]:
    """A shard's table from its sorted parts (settled, then merged; a single part is the table)."""
    n = os.path.getsize(corpus_path)
    out = Path(table)
    if (done := finished(out, n=n, k=k)) is not None:
        return {**done, "reused": True}
    paths = [Path(p) for p in parts]
    if len(paths) == 1:
        os.replace(paths[0], out)
    else:
        settle(paths, ranges, width, k, n)
        merge(corpus_path, paths, k, budget, out)
    meta = seal(out, n=n, k=k)
    for p in paths:
        p.unlink(missing_ok=True)
        _record(p).unlink(missing_ok=True)
    return meta
