"""Streams over buffers and memory maps: zero-copy views, a comparing sink for validation, a worker pool.

:class:`BufferStream` is what every schema parses from: a read-only stream over bytes, a memoryview or an mmap
that hands out zero-copy views of bulk arrays. :class:`CompareStream` is what ``validate`` builds into: it
compares the rebuild with the original as it is written instead of keeping it.
"""

from __future__ import annotations

import _thread
import contextlib
import io
import mmap
import os
from collections.abc import Callable
from typing import Any

import numpy as np


class _Positioned(io.RawIOBase):
    """Seeking in the in-memory streams below, which keep ``_pos`` and ``size`` (for seeking from the end)."""

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 1:
            offset += self._pos
        elif whence == 2:
            offset += self.size
        elif whence:
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")  # (io's own words)
        self._pos = offset if offset > 0 else 0
        return self._pos


class BufferStream(_Positioned):
    """A read-only stream over a buffer (bytes, memoryview, mmap) that hands out zero-copy views."""

    def __init__(self, buffer: Any) -> None:
        super().__init__()
        self._mv = memoryview(buffer).cast("B")
        # the object itself where it supports find() and cheap slicing (bytes, mmap); else the view
        self.raw = buffer if isinstance(buffer, (bytes, mmap.mmap)) else self._mv
        self._pos = 0
        self.size = len(self._mv)

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self._pos + n)
        data = self._mv[self._pos : end].tobytes()
        self._pos = end
        return data

    def readinto(self, b: Any) -> int:
        out = memoryview(b).cast("B")
        n = min(len(out), self.size - self._pos)
        out[:n] = self._mv[self._pos : self._pos + n]
        self._pos += n
        return n

    def view(self, n: int) -> memoryview:
        """The next ``n`` bytes as a zero-copy view; advances the position."""
        if n > self.size - self._pos:
            raise EOFError
        v = self._mv[self._pos : self._pos + n]
        self._pos += n
        return v

    @property
    def buffer(self) -> memoryview:
        return self._mv

    # read(mmap=False): a Job giving an in-memory copy of the same bytes, read on a worker thread beside the
    # parse; the views of bulk arrays are taken from it instead of from the (mapped) buffer
    beside: Job | None = None

    def close(self) -> None:  # the views outlive the stream; release nothing here
        pass

    def let_go(self) -> None:
        """Stop holding the buffer (views handed out stay valid), so that a mapped file can be closed while
        the parse's reference cycles still hold this stream."""
        with contextlib.suppress(BufferError):  # exported whole: the caller finds the mapping still held
            self._mv.release()


