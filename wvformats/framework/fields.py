"""Field constructs that stay compiled and keep their checks: bulk arrays, absolute alignment, constraints,
length-prefixed strings and raw bytes.

construct 2.10.70 has four traps for these formats (see the construct note in ``shared/research``):
compiled parsers skip length checks, ``Aligned`` pads relative to the field, ``Prefixed`` resets ``tell()``
when building, and per-element arrays are hundreds of times slower than a memcpy. Every construct here emits
compiled code that calls back into its checked ``_parse``/``_build`` (:class:`_Checked`), so a compiled
schema keeps every check.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from typing import Any

import construct as cs
import numpy as np

from ..errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from .located import _tell, check_length, fail
from .streams import _zero_copy, byte_view

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
    ``modulus`` may be a ``this`` expression (GGUF's ``general.alignment``); it must be positive.
    The parsed value is the number of padding bytes; pad bytes that are not zero are an error.
    """

    def __init__(self, modulus: Any, never_zero: bool = False) -> None:
        super().__init__()
        self.modulus = modulus
        self.never_zero = never_zero
        self.flagbuildnone = True

    def padding(self, pos: int, context: Any = None) -> int:
        modulus = int(_evaluate(self.modulus, context))
        if modulus < 1:
            raise fail(None, pos, f"alignment must be positive, not {modulus}", ValueMismatchError)
        if self.never_zero:
            return modulus - pos % modulus
        return -pos % modulus

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        pos = stream.tell()
        n = self.padding(pos, context)
        check_length(stream, n, path, "alignment padding")
        data = stream.read(n)
        if data.count(0) != n:
            raise fail(path, pos, "padding bytes are not zero", ValueMismatchError, found=bytes(data))
        return n

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> int:
        n = self.padding(stream.tell(), context)
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

    def __init__(self, field: str, test: Any, why: str | None = None) -> None:
        super().__init__()
        self.field = field
        self.test = test
        self.why = why  # said after the test in the error, where the test alone would puzzle
        self.flagbuildnone = True

    def _check(self, stream: Any, context: Any, path: str, cls: type[FormatError]) -> None:
        if _evaluate(self.test, context):
            return
        offset = _tell(stream)
        field = (context.get("_subcons") or {}).get(self.field)  # interpreted Structs pass their fields
        if offset is not None and field is not None:
            try:  # sized in this context: a conditional field's size depends on the fields before it
                offset -= field._sizeof(context, path)
            except cs.SizeofError:  # a variable-size field: where it ends
                pass
        text = expression(self.test)
        text = text[1:-1] if text.startswith("(") and text.endswith(")") else text
        why = f" ({self.why})" if self.why else ""
        raise fail(f"{path} -> {self.field}", offset, f"does not satisfy {text}{why}", cls,
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

