"""Building blocks that turn construct schemas into safe, fast parsers and builders.

construct 2.10.70 is a good declarative engine with four traps for these formats (see the construct note in
``shared/research``): compiled parsers skip length checks, ``Aligned`` pads relative to the field,
``Prefixed`` resets ``tell()`` when building, and per-element arrays are hundreds of times slower than a
memcpy. The constructs here close those traps:

* :class:`NumpyArray` -- bulk payloads as numpy arrays: a zero-copy view when the stream is a buffer or an
  mmap, ``readinto`` otherwise; lengths checked against the bytes that remain before anything is allocated.
* :class:`AlignTo` -- padding to an absolute stream position, checked when parsing.
* :class:`CheckedString` and :class:`StringTable` -- length-prefixed UTF-8 strings, single and as a table,
  with every length checked and every failure naming the index.
* :func:`parse` / :func:`build` -- run a schema and translate every failure into :class:`FormatError`.

All custom constructs emit compiled code that calls back into their checked ``_parse``/``_build``, so a
compiled schema keeps every check.
"""

from __future__ import annotations

import ast
import contextlib
import io
import mmap
import os
import re
import struct
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import construct as cs
import numpy as np

from .errors import BuildError, FormatError, TruncatedError, ValueMismatchError

__all__ = [
    "AlignTo",
    "BufferStream",
    "CheckedBytes",
    "Chunks",
    "CheckedString",
    "NumpyArray",
    "ShapeOf",
    "StringTable",
    "build",
    "compiled",
    "fail",
    "parse",
    "remaining",
    "INTERPRETED_ONLY",
]

# ---------------------------------------------------------------------------------------------------------
# streams


class _Positioned(io.RawIOBase):
    """Seeking in the in-memory streams below, which keep ``_pos`` and ``size`` (for seeking from the end)."""

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self.size}[whence]
        self._pos = max(0, base + offset)
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

    # read(mmap=False): a Future of an in-memory copy of the same bytes, read on a worker thread beside the
    # parse; the views of bulk arrays are taken from it instead of from the (mapped) buffer
    beside: Future[np.ndarray] | None = None

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


def _zero_copy(stream: Any, n: int) -> memoryview | None:
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


# ---------------------------------------------------------------------------------------------------------
# errors inside constructs

_PATH_SEP = re.compile(r"\s*->\s*")


def dotted(path: str | None) -> str:
    """construct's ``(parsing) -> vocab -> vocab -> words`` as ``vocab.words``."""
    if not path:
        return ""
    parts = [p for p in _PATH_SEP.split(path) if p and not p.startswith("(") and p != "None"]
    out: list[str] = []
    for p in parts:
        # "name" / X * "doc" nests two Renamed with one name; a table appends "[i]" to its own name
        if out and (p == out[-1] or p.startswith((out[-1] + "[", out[-1] + "."))):
            out.pop()
        out.append(p)
    return ".".join(out).replace(".[", "[")


def fail(
    path: str | None,
    offset: int | None,
    message: str,
    cls: type[FormatError] = FormatError,
    **kw: Any,
) -> FormatError:
    """A FormatError for a field at construct path ``path``; raise the result."""
    return cls(message, path=dotted(path) or None, offset=offset, **kw)


def warn(context: Any, path: str | None, offset: int | None, message: str, cls: type[Warning]) -> None:
    """Warn about a field that is read although it looks doubtful, located like a FormatError."""
    params = getattr(context, "_params", None) or {}
    located = FormatError(message, format=params.get("_format"), path=dotted(path) or None, offset=offset)
    warnings.warn(cls(str(located)), stacklevel=3)


def byte_view(arr: np.ndarray) -> memoryview:
    """A flat byte view of a C-contiguous array (works for empty arrays, unlike ``memoryview.cast``)."""
    return memoryview(arr.reshape(-1).view(np.uint8))


def _tell(stream: Any) -> int | None:
    try:
        return int(stream.tell())
    except Exception:
        return None


def check_length(stream: Any, nbytes: int, path: str, what: str) -> None:
    """Raise TruncatedError unless ``nbytes`` more bytes remain; runs before any allocation."""
    left = remaining(stream)
    if nbytes < 0:
        raise fail(path, _tell(stream), f"negative length for {what}", ValueMismatchError, found=nbytes)
    if left is not None and nbytes > left:
        raise fail(
            path,
            _tell(stream),
            f"{what} needs {nbytes} bytes but only {left} remain",
            TruncatedError,
        )


