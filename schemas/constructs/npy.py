"""NumPy ``.npy``'s two variable parts as checked constructs: the header (a Python dict literal, read as data
by ``ast.literal_eval``, never executed, and kept byte-exact while unchanged) and the array it describes
(a zero-copy view, in Fortran order where the header says so). Object arrays, whose bytes are pickles, are
refused before anything is read."""

from __future__ import annotations

import ast
import io
import re
import struct
import tokenize
from typing import Any

import construct as cs
import numpy as np

from ...errors import BuildError, ValueMismatchError
from ...framework import Checked, check_length, decode_utf8, evaluate, fail, read_array, tell, write_array
from ..identity import NPY_MAGIC

KEYS = ("descr", "fortran_order", "shape")
MAX_HEADER = 10_000  # numpy.load's default max_header_size: a longer header is refused as numpy does
MAX_HEADER_OPTION = "max_header_size"  # the read option that lifts it, as numpy.load's keyword does
ALIGN = 64  # numpy.save pads the header so that the array starts at a multiple of this
GROWTH_DIGITS = 21  # numpy.save leaves room for the growing axis' length to reach this many digits


# the header exactly as numpy.save spells it for a dtype whose descr is a string: keys sorted, values by repr, then
# spaces and a newline. Read by this pattern it gives what ast.literal_eval gives (tests/families/numpy prove it
# over the headers numpy writes and over near-misses); any other spelling (a structured dtype's list, Python 2's
# ``3L``, another order or spacing) is left to literal_eval.
_INT = r"(?:0|[1-9][0-9]{0,18})"  # (up to 2**63: longer numbers go to literal_eval, which bounds their digits)
_CANONICAL = re.compile(r"\{'descr': '([A-Za-z0-9<>|=\[\]]*)', 'fortran_order': (True|False), "
                        rf"'shape': \((|{_INT},|{_INT}(?:, {_INT})+)\), \}} *\n?")


def canonical_header(text: str) -> dict[str, Any] | None:
    """The header dict of ``text`` where it is spelt as numpy.save spells a plain dtype's header; else None."""
    m = _CANONICAL.fullmatch(text)
    if m is None:
        return None
    descr, fortran, shape = m.groups()
    return {"descr": descr, "fortran_order": fortran == "True",
            "shape": tuple(int(d) for d in shape.split(",") if d)}


class NpyDict(dict):
    """The header dict (``descr``, ``fortran_order``, ``shape``); ``raw`` holds its bytes as read (padding and
    newline included), written back while the dict is unchanged."""

    raw: bytes | None = None


def _without_long_suffix(text: str) -> str:
    """A header Python 2 wrote (``(3L, 4L)``) as Python 3 reads it, as numpy's own reader does."""
    tokens: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if not (tok.type == tokenize.NAME and tok.string in "lL" and tokens and tokens[-1][0] == tokenize.NUMBER):
            tokens.append((tok.type, tok.string))
    return tokenize.untokenize(tokens)


def header_dtype(descr: Any, path: str, at: int) -> np.dtype:
    """The numpy dtype a ``descr`` names; object dtypes (pickles) are refused."""
    try:
        dtype = np.lib.format.descr_to_dtype(descr)
    except (TypeError, ValueError, KeyError, IndexError, SyntaxError) as e:
        raise fail(f"{path}.descr", at, f"descr {descr!r} is not a numpy dtype ({e})", ValueMismatchError,
                   found=descr) from None
    if dtype.hasobject:
        raise fail(f"{path}.descr", at, "an object array holds Python pickles: refused, never unpickled",
                   ValueMismatchError, found=descr)
    return dtype


