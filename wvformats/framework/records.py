"""Record tables walked and packed with numpy: records whose size is known only once the previous one is read
(a length prefix, a word up to its space) found a window or a segment at a time, and written a chunk of
records at a time."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import TruncatedError
from .located import fail
from .streams import release

_U32 = struct.Struct("<I")


def follow_chain(starts: np.ndarray, ends: np.ndarray, most: int) -> np.ndarray:
    """Indices of the records chained from ``starts[0]``: record ``i`` spans ``starts[i]:ends[i]`` and the
    next one is the candidate starting at ``ends[i]``. ``starts`` are sorted candidate record offsets that
    may include false ones (inside a record); those are never reached. At most ``most`` records.

    All in numpy: each candidate's successor is looked up at once, and the chain is enumerated by pointer
    doubling (the first 2^k records, then their 2^k-th successors, ...), so that even a table where most
    candidates are false (bytes of a vector that look like a separator) costs log(n) vectorised passes.
    """
    if not len(starts) or most < 1:
        return np.zeros(0, np.int64)
    # the common case first: while every candidate is a record, the chain is just the next index
    n = len(starts)
    breaks = np.flatnonzero(ends[:-1] != starts[1:])
    head = min(int(breaks[0]) if breaks.size else n - 1, most - 1)
    if head == n - 1 or head == most - 1:
        return np.arange(head + 1, dtype=np.int64)
    k = int(np.searchsorted(starts, ends[head]))
    if k == n or starts[k] != ends[head]:  # the chain stops at the first break (a table, then other data)
        return np.arange(head + 1, dtype=np.int64)
    j = np.minimum(np.searchsorted(starts, ends), n - 1)
    jump = np.append(np.where(starts[j] == ends, j, n), n)  # successor, or n (absorbing) for none
    path = np.array([head], np.int64)  # the records reached from ``head``, 2^k of them after k rounds
    want = most - head
    while len(path) < want and path[-1] != n:
        path = np.concatenate([path, jump[path]])
        jump = jump[jump]
    path = path[:want]
    path = path[: int(np.searchsorted(path, n))]  # up to the end of the chain (the path is increasing)
    return np.concatenate([np.arange(head, dtype=np.int64), path])


def lockstep_chain(step: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]],
                   guess: Callable[[np.ndarray], np.ndarray], pos: int, hi: int, segment: int, overlap: int,
                   longest: int, most: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Records chained from ``pos`` that start before ``hi``, found by walking many stretches of the table at
    once: ``(starts, ends, nexts)`` of at most ``most`` records, in order; fewer where the walk could not
    vouch for the rest (the caller's exact method goes on from there).

    In a table whose records tell their own size (a length prefix, a word up to its space), where record
    ``i + 1`` starts is known only once record ``i`` is read. ``[pos, hi)`` is cut into segments of at least
    ``segment`` bytes (and longer than ``longest``, the longest record ``step`` takes, so that the chain has a
    record in every segment), and one walk per segment advances one record per pass, every walk in the same
    numpy pass: the first from ``pos``, each other from ``guess``, a likely record start found from
    ``overlap`` bytes before its segment. A walk ends where it leaves its segment. A walk from a wrong guess
    usually falls into step with the true chain within a record or two; whether it did is checked, not
    assumed: from where walk ``j - 1`` left off (the true chain, by induction), the chain is followed, again
    all segments in one pass, until it meets a record of walk ``j``, whose records are the true chain from
    there. The records found are therefore exactly those of a one-by-one walk.

    ``step(at)`` takes an array of record starts and gives ``(ok, ends, nexts)``: whether each is a record
    it takes whole, where its own part ends (a word's end) and where the next record starts. ``guess(at)``
    gives a record start at or after each offset, or -1.
    """
    m = max(1, (hi - pos) // max(segment, 2 * overlap, longest + 1))
    bounds = pos + (np.arange(m + 1, dtype=np.int64) * (hi - pos)) // m
    limit = bounds[1:]
    cur = np.full(m, pos, np.int64)
    if m > 1:
        cur[1:] = guess(bounds[1:-1] - overlap)
    ids = np.flatnonzero((cur >= 0) & (cur < limit))
    left = np.full(m, -1, np.int64)  # where each walk left its segment (-1: it stopped at a record inside)
    starts, ends, nexts, owner = _walk(step, guess, ids, cur[ids], limit, left)
    # from where the true chain enters each segment, follow it to the first record of that segment's walk
    size = hi - pos + 1
    # increasing: walk by walk, each walk's records in order (then one that no offset reaches)
    keys = np.append(owner * size + (starts - pos), np.iinfo(np.int64).max)
    joined = np.full(m, -1, np.int64)  # the first record of each walk on the true chain (-1: none)
    at = np.concatenate([[pos], left[:-1]])
    ids = np.flatnonzero(at >= 0)
    at = at[ids]
    tail = [np.zeros(0, np.int64)] * 4  # records on the way (starts, ends, nexts, owner)
    while ids.size:
        inside = at < limit[ids]  # (a chain that crosses the segment without meeting its walk ends the run)
        ids, at = ids[inside], at[inside]
        k = np.searchsorted(keys, ids * size + (at - pos))
        hit = keys[k] == ids * size + (at - pos)
        joined[ids[hit]] = k[hit]
        ids, at = ids[~hit], at[~hit]
        ok, e, n = step(at)
        ids, at, e, n = ids[ok], at[ok], e[ok], n[ok]
        tail = [np.concatenate(pair) for pair in zip(tail, (at, e, n, ids), strict=True)]
        at = n
    broken = np.flatnonzero((joined < 0) | (left < 0))
    last = m if not broken.size else int(broken[0])  # walks kept whole; of walk ``last``, what was found
    keep = (owner <= last) & (joined[owner] >= 0) & (np.arange(len(starts)) >= joined[owner])
    # the records on the way to each walk's first joined record go before it (those of walk ``last`` after
    # the walk's own, where it did not join)
    into = np.where(joined[tail[3]] >= 0, joined[tail[3]], np.searchsorted(owner, tail[3], "right"))
    chosen = tail[3] <= last
    out = [np.insert(a[keep], np.searchsorted(np.flatnonzero(keep), into[chosen]), b[chosen])
           for a, b in zip((starts, ends, nexts), tail[:3], strict=True)]
    return out[0][:most], out[1][:most], out[2][:most]


def _walk(step: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]],
          guess: Callable[[np.ndarray], np.ndarray], ids: np.ndarray, cur: np.ndarray, limit: np.ndarray,
          left: np.ndarray) -> tuple[np.ndarray, ...]:
    """The walks of :func:`lockstep_chain`: walk ``ids[i]`` from ``cur[i]`` until it leaves its segment (the
    offset is put in ``left``) or ``step`` does not take a record. There a walk starts afresh from a guess
    further on (twice at most), and what it read before is dropped: a walk's records are one chain. (starts,
    ends, nexts, walk) of every record kept, walk by walk, each walk's records in order."""
    m = len(limit)
    rows: tuple[list[np.ndarray], ...] = ([], [], [])  # per pass and walk: start, end, next (-1: none)
    tries = np.zeros(m, np.int8)
    since = np.zeros(m, np.int64)  # the pass from which each walk's records are kept
    while ids.size:
        ok, ends, nexts = step(cur)
        failed, tried = ids[~ok], cur[~ok]
        ids, cur, ends, nexts = ids[ok], cur[ok], ends[ok], nexts[ok]
        for got, values in zip(rows, (cur, ends, nexts), strict=True):
            row = np.full(m, -1, np.int64)
            row[ids] = values
            got.append(row)
        out = nexts >= limit[ids]
        left[ids[out]] = nexts[out]
        ids, cur = ids[~out], nexts[~out]
        again = tries[failed] < 2
        failed, tried = failed[again], tried[again]
        if failed.size:  # a record the walk does not take: a guess further on
            tries[failed] += 1
            fresh = guess(tried + 1)
            fine = (fresh >= 0) & (fresh < limit[failed])
            since[failed] = len(rows[0])
            ids, cur = np.concatenate([ids, failed[fine]]), np.concatenate([cur, fresh[fine]])
    if not rows[0]:
        return tuple(np.zeros(0, np.int64) for _ in range(4))
    grids = [np.stack(r).T for r in rows]  # walk by walk
    taken = (grids[0] >= 0) & (np.arange(len(rows[0])) >= since[:, None])
    owner = np.repeat(np.arange(m), taken.sum(axis=1))
    return (*(g[taken] for g in grids), owner)