class CompareStream(_Positioned):
    """A writable, seekable stream that compares what is written with ``reference`` instead of keeping it:
    validating a file by rebuilding it then needs no second copy of the file in memory when they agree.

    Builders seek back to patch what they wrote (a chunk's length once its body is written), so the stream
    keeps the runs of offsets that differ, and a later write over a run judges those bytes anew. A write
    that differs in many places (a rebuild that does not match) is kept instead, to be compared at the end
    with whatever is written over it later. ``first_difference()`` is the first differing offset (or where
    the shorter of the two ends), None when they are equal."""

    _STEP = 1 << 24  # bytes compared at once (bounds the temporary of a big write)
    _MOST_RUNS = 256  # a write differing in more runs than this is kept rather than its runs

    def __init__(self, reference: Any) -> None:
        super().__init__()
        self._ref = np.frombuffer(reference, np.uint8) if len(reference) else np.zeros(0, np.uint8)
        self._pos = 0
        self.size = 0  # bytes written so far (the end of the furthest write)
        self._runs: list[tuple[int, int]] = []  # sorted, disjoint [start, end) spans that differ
        self._kept: list[tuple[int, np.ndarray]] = []  # writes with many differences, kept up to date

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        data = np.frombuffer(memoryview(b).cast("B"), np.uint8)
        n = len(data)
        if not n:  # writes nothing, extends nothing (as with a file)
            return 0
        lo, hi = self._pos, self._pos + n
        if lo > self.size:  # a gap never written reads as zeros
            self._judge(self.size, np.zeros(lo - self.size, np.uint8))
        for at, kept in self._kept:  # kept writes follow what is written over them
            a, z = max(lo, at), min(hi, at + len(kept))
            if a < z:
                kept[a - at : z - at] = data[a - lo : z - lo]
        self._runs = [piece for a, z in self._runs for piece in ((a, min(z, lo)), (max(a, hi), z))
                      if piece[0] < piece[1]]  # what this write covers is judged anew
        self._judge(lo, data)
        self._pos = hi
        self.size = max(self.size, hi)
        return n

    def _differences(self, lo: int, data: Any) -> np.ndarray:
        """Offsets where ``data``, written at ``lo``, differs from the reference (or goes beyond it)."""
        parts = []
        for at in range(0, len(data), self._STEP):
            chunk = data[at : at + self._STEP]
            ref = self._ref[lo + at : lo + at + len(chunk)]
            parts.append(np.flatnonzero(ref != chunk[: len(ref)]) + lo + at)
            parts.append(np.arange(lo + at + len(ref), lo + at + len(chunk)))  # beyond the reference's end
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def _judge(self, lo: int, data: np.ndarray) -> None:
        wrong = self._differences(lo, data)
        if not wrong.size:
            return
        cuts = np.flatnonzero(np.diff(wrong) != 1) + 1
        if len(cuts) >= self._MOST_RUNS:
            self._kept.append((lo, data.copy()))
            return
        starts, ends = wrong[np.r_[0, cuts]], wrong[np.r_[cuts - 1, len(wrong) - 1]] + 1
        self._runs = sorted(self._runs + list(zip(starts.tolist(), ends.tolist(), strict=True)))

    def first_difference(self) -> int | None:
        found = [self._runs[0][0]] if self._runs else []
        for at, kept in self._kept:
            wrong = self._differences(at, kept)
            if wrong.size:
                found.append(int(wrong[0]))
        if self.size != len(self._ref):
            found.append(min(self.size, len(self._ref)))
        return min(found) if found else None


def remaining(stream: Any) -> int | None:
    """Bytes left in a seekable stream, or None when the stream cannot tell."""
    if type(stream) is BufferStream:  # (what every parse reads from: asked before each field that allocates)
        return stream.size - stream._pos
    size = getattr(stream, "size", None)
    if isinstance(size, int):
        return size - stream.tell()
    if isinstance(stream, mmap.mmap):
        return len(stream) - stream.tell()
    try:
        pos = stream.tell()
        end = stream.seek(0, os.SEEK_END)
        stream.seek(pos)
        return end - pos
    except (AttributeError, OSError, ValueError):
        return None


def zero_copy(stream: Any, n: int) -> memoryview | None:
    """The next ``n`` bytes of a buffer stream as a view (None for other streams); from the stream's
    in-memory copy where it has one (``BufferStream.beside``)."""
    if isinstance(stream, BufferStream):
        view = stream.view(n)
        if stream.beside is None:
            return view
        return memoryview(stream.beside.result())[stream.tell() - n : stream.tell()]
    if isinstance(stream, mmap.mmap):
        pos = stream.tell()
        v = memoryview(stream)[pos : pos + n]
        stream.seek(n, os.SEEK_CUR)
        return v
    return None



class bounded:  # noqa: N801 - a context manager used as a function (a class: cheaper to enter than a generator)
    """The stream ended ``n`` bytes from its position while the block runs, its offsets unchanged: a field
    inside a container's member (a zip member's ``.npy``) parsed in place, so that its arrays stay zero-copy
    views of the file and its errors and dump spans keep the file's offsets. Another kind of stream yields
    the next ``n`` bytes as a stream of their own (offsets then count from the member's start)."""

    def __init__(self, stream: Any, n: int) -> None:
        self.stream, self.n, self.size = stream, n, None

    def __enter__(self) -> Any:
        if isinstance(self.stream, BufferStream):
            self.size = self.stream.size
            self.stream.size = min(self.size, self.stream.tell() + self.n)
            return self.stream
        return BufferStream(self.stream.read(self.n))

    def __exit__(self, *exc: Any) -> None:
        if self.size is not None:
            self.stream.size = self.size


