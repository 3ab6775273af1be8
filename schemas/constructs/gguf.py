"""GGUF's variable parts as checked constructs: strings, metadata values (string arrays found by a vectorised
walk and decoded lazily as one block, numeric arrays as numpy views), entry tables that name the entry of an
error, the alignment read from the metadata, and the tensor data section.

Every count and length is checked against the bytes that remain before anything is allocated, so a crafted
header costs at most time and memory linear in the file size.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any

import construct as cs
import numpy as np

from ...errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from ...framework.fields import Checked, decode_utf8, encode_utf8, evaluate
from ...framework.located import check_length, fail, tell
from ...framework.records import follow_chain
from ...framework.streams import byte_view, release, remaining, window, zero_copy
from ...framework.strings import decode_spans
from ...framework.tables import Table

_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")
MAX_DEPTH = 8  # nested arrays deeper than this are refused (llama.cpp refuses any nesting)


def _width(version: Any, context: Any) -> struct.Struct:
    """Counts and string lengths: u32 in version 1, u64 from version 2."""
    return _U32 if int(evaluate(version, context)) == 1 else _U64


# ---------------------------------------------------------------------------------------------------------
# strings


class GGUFString(Checked):
    """A GGUF string: a length (u32 in version 1, u64 later) and that many UTF-8 bytes, no terminator."""

    def __init__(self, version: Any) -> None:
        super().__init__()
        self.version = version

    def _parse(self, stream: Any, context: Any, path: str) -> str:
        fmt = _width(self.version, context)
        pos = stream.tell()
        check_length(stream, fmt.size, path, "string length")
        (n,) = fmt.unpack(stream.read(fmt.size))
        check_length(stream, n, path, "string bytes")
        return decode_utf8(stream.read(n), "strict", path, pos + fmt.size)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> str:
        fmt = _width(self.version, context)
        raw = encode_utf8(obj, path, stream)
        if len(raw) >> (8 * fmt.size):
            raise fail(path, tell(stream), "string too long for its length field", BuildError)
        stream.write(fmt.pack(len(raw)) + raw)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any) -> Any:
        from hypothesis import strategies as st

        return st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)


class StringArray(Sequence):
    """The strings of a GGUF string array, decoded all at once on first use (one pass over one block).

    Parsed, it keeps the array's bytes (a view of the file) and where each string's bytes start (found by
    :func:`string_starts`; a string ends where the next one's length field begins, the last at the end of the
    array); written back unchanged, those bytes are copied as one block. Made from a list, it holds the list.
    """

    def __init__(self, strings: Sequence[str] | None = None, *, buf: Any = None, starts: np.ndarray | None = None,
                 width: int = 8, span: tuple[int, int] = (0, 0), base: int = 0, path: str = "") -> None:
        self._strings = list(strings) if strings is not None else None
        self._buf, self._starts, self._width, self._span, self._base, self._path = buf, starts, width, span, base, path

    def _ends(self, i: int, j: int) -> np.ndarray:
        """Where strings ``i`` to ``j - 1`` end."""
        starts = self._starts
        assert starts is not None
        ends = np.empty(len(starts[i:j]), np.int64)
        ends[:-1] = starts[i + 1 : j] - self._width
        if len(ends):
            ends[-1] = starts[j] - self._width if j < len(starts) else self._span[1]
        return ends

    @property
    def raw(self) -> memoryview | None:
        """The array's bytes as in the file (lengths and UTF-8), or None for an array made from strings."""
        if self._buf is None:
            return None
        return memoryview(self._buf)[self._span[0] : self._span[1]]

    @property
    def byte_lengths(self) -> np.ndarray:
        """The UTF-8 byte length of each string, without decoding any."""
        if self._starts is not None:
            return self._ends(0, len(self._starts)) - self._starts
        return np.array([len(s.encode("utf-8")) for s in self._strings or []], np.int64)

    def head(self, n: int) -> list[str]:
        """The first ``n`` strings, decoding only those."""
        if self._strings is not None or self._starts is None:
            return self.tolist()[:n]
        return self._decode(min(n, len(self._starts)))

    def tolist(self) -> list[str]:
        """All strings, decoded (once, in one pass; a bad one is named with its index and offset)."""
        if self._strings is None:
            self._strings = self._packed()
        if self._strings is None:
            assert self._starts is not None
            self._strings = self._decode(len(self._starts))
        return self._strings

    def _decode(self, stop: int) -> list[str]:
        """Strings 0 to ``stop - 1`` decoded; a bad one is GGUF's error naming its index and offset."""
        assert self._starts is not None
        try:
            return decode_spans(self._buf, self._starts[:stop], self._ends(0, stop), "strict", self._path, self._base,
                                field="")
        except FormatError as e:
            raise e.located(format="gguf") from None

    def _packed(self) -> list[str] | None:
        """The strings decoded in one piece: every length field but its last byte (a zero for lengths under
        2^56) dropped, the rest is the strings joined by NULs. None where that does not hold (a string with a
        NUL, invalid UTF-8): the general decoder then names the bad string."""
        assert self._starts is not None
        n, width = len(self._starts), self._width
        if not n:
            return []
        hi = self._span[1]
        a = np.frombuffer(self._buf, np.uint8)
        out: list[str] = []
        for i in range(0, n, _DECODE_CHUNK):  # a chunk at a time: the temporaries stay small
            starts = self._starts[i : i + _DECODE_CHUNK]
            a0 = int(starts[0]) - 1
            a1 = hi if i + _DECODE_CHUNK >= n else int(self._starts[i + _DECODE_CHUNK]) - width
            last = starts - 1 - a0
            piece = a[a0:a1]
            if width < 4 or piece[last].any():
                return None
            keep = np.ones(len(piece), bool)
            for k in range(1, width):
                keep[last[1:] - k] = False
            try:
                parts = piece[keep].tobytes().decode("utf-8").split("\x00")
            except UnicodeDecodeError:
                return None
            if len(parts) != len(starts) + 1:
                return None
            out += parts[1:]
            release(self._buf, a1)  # (a mapped file's pages decoded)
        return out

    def __len__(self) -> int:
        return len(self._starts) if self._strings is None and self._starts is not None else len(self.tolist())

    def __getitem__(self, i: Any) -> Any:
        return self.tolist()[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (StringArray, list, tuple)):
            return self.tolist() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"StringArray({len(self)} strings)"


