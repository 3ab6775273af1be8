"""Binary record tables: Leader (u32 length, word, vector) and word2vec binary (word, space, vector, with
newlines between records as its writers left them).

A vocabulary of 400,000 records must not go through per-record interpreted construct code: these constructs
find every record's offset with vectorised walks, decode the words in one pass, gather the rows into a matrix,
check every length, and name the record index and byte offset in every error. Their compiled form calls the
same checked code.
"""

from __future__ import annotations

import struct
from typing import Any

import construct as cs
import numpy as np

from ...errors import BuildError, TruncatedError, ValueMismatchError
from ...framework.fields import Checked, evaluate
from ...framework.located import fail, tell
from ...framework.records import (
    WalkPolicy,
    follow_chain,
    lockstep_chain,
    pack_records,
    prefixed_starts,
    walk_region,
)
from ...framework.streams import byte_view, release, window
from .wordvec_rows import _dimension, _limit, _matrix, _matrix_ahead, _params, _table


class _BinaryRecords(Checked):
    """``count`` records, each a word and ``dim`` little-endian float32 values (Leader's and word2vec's)."""

    def __init__(self, count: Any, dim: Any) -> None:
        super().__init__()
        self.count = count
        self.dim = dim

    def _start(self, stream: Any, context: Any, path: str) -> tuple[int, int, Any, int, int]:
        """(records to read, dimension, the buffer holding the rest of the stream, the absolute offset of its
        first byte, where the table starts in it), once the header's dimension is checked."""
        count = _limit(context, int(evaluate(self.count, context)))
        dim = _dimension(self.dim, context, path, stream)
        buf, base = window(stream)
        return count, dim, buf, base, stream.tell() - base

    def _build_start(self, obj: Any, stream: Any, context: Any, path: str) -> tuple[int, int, Any, np.ndarray]:
        """(records, dimension, the words, the vectors as a checked float32 matrix) of what is to be written,
        once the words are as many as the header says."""
        count = int(evaluate(self.count, context))
        dim = int(evaluate(self.dim, context))
        words = obj["words"]
        if len(words) != count:
            raise fail(path, tell(stream), "word count does not match the header", BuildError,
                       expected=count, found=len(words))
        return count, dim, words, _matrix(obj["vectors"], count, dim, path, stream)

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)  # (the words' lengths decide)

    def strategy(self, context: Any) -> Any:
        """``count`` words (as :meth:`words` draws them) and a ``count x dim`` float32 matrix (no NaN: a
        parsed value is compared with the drawn one)."""
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp

        count, dim = int(evaluate(self.count, context)), int(evaluate(self.dim, context))
        floats = st.floats(width=32, allow_nan=False)
        return st.builds(cs.Container, words=st.lists(self.words(), min_size=count, max_size=count),
                         vectors=hnp.arrays(np.float32, (count, dim), elements=floats),
                         **{name: st.none() for name in self.layout})

    layout: tuple[str, ...] = ()  # what a parse keeps of the file's layout (drawn as None: the writer's default)

    def words(self) -> Any:
        """Any text: a length-prefixed word may hold anything."""
        from hypothesis import strategies as st

        return st.text(max_size=6)


class LeaderRecords(_BinaryRecords):
    """``count`` Leader records: u32 byte length, UTF-8 word, ``dim`` little-endian float32."""

    def _parse(self, stream: Any, context: Any, path: str) -> cs.Container:
        count, dim, buf, base, pos = self._start(stream, context, path)
        rowbytes = 4 * dim
        end = len(buf)
        # record offsets are found vectorised (runs of words under 256 bytes, the checked loop for the rest,
        # which names a cut-off record); words and vectors are then cut out in vectorised passes. A hostile
        # count runs into the end of the file long before memory runs out: offsets grow as records are found.
        ahead = _matrix_ahead(context, count, dim, 4 + rowbytes, end - pos)
        rs, lens, pos = prefixed_starts(buf, pos, end, count, path, base, fixed=rowbytes)
        words, vectors = _table(context, buf, rs + 4, rs + 4 + lens, rs + 4 + lens, dim, path, base, ahead)
        stream.seek(base + pos)
        return cs.Container(words=words, vectors=vectors)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        count, dim, words, arr = self._build_start(obj, stream, context, path)
        pack = struct.Struct("<I").pack
        mv = byte_view(arr)
        rb = 4 * dim
        done = pack_records(words, np.frombuffer(mv, np.uint8).reshape(count, rb), stream, length_prefix=True)
        chunk: list[bytes | memoryview] = []
        for i, w in enumerate(words[done:], done):
            if not isinstance(w, str):
                raise fail(f"{path}[{i}].word", tell(stream), "expected a str", BuildError)
            raw = w.encode("utf-8", "surrogateescape")  # (escapes: the bytes of a word in another encoding)
            chunk.append(pack(len(raw)))
            chunk.append(raw)
            chunk.append(mv[i * rb : (i + 1) * rb])
            if len(chunk) >= 3 * 4096:
                stream.write(b"".join(chunk))
                chunk.clear()
        stream.write(b"".join(chunk))
        return obj


