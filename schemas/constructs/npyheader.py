"""NumPy ``.npy``'s header and array read from a stream: the rules of the schema's ``NpyHeader`` and ``NpyData``
fields (``constructs/npy.py``), which parse with them, kept apart from construct so that a file read through the
schema's cached plan (``framework.plans``) imports none of it. The header is a Python dict literal, read as data
(numpy.save's own spelling by a pattern, any other by ``ast.literal_eval``), never executed."""

from __future__ import annotations

import re
import struct
from typing import Any

import numpy as np

from ...errors import ValueMismatchError
from ...framework import check_length, decode_utf8, fail, read_array, tell
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
_CANONICAL = (r"\{'descr': '([A-Za-z0-9<>|=\[\]]*)', 'fortran_order': (True|False), "
              rf"'shape': \((|{_INT},|{_INT}(?:, {_INT})+)\), \}} *\n?")  # (compiled by re's cache when first read)


def canonical_header(text: str) -> dict[str, Any] | None:
    """The header dict of ``text`` where it is spelt as numpy.save spells a plain dtype's header; else None."""
    m = re.fullmatch(_CANONICAL, text)
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
    import io
    import tokenize

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


U16, U32 = struct.Struct("<H"), struct.Struct("<I")  # the header length of version 1, of versions 2 and 3


def data_offset(major: int, raw: bytes) -> int:
    """Where the array of an .npy starts: after the magic, the version, the header's length and its ``raw``
    bytes (numpy.save makes it a multiple of 64)."""
    return len(NPY_MAGIC) + 2 + (U16 if major == 1 else U32).size + len(raw)


def _too_long(size: str, limit: int, path: str, start: int) -> ValueMismatchError:
    return fail(path, start, f"a header of {size} is longer than the {limit} characters read (numpy.load's "
                f"{MAX_HEADER_OPTION}; the read option {MAX_HEADER_OPTION}, --max-header-size, reads longer "
                "ones)", ValueMismatchError)


def literal(text: str, path: str, at: int, major: int) -> Any:
    """The header's text as a Python value: numpy.save's spelling by its pattern, any other literal by
    ``ast.literal_eval`` (Python 2's ``3L`` read as numpy reads it, in versions 1 and 2)."""
    value = canonical_header(text)
    if value is not None:
        return value
    import ast
    import tokenize

    for attempt in (text, None):
        try:
            return ast.literal_eval(attempt if attempt is not None else _without_long_suffix(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, tokenize.TokenError) as e:
            if attempt is None or major > 2 or not re.search(r"\d[lL]", text):
                raise fail(path, at, f"the header is not a Python literal: {type(e).__name__}",
                           ValueMismatchError) from None
    raise AssertionError  # (unreachable)


def read_header(stream: Any, major: int, limit: int, path: str) -> NpyDict:
    """The header at the stream's position, of format version ``major``: its byte length, then its text, at
    most ``limit`` characters (numpy.load's max_header_size), checked to be a dict of exactly ``descr``,
    ``fortran_order`` and ``shape`` naming an array numpy reads (no object dtype)."""
    width = U16 if major == 1 else U32
    start = tell(stream) or 0
    check_length(stream, width.size, path, "the header length")
    (n,) = width.unpack(stream.read(width.size))
    if n > limit * (4 if major >= 3 else 1):  # (before it is read: UTF-8 takes up to 4 bytes a character)
        raise _too_long(f"{n} bytes", limit, path, start)
    at = start + width.size
    check_length(stream, n, path, "the header")
    raw = stream.read(n)
    text = decode_utf8(raw, "strict", path, at) if major >= 3 else raw.decode("latin-1")
    if len(text) > limit:  # (numpy counts characters)
        raise _too_long(f"{len(text)} characters", limit, path, start)
    value = literal(text, path, at, major)
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


def layout(header: Any, path: str, at: int) -> tuple[np.dtype, tuple[int, ...], bool]:
    """(dtype, shape as stored, Fortran order) of the array a header describes: a Fortran-order array is
    stored with its axes reversed."""
    dtype = header_dtype(header["descr"], path, at)
    shape = tuple(header["shape"])
    fortran = bool(header["fortran_order"])
    return dtype, shape[::-1] if fortran else shape, fortran


def read_data(stream: Any, header: Any, path: str) -> np.ndarray:
    """The array ``header`` describes, at the stream's position (a transposed view where it is in Fortran
    order)."""
    dtype, stored, fortran = layout(header, path, tell(stream) or 0)
    array = read_array(stream, dtype, stored, path)
    return array.T if fortran else array