# ---------------------------------------------------------------------------------------------------------
# a mixin for custom constructs that stay compiled and keep their checks


class _Checked(cs.Construct):
    """Compiled code calls back into the checked interpreted methods (one call per field, not per item)."""

    def _emitparse(self, code: Any) -> str:
        code.linkedinstances[id(self)] = self
        return f"linkedinstances[{id(self)}]._parse(io, this, '(compiled)')"

    def _emitbuild(self, code: Any) -> str:
        code.linkedinstances[id(self)] = self
        return f"linkedinstances[{id(self)}]._build(obj, io, this, '(compiled)')"


def _evaluate(value: Any, context: Any) -> Any:
    return value(context) if callable(value) else value


class ShapeOf(cs.expr.ExprMixin):
    """``ShapeOf(this.matrix, 0)``: a compilable expression for one dimension of an array field."""

    def __init__(self, array: Any, axis: int) -> None:
        self.array = array
        self.axis = axis

    def __call__(self, context: Any) -> int:
        return int(np.shape(_evaluate(self.array, context))[self.axis])

    def __repr__(self) -> str:
        return f"np.shape({self.array!r})[{self.axis}]"


# ---------------------------------------------------------------------------------------------------------
# NumpyArray

_MAX_INTP = np.iinfo(np.intp).max


class NumpyArray(_Checked):
    """A packed array of ``dtype`` with ``shape`` (ints or ``this`` expressions), as one numpy array.

    Parsing returns a zero-copy, read-only view when the stream is a :class:`BufferStream` or an mmap, and
    reads into a fresh array otherwise. The byte count is checked against what remains before allocating.
    Building writes the array's memory directly (no ``tobytes()`` copy) after casting to ``dtype``.
    """

    def __init__(self, dtype: Any, shape: Sequence[Any] | Any) -> None:
        super().__init__()
        self.dtype = np.dtype(dtype)
        explicit = isinstance(dtype, str) and dtype[:1] in "<>|" or self.dtype.byteorder in "<>|"
        if self.dtype.itemsize > 1 and not explicit and self.dtype.fields is None:
            raise ValueError("NumpyArray needs an explicit byte order, e.g. '<f4'")
        self.shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)

    def _dims(self, context: Any, path: str, offset: int | None) -> tuple[int, ...]:
        dims = tuple(int(_evaluate(d, context)) for d in self.shape)
        if any(d < 0 for d in dims):
            raise fail(path, offset, f"negative array dimension {dims}", ValueMismatchError)
        return dims

    def _parse(self, stream: Any, context: Any, path: str) -> np.ndarray:
        dims = self._dims(context, path, _tell(stream))
        count = 1
        for d in dims:
            count *= d  # Python ints do not overflow; the size check below bounds them
        nbytes = count * self.dtype.itemsize
        check_length(stream, nbytes, path, f"array {dims} of {self.dtype.str}")
        # numpy refuses a dimension past 2^63 - 1, or nonzero dimensions whose byte count is, even when another
        # dimension is 0 and the array holds no bytes (so the check above passes): named here, before numpy
        size = self.dtype.itemsize
        for d in dims:
            size *= d or 1
        if size > _MAX_INTP:
            raise fail(path, _tell(stream), f"array dimensions {dims} of {self.dtype.str} are larger than any "
                       "array can be", ValueMismatchError, found=dims)
        view = _zero_copy(stream, nbytes)
        if view is not None:
            return np.frombuffer(view, dtype=self.dtype, count=count).reshape(dims)
        out = np.empty(dims, dtype=self.dtype)
        got = stream.readinto(byte_view(out)) if nbytes else 0
        if got != nbytes:
            raise fail(path, _tell(stream), f"expected {nbytes} bytes, found {got}", TruncatedError)
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> np.ndarray:
        arr = np.asarray(obj)
        if arr.dtype.kind not in "biuf" and self.dtype.kind in "iuf":
            raise fail(path, _tell(stream), f"cannot store {arr.dtype} as {self.dtype.str}", BuildError)
        arr = np.ascontiguousarray(arr, dtype=self.dtype)
        dims = self._dims(context, path, _tell(stream))
        if arr.shape != dims:
            raise fail(path, _tell(stream), "array shape does not match its header", BuildError,
                       expected=dims, found=arr.shape)
        if arr.size:
            view = byte_view(arr)
            # in 16 MB pieces: one multi-GB write() can stall for seconds in the kernel's dirty-page
            # throttling, where a run of moderate writes streams
            for a in range(0, len(view), 1 << 24):
                stream.write(view[a : a + (1 << 24)])
        return arr

    def _sizeof(self, context: Any, path: str) -> int:
        try:
            dims = tuple(int(_evaluate(d, context)) for d in self.shape)
        except Exception as e:
            raise cs.SizeofError(path=path) from e
        return int(np.prod(dims, dtype=object)) * self.dtype.itemsize