def _w2v_run(u8: np.ndarray, pos: int, end: int, most: int, rowbytes: int,
             window: int = 1 << 22) -> tuple[np.ndarray, np.ndarray, int]:
    """word2vec binary records from ``pos`` found with numpy: (word starts, word-ending spaces, position
    after the last record). Every space is a candidate end of a word; from one, the next record's word
    starts after the vector and at most one newline, and ends at the first space after that. The run is the
    chain of those successors from ``pos`` (a loop over a list); it stops at a record it cannot take whole:
    an empty word, two newlines, a word without its space or vector inside the window."""
    hi = min(end, pos + max(window, rowbytes + 2))
    seg = u8[pos:hi]
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), pos)
    if len(seg) < 2 or seg[0] == 10:
        return empty
    spaces = np.flatnonzero(seg == 32)
    if not spaces.size or spaces[0] == 0:
        return empty
    vec_end = spaces + 1 + rowbytes  # where each candidate's record would end
    inside = vec_end < len(seg)
    nl = np.zeros(len(spaces), bool)
    nl[inside] = seg[vec_end[inside]] == 10
    nxt_word = vec_end + nl
    ok = nxt_word + 1 < len(seg)
    ok[ok] &= seg[np.minimum(nxt_word[ok], len(seg) - 1)] != 10  # two newlines, or a word that starts with one
    # the space that ends the next word: the first one after it starts (an empty word or one past the window
    # cannot be taken whole: the chain ends there)
    j = np.minimum(np.searchsorted(spaces, nxt_word), len(spaces) - 1)
    ok &= (spaces[j] > nxt_word) & (spaces[j] - nxt_word < 1_000_000)
    idx = follow_chain(spaces, np.where(ok, spaces[j], -1), most)
    done = int(np.searchsorted(vec_end[idx], len(seg), "right"))  # records whose vector is in the window
    idx = idx[:done]
    if not idx.size:
        return empty
    sps = spaces[idx]
    ws = np.empty(len(idx), np.int64)
    ws[0] = 0
    ws[1:] = nxt_word[idx[:-1]]
    return ws + pos, sps + pos, int(vec_end[idx[-1]]) + pos


_WORD_WINDOW = 32  # bytes of a word2vec word looked at per pass of the lockstep walk
_WALK_LONGEST = 1024  # the longest word the lockstep walk takes (a longer one ends its run: the exact method)
_WALK_MIN_ROW = 64  # vector bytes from which the lockstep walk pays (it reads the words, not the vectors)
_TYPICAL_WORD = 12  # bytes a word takes with its space and newline, about: what sizes the walk's segments
_GUESS_BACK = 258  # besides a vector, how far before its segment a walk's guess looks: a record whose word is
# under 256 bytes (with its newline and space) then ends inside that stretch, so the walk has a record to fall
# into step with before its segment begins