def window(stream: Any) -> tuple[Any, int]:
    """A buffer holding the rest of the stream and the absolute offset of its first byte: how a record table
    walks its bytes with numpy or a tight loop, then seeks the stream to where it ended.

    Zero-copy for BufferStream and mmap; other streams are read to the end (and re-seeked by the caller).
    """
    if isinstance(stream, BufferStream):
        return stream.raw, 0
    if isinstance(stream, mmap.mmap):
        return stream, 0
    pos = stream.tell()
    data = stream.read()
    return data, pos

def byte_view(arr: np.ndarray) -> memoryview:
    """A flat byte view of a C-contiguous array (works for empty arrays, unlike ``memoryview.cast``)."""
    return memoryview(arr.reshape(-1).view(np.uint8))



class Job:
    """A call sent to the worker threads by :func:`background`: its result once run (as a ``Future`` gives it)."""

    __slots__ = ("_call", "_done", "_value", "_error")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._call: tuple[Callable[..., Any], tuple[Any, ...]] | None = (fn, args)
        self._done = _thread.allocate_lock()  # held until the call has run
        self._done.acquire()
        self._value: Any = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        assert self._call is not None
        fn, args = self._call
        self._call = None
        try:
            self._value = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the caller by result()
            self._error = e
        finally:
            self._done.release()

    def done(self) -> bool:
        return not self._done.locked()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """What the call raised (None: it returned), once it has run; TimeoutError after ``timeout`` seconds."""
        if not self._done.acquire(timeout=-1 if timeout is None else timeout):
            raise TimeoutError
        self._done.release()
        return self._error

    def result(self, timeout: float | None = None) -> Any:
        """What the call returned, once it has run (what it raised is raised here)."""
        error = self.exception(timeout)
        if error is not None:
            raise error
        return self._value


_JOBS: Any = None  # the jobs sent and not yet taken (a SimpleQueue, made with the first)
_WORKERS = [0, 0]  # threads started, threads waiting for a job
_WORKERS_LOCK = _thread.allocate_lock()


def _forget_pool() -> None:
    global _JOBS, _WORKERS_LOCK
    _JOBS = None  # a forked child has none of the parent's threads: it starts its own when it needs them
    _WORKERS[:] = [0, 0]
    _WORKERS_LOCK = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _work(jobs: Any) -> None:
    while True:
        with _WORKERS_LOCK:
            _WORKERS[1] += 1
        job = jobs.get()
        with _WORKERS_LOCK:
            _WORKERS[1] -= 1
        job._run()
        del job


def background(fn: Callable[..., Any], *args: Any) -> Job:
    """Run ``fn(*args)`` on one of two worker threads. What is sent here is numpy copying, page faulting, reading
    files or pyarrow parsing, which release the GIL, so it proceeds beside the caller's own work. Jobs never wait
    for other jobs (only callers wait), so the two threads cannot deadlock. (Two threads of its own, not
    ``concurrent.futures``': whose import a read would pay, ~1.5 ms of a fresh process's.)"""
    global _JOBS
    if _JOBS is None:
        from _queue import SimpleQueue

        _JOBS = SimpleQueue()
    job = Job(fn, args)
    _JOBS.put(job)  # (before a thread is started: the new thread takes it at once, while it holds the GIL)
    with _WORKERS_LOCK:
        start = _WORKERS[1] == 0 and _WORKERS[0] < 2
        if start:
            _WORKERS[0] += 1
    if start:
        import threading  # (imported by the interpreter's own start-up in practice)

        threading.Thread(target=_work, args=(_JOBS,), name=f"wvformats-{_WORKERS[0]}", daemon=True).start()
    return job


def release(buf: Any, upto: int, start: int = 0) -> None:
    """Let go of the pages of a read-only file mapping from byte ``start`` to byte ``upto`` once they have been
    read (the whole pages inside; they stay in the page cache and come back on the next access): the
    process's memory then holds the result rather than the file as well. A no-op for in-memory buffers."""
    if isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        start += -start % mmap.PAGESIZE
        length = upto - upto % mmap.PAGESIZE - start
        if length > 0:
            buf.madvise(mmap.MADV_DONTNEED, start, length)



_zero_copy, _window = zero_copy, window  # the names before the framework's API was declared (see fields.py)
