"""A repeated message field read as columns: the bulk path of :class:`~.protobuf.ProtoMessage` (``columns=``).

A message's leading run of one repeated field whose element type holds only singular scalar fields (a
vocabulary of ``piece``/``score``/``type`` records) is found and checked with numpy instead of field by field:
the records written as protobuf writes them (a one-byte tag and a one-byte length; inside, the fields in
number order, each at most once, each with a one-byte tag, a one-byte length or varint, or a fixed32/fixed64
value) are located in one pass, and each field becomes a column (presence, value offset, length or varint).
Every tag byte comes from the element type's field declarations. The first record that is not written so (a
longer piece, an unknown field, a negative enum) ends the run; the generic parse takes the rest of the
message from there. The run is kept as offsets in a :class:`~.protowire.LazyMessage`, so the message still
builds back as its own bytes and materialises the very fields the generic parse gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .protowire import I32, I64, LEN, VARINT, LazyMessage, parse_fields, zigzag_decode
from .records import follow_chain

_WIDTH = {I32: 4, I64: 8}
_WINDOW = 1 << 16  # bytes searched for record starts at a time


class Columns:
    """The records of a run as columns: per field, ``present`` (bool), ``at`` (offset of the value's bytes)
    and ``size`` (a string's length, a varint's value); decoded by :meth:`strings`, :meth:`floats` and
    :meth:`ints` as protobuf reads them (absent fields and enum values the enum does not name: the default)."""

    def __init__(self, mtype: Any, buf: bytes, starts: np.ndarray, fields: dict[str, tuple[Any, ...]]) -> None:
        self.mtype, self.buf, self.starts, self._fields = mtype, buf, starts, fields
        self._spec = {f.name: f for f in mtype.fields}

    def __len__(self) -> int:
        return len(self.starts)

    def present(self, name: str) -> np.ndarray:
        return self._fields[name][0]

    def strings(self, name: str) -> list[str]:
        """A string field of every record (UTF-8; invalid bytes as surrogate escapes, as ``decode_scalar``)."""
        present, at, size = self._fields[name]
        count = len(at)
        if not count:
            return []
        a = np.frombuffer(self.buf, np.uint8)
        # every string followed by one more byte, gathered at once: the source offsets as a cumulative sum of
        # +1 within a string and a jump between strings; that extra byte becomes the NUL the text is split at
        n = size.astype(np.int64) + 1
        ends = np.cumsum(n)
        step = np.ones(int(ends[-1]), np.int64)
        step[0] = at[0]
        step[ends[:-1]] = at[1:] - (at[:-1] + n[:-1] - 1)
        text = a.take(np.cumsum(step, out=step), mode="clip")
        text[ends - 1] = 0
        if np.count_nonzero(text == 0) == count:
            out = text.tobytes().decode("utf-8", "surrogateescape").split("\0")[:-1]
        else:  # a string holds NUL itself: one by one
            buf = self.buf
            out = [buf[s : s + k].decode("utf-8", "surrogateescape")
                   for s, k in zip(at.tolist(), size.tolist(), strict=True)]
        default = self._spec[name].default or ""
        if default:
            for i in np.flatnonzero(~present).tolist():
                out[i] = default
        return out

    def floats(self, name: str) -> np.ndarray:
        """A float (``<f4``) or double (``<f8``) field as raw bits: NaN payloads and -0.0 as written."""
        present, at, _ = self._fields[name]
        spec = self._spec[name]
        width = 4 if spec.type == "float" else 8
        if len(self.buf) < width:  # (then no record holds one)
            out = np.zeros(len(at), f"<f{width}")
        else:  # every offset of the buffer as a float (a strided view), gathered at the values' offsets: raw bits
            at_byte = np.ndarray((len(self.buf) - width + 1,), f"<f{width}", self.buf, 0, (1,))
            out = at_byte[np.minimum(at, len(at_byte) - 1)]
        if not present.all():
            out[~present] = spec.default or 0.0
        return out

    def ints(self, name: str) -> np.ndarray:
        """A varint field (int32, enum, bool, uint, sint) as int64 values."""
        present, _, value = self._fields[name]
        spec = self._spec[name]
        if value is None:
            raise TypeError(f"{self.mtype.name}.{name} is a {spec.type}, not a varint field")
        v = value.astype(np.int64)  # one byte: 0 to 127, the same for every signed or unsigned type
        if spec.type in ("sint32", "sint64"):
            v = zigzag_decode(v)
        elif spec.type == "bool":
            v = (v != 0).astype(np.int64)
        known = present
        if spec.enum is not None:  # a value the enum does not name is an unknown field (proto2): the default
            named = np.zeros(128, bool)
            named[[k for k in spec.enum if 0 <= k < 128]] = True
            known = present & named.take(value, mode="clip")
        return np.where(known, v, int(spec.default or 0))


def scan(mtype: Any, layout: list[tuple[str, int, int]], number: int, buf: bytes) -> tuple[Columns, int] | None:
    """The columns of the leading run of field ``number`` (records of ``mtype``, whose fields are ``layout``:
    (name, one-byte tag, wire type) in number order) of the message that is all of ``buf``, and where the run
    ends; None when the message does not start with such a record."""
    a = np.frombuffer(buf, np.uint8)
    n = len(a)
    tag = number << 3 | LEN
    if n < 2 or a[0] != tag:
        return None
    specs = layout
    opens = np.zeros(256, bool)  # the bytes a record's body can start with: one of its tags
    opens[[t for _, t, _ in specs]] = True
    # candidates a window at a time and offsets as int32: no temporary reaches the size that malloc maps and
    # unmaps afresh on every call (a page fault per page), which cost more than the scan itself
    idx = np.int32 if n < 1 << 31 else np.int64
    found = []
    for lo in range(0, n - 1, _WINDOW):
        c = np.flatnonzero(a[lo : min(lo + _WINDOW, n - 1)] == tag).astype(idx)
        c += lo
        # a one-byte length and a body that starts with one of the record's tags: what is left are the records
        # and, rarely, a tag byte inside one, which the chain never reaches (an empty record ends the run)
        found.append(c.take(np.flatnonzero((a.take(c + 1) < 0x80) & opens.take(a.take(c + 2, mode="clip")))))
    c = np.concatenate(found)
    if not len(c) or c[0] != 0:
        return None
    end = c + 2 + a.take(c + 1)
    i = follow_chain(c, end, len(c))
    if len(i) < len(c):
        c, end = c.take(i), end.take(i)
    if end[-1] > n:  # (only the last record of the chain can go past the data: it has no successor)
        c, end = c[:-1], end[:-1]
        if not len(c):
            return None
    pos = c + 2
    fields: dict[str, tuple[Any, ...]] = {}
    for name, t, wire in specs:
        present = (a.take(pos, mode="clip") == t) & (pos < end)
        if wire in (LEN, VARINT):
            size = a.take(pos + 1, mode="clip")  # a string's length or a varint's value
            present &= size < 0x80
            size *= present
            fields[name] = (present, pos + (2 if wire == LEN else 1), size)
            pos = pos + ((size + 2) * present if wire == LEN else present.view(np.uint8) * np.uint8(2))
        else:
            fields[name] = (present, pos + 1, None)
            pos = pos + present.view(np.uint8) * np.uint8(1 + _WIDTH[wire])
    bad = np.flatnonzero(pos != end)  # a field out of order, twice, unknown or longer: the run ends before it
    k = int(bad[0]) if bad.size else len(c)
    if not k:
        return None
    if k < len(c):
        c = c[:k]
        fields = {name: tuple(x if x is None else x[:k] for x in col) for name, col in fields.items()}
    return Columns(mtype, buf, c, fields), int(end[k - 1])


def parse_columns(mtype: Any, layout: list[tuple[str, int, int]], number: int, buf: bytes, path: str,
                  base: int = 0) -> LazyMessage | None:
    """The message that is all of ``buf`` (at absolute offset ``base``): its leading run of field ``number`` as
    :class:`Columns` (``.columns`` of the :class:`LazyMessage`), the fields after it parsed at once; None
    without such a run."""
    found = scan(mtype, layout, number, buf)
    if found is None:
        return None
    cols, run_end = found
    rest, _, _ = parse_fields(buf, run_end, len(buf), path, base, first=len(cols))
    return LazyMessage(buf, number, cols.starts, run_end, rest, cols)