def numpy_spelling(header: dict[str, Any], version: tuple[int, int], start: int) -> bytes:
    """The header as ``numpy.save`` writes it: keys sorted, values by ``repr``, room for the growing axis,
    spaces and a newline up to a multiple of 64 bytes from the file's start (``start``: where the length
    field begins)."""
    text = "{" + "".join(f"'{k}': {header[k]!r}, " for k in sorted(header)) + "}"
    shape = header["shape"]
    if len(shape):
        text += " " * (GROWTH_DIGITS - len(repr(shape[-1 if header["fortran_order"] else 0])))
    raw = text.encode("utf-8" if version[0] >= 3 else "latin-1")
    width = 2 if version[0] == 1 else 4
    pad = ALIGN - ((start + width + len(raw) + 1) % ALIGN)
    return raw + b" " * pad + b"\n"


_U16, _U32 = struct.Struct("<H"), struct.Struct("<I")  # the header length of version 1, of versions 2 and 3


def data_offset(major: int, raw: bytes) -> int:
    """Where the array of an .npy starts: after the magic, the version, the header's length and its ``raw``
    bytes (numpy.save makes it a multiple of 64)."""
    return len(NPY_MAGIC) + 2 + (_U16 if major == 1 else _U32).size + len(raw)


class NpyHeader(Checked):
    """The header: its byte length (u16 in version 1, u32 in 2 and 3), then a Python dict literal with exactly
    the keys ``descr`` (a dtype description), ``fortran_order`` (a bool) and ``shape`` (a tuple of ints),
    latin-1 text (UTF-8 in version 3), padded with spaces and ended by a newline.

    A header of more than ``limit`` characters is refused when read, as numpy.load refuses it (its
    ``max_header_size``); the read option ``max_header_size`` sets another limit. Any size is written."""

    def __init__(self, major: Any, limit: int = MAX_HEADER) -> None:
        super().__init__()
        self.major = major
        self.limit = limit

    def _width(self, context: Any) -> struct.Struct:
        return _U16 if int(evaluate(self.major, context)) == 1 else _U32

    def _parse(self, stream: Any, context: Any, path: str) -> NpyDict:
        major = int(evaluate(self.major, context))
        width = _U16 if major == 1 else _U32
        start = tell(stream) or 0
        check_length(stream, width.size, path, "the header length")
        (n,) = width.unpack(stream.read(width.size))
        limit = (getattr(context, "_params", None) or {}).get(MAX_HEADER_OPTION)
        limit = self.limit if limit is None else int(limit)
        if n > limit * (4 if major >= 3 else 1):  # (before it is read: UTF-8 takes up to 4 bytes a character)
            raise self._too_long(f"{n} bytes", limit, path, start)
        at = start + width.size
        check_length(stream, n, path, "the header")
        raw = stream.read(n)
        text = decode_utf8(raw, "strict", path, at) if major >= 3 else raw.decode("latin-1")
        if len(text) > limit:  # (numpy counts characters)
            raise self._too_long(f"{len(text)} characters", limit, path, start)
        value = self._literal(text, path, at, major)
        if not isinstance(value, dict) or set(value) != set(KEYS):  # (keys of any type: None, 1)
            keys = sorted(value, key=repr) if isinstance(value, dict) else type(value).__name__
            raise fail(path, at, f"the header is a dict of exactly {', '.join(KEYS)}; found {keys}",
                       ValueMismatchError, found=keys)
        shape = value["shape"]
        if not isinstance(shape, tuple) or not all(type(d) is int and d >= 0 for d in shape):
            raise fail(f"{path}.shape", at, f"shape {shape!r} is not a tuple of lengths", ValueMismatchError,
                       found=shape)
        if not isinstance(value["fortran_order"], bool):
            raise fail(f"{path}.fortran_order", at, "fortran_order is not True or False", ValueMismatchError,
                       found=value["fortran_order"])
        header_dtype(value["descr"], path, at)
        out = NpyDict(value)
        out.raw = bytes(raw)
        return out

    @staticmethod
    def _too_long(size: str, limit: int, path: str, start: int) -> ValueMismatchError:
        return fail(path, start, f"a header of {size} is longer than the {limit} characters read (numpy.load's "
                    f"{MAX_HEADER_OPTION}; the read option {MAX_HEADER_OPTION}, --max-header-size, reads longer "
                    "ones)", ValueMismatchError)

    @staticmethod
    def _literal(text: str, path: str, at: int, major: int) -> Any:
        value = canonical_header(text)
        if value is not None:
            return value
        for attempt in (text, None):
            try:
                return ast.literal_eval(attempt if attempt is not None else _without_long_suffix(text))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, tokenize.TokenError) as e:
                if attempt is None or major > 2 or not re.search(r"\d[lL]", text):
                    raise fail(path, at, f"the header is not a Python literal: {type(e).__name__}",
                               ValueMismatchError) from None
        raise AssertionError  # (unreachable)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        major = int(evaluate(self.major, context))
        width = self._width(context)
        start = tell(stream) or 0
        if not isinstance(obj, dict) or set(obj) != set(KEYS):
            raise fail(path, start, f"the header is a dict of exactly {', '.join(KEYS)}", BuildError)
        raw = getattr(obj, "raw", None)
        if raw is None or self._same(raw, obj, major) is False:
            raw = numpy_spelling(obj, (major, 0), start)
        if len(raw) >= 1 << (8 * width.size):
            raise fail(path, start, f"a header of {len(raw)} bytes does not fit version {major}'s length field",
                       BuildError)
        stream.write(width.pack(len(raw)))
        stream.write(raw)
        return obj

    def _same(self, raw: bytes, obj: dict[str, Any], major: int) -> bool:
        try:
            text = raw.decode("utf-8" if major >= 3 else "latin-1")
            return self._literal(text, "", 0, major) == dict(obj)
        except Exception:  # (bytes that were never this dict's)
            return False

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any) -> Any:
        """Header dicts of the dtypes numpy.save writes (scalars, strings, dates, a structured one)."""
        from hypothesis import strategies as st

        descrs = st.sampled_from(["<f4", "<f8", "<f2", ">i4", "|u1", "|b1", "<c16", "<U3", "|S2", "<M8[s]",
                                  "|V4", [("a", "<i2"), ("b", "|S3")]])
        shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)
        return st.fixed_dictionaries({"descr": descrs, "fortran_order": st.booleans(), "shape": shapes})