def _first_spaces(windows: np.ndarray, at: np.ndarray, ok: np.ndarray, longest: int) -> np.ndarray:
    """The first space at or after each offset in ``at`` (where ``ok``) within ``longest`` bytes, or -1: one
    of the ``windows`` (every stretch of the buffer of that width) per pass, further ones only for the
    offsets not yet done."""
    out = np.full(len(at), -1, np.int64)
    todo = np.flatnonzero(ok)
    last = len(windows) - 1
    for skip in range(0, longest, windows.shape[1]):
        if not todo.size:
            break
        here = at[todo] + skip
        fits = here <= last
        todo, here = todo[fits], here[fits]
        hit = windows[here] == 32
        k = hit.argmax(axis=1)
        found = hit[np.arange(len(k)), k]
        out[todo[found]] = here[found] + k[found]
        todo = todo[~found]
    return out


def _w2v_walk(u8: np.ndarray, pos: int, end: int, most: int,
              rowbytes: int) -> tuple[np.ndarray, np.ndarray, int]:
    """word2vec binary records from ``pos`` by :func:`lockstep_chain`: (word starts, word-ending spaces,
    position after the last record), as :func:`_w2v_run` gives them, of a run of records with at most one
    newline before each word and words under 1 kB."""
    if end < _WORD_WINDOW:  # shorter than the windows looked through (numpy refuses them): the exact loop
        return np.zeros(0, np.int64), np.zeros(0, np.int64), pos
    windows = np.lib.stride_tricks.sliding_window_view(u8[:end], _WORD_WINDOW)
    span = rowbytes + _WORD_WINDOW + 1  # any stretch this long holds a word's space (where words are short)

    def step(at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ok = at < end - 1
        at = np.where(ok, at, 0)
        w = at + (u8[at] == 10)
        first = u8[w]
        ok &= (first != 10) & (first != 32)
        spaces = _first_spaces(windows, w, ok, _WALK_LONGEST)
        nexts = spaces + 1 + rowbytes
        return ok & (spaces >= 0) & (nexts <= end), spaces, nexts

    def guess(at: np.ndarray) -> np.ndarray:
        # after the vector of the first space in a stretch (a space in a vector leads into step within a
        # record or two: the word after that vector is cut short, or the next vector holds no space)
        if end < span:  # no stretch that long (a header dimension past the data): no guess
            return np.full(len(at), -1, np.int64)
        spaces = _first_spaces(np.lib.stride_tricks.sliding_window_view(u8[:end], span), at,
                               at + span <= end, span)
        return np.where(spaces >= 0, spaces + 1 + rowbytes, -1)

    hi, segment = walk_region(pos, end, rowbytes + _TYPICAL_WORD)
    longest = 1 + _WALK_LONGEST + 1 + rowbytes  # a newline, the longest word it takes, the space, the vector
    starts, spaces, nexts = lockstep_chain(step, guess, pos, hi, segment, rowbytes + _GUESS_BACK, longest, most)
    return starts + (u8[starts] == 10), spaces, int(nexts[-1]) if len(nexts) else pos


def _flush(loose: list[tuple[int, int]], starts: list[np.ndarray], ends: list[np.ndarray]) -> None:
    """Move records found one by one onto the lists of offset arrays, as one array each."""
    if loose:
        pairs = np.array(loose, np.int64)
        starts.append(pairs[:, 0])
        ends.append(pairs[:, 1])
        loose.clear()


class Word2VecRecords(_BinaryRecords):
    """``count`` word2vec binary records: word bytes, one space, ``dim`` little-endian float32.

    Any run of ``\\n`` before a word is skipped (word2vec.c writes one after every vector; GoogleNews and
    gensim write none) and remembered per record in ``newlines`` so the file rebuilds byte-exact.
    """

    def _parse(self, stream: Any, context: Any, path: str) -> cs.Container:
        count, dim, buf, base, pos = self._start(stream, context, path)
        rowbytes = 4 * dim
        if isinstance(buf, memoryview):
            buf = buf.tobytes()
        end = len(buf)
        find = buf.find
        # offsets grow per run or record found: a hostile count cannot allocate ahead of the data
        wstarts: list[np.ndarray] = []
        wends: list[np.ndarray] = []
        loose: list[tuple[int, int]] = []  # records taken one by one since the last run
        gaps: dict[int, int] = {}
        u8 = np.frombuffer(buf, np.uint8) if end else np.zeros(0, np.uint8)
        ahead = _matrix_ahead(context, count, dim, 2 + rowbytes, end - pos)
        i = 0
        walks = WalkPolicy(pos if rowbytes >= _WALK_MIN_ROW else end)
        while i < count:
            # a run of records found vectorised: from each space ending a word, the vector, at most one
            # newline, then the next word up to its space (by the lockstep walk when it is due, else the
            # exact method); the loop below takes what the run cannot
            walked = walks.due(pos, end)
            if walked:
                ws, sps, after = _w2v_walk(u8, pos, end, count - i, rowbytes)
                walks.ran(pos, after, end, i + len(ws) == count)
            if not walked or not len(ws):
                ws, sps, after = _w2v_run(u8, pos, end, count - i, rowbytes)
            if len(ws):
                for k in np.flatnonzero(ws - np.concatenate([[pos], sps[:-1] + 1 + rowbytes])).tolist():
                    gaps[i + k] = int(ws[k] - (pos if k == 0 else sps[k - 1] + 1 + rowbytes))
                _flush(loose, wstarts, wends)
                wstarts.append(ws)
                wends.append(sps)
                i += len(ws)
                pos = after
                release(buf, pos)
                continue
            w = pos
            while w < end and buf[w] == 10:
                w += 1
            if w != pos:
                gaps[i] = w - pos
            sp = find(b" ", w, w + 1_000_000)
            if sp < 0:
                raise fail(f"{path}[{i}].word", base + w, "no space ends the word (file cut off?)",
                           TruncatedError)
            if sp == w:
                raise fail(f"{path}[{i}].word", base + w, "empty word", ValueMismatchError)
            pos = sp + 1 + rowbytes
            if pos > end:
                raise fail(f"{path}[{i}].vector", base + sp + 1,
                           f"vector needs {rowbytes} bytes, only {end - sp - 1} remain", TruncatedError)
            loose.append((w, sp))
            i += 1
        _flush(loose, wstarts, wends)
        ws = np.concatenate(wstarts) if wstarts else np.zeros(0, np.int64)
        we = np.concatenate(wends) if wends else np.zeros(0, np.int64)
        words, vectors = _table(context, buf, ws, we, we + 1, dim, path, base, ahead, sep=b" ")
        stream.seek(base + pos)
        newlines = None
        if gaps and _params(context).get("vocab") is None:
            newlines = np.zeros(count, np.uint32)
            newlines[list(gaps)] = list(gaps.values())
        return cs.Container(words=words, vectors=vectors, newlines=newlines)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        count, dim, words, arr = self._build_start(obj, stream, context, path)
        gaps = obj.get("newlines")
        if gaps is not None and len(gaps) != count:
            raise fail(f"{path}.newlines", tell(stream), "one newline count per record", BuildError)
        mv = byte_view(arr)
        rb = 4 * dim
        done = pack_records(words, np.frombuffer(mv, np.uint8).reshape(count, rb), stream, length_prefix=False,
                            gaps=gaps)
        chunk: list[bytes | memoryview] = []
        for i, w in enumerate(words[done:], done):
            raw = _word_bytes(w, f"{path}[{i}].word", stream)
            if gaps is not None and gaps[i]:
                chunk.append(b"\n" * int(gaps[i]))
            chunk.append(raw + b" ")
            chunk.append(mv[i * rb : (i + 1) * rb])
            if len(chunk) >= 3 * 4096:
                stream.write(b"".join(chunk))
                chunk.clear()
        stream.write(b"".join(chunk))
        return obj


    layout = ("newlines",)

    def words(self) -> Any:
        """What :func:`_word_bytes` writes: no space, no line break, not empty."""
        from hypothesis import strategies as st

        return st.text(st.characters(blacklist_characters=" \n", blacklist_categories=("Cs",)), min_size=1,
                       max_size=6)


def _word_bytes(w: Any, path: str, stream: Any) -> bytes:
    """A word for the space-separated formats: non-empty, no ASCII space, no line break at its ends."""
    if not isinstance(w, str):
        raise fail(path, tell(stream), "expected a str", BuildError, found=type(w).__name__)
    if not w or " " in w or "\n" in w:
        raise fail(path, tell(stream), "a word here cannot be empty or hold a space or newline",
                   BuildError, found=w)
    return w.encode("utf-8", "surrogateescape")  # (escapes: the bytes of a word in another encoding)