class StringHead(Sequence):
    """The count and first strings of a GGUF string array, for a quick inspect: the array was walked to find
    its end, and only its first strings decoded."""

    def __init__(self, count: int, first: list[str]) -> None:
        self.count, self.first = count, first

    def head(self, n: int) -> list[str]:
        """The first ``n`` strings (up to as many as were decoded)."""
        return self.first[:n]

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: Any) -> Any:
        return self.first[i]

    def __repr__(self) -> str:
        return f"StringHead({self.count} strings, first {len(self.first)} decoded)"


_WINDOW = 1 << 16  # bytes the string walk looks at first, doubling up to _MAX_WINDOW while runs go on
_MAX_WINDOW = 1 << 20
_DECODE_CHUNK = 1 << 14  # strings decoded per pass


def string_runs(buf: Any, pos: int, end: int, count: int, width: int, path: str,
                base: int) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """The ``count`` length-prefixed strings back to back from ``pos``, a run at a time: where each run's
    string bytes start, their lengths (int64), and the position after the run. u64 lengths (``width`` 8) or
    u32 (4).

    A window at a time: every offset followed by ``width - 1`` zero bytes may hold a length under 256; each
    candidate's successor is looked up among them and the run is the chain from the current offset
    (:func:`follow_chain`; candidates inside a string are never reached). Where no run starts (a string of 256
    bytes or more, the end of the data) a checked loop takes up to 256 strings and names a truncated one.
    Only one window's temporaries are alive at a time.
    """
    unpack = (_U64 if width == 8 else _U32).unpack_from
    done, window = 0, _WINDOW
    while done < count:
        hi = min(end, pos + window)
        if hi - pos >= width:
            # every offset's length field read at once (an unaligned strided view): under 256 means the
            # bytes p+1 .. p+width-1 are zero
            fields = np.ndarray((hi - pos - width + 1,), "<u8" if width == 8 else "<u4", buf, pos, (1,))
            c = np.flatnonzero(fields < 256)
            if c.size and c[0] == 0:
                lens = fields[c].astype(np.int64)
                nxt = c + width + lens
                idx = follow_chain(c, nxt, count - done)
                k = int(np.searchsorted(nxt[idx], hi - pos, "right"))
                if k:
                    done += k
                    after = pos + int(nxt[idx[k - 1]])
                    yield pos + c[idx[:k]] + width, lens[idx[:k]], after
                    release(buf, after)  # a mapped file's pages walked over are let go (a vocabulary's merges)
                    pos = after
                    window = min(2 * window, _MAX_WINDOW)
                    continue
        window = _WINDOW
        got, lens_got = [], []
        for _ in range(min(256, count - done)):
            if pos + width > end:
                raise fail(f"{path}[{done}]", base + pos, "string length is cut off", TruncatedError)
            (n,) = unpack(buf, pos)
            if n > end - pos - width:
                raise fail(f"{path}[{done}]", base + pos,
                           f"string of {n} bytes but only {end - pos - width} remain", TruncatedError)
            got.append(pos + width)
            lens_got.append(n)
            pos += width + n
            done += 1
        yield np.array(got, np.int64), np.array(lens_got, np.int64), pos