# ---------------------------------------------------------------------------------------------------------
# AlignTo


class AlignTo(_Checked):
    """Zero padding up to the next multiple of ``modulus`` of the absolute stream position.

    ``never_zero=True`` gives finalfusion's rule ``modulus - pos % modulus`` (1 to ``modulus`` bytes, never
    0). Computed from the stream passed in, never from ``context._io``, so parsing and building agree.
    The parsed value is the number of padding bytes; pad bytes that are not zero are an error.
    """

    def __init__(self, modulus: int, never_zero: bool = False) -> None:
        super().__init__()
        self.modulus = modulus
        self.never_zero = never_zero
        self.flagbuildnone = True

    def padding(self, pos: int) -> int:
        if self.never_zero:
            return self.modulus - pos % self.modulus
        return -pos % self.modulus

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        pos = stream.tell()
        n = self.padding(pos)
        check_length(stream, n, path, "alignment padding")
        data = stream.read(n)
        if data.count(0) != n:
            raise fail(path, pos, "padding bytes are not zero", ValueMismatchError, found=bytes(data))
        return n

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> int:
        n = self.padding(stream.tell())
        stream.write(bytes(n))
        return n

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError("padding depends on the stream position", path=path)


# ---------------------------------------------------------------------------------------------------------
# Valid


def expression(x: object) -> str:
    """A ``this`` expression as the spec would write it: ``this.rows * this.cols`` as ``(rows * cols)``."""
    text = repr(x)
    return re.sub(r"this\['([^']+)'\]", r"\1", text).replace("][", ".").replace("['", ".").replace("']", "")


class Valid(_Checked):
    """A constraint on the field just before it (Kaitai's ``valid``), documented like a field:
    ``Valid("bucket_exp", this.bucket_exp < 64) * "bucket_exp < 64: the hash has 64 bits"``.

    Takes no bytes. When ``test`` is false, parsing fails with a ValueMismatchError (building with a
    BuildError) that names the field, where it starts, the test and the value found.
    """

    def __init__(self, field: str, test: Any) -> None:
        super().__init__()
        self.field = field
        self.test = test
        self.flagbuildnone = True

    def _check(self, stream: Any, context: Any, path: str, cls: type[FormatError]) -> None:
        if _evaluate(self.test, context):
            return
        offset = _tell(stream)
        field = (context.get("_subcons") or {}).get(self.field)  # interpreted Structs pass their fields
        if offset is not None and field is not None:
            try:
                offset -= field.sizeof()
            except cs.SizeofError:  # a variable-size field: where it ends
                pass
        text = expression(self.test)
        text = text[1:-1] if text.startswith("(") and text.endswith(")") else text
        raise fail(f"{path} -> {self.field}", offset, f"does not satisfy {text}", cls,
                   found=context.get(self.field))

    def _parse(self, stream: Any, context: Any, path: str) -> None:
        self._check(stream, context, path, ValueMismatchError)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> None:
        self._check(stream, context, path, BuildError)

    def _sizeof(self, context: Any, path: str) -> int:
        return 0


# ---------------------------------------------------------------------------------------------------------
# strings


def _decode(raw: Any, errors: str, path: str, offset: int) -> str:
    try:
        return str(raw, "utf-8", errors)
    except UnicodeDecodeError as e:
        raise fail(path, offset + e.start, f"invalid UTF-8: {e.reason}", ValueMismatchError,
                   found=bytes(raw[e.start : e.end])) from None


def _encode(s: Any, path: str, stream: Any) -> bytes:
    if not isinstance(s, str):
        raise fail(path, _tell(stream), "expected a str", BuildError, found=type(s).__name__)
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise fail(path, _tell(stream), f"cannot encode as UTF-8: {e.reason}", BuildError) from None


