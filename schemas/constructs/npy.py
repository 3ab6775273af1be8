"""NumPy ``.npy``'s two variable parts as checked constructs: the header (a Python dict literal, read as data
by ``ast.literal_eval``, never executed, and kept byte-exact while unchanged) and the array it describes
(a zero-copy view, in Fortran order where the header says so). Object arrays, whose bytes are pickles, are
refused before anything is read."""

from __future__ import annotations

import struct
from typing import Any

import construct as cs
import numpy as np

from ...errors import BuildError
from ...framework import Checked, evaluate, fail, field_of, tell, write_array
from .npyheader import (  # noqa: F401 - (the header's names, here too)
    ALIGN,
    GROWTH_DIGITS,
    KEYS,
    MAX_HEADER,
    MAX_HEADER_OPTION,
    U16,
    U32,
    NpyDict,
    canonical_header,
    data_offset,
    header_dtype,
    layout,
    literal,
    read_data,
    read_header,
)


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
        return U16 if int(evaluate(self.major, context)) == 1 else U32

    def _parse(self, stream: Any, context: Any, path: str) -> NpyDict:
        limit = (getattr(context, "_params", None) or {}).get(MAX_HEADER_OPTION)
        return read_header(stream, int(evaluate(self.major, context)), self.limit if limit is None else int(limit),
                           path)

    def plan(self) -> tuple[str, dict[str, Any]] | None:
        """The step of a cached plan (``framework.plans``) that reads this field: :func:`read_header`."""
        major = field_of(self.major)
        return None if major is None else ("npy-header", {"major": major, "limit": self.limit})

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
            return literal(text, "", 0, major) == dict(obj)
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
        return layout(evaluate(self.header, context), path, at)

    def _parse(self, stream: Any, context: Any, path: str) -> np.ndarray:
        return read_data(stream, evaluate(self.header, context), path)

    def plan(self) -> tuple[str, dict[str, Any]] | None:
        """The step of a cached plan (``framework.plans``) that reads this field: :func:`read_data`."""
        header = field_of(self.header)
        return None if header is None else ("npy-data", {"header": header})

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