def string_starts(buf: Any, pos: int, end: int, count: int, width: int, path: str,
                  base: int) -> tuple[np.ndarray, int]:
    """Where the bytes of ``count`` length-prefixed strings back to back from ``pos`` start, and the position
    after (see :func:`string_runs`)."""
    small = np.int32 if len(buf) < 1 << 31 else np.int64  # (half the memory for a vocabulary's offsets)
    # filled in place, run by run: no list of runs and no int64 copy of the whole (the count was checked
    # against the bytes left, so this is at most half the array's size); the lengths follow from the starts
    starts = np.empty(count, small)
    done, after = 0, pos
    for run_starts, _, after in string_runs(buf, pos, end, count, width, path, base):  # noqa: B007
        starts[done : done + len(run_starts)] = run_starts
        done += len(run_starts)
    return starts, after


# ---------------------------------------------------------------------------------------------------------
# metadata values


class GGUFValue(Checked):
    """A metadata value of ``value_type`` (see ``VALUE_TYPES`` in the schema): a scalar, a string, or an array
    ``u32 element_type, count, elements``, parsed as ``Container(element_type, count, data)`` with ``data`` a
    numpy view (numbers, bools), a :class:`StringArray`, or a list of arrays (nested arrays)."""

    def __init__(self, value_type: Any, version: Any, types: dict[int, tuple[str, str | None]]) -> None:
        super().__init__()
        self.value_type = value_type
        self.version = version
        self.types = types

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        head = (getattr(context, "_params", None) or {}).get("string_head")
        return self._value(stream, int(evaluate(self.value_type, context)), _width(self.version, context),
                           path, 0, head)

    def _value(self, stream: Any, kind: int, fmt: struct.Struct, path: str, depth: int,
               head: int | None = None) -> Any:
        """``head``: string arrays walked but only their first ``head`` strings decoded (a :class:`StringHead`)."""
        pos = stream.tell()
        if kind not in self.types:
            raise fail(path, pos, f"unknown value type {kind}", ValueMismatchError, found=kind)
        name, dtype = self.types[kind]
        if dtype is not None:
            size = np.dtype(dtype).itemsize
            check_length(stream, size, path, name)
            raw = stream.read(size)
            if name == "BOOL":
                return bool(raw[0]) if raw[0] <= 1 else raw[0]  # (other bytes kept, check() reports them)
            value = np.frombuffer(raw, dtype)[0]
            return value if name.startswith("FLOAT") else int(value)  # floats keep their bits (NaN payloads)
        if name == "STRING":
            check_length(stream, fmt.size, path, "string length")
            (n,) = fmt.unpack(stream.read(fmt.size))
            check_length(stream, n, path, "string bytes")
            return decode_utf8(stream.read(n), "strict", path, pos + fmt.size)
        if depth >= MAX_DEPTH:
            raise fail(path, pos, f"arrays nested more than {MAX_DEPTH} deep", ValueMismatchError)
        check_length(stream, 4 + fmt.size, path, "array header")
        (element,) = _U32.unpack(stream.read(4))
        (count,) = fmt.unpack(stream.read(fmt.size))
        if element not in self.types:
            raise fail(f"{path}.element_type", pos, f"unknown value type {element}", ValueMismatchError,
                       found=element)
        ename, edtype = self.types[element]
        data_path = f"{path}.data"
        if edtype is not None:
            dtype = np.dtype("?" if ename == "BOOL" else edtype)
            nbytes = count * dtype.itemsize
            check_length(stream, nbytes, data_path, f"array of {count} {ename}")
            view = zero_copy(stream, nbytes)
            if view is None:
                view = stream.read(nbytes)
            data: Any = np.frombuffer(view, dtype, count)
        elif ename == "STRING":
            check_length(stream, count * fmt.size, data_path, f"{count} strings")
            buf, base = window(stream)
            at = stream.tell() - base
            if head is None:
                starts, after = string_starts(buf, at, len(buf), count, fmt.size, data_path, base)
                data = StringArray(buf=buf, starts=starts, width=fmt.size, span=(at, after), base=base,
                                   path=data_path)
            else:
                first, after = [], at
                for starts, lens, after in string_runs(  # noqa: B007 (after: where the last run ends)
                        buf, at, len(buf), count, fmt.size, data_path, base):
                    if len(first) < head:
                        k = head - len(first)
                        first += decode_spans(buf, starts[:k], starts[:k] + lens[:k], "strict", data_path, base,
                                              field="")
                data = StringHead(count, first)
            stream.seek(base + after)
        else:  # arrays of arrays: each at least an element type and a count
            check_length(stream, count * (4 + fmt.size), data_path, f"{count} arrays")
            data = [self._value(stream, element, fmt, f"{data_path}[{i}]", depth + 1, head) for i in range(count)]
        return cs.Container(element_type=element, count=count, data=data)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        self._write(obj, stream, int(evaluate(self.value_type, context)), _width(self.version, context), path)
        return obj

    def strategy(self, context: Any) -> Any:
        """A value of the type drawn before it: a scalar, a string, or an array of up to three elements of a
        type drawn here (arrays of arrays one level deep)."""
        return self._values(int(evaluate(self.value_type, context)), 0)

    def _values(self, kind: int, depth: int) -> Any:
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp

        name, dtype = self.types[kind]
        if name == "BOOL":
            return st.booleans()
        if dtype is not None:
            dt = np.dtype(dtype)
            if dt.kind == "f":  # (a numpy float keeps its bits: NaNs compared by bytes)
                return hnp.from_dtype(dt, allow_nan=False).map(dt.type)
            return hnp.from_dtype(dt).map(int)
        if name == "STRING":
            return st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
        elements = [k for k, (n, _) in self.types.items() if n != "ARRAY" or depth == 0]

        def array(element: int) -> Any:
            ename, edtype = self.types[element]
            if edtype is not None:
                data = hnp.arrays(np.dtype("?" if ename == "BOOL" else edtype), st.integers(0, 3))
            elif ename == "STRING":
                data = st.lists(self._values(element, depth + 1), max_size=3)
            else:
                data = st.lists(self._values(element, depth + 1), max_size=2)
            return data.map(lambda d: cs.Container(element_type=element, count=len(d), data=d))

        return st.sampled_from(elements).flatmap(array)

    def _write(self, obj: Any, stream: Any, kind: int, fmt: struct.Struct, path: str) -> None:
        if kind not in self.types:
            raise fail(path, tell(stream), f"unknown value type {kind}", BuildError, found=kind)
        name, dtype = self.types[kind]
        if dtype is not None:
            stream.write(_scalar(obj, name, dtype, path, stream))
            return
        if name == "STRING":
            raw = encode_utf8(obj, path, stream)
            stream.write(fmt.pack(len(raw)) + raw)
            return
        element, data = int(obj["element_type"]), obj["data"]
        if element not in self.types:
            raise fail(f"{path}.element_type", tell(stream), f"unknown value type {element}", BuildError)
        count = len(data)
        if int(obj.get("count", count)) != count:
            raise fail(f"{path}.count", tell(stream), "array count does not match its data", BuildError,
                       expected=count, found=obj["count"])
        stream.write(_U32.pack(element) + fmt.pack(count))
        ename, edtype = self.types[element]
        if edtype is not None:
            arr = np.asarray(data)
            want = np.dtype("?" if ename == "BOOL" else edtype)
            if arr.dtype != want:
                if arr.size and arr.dtype.kind in "iub" and want.kind in "iu":
                    info = np.iinfo(want)
                    if arr.min() < info.min or arr.max() > info.max:
                        raise fail(f"{path}.data", tell(stream), f"values out of range for {ename}", BuildError)
                arr = arr.astype(want)
            if arr.size:
                stream.write(byte_view(np.ascontiguousarray(arr)))
        elif ename == "STRING":
            raw = data.raw if isinstance(data, StringArray) and data._width == fmt.size else None
            if raw is not None:  # (as read, with lengths of this version's width)
                stream.write(raw)
            else:
                parts = []
                for i, s in enumerate(data):
                    b = encode_utf8(s, f"{path}.data[{i}]", stream)
                    parts += [fmt.pack(len(b)), b]
                stream.write(b"".join(parts))
        else:
            for i, sub in enumerate(data):
                self._write(sub, stream, element, fmt, f"{path}.data[{i}]")

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)


