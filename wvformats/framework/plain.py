"""The readers of fields that need no construct: arrays, JSON texts, tensor tables, and the scalars of the
length prefixes. The field constructs (:mod:`.fields`, :mod:`.jsonfield`, :mod:`.tables`) parse with them, and
so do the cached plans of :mod:`.plans`, which read a schema's file without importing construct: one home for
each rule, whichever runs it."""

from __future__ import annotations

import math
import operator
import re
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import TruncatedError, ValueMismatchError
from .cache import decode_json
from .located import check_length, fail, tell
from .scalars import scalar, scalar_size
from .streams import byte_view, remaining, zero_copy

_MAX_INTP = np.iinfo(np.intp).max


def array_dims(shape: Any, path: str, offset: int | None) -> tuple[int, ...]:
    """A shape as a tuple of ints: ``()`` for a 0-d array; a negative dimension is a located error."""
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError, OverflowError):
        raise fail(path, offset, f"array shape {shape!r} is not a list of integers", ValueMismatchError,
                   found=shape) from None
    if any(d < 0 for d in dims):
        raise fail(path, offset, f"negative array dimension {dims}", ValueMismatchError)
    return dims


def read_array(stream: Any, dtype: np.dtype, dims: tuple[int, ...], path: str) -> np.ndarray:
    """The next ``prod(dims) * itemsize`` bytes as an array: a zero-copy view of a buffer stream or mmap, else
    read into a fresh array. The byte count is checked against what remains before anything is allocated."""
    count = 1
    for d in dims:
        count *= d  # Python ints do not overflow; the size check below bounds them
    nbytes = count * dtype.itemsize
    left = remaining(stream)
    if left is None or not 0 <= nbytes <= left:  # (the message made only where it may be said)
        check_length(stream, nbytes, path, f"array {dims} of {dtype.str}")
    # numpy refuses a dimension past 2^63 - 1, or nonzero dimensions whose byte count is, even when another
    # dimension is 0 and the array holds no bytes (so the check above passes): named here, before numpy.
    # Elements of no bytes count as one: their number must be an intp too; a subarray dtype ('<f4', (0,))
    # counts as numpy makes the array: its shape after the dimensions, its base type's bytes
    if not nbytes or dtype.shape:  # (else the elements' count is at most the bytes that remain: an intp)
        size = max(dtype.base.itemsize, 1)
        for d in (*dims, *dtype.shape):
            size *= d or 1
    else:
        size = nbytes
    if size > _MAX_INTP:
        raise fail(path, tell(stream), f"array dimensions {dims} of {dtype.str} are larger than any "
                   "array can be", ValueMismatchError, found=dims)
    if not dtype.itemsize:  # (elements of no bytes, as numpy.save writes a 'V0', 'U0' or 'S0' array: made, not
        # read, as numpy.load makes them; np.zeros and np.empty would widen U0 and S0 to one character a value)
        return np.ndarray(dims, dtype=dtype)
    view = zero_copy(stream, nbytes)
    if view is not None:
        return np.frombuffer(view, dtype, count).reshape(dims)  # (positional: numpy reads keywords slowly)
    out = np.empty(dims, dtype=dtype)
    got = stream.readinto(byte_view(out)) if nbytes else 0
    if got != nbytes:
        raise fail(path, tell(stream), f"expected {nbytes} bytes, found {got}", TruncatedError)
    return out


def explicit_dtype(dtype: Any) -> np.dtype:
    """``dtype`` as a numpy dtype whose byte order is spelt out (``"<f4"``, not ``"f4"``): a file's bytes
    do not depend on the machine reading them."""
    dt = np.dtype(dtype)
    explicit = isinstance(dtype, str) and dtype[:1] in "<>|" or dt.byteorder in "<>|"
    if dt.itemsize > 1 and not explicit and dt.fields is None:
        raise ValueError(f"an array dtype needs an explicit byte order, e.g. '<f4', not {dtype!r}")
    return dt