_LEN_FORMATS = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q"}


class CheckedString(_Checked):
    """A string stored as a little-endian length (``u8``/``u16``/``u32``/``u64``) and UTF-8 bytes."""

    def __init__(self, length: str = "u32") -> None:
        super().__init__()
        self.length = length
        self._fmt = struct.Struct(_LEN_FORMATS[length])

    def _parse(self, stream: Any, context: Any, path: str) -> str:
        pos = stream.tell()
        check_length(stream, self._fmt.size, path, "string length")
        (n,) = self._fmt.unpack(stream.read(self._fmt.size))
        check_length(stream, n, path, "string bytes")
        return _decode(stream.read(n), "strict", path, pos + self._fmt.size)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> str:
        raw = _encode(obj, path, stream)
        if len(raw) >= 1 << (8 * self._fmt.size):
            raise fail(path, _tell(stream), "string too long for its length field", BuildError)
        stream.write(self._fmt.pack(len(raw)) + raw)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)


def decode_all(raws: list[Any], errors: str, path: str, offsets: Any, field: str = ".word") -> list[str]:
    """Decode many words at once when they can be joined safely, else one by one (naming the bad one)."""
    blob = b"\x00".join(raws)
    if errors == "strict" and blob.count(0) == max(len(raws) - 1, 0):
        try:
            return blob.decode("utf-8").split("\x00") if raws else []
        except UnicodeDecodeError:
            pass
    out = []
    for i, raw in enumerate(raws):
        try:
            out.append(str(raw, "utf-8", errors))
        except UnicodeDecodeError as e:
            raise fail(f"{path}[{i}]{field}", int(offsets(i)) + e.start, f"invalid UTF-8: {e.reason}",
                       ValueMismatchError, found=bytes(raw[e.start : e.end])) from None
    return out


_SPAN_CHUNK = 1 << 16  # words gathered per pass by decode_spans


def _gather_spans(buf: Any, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of the spans ``[starts, starts + lens)`` of ``buf`` joined into one array, and where each
    span starts in it; a chunk of spans at a time, letting go of the pages read."""
    n = len(starts)
    u8 = np.frombuffer(buf, np.uint8)
    first = np.cumsum(lens) - lens  # offset of each span inside the blob
    blob = np.empty(int(lens.sum()), np.uint8)
    ordered = bool((starts[1:] >= starts[:-1]).all())
    for a in range(0, n, _SPAN_CHUNK):
        b = min(n, a + _SPAN_CHUNK)
        lo, hi = int(first[a]), int(first[b - 1] + lens[b - 1])
        blob[lo:hi] = u8[np.repeat(starts[a:b] - first[a:b], lens[a:b]) + np.arange(lo, hi, dtype=np.int64)]
        if ordered:
            release(buf, int(starts[b - 1]))
    return blob, first


def decode_spans(buf: Any, starts: np.ndarray, ends: np.ndarray, errors: str, path: str,
                 base: int, field: str = ".word", sep: bytes | None = None) -> list[str]:
    """Decode the words at byte spans [starts, ends) of ``buf`` with a few vectorised passes.

    The word bytes are gathered into one blob and decoded once; each word's character count (bytes that
    are not UTF-8 continuation bytes) then slices the decoded text. A word that starts with a continuation
    byte, or a blob that does not decode, falls back to per-word decoding, which names the bad word.
    ``sep``: a one-byte ASCII separator that the byte at every ``ends[i]`` is and no word holds (the space
    after a word2vec word); the words are then gathered with it and ``str.split`` cuts them.
    """
    n = len(starts)
    if n == 0:
        return []
    if sep is not None and errors == "strict":
        blob, _ = _gather_spans(buf, starts, ends + 1 - starts)
        try:
            words = blob[:-1].tobytes().decode("utf-8").split(sep.decode("ascii"))
        except UnicodeDecodeError:
            words = []  # the general path below names the bad word
        if len(words) == n:  # (a word holding the separator would cut into two: the general path then)
            return words
    lens = ends - starts
    total = int(lens.sum())
    blob, first = _gather_spans(buf, starts, lens)
    if errors == "strict" and n > 1 and not (blob == 10).any():
        # no word holds a newline: put one between the words, decode once and let str.split cut them (a
        # word that is not UTF-8 on its own fails the decode, whatever its neighbours)
        try:
            return np.insert(blob, first[1:], 10).tobytes().decode("utf-8").split("\n")
        except UnicodeDecodeError:
            pass
    lead = (blob & 0xC0) != 0x80
    nonempty = lens > 0
    if errors == "strict" and bool(lead[first[nonempty]].all()):
        try:
            text = blob.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            if len(text) == total:  # all ASCII: byte offsets are character offsets
                cuts = np.cumsum(lens).tolist()
            else:
                chars = np.add.reduceat(lead, first[nonempty]) if total else np.zeros(0, np.int64)
                clens = np.zeros(n, np.int64)
                clens[nonempty] = chars
                cuts = np.cumsum(clens).tolist()
            return [text[a:b] for a, b in zip([0, *cuts[:-1]], cuts, strict=True)]
    mv = memoryview(buf)
    return decode_all([mv[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)], errors, path,
                      lambda i: base + int(starts[i]), field)


_U32 = struct.Struct("<I")
_POOL: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    global _POOL
    _POOL = None  # a forked child has none of the parent's threads: it starts its own pool when it needs one


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def background(fn: Callable[..., Any], *args: Any) -> Future[Any]:
    """Run ``fn(*args)`` on one of two worker threads. What is sent here is numpy copying, page faulting or
    pyarrow parsing, which release the GIL, so it proceeds beside the caller's own work. Jobs never wait
    for other jobs (only callers wait), so the pool cannot deadlock."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="wvformats")
    return _POOL.submit(fn, *args)