def _scalar(obj: Any, name: str, dtype: str, path: str, stream: Any) -> bytes:
    if name == "BOOL":
        value = int(obj)
        if not 0 <= value <= 255:
            raise fail(path, tell(stream), "a bool is one byte", BuildError, found=obj)
        return bytes([value])
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if isinstance(obj, (float, np.floating)) or not info.min <= int(obj) <= info.max:
            raise fail(path, tell(stream), f"{obj!r} does not fit {name}", BuildError, found=obj)
    return np.asarray(obj, dt).tobytes()


# ---------------------------------------------------------------------------------------------------------
# tables of entries, the alignment, the data section


class Entries(Table):
    """``count`` entries of ``subcon``: a framework :class:`Table` whose parsed entries also keep their index
    and where they start and end (``_index``, ``_offset``, ``_end``), since GGUF's entries are handed around by
    key (a duplicate key, an in-place ``gguf set``) apart from the list that holds the offsets."""

    def __init__(self, count: Any, subcon: cs.Construct, min_size: int) -> None:
        super().__init__(subcon, count, min_size=min_size)

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        entries = super()._parse(stream, context, path)
        for i, item in enumerate(entries):
            item["_index"], item["_offset"], item["_end"] = i, entries.offsets[i], entries.offsets[i + 1]
        return entries