def decode_utf8(raw: Any, errors: str, path: str, offset: int) -> str:
    """``raw`` as UTF-8 text; invalid bytes raise a ValueMismatchError at field ``path`` and the byte offset
    of the first bad byte (``offset``: where ``raw`` starts)."""
    try:
        return str(raw, "utf-8", errors)
    except UnicodeDecodeError as e:
        raise fail(path, offset + e.start, f"invalid UTF-8: {e.reason}", ValueMismatchError,
                   found=bytes(raw[e.start : e.end])) from None


class JSONObject(dict):
    """A JSON object read from a file; ``raw`` holds its bytes, written back as they are while the object is
    unchanged."""

    raw: bytes | None = None


class JSONArray(list):
    """A JSON array read from a file; ``raw`` holds its bytes (see :class:`JSONObject`)."""

    raw: bytes | None = None


_KEPT = {dict: JSONObject, list: JSONArray}


class _Repeated(Exception):
    """A key given twice in one object, found while the text is parsed."""


_WS = r"[ \t\n\r]*"  # (compiled when a repeated key is looked for)


def first_repeated_key(text: str) -> tuple[str, int] | None:
    """The first key, in text order, that an object of the JSON ``text`` gives twice, and the character
    position of its second occurrence; None when there is none (or the text is not JSON). One pass: the
    strings and numbers by json's own scanner, the keys of each open object in a set."""
    import json

    scan = json.JSONDecoder().scan_once
    ws = re.compile(_WS).match
    keys: list[set[str] | None] = []  # of each open container: an object's keys so far, None for an array
    i = ws(text, 0).end()
    want_key = False
    try:
        while True:
            if want_key:
                key, after = json.decoder.scanstring(text, i + 1)
                seen = keys[-1]
                assert seen is not None  # (keys are read in objects only)
                if key in seen:
                    return key, i
                seen.add(key)
                i = ws(text, ws(text, after).end() + 1).end()  # (past the colon)
            if text[i] in "{[":
                opened = text[i]
                i = ws(text, i + 1).end()
                if text[i] not in "}]":
                    keys.append(set() if opened == "{" else None)
                    want_key = opened == "{"
                    continue
                i += 1
            else:
                i = scan(text, i)[1]
            while True:  # after a value: the next item, or the end of containers
                if not keys:
                    return None
                i = ws(text, i).end()
                if text[i] == ",":
                    i = ws(text, i + 1).end()
                    want_key = keys[-1] is not None
                    break
                keys.pop()
                i += 1
    except (IndexError, ValueError, StopIteration):  # (not JSON where the parse left it)
        return None


def _bytes_before(text: str, pos: int) -> int:
    """The UTF-8 byte length of ``text[:pos]``: a character position as a byte offset."""
    return len(text[:pos].encode("utf-8"))


def compact(value: Any) -> str:
    """JSON without spaces, non-ASCII characters as themselves (serde_json's ``to_string``)."""
    import json

    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class _Constant(Exception):
    """NaN or Infinity, which JSON has not, found while the text is parsed."""


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(items)
    if len(out) != len(items):
        raise _Repeated()  # (which key, and where: first_repeated_key)
    return out


def _constant(name: str) -> None:
    raise _Constant(name)


def _loads(text: str, path: str, at: int) -> Any:
    """The JSON ``text`` (which starts at byte ``at``) as Python values: a key given twice in one object, NaN or
    Infinity, and a number of more digits than Python reads are ValueMismatchErrors at their byte."""
    def integer(digits: str) -> int:
        limit = sys.get_int_max_str_digits()  # (0: none; int() refuses more with a ValueError of its own)
        if limit and len(digits.lstrip("-")) > limit:
            raise fail(path, at + len(text[: text.find(digits)].encode("utf-8")), f"a number of "
                       f"{len(digits.lstrip('-'))} digits (more than the {limit} Python reads)",
                       ValueMismatchError)
        return int(digits)

    try:
        try:
            return decode_json(text, _pairs, _constant, int, keep=True)
        except ValueError as e:  # (int's refusal of too many digits: read again, to say where)
            import json

            if isinstance(e, json.JSONDecodeError):
                raise
            return decode_json(text, _pairs, _constant, integer)
    except _Constant as e:
        name = e.args[0]
        raise fail(path, at + text.encode("utf-8").find(name.encode()), f"{name} is not JSON",
                   ValueMismatchError) from None
    except ValueError as e:
        import json

        if not isinstance(e, json.JSONDecodeError):
            raise
        raise fail(path, at + _bytes_before(text, e.pos), f"invalid JSON: {e.msg}", ValueMismatchError) from None
    except RecursionError:
        raise fail(path, at, "JSON nested too deeply", ValueMismatchError) from None
    except _Repeated:
        key, pos = first_repeated_key(text) or ("?", 0)  # (the text parsed up to the repeat: it finds it)
        raise fail(path, at + _bytes_before(text, pos), f"key {key!r} appears twice in one JSON object",
                   ValueMismatchError, found=key) from None