def release(buf: Any, upto: int) -> None:
    """Let go of the pages of a read-only file mapping before byte ``upto`` once they have been read (they
    stay in the page cache and come back on the next access): the process's memory then holds the result
    rather than the file as well. A no-op for in-memory buffers."""
    if isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        length = upto - upto % mmap.PAGESIZE
        if length > 0:
            buf.madvise(mmap.MADV_DONTNEED, 0, length)


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
            u8 = np.frombuffer(chr(sep).join(chunk).encode("utf-8"), np.uint8)
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


class StringTable(_Checked):
    """``count`` length-prefixed UTF-8 strings back to back, parsed by one tight, checked loop.

    Errors name the index (``words[1234]``) and the byte offset. Parses from a buffer without copying it.
    """

    def __init__(self, count: Any, length: str = "u32", index: str | None = None) -> None:
        super().__init__()
        self.count = count
        self.length = length
        self._fmt = struct.Struct(_LEN_FORMATS[length])
        # index="u64": every string is followed by an integer; parsed as Container(strings, indices)
        self.index = index
        self._ifmt = struct.Struct(_LEN_FORMATS[index]) if index else None

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        count = int(_evaluate(self.count, context))
        start = stream.tell()
        width = self._fmt.size
        if count < 0:
            raise fail(path, start, "negative string count", ValueMismatchError, found=count)
        # every string needs at least its length field
        check_length(stream, count * width, path, f"{count} strings")
        buf, base = _window(stream)
        unpack = self._fmt.unpack_from
        end = len(buf)
        pos = start - base
        if width == 4 and not self._ifmt:  # the common table: vectorised offsets, one decode
            starts, n, pos = prefixed_starts(buf, pos, end, count, path, base)
            out = decode_spans(buf, starts + 4, starts + 4 + n, "strict", path, base, field="")
            stream.seek(base + pos)
            return out
        out: list[str] = []
        append = out.append
        indices: list[int] = []
        iw = self._ifmt.size if self._ifmt else 0
        for i in range(count):
            if pos + width > end:
                raise fail(f"{path}[{i}]", base + pos, "string length", TruncatedError)
            (n,) = unpack(buf, pos)
            pos += width
            if pos + n + iw > end:
                raise fail(f"{path}[{i}]", base + pos, f"string needs {n + iw} bytes but only {end - pos} remain",
                           TruncatedError)
            try:
                append(str(buf[pos : pos + n], "utf-8"))
            except UnicodeDecodeError:
                append(_decode(buf[pos : pos + n], "strict", f"{path}[{i}]", base + pos))
            pos += n
            if iw:
                indices.append(self._ifmt.unpack_from(buf, pos)[0])
                pos += iw
        stream.seek(base + pos)
        if self._ifmt:
            return cs.Container(strings=out, indices=np.array(indices, dtype=np.uint64))
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        count = int(_evaluate(self.count, context))
        strings = obj["strings"] if self._ifmt else obj
        indices = [int(x) for x in obj["indices"]] if self._ifmt else None
        if len(strings) != count or indices is not None and len(indices) != count:
            raise fail(path, _tell(stream), "string count does not match its header", BuildError,
                       expected=count, found=len(obj))
        done = 0
        if self._fmt.size == 4 and not self._ifmt:  # vectorised up to a string only the loop can judge
            done = pack_records(strings, np.zeros((count, 0), np.uint8), stream, length_prefix=True)
        pack = self._fmt.pack
        limit = 1 << (8 * self._fmt.size)
        parts = []
        for i, s in enumerate(strings[done:], done):
            raw = _encode(s, f"{path}[{i}]", stream)
            if len(raw) >= limit:
                raise fail(f"{path}[{i}]", _tell(stream), "string too long for its length field", BuildError)
            parts.append(pack(len(raw)))
            parts.append(raw)
            if indices is not None:
                parts.append(self._ifmt.pack(indices[i]))
        stream.write(b"".join(parts))
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)