def _short_prefixes(u8: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Offsets ``p`` in ``[lo, hi - 4]`` whose next three bytes are zero: where a u32le length under 256 may
    start. Any three bytes hold an aligned zero u16, so one compare of the window as u16 (half the elements
    of a byte compare) finds the few places worth a look; the byte on either side of each then decides."""
    a = lo + 1 + ((lo + 1) & 1)  # the first even offset after lo
    b = hi - ((hi - a) & 1)  # u16 view [a, b)
    if b - a < 2:
        return np.zeros(0, np.int64)
    pairs = a + 2 * np.flatnonzero(u8[a:b].view(np.uint16) == 0)
    # the pair is bytes p+2, p+3 (p = pair - 2, byte p+1 must be zero) or bytes p+1, p+2 (p = pair - 1,
    # byte p+3 must be zero); in that order the candidates come out sorted
    before = (u8[pairs - 1] == 0) & (pairs >= lo + 2)
    after = (u8[np.minimum(pairs + 2, hi - 1)] == 0) & (pairs + 2 < hi)
    return np.stack([pairs - 2, pairs - 1], axis=1).ravel()[np.stack([before, after], axis=1).ravel()]


WALK_REGION = 32 << 20  # bytes of a table walked in lockstep per call (its file pages are let go after each)
WALK_RECORDS = 16  # records per segment of a lockstep walk, about


def walk_region(pos: int, end: int, record: int) -> tuple[int, int]:
    """``(hi, segment)`` of a lockstep walk from ``pos``: the next region of the table and the segment size
    for records of about ``record`` bytes."""
    return min(end, pos + WALK_REGION), WALK_RECORDS * record


class WalkPolicy:
    """When a table parse tries the lockstep walk: from ``start`` on, and after a walk that ended early (a
    record it does not take, or a stretch where its guesses did not fall into step) only once the exact
    method has taken a stretch, twice as long after each early end in a row (1 MB to a region), so that
    hostile data costs a bounded multiple of the exact method."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.stretch = 1 << 20

    def due(self, pos: int, end: int) -> bool:
        return pos >= self.start and end - pos >= 4

    def ran(self, pos: int, after: int, end: int, done: bool) -> None:
        """The walk from ``pos`` got to ``after`` (0: it took nothing); ``done``: no records are wanted."""
        if done or after >= min(end, pos + WALK_REGION):
            self.stretch = 1 << 20
            return
        self.start = max(after, pos) + self.stretch
        self.stretch = min(2 * self.stretch, WALK_REGION)


def prefixed_starts(buf: Any, pos: int, end: int, count: int, path: str, base: int,
                    fixed: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """Starts and lengths of ``count`` records ``u32le length, bytes[, fixed bytes]`` back to back from ``pos``
    (``fixed``: a tail of constant size, as a Leader record's vector); the position after.

    Runs of records shorter than 256 bytes are found a window at a time: the candidates are the offsets
    followed by three zero bytes (numpy), each candidate's successor is looked up among them (numpy), and the
    run is the chain of successors from the current offset (candidates inside a record, from NULs in a
    string or zero bytes in a vector, are never reached). Where no run starts (a
    longer record, or the end of the data) the checked loop takes the next 256 records; it names the record
    (``path[i]``) of a truncation.
    """
    u8 = np.frombuffer(buf, np.uint8) if len(buf) else np.zeros(0, np.uint8)
    unpack = _U32.unpack_from
    parts: list[np.ndarray] = []
    sizes: list[np.ndarray] = []
    done = 0
    window = 1 << 16
    while done < count:
        hi = min(end, pos + window)
        run = np.zeros(0, np.int64)
        c = _short_prefixes(u8, pos, hi)
        if c.size and c[0] == pos:
            lens = u8[c].astype(np.int64)
            nxt = c + (4 + fixed) + lens
            # a candidate inside a record (NULs in a string or a vector) is never reached
            idx = follow_chain(c, nxt, count - done)
            k = int(np.searchsorted(nxt[idx], hi, "right"))  # whole records inside the window
            run = c[idx[:k]]
        if run.size:
            parts.append(run)
            sizes.append(lens[idx[:k]])
            done += len(run)
            pos = int(nxt[idx[k - 1]])
            window = min(window * 2, 1 << 24)
            release(buf, pos)
            continue
        # up to 256 records by the checked loop (a long string, the end of the data, a truncation to name),
        # so that tables of long strings do not rescan a window per record
        window = 1 << 16
        stepped: list[int] = []
        lengths: list[int] = []
        for _ in range(min(256, count - done)):
            if pos + 4 > end:
                raise fail(f"{path}[{done}]", base + pos, "string length", TruncatedError)
            (n,) = unpack(buf, pos)
            if pos + 4 + n + fixed > end:
                raise fail(f"{path}[{done}]", base + pos + 4, f"record needs {n + fixed} bytes but only "
                           f"{end - pos - 4} remain", TruncatedError)
            stepped.append(pos)
            lengths.append(n)
            done += 1
            pos += 4 + n + fixed
        parts.append(np.array(stepped, np.int64))
        sizes.append(np.array(lengths, np.int64))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), pos
    return np.concatenate(parts), np.concatenate(sizes), pos


_PACK_CHUNK = 8192  # records packed into one buffer per write by pack_records


def _windows(out: np.ndarray, width: int) -> np.ndarray:
    """A writable view of every ``width``-byte stretch of ``out`` (row ``i`` starts at byte ``i``), to copy
    many byte strings of one width to arbitrary offsets in one indexed assignment."""
    return np.lib.stride_tricks.as_strided(out, (len(out) - width + 1, width), (1, 1))


def pack_records(words: Sequence[Any], rows: np.ndarray, stream: Any, *, length_prefix: bool,
                  gaps: Any = None, start: int = 0) -> int:
    """Write binary records ``[gap newlines][u32le length]word[space]row`` from record ``start`` on, a chunk
    of records at a time, each chunk built with numpy scatters into one buffer (Leader: ``length_prefix``;
    word2vec: a space after the word and ``gaps`` newlines before it). Returns the index of the first record
    it did not write: a word the vectorised path cannot vouch for (not a str, not encodable, holding the
    separator used here, or, for word2vec, empty or holding a space) is left to the caller's checked loop,
    which names it. ``rows``: the (n, row bytes) bytes written after each word (none for a string table)."""
    sep = 0 if length_prefix else 10  # a byte that cannot be in the words joined with it
    rb = rows.shape[1]
    n = len(words)
    at = start
    spare = np.empty(0, np.uint8)  # one buffer for every chunk: its pages are faulted in once
    while at < n:
        chunk = words[at : at + _PACK_CHUNK]
        try:  # (str.join refuses anything but a str)
            # (surrogate escapes are the bytes of a word read so: a word in another encoding than UTF-8)
            u8 = np.frombuffer(chr(sep).join(chunk).encode("utf-8", "surrogateescape"), np.uint8)
        except (TypeError, UnicodeEncodeError):
            return at
        cuts = np.flatnonzero(u8 == sep)
        k = len(chunk)
        if len(cuts) != k - 1 or (not length_prefix and bool((u8 == 32).any())):
            return at
        wlen = np.diff(np.concatenate([[-1], cuts, [len(u8)]])) - 1
        if (not length_prefix and bool((wlen == 0).any())) or (k and int(wlen.max()) >= 1 << 32):
            return at
        gap = np.zeros(k, np.int64) if gaps is None else np.asarray(gaps[at : at + k], np.int64)
        head = gap + (4 if length_prefix else 0)  # bytes before each word
        size = head + wlen + (0 if length_prefix else 1) + rb
        rec = np.cumsum(size) - size
        total = int(size.sum())
        if len(spare) < total:
            spare = np.empty(total, np.uint8)
        out = spare[:total]
        if gap.any():
            g = np.repeat(rec, gap) + np.arange(int(gap.sum())) - np.repeat(np.cumsum(gap) - gap, gap)
            out[g] = 10
        if length_prefix:
            out[(rec + gap)[:, None] + np.arange(4)] = wlen.astype("<u4").view(np.uint8).reshape(-1, 4)
        word_at = rec + head
        blob_at = np.cumsum(wlen + 1) - (wlen + 1)  # where each word starts in the joined bytes
        widest = int(wlen.max()) if k else 0
        if 0 < widest <= rb:
            # each word copied as a window as wide as the widest word (a memcpy per record); what a window
            # takes past its word lands in its own record's row, which is written after it
            src = np.empty(len(u8) + widest, np.uint8)
            src[: len(u8)] = u8
            _windows(out, widest)[word_at] = np.lib.stride_tricks.sliding_window_view(src, widest)[blob_at]
        else:
            keep = u8 != sep
            owner = np.cumsum(~keep)  # the word of each joined byte (a separator counts toward the next one)
            dest = np.arange(len(u8)) - blob_at[owner] + word_at[owner]
            out[dest[keep]] = u8[keep]
        if not length_prefix:
            out[word_at + wlen] = 32
        if rb:
            _windows(out, rb)[word_at + wlen + (0 if length_prefix else 1)] = rows[at : at + k]
        stream.write(out)
        at += k
    return at


def selected_rows(words: Sequence[str], limit: int | None = None, vocab: Iterable[str] | None = None) -> list[int] | None:
    """The rows the ``limit`` and ``vocab`` read options keep: the first ``limit`` rows, and of those the first
    occurrence of each word in ``vocab``; None when both are None (every row)."""
    if limit is None and vocab is None:
        return None
    rows = range(len(words) if limit is None else min(limit, len(words)))
    if vocab is None:
        return list(rows)
    wanted, keep = set(vocab), []
    for i in rows:
        if words[i] in wanted:
            wanted.discard(words[i])
            keep.append(i)
    return keep