class NpyData(Checked):
    """The array the header describes: its bytes in C order, or Fortran order (the last axis first) where
    ``fortran_order`` is True; parsed as an array of the header's shape (a transposed view then)."""

    def __init__(self, header: Any) -> None:
        super().__init__()
        self.header = header

    def _layout(self, context: Any, path: str, at: int) -> tuple[np.dtype, tuple[int, ...], bool]:
        header = evaluate(self.header, context)
        dtype = header_dtype(header["descr"], path, at)
        shape = tuple(header["shape"])
        fortran = bool(header["fortran_order"])
        return dtype, shape[::-1] if fortran else shape, fortran

    def _parse(self, stream: Any, context: Any, path: str) -> np.ndarray:
        dtype, stored, fortran = self._layout(context, path, tell(stream) or 0)
        array = read_array(stream, dtype, stored, path)
        return array.T if fortran else array

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        dtype, stored, fortran = self._layout(context, path, tell(stream) or 0)
        array = np.asarray(obj)
        write_array(stream, array.T if fortran else array, dtype, stored, path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any) -> Any:
        """Arrays of any bytes (every dtype: void and structured ones too)."""
        from hypothesis import strategies as st

        dtype, stored, fortran = self._layout(context, "data", 0)
        n = int(np.prod(stored, dtype=np.int64)) * dtype.itemsize
        arrays = st.binary(min_size=n, max_size=n).map(lambda b: np.frombuffer(b, dtype).reshape(stored).copy())
        return arrays.map(lambda a: a.T) if fortran else arrays