class CheckedBytes(_Checked):
    """``length`` raw bytes, checked against what remains (compiled ``Bytes`` would read short silently)."""

    def __init__(self, length: Any) -> None:
        super().__init__()
        self.length = length

    def _parse(self, stream: Any, context: Any, path: str) -> bytes:
        n = int(_evaluate(self.length, context))
        check_length(stream, n, path, "bytes")
        return stream.read(n)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> bytes:
        n = _evaluate(self.length, context)  # None: a length field back-patched after the build
        if n is not None and len(obj) != n:
            raise fail(path, _tell(stream), "byte string length does not match its header", BuildError,
                       expected=n, found=len(obj))
        stream.write(obj)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        return int(_evaluate(self.length, context))


class Chunks(_Checked):
    """Chunks to the end of the stream: ``u32 id``, ``u64 length`` (bytes after the length field), body.

    ``types`` maps an id to ``(name, body schema)``; it is read at parse time, so registering a new chunk
    type is adding an entry. An unknown id is kept as raw bytes (skipped by its length) and written back
    byte-exact. The body must fill exactly ``length`` bytes. Building back-patches the length field. Each
    parsed chunk keeps the absolute offset of its id as ``_offset``, for errors found after parsing.
    """

    def __init__(self, types: dict[int, tuple[str, cs.Construct]], listed: Any = 0,
                 quirks: dict[int, Any] | None = None) -> None:
        super().__init__()
        self.types = types
        # id -> body -> how many bytes a known writer's length field falls short by (kept when rebuilding)
        self.quirks = quirks or {}
        self.listed = listed  # the header's chunk count: a file that ends before that many is cut off
        self._head = struct.Struct("<IQ")

    def _parse(self, stream: Any, context: Any, path: str) -> cs.ListContainer:
        out = cs.ListContainer()
        i = 0
        while True:
            left = remaining(stream)
            if left == 0:
                listed = int(_evaluate(self.listed, context))
                if len(out) < listed:
                    raise fail(f"{path}[{len(out)}]", stream.tell(),
                               f"the header lists {listed} chunks, the file ends after {len(out)}", TruncatedError)
                return out
            start = stream.tell()
            where = f"{path}[{i}]"
            check_length(stream, 12, where, "chunk id and length")
            chunk_id, length = self._head.unpack(stream.read(12))
            entry = self.types.get(chunk_id)
            if entry is None or chunk_id not in self.quirks:  # a short length field may undercount
                check_length(stream, length, where, f"chunk {chunk_id} body")
            if entry is None:
                out.append(cs.Container(chunk_id=chunk_id, name="unknown", body=stream.read(length),
                                        _offset=start))
            else:
                name, schema = entry
                body = schema._parsereport(stream, self.body_context(context, length), f"{where} -> {name}")
                used = stream.tell() - start - 12
                quirk = self.quirks.get(chunk_id)
                short = used - length
                if used != length and not (quirk and short == quirk(body)):
                    raise fail(where, start + 4, f"{name} chunk length field does not match the bytes "
                               "its body takes", ValueMismatchError, expected=used, found=length)
                chunk = cs.Container(chunk_id=chunk_id, name=name, body=body, _offset=start)
                if short:
                    chunk.length_short_by = short
                out.append(chunk)
            i += 1

    @staticmethod
    def body_context(context: Any, length: int) -> cs.Container:
        """The context a chunk body is parsed in: its ``chunk_len`` is the length field."""
        return cs.Container(_=context, _params=context._params, _root=context.get("_root"), _parsing=True,
                            _building=False, _sizing=False, chunk_len=length)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        for i, chunk in enumerate(obj):
            chunk_id = int(chunk["chunk_id"])
            start = stream.tell()
            stream.write(self._head.pack(chunk_id, 0))
            entry = self.types.get(chunk_id)
            if entry is None:
                stream.write(bytes(chunk["body"]))
            else:
                name, schema = entry
                ctx = cs.Container(_=context, _params=context._params, _root=context.get("_root"),
                                   _parsing=False, _building=True, _sizing=False, chunk_len=None)
                schema._build(chunk["body"], stream, ctx, f"{path}[{i}] -> {name}")
            end = stream.tell()
            stream.seek(start)
            stream.write(self._head.pack(chunk_id, end - start - 12 - int(chunk.get("length_short_by", 0))))
            stream.seek(end)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)