class MetadataAlignment(Checked):
    """No bytes: the alignment of the data section, ``key`` from the parsed metadata, else ``default``. One
    rule for reading, writing and ``check()``, GGUF's readers' (llama.cpp's ``gguf_get_val_u32``, gguf-py's
    ``GGUFReader``): the value is of type ``value_type`` (UINT32; they refuse any other) and a power of two.
    An entry that breaks it is refused, naming the entry's field and where the entry starts."""

    def __init__(self, metadata: Any, key: str, default: int, type_name: str, value_type: int) -> None:
        super().__init__()
        self.metadata = metadata
        self.key = key
        self.default = default
        self.value_type = value_type
        self.type_name = type_name
        self.flagbuildnone = True

    def problem(self, kv: Any) -> tuple[str, str] | None:
        """(the field at fault, why) where the entry ``kv`` of ``key`` breaks the rule; None where it keeps
        it."""
        if kv["value_type"] != self.value_type:
            return "value_type", (f"{self.key} must be a {self.type_name} (llama.cpp and gguf-py refuse any "
                                  f"other type), not type {kv['value_type']}")
        value = kv["value"]
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0 \
                and not value & (value - 1):
            return None
        return "value", f"{self.key} must be a power of two"

    def of(self, entries: Any) -> int:
        """The alignment that metadata ``entries`` give (the default where they lack the key or break the
        rule, which :meth:`problem` tells)."""
        kv = next((kv for kv in entries if kv["key"] == self.key), None)
        return self.default if kv is None or self.problem(kv) else int(kv["value"])

    def _find(self, context: Any, stream: Any, path: str, cls: type) -> int:
        for i, kv in enumerate(evaluate(self.metadata, context) or ()):
            if kv["key"] == self.key:
                problem = self.problem(kv)
                if problem is not None:
                    field, why = problem
                    at = kv.get("_offset", tell(stream))
                    raise fail(f"metadata[{i}].{field}", at, why, cls, found=kv[field])
                return int(kv["value"])
        return self.default

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        return self._find(context, stream, path, ValueMismatchError)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> int:
        return self._find(context, stream, path, BuildError)

    def _sizeof(self, context: Any, path: str) -> int:
        return 0

    def strategy(self, context: Any) -> Any:
        """None: the alignment is the metadata's, found again when the file is built."""
        from hypothesis import strategies as st

        return st.none()


