"""Word tables: one record per word, a word and a row of ``dim`` numbers. Binary here (Leader's: u32 length,
word, vector; word2vec's: word, space, vector, with newlines between records as its writers left them), text in
:mod:`.texttable`; both read their options (``limit``, ``vocab``, ``dtype``, ``unicode_errors``) from the
parse's context and give ``Container(words=[...], vectors=ndarray(n, dim), ...layout details...)``, the layout
details (newlines between binary records, the number style of text files) making the rebuild byte-exact.

A vocabulary of 400,000 records must not go through per-record interpreted construct code: these constructs
walk the records with the compiled kernel ``_wordtables.c`` where it is built, else (and wherever a record is
not whole) find every record's offset with vectorised walks, decode the words in one pass, gather the rows into
a matrix, check every length, and name the record index and byte offset in every error. Their compiled form
calls the same checked code.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterable, Iterator
from itertools import repeat
from typing import Any

import construct as cs
import numpy as np

from ..errors import BuildError, TruncatedError, ValueMismatchError
from .fields import Checked, evaluate
from .kernels import kernel
from .located import fail, tell
from .mapped import open_mapped
from .records import (
    WalkPolicy,
    follow_chain,
    lockstep_chain,
    pack_records,
    prefixed_starts,
    selected_rows,
    walk_region,
)
from .streams import Job, background, byte_view, release, window
from .strings import decode_spans

# ---------------------------------------------------------------------------------------------------------
# rows of a word table, read options

F32 = np.dtype("<f4")


def read_params(context: Any) -> Any:
    return getattr(context, "_params", None) or {}


def _limit(context: Any, count: int) -> int:
    limit = read_params(context).get("limit")
    return count if limit is None else min(count, int(limit))


def unicode_errors(context: Any) -> str:
    return read_params(context).get("unicode_errors", "strict")


def text_dtype(context: Any) -> np.dtype:
    """What text numbers are parsed into: float64 when the ``dtype`` read option asks for more than float32
    (gensim's ``datatype``; files with 17-digit numbers keep them), else float32."""
    wanted = np.dtype(read_params(context).get("dtype") or F32)
    return np.dtype("<f8") if wanted.kind == "f" and wanted.itemsize > 4 else F32


def _gather_rows(buf: Any, vstarts: np.ndarray, dim: int, out: np.ndarray | None = None) -> np.ndarray:
    """Copy ``dim`` little-endian float32 values starting at each byte offset into one (n, dim) matrix (into
    ``out`` when it has that shape).

    Rows sit at arbitrary byte offsets: every window of ``4 * dim`` bytes of the buffer is a row of a
    strided view, and indexing it copies the wanted windows (a memcpy per row), a few MB at a time.
    """
    n = len(vstarts)
    if out is None or out.shape != (n, dim):
        out = np.empty((n, dim), F32)
    if n == 0 or dim == 0:
        return out
    u8 = np.frombuffer(buf, np.uint8)
    windows = np.lib.stride_tricks.sliding_window_view(u8, 4 * dim)
    dest = out.view(np.uint8).reshape(n, 4 * dim)
    idx = np.asarray(vstarts, np.intp)
    step = max(1, (4 << 20) // (4 * dim))  # rows per copy: a 4 MB temporary stays in cache
    ordered = n < 2 or bool((idx[1:] >= idx[:-1]).all())
    for a in range(0, n, step):
        dest[a : a + step] = windows[idx[a : a + step]]
        if ordered:  # rows in file order: the pages behind them are done with
            release(buf, int(idx[min(a + step, n) - 1]))
    return out


_AHEAD_BYTES = 1 << 22  # matrices from this size on are allocated ahead and filled beside the word decoding


def touched(shape: tuple[int, int], dtype: np.dtype = F32) -> np.ndarray:
    """An uninitialised matrix (float32 by default) with every page already faulted in (one write per page)."""
    out = np.empty(shape, dtype)
    out.reshape(-1).view(np.uint8)[:: mmap.PAGESIZE] = 0
    return out


def _matrix_ahead(context: Any, count: int, dim: int, least: int, room: int) -> Job | None:
    """Start allocating the (count, dim) result while the record offsets are found, when the table is big
    and ``count`` records of at least ``least`` bytes fit in the ``room`` bytes left (a hostile count gets
    nothing ahead: the matrix is then allocated for the records really found)."""
    if read_params(context).get("vocab") is not None or count * 4 * dim < _AHEAD_BYTES or count * least > room:
        return None
    return background(touched, (count, dim))


def checked_dimension(dim: Any, context: Any, path: str, stream: Any, most: int | None) -> int:
    """The header's dimension, refused when over ``most`` (absurd: an empty table would otherwise carry it
    unchecked to lookups that allocate ``words x dim``)."""
    value = int(evaluate(dim, context))
    if most is not None and value > most:
        bound = f"2^{most.bit_length() - 1}" if most & (most - 1) == 0 else str(most)
        raise fail(path, tell(stream), f"dimension {value} is larger than {bound}", ValueMismatchError)
    return value


def _keep_vocab(context: Any, words: list[str]) -> list[int] | None:
    """Rows to keep for the ``vocab`` read option (first occurrence of each wanted word), or None."""
    return selected_rows(words, vocab=read_params(context).get("vocab"))


def _table(context: Any, buf: Any, wstarts: Any, wends: Any, vstarts: Any, dim: int,
           path: str, base: int, ahead: Job | None = None,
           sep: bytes | None = None) -> tuple[list[str], np.ndarray]:
    """Words and vectors of a binary table from the record offsets found by a parse loop (``ahead``: the
    matrix being allocated by :func:`_matrix_ahead`; ``sep``: the byte that ends every word, as
    :func:`decode_spans` takes it).

    The rows are copied on a worker thread while this one decodes the words; with the ``vocab`` option the
    words come first, to choose the rows."""
    ws = np.asarray(wstarts, np.int64)
    we = np.asarray(wends, np.int64)
    vs = np.asarray(vstarts, np.int64)
    if read_params(context).get("vocab") is None:
        out = ahead.result() if ahead is not None else None
        if out is None and len(vs) * 4 * dim < _AHEAD_BYTES:
            return decode_spans(buf, ws, we, unicode_errors(context), path, base, sep=sep), _gather_rows(buf, vs, dim)
        rows = background(_gather_rows, buf, vs, dim, out)
        try:
            words = decode_spans(buf, ws, we, unicode_errors(context), path, base, sep=sep)
        except BaseException:
            rows.exception()  # the copy reads ``buf``: it ends before the error leaves here
            raise
        return words, rows.result()
    words = decode_spans(buf, ws, we, unicode_errors(context), path, base, sep=sep)
    keep = _keep_vocab(context, words)
    if keep is not None:
        words = [words[i] for i in keep]
        vs = vs[np.array(keep, np.int64)]
    return words, _gather_rows(buf, vs, dim)


def compiled_module(name: str) -> Any:
    """The framework's compiled module ``name`` (``"_wordtables"``, ``"_texttable"``), or None where its
    pure-Python twin stands in (see :mod:`.kernels`)."""
    return kernel(f"{__package__}.{name}")


def kernel_words(k: Any, buf: Any, wstarts: np.ndarray, wends: np.ndarray, lo: int, hi: int, errors: str,
                 hashes: np.ndarray, into: list[Any], path: str, base: int, sep: bytes | None = None) -> bool:
    """Put the words at byte spans lo..hi of ``buf`` at ``into[lo:hi]``; whether their hashes are in
    ``hashes[lo:hi]``: made by the kernel ``k`` (``_wordtables``), else by :func:`decode_spans` (which names a
    word that does not decode) where the kernel is not built, cannot take the error policy, or a word does
    not decode."""
    if k is not None and errors in ("strict", "surrogateescape") \
            and k.words(buf, wstarts, wends, lo, hi, errors == "surrogateescape", hashes, into):
        return True
    into[lo:hi] = decode_spans(buf, wstarts[lo:hi], wends[lo:hi], errors, path, base, sep=sep, lo=lo)
    return False


def span_repeats(buf: Any, wstarts: np.ndarray, wends: np.ndarray, hashes: np.ndarray,
                 ordered: np.ndarray | None = None) -> int:
    """How many of the words at byte spans [wstarts, wends) of ``buf`` equal an earlier one, from their
    hashes (by the kernel's ``words``; sorted in ``ordered`` when given, an array of their size whose pages are
    ready): only the words whose hash repeats are compared, by their bytes. For words decoded strictly or with
    surrogate escapes, equal bytes are equal words: the model's ``count_duplicates`` of them."""
    if ordered is None:
        ordered = np.sort(hashes)
    else:
        ordered[...] = hashes
        ordered.sort()
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return 0
    suspects = np.flatnonzero(np.isin(hashes, ordered[1:][same])).tolist()
    starts, ends = wstarts.tolist(), wends.tolist()
    return len(suspects) - len({bytes(buf[starts[i] : ends[i]]) for i in suspects})


_WALK_BLOCK_BYTES = 1 << 20  # bytes of records walked per call: the words of a block are read while in cache
_WALK_APART_BYTES = 4 << 20  # tables from this size on are walked on a worker thread beside the words
_RELEASE_BYTES = 16 << 20  # the mapped pages read are let go of this many bytes at a time
_READY_AHEAD_BYTES = 16 << 20  # how far ahead of a table's read its matrix's pages are made ready
_READY_STEP_BYTES = 2 << 20  # ... and how many bytes of them at a time (a huge page's)


def _kernel_table(context: Any, buf: Any, pos: int, end: int, count: int, dim: int, path: str, base: int,
                  prefixed: bool) -> tuple[list[str], np.ndarray, np.ndarray | None, int, int | None] | None:
    """Words, vectors, newlines before each word (word2vec; None when there are none), the offset after the
    table of ``count`` whole binary records from ``pos`` and how many words repeat an earlier one (None:
    not counted here), by the compiled kernel (wvformats/framework/_wordtables.c): read from the file behind the
    map a block at a time (:func:`_file_blocks`) where there is one, else walked through the buffer (each row
    copied as its record is passed, the mapped pages let go of behind), the records of each block on a worker
    thread while this thread makes the words of the blocks done (they hold the GIL); None when the kernel is not
    built, an option needs the twin (``vocab``), or a record is not whole (the twin names it)."""
    k = compiled_module("_wordtables")
    rowbytes = 4 * dim
    least = rowbytes + (4 if prefixed else 2)  # the smallest record
    if k is None or isinstance(buf, memoryview) or read_params(context).get("vocab") is not None \
            or count * least > end - pos:
        return None
    errors = unicode_errors(context)
    fd = open_mapped(buf, end) if count * least >= _WALK_APART_BYTES and errors in ("strict", "surrogateescape") \
        else None
    if fd is not None:
        try:
            got = _blocks(k, _file_blocks(k, fd, pos, end, count, rowbytes, prefixed), count, errors, prefixed)
        finally:
            os.close(fd)
        if got is not None:
            return got
    return _blocks(k, _map_blocks(k, buf, pos, end, count, rowbytes, prefixed), count, errors, prefixed, path, base)


class _Blocks:
    """A table's records found a block at a time, on a worker thread for a big table (:attr:`apart`), while the
    calling thread makes the words of the blocks done (:func:`_blocks`): the word spans in ``wstarts`` and
    ``wends`` index :attr:`words` (the buffer the words are made from), the rows are in :attr:`out`."""

    wstarts: np.ndarray
    wends: np.ndarray
    gaps: np.ndarray
    out: np.ndarray
    words: Any
    apart: bool  # whether the records are found on a worker thread

    def start(self) -> None:
        """Begin finding the records (a table not :attr:`apart`: all of them, here)."""
        raise NotImplementedError

    def ready(self) -> bool:
        """Whether :meth:`take` has blocks to give at once (a hint: it may have to wait a little)."""
        raise NotImplementedError

    def take(self) -> tuple[int, int, int]:
        """(lo, hi, offset after) of the records found since the last call, waiting for some: (lo, -1, offset)
        once all have been given (also after an error)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop finding records (the caller stops early) and wait until nothing reads or writes the buffers."""

    def passed(self, at: int) -> None:
        """The blocks up to byte ``at`` have had their words made (a map lets go of their pages)."""

    def spare(self) -> bool:
        """Some work for the thread making the words while it waits for a block: whether there was any."""
        return False

    def prepare(self, first: np.ndarray, last: np.ndarray) -> None:
        """Arrays whose pages :meth:`spare` may make present: ``first`` before the matrix's, ``last`` after."""


class _map_blocks(_Blocks):  # noqa: N801 - named as the function it stands for
    """The records walked through the buffer ``buf`` by the kernel's ``walk``, 1 MB at a time, each row copied
    into a new matrix as it is passed; the mapped pages let go of every 16 MB behind the words. Each block's (lo,
    hi, offset after) is put on a queue, (lo, -1, offset) at the end."""

    def __init__(self, k: Any, buf: Any, pos: int, end: int, count: int, rowbytes: int, prefixed: bool) -> None:
        from _queue import SimpleQueue  # (not a cost of every start-up; not queue.py, which imports more)

        self.k, self.buf, self.pos, self.end, self.count, self.rowbytes, self.prefixed = \
            k, buf, pos, end, count, rowbytes, prefixed
        self.wstarts = np.empty(count, np.int64)
        self.wends = np.empty(count, np.int64)
        self.gaps = np.empty(count if not prefixed else 0, np.uint32)  # (the walk writes every record's)
        self.out = np.empty((count, rowbytes // 4), F32)
        self.words, self.kept = buf, pos  # (kept: where the mapped pages not yet let go of start)
        self.least = rowbytes + (4 if prefixed else 2)  # the smallest record
        self.apart = count * self.least >= _WALK_APART_BYTES
        self.done: Any = SimpleQueue()
        self.halt: list[bool] = []  # set when the caller stops early: the walk then stops too
        self.job: Any = None

    def start(self) -> None:
        if self.apart:
            self.job = background(self.run)
        else:
            self.run()

    def run(self) -> None:
        step = max(1, _WALK_BLOCK_BYTES // self.least)
        lo, at = 0, self.pos
        try:
            while lo < self.count and not self.halt:
                n = min(step, self.count - lo)
                found, at = self.k.walk(self.buf, at, self.end, lo, n, self.rowbytes, self.prefixed, self.wstarts,
                                        self.wends, self.gaps, self.out)
                self.done.put((lo, lo + found, at))
                lo += found
                if found < n:
                    break
        finally:
            self.done.put((lo, -1, at))  # (the end, also after an error: hi of -1)

    def ready(self) -> bool:
        return not self.done.empty()

    def take(self) -> tuple[int, int, int]:
        return self.done.get()  # type: ignore[no-any-return]

    def stop(self) -> None:
        self.halt.append(True)
        if self.job is not None:
            self.job.result()

    def passed(self, at: int) -> None:
        if at - self.kept >= _RELEASE_BYTES:  # (each call stops the walk's core for a TLB flush: seldom)
            release(self.buf, at, self.kept)
            self.kept = at


_DONE_RECORDS, _READING_TO, _ENDED, _HALT = range(4)  # the slots of the kernel's ``fill`` progress


class _file_blocks(_Blocks):  # noqa: N801 - named as the function it stands for
    """The records read from the file (``fd``, offsets as in the map) by the kernel's ``fill`` on a worker
    thread, with the GIL let go of for the whole read: ``pread`` a block of 1 MB at a time straight into the
    matrix's memory, where the block's first row goes, then settled there (each word set aside in
    :attr:`words`, each row moved down into its place); the next block read from the first record not whole.
    Each block done is told through a pipe, which this thread reads (the GIL held by the words never stops the
    read). The matrix's pages ahead of the read are made present by the thread making the words while it waits
    (:meth:`spare`). What the read costs is the floor's: the file's bytes copied once into new memory, no map of
    it made and unmade. A record longer than a block is not taken (the read stops short: the caller then walks
    the map)."""

    apart = True

    def __init__(self, k: Any, fd: int, pos: int, end: int, count: int, rowbytes: int, prefixed: bool) -> None:
        self.k, self.fd, self.pos, self.end, self.count, self.rowbytes, self.prefixed = \
            k, fd, pos, end, count, rowbytes, prefixed
        self.block = max(_WALK_BLOCK_BYTES, 4 * rowbytes)
        total = count * rowbytes
        self.room = np.empty(total + self.block, np.uint8)  # the matrix, and room to read its last block
        self.out = self.room[:total].view(F32).reshape(count, rowbytes // 4)
        self.words = np.empty(end - pos - total, np.uint8)  # (what is not rows: the words are in it; untouched
        # pages of it cost nothing)
        # the words lie end to end in ``words``: one array of offsets, each word's end the next one's start (its
        # pages, and the newlines', made present by the words' thread before the matrix's)
        self.offsets = np.empty(count + 1, np.int64)
        self.wstarts, self.wends = self.offsets[:-1], self.offsets[1:]
        self.gaps = np.empty(count if not prefixed else 0, np.uint32)
        self.unready = [a for a in (self.offsets, self.gaps) if a.size]  # (taken from the end)
        self.later: list[np.ndarray] = []  # arrays made present once the matrix's pages ahead are
        self.ready_to = 0  # where the matrix's pages not made ready yet start
        self.progress = np.zeros(4, np.int64)  # (the kernel's: see _DONE_RECORDS)
        self.given, self.after = 0, pos  # the records given by take(), and the offset after them
        self.ended = False
        self.told: int | None = None  # the pipe's end each block done is told to
        self.job: Any = None

    def start(self) -> None:
        try:
            self.told, notify = os.pipe()
        except OSError:  # (no descriptor left: none read here, the caller walks the map)
            self.ended = True
            return
        try:
            self.job = background(self.fill, notify)
        except BaseException:  # (no thread to be had: nothing is reading, nothing left open)
            os.close(notify)
            os.close(self.told)
            self.told, self.ended = None, True
            raise

    def fill(self, notify: int) -> tuple[int, int, int, int]:
        """The kernel's read, which tells each block done to ``notify`` (the pipe's end this job owns)."""
        try:
            return self.k.fill(self.fd, self.pos, self.end, self.block, self.room, self.count, self.rowbytes,
                               self.prefixed, self.words, self.wstarts, self.wends, self.gaps, self.progress,
                               notify)  # type: ignore[no-any-return]
        except BaseException:
            os.write(notify, np.array([-1, self.pos], np.int64).tobytes())  # (the end, none read: raised by stop)
            raise
        finally:
            os.close(notify)

    def ready(self) -> bool:
        return bool(self.progress[_DONE_RECORDS] != self.given or self.progress[_ENDED])

    def take(self) -> tuple[int, int, int]:
        lo = self.given
        if self.ended:
            return lo, -1, self.after
        assert self.told is not None
        told = np.frombuffer(os.read(self.told, 4096), np.int64)  # (whole messages: 16 bytes each)
        hi, self.after = (int(told[-2]), int(told[-1])) if len(told) else (-1 - lo, self.after)  # (b"": closed)
        if hi < 0:
            self.ended, hi = True, -1 - hi
            if hi == lo:
                return lo, -1, self.after
        self.given = hi
        return lo, hi, self.after

    def stop(self) -> None:
        self.progress[_HALT] = 1
        if self.told is None:
            return
        try:
            while not self.ended:  # (the read waits for room in the pipe: read to its end)
                self.take()
            self.job.result()
        finally:
            if self.job.done():  # (else, interrupted meanwhile: left open, as the read may still write to it)
                os.close(self.told)
                self.told = None

    def spare(self) -> bool:
        # the matrix's pages some blocks ahead of the read made present, a huge page's worth at a time, while the
        # words wait for a block (never in their way: where a page is slow to have, the read has it itself); the
        # offsets' and newlines' pages first
        if self.unready:
            return self._ready_whole(self.unready.pop())
        front = int(self.progress[_READING_TO])
        start, stop = max(self.ready_to, front), min(len(self.room), front + _READY_AHEAD_BYTES)
        if stop - start < _READY_STEP_BYTES:
            return self._ready_whole(self.later.pop()) if self.later else False
        stop = start + _READY_STEP_BYTES
        if not self.k.populate(self.room, start, stop):
            stop = len(self.room)  # (the system cannot: not asked again)
        self.ready_to = stop
        return True

    def _ready_whole(self, arr: np.ndarray) -> bool:
        self.k.populate(arr.view(np.uint8), 0, arr.nbytes)
        return True

    def prepare(self, first: np.ndarray, last: np.ndarray) -> None:
        self.unready.insert(0, first)  # (after the offsets and newlines, which the read writes first)
        self.later.append(last)


def _blocks(k: Any, table: _Blocks, count: int, errors: str, prefixed: bool, path: str | None = None,
            base: int = 0) -> tuple[list[str], np.ndarray, np.ndarray | None, int, int | None] | None:
    """What :func:`_kernel_table` gives, from the blocks of ``table`` (see :class:`_Blocks`): the records found on
    a worker thread, the words of each block made here as it is done. ``path`` (a walk of the buffer itself):
    a word that does not decode is read again by the twin (which names it), else the table is not taken."""
    hashed = True  # whether the kernel made (and hashed) every word
    after, done = 0, 0
    hashes, ordered = np.empty(count, np.uint64), np.empty(count, np.uint64)  # (the words' hashes, then sorted)
    table.prepare(hashes, ordered)
    table.start()
    try:
        words: list[Any] = []  # (grown a block at a time, each block's words put in place: a list of 400,000
        # made at once holds the GIL for the ms its pages take, which the walk waits for)
        while True:
            while not table.ready() and table.spare():
                pass
            lo, hi, at = table.take()
            if hi < 0:
                after = at  # (where the walk stopped: ``pos`` for a table of no records)
                break
            if hi > lo:
                words.extend(repeat(None, hi - lo))
                if path is None:
                    if not k.words(table.words, table.wstarts, table.wends, lo, hi, errors == "surrogateescape",
                                   hashes, words):
                        return None
                elif not kernel_words(k, table.words, table.wstarts, table.wends, lo, hi, errors, hashes, words,
                                      path, base):
                    hashed = False
                table.passed(at)
            after, done = at, hi
    finally:  # (the walk reads and writes the buffers: done before an error leaves or the caller closes them)
        table.stop()
    if done != count:
        return None
    newlines = table.gaps if not prefixed and table.gaps.any() else None
    repeats = span_repeats(table.words, table.wstarts, table.wends, hashes, ordered) if hashed else None
    return words, table.out, newlines, after, repeats


def parsed_table(repeats: int | None, **fields: Any) -> cs.Container:
    """A word table's parse: ``fields``, and ``_duplicates`` when a kernel counted the repeated words (the
    model then need not count them again)."""
    table = cs.Container(**fields)
    if repeats is not None:
        table["_duplicates"] = repeats
    return table


def matrix_to_write(vectors: Any, n: int, dim: int, path: str, stream: Any) -> np.ndarray:
    arr = np.asarray(vectors)
    if arr.size == 0 and n == 0:
        return np.zeros((0, dim), F32)
    if arr.dtype.kind not in "biuf":
        raise fail(path, tell(stream), f"vectors must be numeric, not {arr.dtype}", BuildError)
    arr = np.ascontiguousarray(arr, dtype=F32)  # explicit cast: float64 input never makes a corrupt file
    if arr.shape != (n, dim):
        raise fail(path, tell(stream), "vector matrix does not match the header", BuildError,
                   expected=(n, dim), found=arr.shape)
    return arr



# ---------------------------------------------------------------------------------------------------------
# binary tables

class _BinaryRecords(Checked):
    """``count`` records, each a word and ``dim`` little-endian float32 values (Leader's and word2vec's);
    a ``dim`` over ``max_dim`` is refused."""

    def __init__(self, count: Any, dim: Any, *, max_dim: int | None = None) -> None:
        super().__init__()
        self.count = count
        self.dim = dim
        self.max_dim = max_dim

    def _start(self, stream: Any, context: Any, path: str) -> tuple[int, int, Any, int, int]:
        """(records to read, dimension, the buffer holding the rest of the stream, the absolute offset of its
        first byte, where the table starts in it), once the header's dimension is checked."""
        count = _limit(context, int(evaluate(self.count, context)))
        dim = checked_dimension(self.dim, context, path, stream, self.max_dim)
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
        return count, dim, words, matrix_to_write(obj["vectors"], count, dim, path, stream)

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)  # (the words' lengths decide)

    def strategy(self, context: Any) -> Any:
        """``count`` words (as :meth:`words` draws them) and a ``count x dim`` float32 matrix (any values,
        NaN and infinities included: the bytes are copied)."""
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp

        count, dim = int(evaluate(self.count, context)), int(evaluate(self.dim, context))
        floats = st.floats(width=32)
        return st.builds(cs.Container, words=st.lists(self.words(), min_size=count, max_size=count),
                         vectors=hnp.arrays(np.float32, (count, dim), elements=floats),
                         **self.drawn_layout(count))

    layout: tuple[str, ...] = ()  # what a parse keeps of the file's layout

    def drawn_layout(self, count: int) -> dict[str, Any]:
        """Strategies of the layout details by name: None, the writer's default."""
        from hypothesis import strategies as st

        return {name: st.none() for name in self.layout}

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
        fast = _kernel_table(context, buf, pos, end, count, dim, path, base, prefixed=True)
        if fast is not None:
            words, vectors, _, pos, repeats = fast
            stream.seek(base + pos)
            return parsed_table(repeats, words=words, vectors=vectors)
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

        def pieces() -> Iterator[bytes | memoryview]:
            for i, w in enumerate(words[done:], done):
                if not isinstance(w, str):
                    raise fail(f"{path}[{i}].word", tell(stream), "expected a str", BuildError)
                raw = w.encode("utf-8", "surrogateescape")  # (escapes: the bytes of a word in another encoding)
                yield pack(len(raw))
                yield raw
                yield mv[i * rb : (i + 1) * rb]

        write_joined(stream, pieces())
        return obj


def write_joined(stream: Any, pieces: Iterable[bytes | memoryview], batch: int = 3 * 4096) -> None:
    """Write ``pieces`` to ``stream`` joined ``batch`` at a time (the records a packed run left: one write per
    few thousand, not one per piece)."""
    chunk: list[bytes | memoryview] = []
    for piece in pieces:
        chunk.append(piece)
        if len(chunk) >= batch:
            stream.write(b"".join(chunk))
            chunk.clear()
    stream.write(b"".join(chunk))


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
        fast = _kernel_table(context, buf, pos, end, count, dim, path, base, prefixed=False)
        if fast is not None:
            words, vectors, newlines, pos, repeats = fast
            stream.seek(base + pos)
            return parsed_table(repeats, words=words, vectors=vectors, newlines=newlines)
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
        if gaps and read_params(context).get("vocab") is None:
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

        def pieces() -> Iterator[bytes | memoryview]:
            for i, w in enumerate(words[done:], done):
                raw = word_bytes(w, f"{path}[{i}].word", stream)
                if gaps is not None and gaps[i]:
                    yield b"\n" * int(gaps[i])
                yield raw + b" "
                yield mv[i * rb : (i + 1) * rb]

        write_joined(stream, pieces())
        return obj


    layout = ("newlines",)

    def drawn_layout(self, count: int) -> dict[str, Any]:
        """``newlines``: None (none, as gensim writes), or the run of ``\\n`` before each word, one at least
        (word2vec.c writes one after every vector; a parse of none gives None)."""
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp

        runs = hnp.arrays(np.uint32, count, elements=st.integers(0, 2)).filter(lambda a: bool(a.any()))
        return {"newlines": st.none() | runs if count else st.none()}

    def words(self) -> Any:
        """What :func:`word_bytes` writes: no space, no line break, not empty."""
        from hypothesis import strategies as st

        return st.text(st.characters(blacklist_characters=" \n", blacklist_categories=("Cs",)), min_size=1,
                       max_size=6)


def word_bytes(w: Any, path: str, stream: Any) -> bytes:
    """A word for the space-separated formats: non-empty, no ASCII space, no line break at its ends."""
    if not isinstance(w, str):
        raise fail(path, tell(stream), "expected a str", BuildError, found=type(w).__name__)
    if not w or " " in w or "\n" in w:
        raise fail(path, tell(stream), "a word here cannot be empty or hold a space or newline",
                   BuildError, found=w)
    return w.encode("utf-8", "surrogateescape")  # (escapes: the bytes of a word in another encoding)