def _window(stream: Any) -> tuple[Any, int]:
    """A buffer holding the rest of the stream and the absolute offset of its first byte.

    Zero-copy for BufferStream and mmap; other streams are read to the end (and re-seeked by the caller).
    """
    if isinstance(stream, BufferStream):
        return stream.raw, 0
    if isinstance(stream, mmap.mmap):
        return stream, 0
    pos = stream.tell()
    data = stream.read()
    return data, pos


# ---------------------------------------------------------------------------------------------------------
# running schemas


def compiled(schema: cs.Construct) -> cs.Construct:
    """The compiled form of a schema (cached); the only place that touches construct's compile API."""
    got = _COMPILED.get(id(schema))
    if got is None or got[0] is not schema:
        got = (schema, schema.compile())
        _COMPILED[id(schema)] = got
    return got[1]


_COMPILED: dict[int, tuple[cs.Construct, cs.Construct]] = {}

# Schemas that must not be compiled, with the reason; the compile-policy test reads this.
INTERPRETED_ONLY: dict[str, str] = {}


def _as_stream(data: Any) -> Any:
    if isinstance(data, (bytes, bytearray, memoryview, mmap.mmap, np.ndarray)):
        return BufferStream(data)
    return data


_TRANSLATE = (
    cs.ConstructError,
    struct.error,
    IndexError,
    KeyError,
    ValueError,
    TypeError,
    OverflowError,
    ArithmeticError,
    MemoryError,
    UnicodeError,
    EOFError,
    AttributeError,
)


def parse(
    schema: cs.Construct,
    data: Any,
    *,
    format: str,
    compile: bool = False,
    **params: Any,
) -> Any:
    """Parse ``data`` (bytes, memoryview, mmap or a binary stream) with ``schema``.

    Every failure becomes a :class:`FormatError` naming ``format``, the field path and the byte offset.
    """
    stream = _as_stream(data)
    start = stream.tell()
    runner = compiled(schema) if compile else schema
    params.setdefault("_format", format)  # for the warnings of doubtful fields
    try:
        return runner.parse_stream(stream, **params)
    except FormatError as e:
        error = e.located(format=format)
    except _TRANSLATE as e:
        error = _translate(e, stream, format, schema)
    if compile:
        # compiled code carries no field paths: parse again interpreted to name the failing field
        stream.seek(start)
        try:
            schema.parse_stream(stream, **params)
        except FormatError as e:
            error = e.located(format=format)
        except _TRANSLATE as e:
            error = _translate(e, stream, format, schema)
    raise error


def build(
    schema: cs.Construct,
    obj: Any,
    stream: Any = None,
    *,
    format: str,
    compile: bool = False,
    **params: Any,
) -> bytes | None:
    """Build ``obj`` with ``schema`` into ``stream`` (or return bytes); failures become BuildError."""
    out = io.BytesIO() if stream is None else stream
    runner = compiled(schema) if compile else schema
    try:
        runner.build_stream(_strip_private(obj), out, **params)
    except FormatError as e:
        raise e.located(format=format) from None
    except _TRANSLATE as e:
        err = _translate(e, out, format)
        raise BuildError(err.message, format=format, path=err.path, offset=err.offset) from None
    return out.getvalue() if stream is None else None