class BytesLeft(Checked):
    """No bytes: whether any bytes follow (parsing); building, the value given."""

    def __init__(self) -> None:
        super().__init__()

    def _parse(self, stream: Any, context: Any, path: str) -> bool:
        return bool(remaining(stream))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        return bool(obj)

    def _sizeof(self, context: Any, path: str) -> int:
        return 0

    def strategy(self, context: Any) -> Any:
        from hypothesis import strategies as st

        return st.booleans()


class TensorData(Checked):
    """The data section to the end of the file, as one u8 view; built from such an array or from a list of
    ``(offset, array)`` pieces, the gaps between them zero bytes."""

    def _parse(self, stream: Any, context: Any, path: str) -> np.ndarray:
        left = remaining(stream)
        if left is None:
            return np.frombuffer(stream.read(), np.uint8)
        view = zero_copy(stream, left)
        return np.frombuffer(view if view is not None else stream.read(left), np.uint8)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        pieces = [(0, obj)] if isinstance(obj, (np.ndarray, bytes, bytearray, memoryview)) else obj
        start = stream.tell()
        at = 0
        for i, (offset, arr) in enumerate(pieces):
            if offset < at:
                raise fail(f"{path}[{i}]", start + at, "pieces overlap or are out of order", BuildError)
            if offset > at:
                stream.write(bytes(offset - at))
            view = byte_view(np.ascontiguousarray(arr)) if isinstance(arr, np.ndarray) else memoryview(arr)
            for a in range(0, len(view), 1 << 24):
                stream.write(view[a : a + (1 << 24)])
            at = offset + len(view)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any) -> Any:
        """A few bytes of data (a data section that follows has at least one)."""
        from hypothesis import strategies as st

        return st.binary(min_size=1, max_size=16).map(lambda b: np.frombuffer(b, np.uint8))
