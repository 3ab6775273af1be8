"""fastText's dictionary entries as one checked, vectorised record table: ``bytes up to a NUL, i64 count,
i8 type`` back to back."""

from __future__ import annotations

from typing import Any

import construct as cs
import numpy as np

from ...errors import BuildError, TruncatedError, ValueMismatchError
from ...framework import check_length, fail, follow_chain
from ...framework.fields import Checked, evaluate
from ...framework.located import tell
from ...framework.streams import release, window
from ...framework.strings import decode_spans

TAIL = 9  # i64 count + i8 type after the NUL
_WINDOW = 1 << 18  # most bytes searched for NULs at once
_CHUNK = 1 << 14  # entries whose counts are gathered at once


def _gather(u8: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes from each offset ``at`` as rows of a (n, width) uint8 matrix."""
    return u8[at[:, None] + np.arange(width)]


class EntryTable(Checked):
    """``count`` dictionary entries: the entry's bytes up to a NUL, then its i64 count and i8 type.

    Parsed as ``Container(words, counts, types)``, the records found by :func:`_record_spans`. Words decode
    losslessly, as fastText keeps them (bytes; ``surrogateescape`` for bytes that are not UTF-8, which come
    back when written); ``_escaped`` lists the entries that needed it, for the model's ``unicode_errors``.
    """

    def __init__(self, count: Any) -> None:
        super().__init__()
        self.count = count

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        count = int(evaluate(self.count, context))
        start = stream.tell()
        if count < 0:
            raise fail(path, start, "negative entry count", ValueMismatchError, found=count)
        check_length(stream, count * (1 + TAIL), path, f"{count} entries")  # each needs a NUL, count, type
        buf, base = window(stream)
        u8 = np.frombuffer(buf, np.uint8) if len(buf) else np.zeros(0, np.uint8)
        s, e, pos = _record_spans(u8, buf, start - base, count, path, base)
        # the counts and types after each NUL, gathered a chunk of entries at a time (an index of all the
        # entries' 9 bytes at once is 72 bytes an entry: 4x the words' own str)
        counts = np.empty(count, "<i8")
        as_bytes = counts.view(np.uint8).reshape(count, 8)
        for a in range(0, count, _CHUNK):
            as_bytes[a : a + _CHUNK] = _gather(u8, e[a : a + _CHUNK] + 1, 8)
        types = u8[e + TAIL].view("i1")
        escaped: list[int] = []
        try:  # UTF-8 as a rule: decoded at once, cut at the NUL that ends each word (no word holds one)
            words = decode_spans(buf, s, e, "strict", f"{path}.words", base, field="", sep=b"\0")
        except ValueMismatchError:
            words = decode_spans(buf, s, e, "surrogateescape", f"{path}.words", base, field="")
            escaped = [i for i, w in enumerate(words) if _has_surrogate(w)]
        stream.seek(base + pos)
        # (no table of the entries' offsets is kept: :func:`entry_offset` finds one from the words when an
        # error names it)
        return cs.Container(words=words, counts=counts, types=types, _escaped=escaped, _start=start)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        count = int(evaluate(self.count, context))
        words, counts, types = obj["words"], np.asarray(obj["counts"]), np.asarray(obj["types"])
        if not (len(words) == len(counts) == len(types) == count):
            raise fail(path, tell(stream), "entry count does not match its header", BuildError,
                       expected=count, found=(len(words), len(counts), len(types)))
        if not all(isinstance(w, str) for w in words):
            i = next(i for i, w in enumerate(words) if not isinstance(w, str))
            raise fail(f"{path}.words[{i}]", tell(stream), "expected a str", BuildError)
        if count == 0:
            return obj
        try:
            joined = np.frombuffer(("\0".join(words) + "\0").encode("utf-8", "surrogateescape"), np.uint8)
        except UnicodeEncodeError as e:
            raise fail(f"{path}.words", tell(stream), f"cannot encode: {e.reason}", BuildError) from None
        nul = np.flatnonzero(joined == 0)
        if len(nul) != count:
            i = next(i for i, w in enumerate(words) if "\0" in w)
            raise fail(f"{path}.words[{i}]", tell(stream), "a word holds a NUL, which ends it in the file",
                       BuildError)
        owner = np.zeros(len(joined), np.int64)
        owner[nul[:-1] + 1] = 1
        np.cumsum(owner, out=owner)
        out = np.empty(len(joined) + TAIL * count, np.uint8)
        out[np.arange(len(joined)) + TAIL * owner] = joined  # each word and its NUL, shifted past the tails
        at = nul + TAIL * np.arange(count) + 1
        tails = np.empty((count, TAIL), np.uint8)
        tails[:, :8] = np.ascontiguousarray(counts, "<i8").view(np.uint8).reshape(count, 8)
        tails[:, 8] = np.asarray(types).astype("i1").view(np.uint8)
        out[at[:, None] + np.arange(TAIL)] = tails
        stream.write(memoryview(out))
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any) -> Any:
        """``count`` entries: words without a NUL (which would end them), text or any bytes (those that are no
        UTF-8 as fastText's words hold them: surrogate escapes), any i64 counts and i8 types."""
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp

        count = int(evaluate(self.count, context))
        words = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=6) \
            | st.binary(max_size=8).filter(lambda b: b"\0" not in b).map(lambda b: b.decode("utf-8", "surrogateescape"))
        return st.builds(cs.Container, words=st.lists(words, min_size=count, max_size=count),
                         counts=hnp.arrays("<i8", count), types=hnp.arrays("i1", count))


def _record_spans(u8: np.ndarray, buf: Any, pos: int, count: int, path: str,
                  base: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Where ``count`` entries from ``pos`` start and where their NULs are, and the offset after the last.

    Record offsets are found a window at a time: every NUL ends a candidate record, the candidates are
    chained from the first one (``follow_chain``), so that NULs inside the counts are never taken for the
    end of a word. The windows stay small (their zeros' int64 offsets are temporaries 8x the window)."""
    end = len(u8)
    starts: list[np.ndarray] = []
    nuls: list[np.ndarray] = []
    done, window = 0, 1 << 16
    while done < count:
        hi = min(end, pos + window)
        z = np.flatnonzero(u8[pos:hi] == 0) + pos
        # fast path: a word's NUL is followed 9 bytes on by its type, 0 or 1; most zeros inside the
        # counts are not, and dropping them leaves few false candidates (checked below, else all zeros)
        typed = z[u8[np.minimum(z + TAIL, end - 1)] <= 1] if end else z
        cand, nul, idx, k = _chain(typed, pos, hi, count - done)
        if k and len(typed) < len(z):
            first = z[np.minimum(np.searchsorted(z, cand[idx[:k]]), len(z) - 1)]
            if not np.array_equal(first, nul[idx[:k]]):  # a NUL the fast path dropped: every zero then
                cand, nul, idx, k = _chain(z, pos, hi, count - done)
        elif not k:
            cand, nul, idx, k = _chain(z, pos, hi, count - done)
        if k == 0:
            if hi == end:  # no whole record left in the data
                i = done
                if not cand.size or cand[0] != pos:
                    raise fail(f"{path}.words[{i}]", base + pos, "no NUL ends the entry", TruncatedError)
                raise fail(f"{path}.counts[{i}]", base + int(nul[0]) + 1,
                           f"entry needs {TAIL} bytes after its NUL but only {end - int(nul[0]) - 1} remain",
                           TruncatedError)
            window *= 4  # a word longer than the window
            continue
        idx = idx[:k]
        starts.append(cand[idx])
        nuls.append(nul[idx])
        done += k
        pos = int(nul[idx[-1]]) + 1 + TAIL
        window = min(window * 2, _WINDOW)
        release(buf, pos)
    if not starts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), pos
    return np.concatenate(starts), np.concatenate(nuls), pos


def entry_offset(entries: Any, i: int) -> int | None:
    """The byte offset of entry ``i`` of a parsed table: its start, then each entry before it (its word's
    bytes, which decode losslessly, the NUL, count and type)."""
    start = entries.get("_start")
    if start is None:
        return None
    words = entries["words"]
    return start + sum(len(w.encode("utf-8", "surrogateescape")) for w in words[:i]) + i * (1 + TAIL)


def _chain(z: np.ndarray, pos: int, hi: int, most: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The entries chained from ``pos`` whose word ends at the first of the zeros ``z`` from its start:
    (candidate starts, their NULs, the chained candidates' indices, how many end inside ``hi``)."""
    cand = np.concatenate([[pos], z + 1 + TAIL])
    cand = cand[cand < hi]
    nul_of = np.searchsorted(z, cand)  # each candidate's word ends at the first NUL from it
    ok = nul_of < len(z)
    cand, nul = cand[ok], z[nul_of[ok]]
    if not cand.size or cand[0] != pos:
        return cand, nul, np.zeros(0, np.int64), 0
    idx = follow_chain(cand, nul + 1 + TAIL, most)
    return cand, nul, idx, int(np.searchsorted(nul[idx] + 1 + TAIL, hi, "right"))  # whole records inside


def _has_surrogate(word: str) -> bool:
    return not word.isascii() and any("\udc80" <= c <= "\udcff" for c in word)


class Head(cs.Peek):
    """The first i32, peeked (not consumed): the magic of a current release's file, the args' ``dim`` of an
    older one's. Drawn as the magic or None (an older file: what is peeked is the ``dim`` drawn after it)."""

    def __init__(self, magic: int) -> None:
        super().__init__(cs.Int32sl)
        self.magic = magic

    def strategy(self, context: Any) -> Any:
        from hypothesis import strategies as st

        return st.sampled_from([self.magic, None])