def read_json(stream: Any, length: Any, limit: int | None, top: type, path: str) -> JSONObject | JSONArray:
    """The JSON text at the stream's position: after a little-endian byte count when ``length`` is a name of
    :data:`LEN_FORMATS` (``"u64"``), else of ``length`` bytes; its top-level value a ``top`` (dict or list),
    kept with its bytes. A text longer than ``limit`` is refused before it is read (see :class:`JSONField`)."""
    start = tell(stream) or 0
    left = remaining(stream)  # (the checks' messages made only where they are said)
    if isinstance(length, str):
        size = scalar_size(length)
        if left is None or size > left:
            check_length(stream, size, path, "the JSON length")
        n = scalar(length, stream.read(size))
        left = None if left is None else left - size
    else:
        n = int(length)
    at = tell(stream) or 0
    if limit is not None and n > limit:
        raise fail(path, start, f"JSON text of {n} bytes is longer than the {limit} allowed",
                   ValueMismatchError, found=n)
    if left is None or not 0 <= n <= left:
        check_length(stream, n, path, "JSON text")
    raw = stream.read(n)
    text = decode_utf8(raw, "strict", path, at)
    value = _loads(text, path, at)
    if type(value) is not top:
        raise fail(path, at, f"the JSON text holds a {type(value).__name__}, not a {top.__name__}",
                   ValueMismatchError)
    kept = _KEPT[top](value)
    kept.raw = bytes(raw)
    return kept


class Arrays(dict):
    """The arrays of a :class:`Tensors` field by name; ``spans[name]`` is the absolute byte range of each."""

    spans: dict[str, tuple[int, int]]


def _offset(x: Any) -> bool:
    """A byte offset as JSON gives one: an int (not a bool), at least 0."""
    return (type(x) is int or isinstance(x, int) and not isinstance(x, bool)) and x >= 0


def entries(table: Any, skip: tuple[str, ...]) -> list[tuple[str, Any]]:
    if isinstance(table, dict) or isinstance(table, Mapping):
        return [(str(k), v) for k, v in table.items() if k not in skip]
    return [(str(e["name"]), e) for e in table]


_INT = {int}


_begin_end = operator.itemgetter(3, 4)  # (a layout entry's range: what the entries are sorted by)