_CONST = re.compile(r"expected (.+) but parsed (.+)\Z", re.S)
_SHORT = re.compile(r"stream read less than specified amount, expected (\d+), found (\d+)\Z")

# the words that open the message of an error raised by numpy, construct or Python inside a reader rather than
# by a check of ours: wvformats lacks a check for that input (a bug to report); the fuzz tests look for them
UNCHECKED = "unchecked input:"


def _const_size(schema: cs.Construct | None, path: str | None) -> int | None:
    """The byte size of the Const field at dotted ``path`` of ``schema`` (None when it cannot be told)."""
    con = schema
    for name in (path or "").split("."):
        name = name.split("[", 1)[0]
        con = _unwrap(con) if con is not None else None
        con = next((c for c in getattr(con, "subcons", []) if getattr(c, "name", None) == name), None)
    con = _unwrap(con) if con is not None else None
    if not isinstance(con, cs.Const):
        return None
    try:
        return int(con.subcon.sizeof())
    except (cs.SizeofError, TypeError):
        return None


def _translate(e: BaseException, stream: Any, format: str, schema: cs.Construct | None = None) -> FormatError:
    path = dotted(getattr(e, "path", None)) or None
    offset = _tell(stream)
    if isinstance(e, cs.ConstError) and (m := _CONST.search(str(e))):
        # construct has read the field when it compares: name where it starts, and what it holds
        size = _const_size(schema, path)
        start = offset - size if offset is not None and size is not None else offset
        return ValueMismatchError("constant field does not match", format=format, path=path, offset=start,
                                  expected=_literal(m.group(1)), found=_literal(m.group(2)))
    message = str(e)
    if isinstance(e, cs.ConstructError):
        # construct prefixes "Error in path ... |"; the path is ours to print
        message = message.split("\n")[-1].split(" | ", 1)[-1].strip()
    if isinstance(e, cs.StreamError) and (m := _SHORT.search(message)):
        # a fixed-size field the file ends inside: the stream has read what there was of it
        needs, found = int(m.group(1)), int(m.group(2))
        return TruncatedError(f"the field needs {needs} bytes but only {found} remain", format=format,
                              path=path, offset=None if offset is None else offset - found)
    if isinstance(e, MemoryError):
        return FormatError("a length in the file asks for more memory than is available", format=format,
                           path=path, offset=offset)
    if isinstance(e, (cs.ValidationError, cs.CheckError, cs.MappingError)):  # a schema's own Check, Enum
        return ValueMismatchError(message, format=format, path=path, offset=offset)
    cls = TruncatedError if isinstance(e, (cs.StreamError, EOFError)) else FormatError
    error = cls(f"{UNCHECKED} {type(e).__name__}: {message or '(no message)'} (a check wvformats lacks: "
                "please report it)", format=format, path=path, offset=offset)
    error.__cause__ = e
    return error


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _strip_private(obj: Any) -> Any:
    """Drop construct's ``_io`` and other private keys from a parsed Container before rebuilding.

    A parsed Container carries its parse stream; rebuilding from it would clobber ``context._io``.
    """
    if isinstance(obj, cs.Container):
        return cs.Container({k: _strip_private(v) for k, v in obj.items() if not str(k).startswith("_")})
    if isinstance(obj, cs.ListContainer):
        return cs.ListContainer(_strip_private(v) for v in obj)
    return obj


def field_docs(schema: cs.Construct) -> list[tuple[str, cs.Construct, str]]:
    """The (name, construct, doc) of each field of a Struct, in file order."""
    out = []
    for sub in getattr(_unwrap(schema), "subcons", []):
        name = getattr(sub, "name", None)
        doc = getattr(sub, "docs", "") or ""
        inner = sub
        while isinstance(inner, cs.Renamed):
            doc = doc or getattr(inner, "docs", "") or ""
            inner = inner.subcon
        out.append((name or "", inner, doc))
    return out


def _unwrap(c: cs.Construct) -> cs.Construct:
    while isinstance(c, (cs.Renamed, cs.Transformed, cs.Restreamed)) or type(c).__name__ == "Compiled":
        c = c.subcon
    return c