class TensorLayout:
    """Where the tensors of a tensor table lie and what they hold (the rules of :class:`Tensors`, which
    declares ``dtypes``, the entries' keys, ``skip`` and ``exact``)."""

    def __init__(self, dtypes: Mapping[Any, Any], keys: tuple[str, str, str], skip: tuple[str, ...],
                 exact: bool) -> None:
        self.dtypes = {code: explicit_dtype(dt) for code, dt in dtypes.items() if not isinstance(dt, int)}
        self.bits = {code: int(dt) for code, dt in dtypes.items() if isinstance(dt, int)}
        self.dtypes.update({code: np.dtype("u1") for code in self.bits})
        self.itemsizes = {code: dt.itemsize for code, dt in self.dtypes.items()}
        self.keys = keys
        self.skip = skip
        self.exact = exact

    def layout(self, table: Any, path: str, start: int,
               size: int | None) -> list[tuple[str, np.dtype, tuple[int, ...], int, int]]:
        """(name, dtype, shape, begin, end) of each tensor of ``table``, in order of begin, every range checked."""
        return sorted(self._layout(table, path, start, size), key=_begin_end)

    def _layout(self, table: Any, path: str, start: int,
                size: int | None) -> list[tuple[str, np.dtype, tuple[int, ...], int, int]]:
        """:meth:`layout` in the table's order (the ranges checked, one against the next, in order of begin)."""
        kd, ks, ko = self.keys
        out = []
        for name, entry in entries(table or {}, self.skip):
            if not (isinstance(entry, dict) or isinstance(entry, Mapping)) or kd not in entry or ks not in entry \
                    or ko not in entry:
                raise fail(f"{path}.{name}", start, f"tensor {name!r} lacks one of {', '.join(self.keys)}",
                           ValueMismatchError)
            code = entry[kd]
            if not isinstance(code, (str, int)) or code not in self.dtypes:
                raise fail(f"{path}.{name}", start, f"dtype {code!r} of tensor {name!r} is not one of "
                           f"{', '.join(map(str, self.dtypes))}", ValueMismatchError, found=code)
            span = entry[ko]
            if not isinstance(span, (list, tuple)) or len(span) != 2:
                raise fail(f"{path}.{name}", start, f"{ko} of tensor {name!r} is not two byte offsets",
                           ValueMismatchError, found=span)
            begin, end = span
            if not (type(begin) is int and type(end) is int and begin >= 0 and end >= 0) \
                    and not (_offset(begin) and _offset(end)):
                raise fail(f"{path}.{name}", start, f"{ko} of tensor {name!r} is not two byte offsets",
                           ValueMismatchError, found=span)
            shape = entry[ks]
            if not isinstance(shape, (list, tuple)) or shape and {*map(type, shape)} != _INT:  # (not 1.0, not True)
                raise fail(f"{path}.{name}", start, f"{ks} of tensor {name!r} is not a list of integers",
                           ValueMismatchError, found=shape)
            dims = tuple(shape)
            if dims and min(dims) < 0:
                array_dims(shape, f"{path}.{name}", start)  # (raises: a negative dimension)
            bits = self.bits.get(code)
            if bits is not None:  # packed: the raw bytes, the last dimension in bytes
                if not dims or dims[-1] * bits % 8:
                    raise fail(f"{path}.{name}", start + begin, f"shape {list(dims)} of {code} ({bits}-bit "
                               "elements) does not end its rows on a byte", ValueMismatchError, found=list(dims))
                dims = (*dims[:-1], dims[-1] * bits // 8)
            nbytes = math.prod(dims) * self.itemsizes[code]  # (Python ints: no overflow)
            if end < begin or end - begin != nbytes:
                raise fail(f"{path}.{name}", start + begin, f"{ko} [{begin}, {end}) hold {end - begin} bytes where "
                           f"shape {list(dims)} of {code} needs {nbytes}", ValueMismatchError)
            if size is not None and end > size:
                raise fail(f"{path}.{name}", start + begin, f"{ko} [{begin}, {end}) run past the {size} bytes of "
                           "the data", TruncatedError)
            out.append((name, self.dtypes[code], dims, begin, end))
        at = 0
        for name, _, _, begin, end in sorted(out, key=_begin_end):
            if begin < at or (self.exact and begin > at):
                what = "overlaps the tensor before it" if begin < at else f"leaves a gap of {begin - at} bytes"
                raise fail(f"{path}.{name}", start + begin, f"tensor {name!r} at [{begin}, {end}) {what}",
                           ValueMismatchError)
            at = end
        if self.exact and size is not None and at != size:
            raise fail(path, start + at, f"{size - at} bytes after the last tensor belong to none",
                       ValueMismatchError)
        return out

    def read(self, stream: Any, table: Any, size: int | None, path: str) -> Arrays:
        """The tensors of ``table`` from the stream's position on (``size``: the bytes of the data, None for
        the rest of the stream), as arrays by name in table order; the stream left after the data."""
        start = stream.tell()
        size = remaining(stream) if size is None else size
        layout = self._layout(table, path, start, size)  # (in the table's order: the arrays' order)
        out = Arrays()
        out.spans = {}
        for name, dtype, dims, begin, end in layout:
            stream.seek(start + begin)
            out[name] = read_array(stream, dtype, dims, f"{path}.{name}")
            out.spans[name] = (start + begin, start + end)
        stream.seek(start + (size if size is not None else max((t[4] for t in layout), default=0)))
        return out
