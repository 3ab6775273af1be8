"""Lossless protobuf wire-format constructs: every field kept in order, with its exact encoding.

A varint keeps its raw bytes when they are not the minimal encoding (over-long forms, 10-byte negative
int32s are minimal for their 64-bit value), fixed32/fixed64 values stay raw bytes (NaN payloads and -0.0
survive), length-delimited values stay bytes (a schema decides whether they hold a string or a message),
and groups hold their nested fields. Unknown and duplicate fields are simply fields. Building writes the
same bytes back; a field built from scratch (no raw bytes) gets the canonical encoding.
"""

from __future__ import annotations

from typing import Any

import construct as cs

from ..errors import BuildError, TruncatedError, ValueMismatchError
from .fields import Checked, evaluate
from .located import dotted, fail
from .streams import window

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5
WIRE_NAMES = {VARINT: "VARINT", I64: "I64", LEN: "LEN", SGROUP: "SGROUP", EGROUP: "EGROUP", I32: "I32"}
MAX_DEPTH = 64  # group and message nesting limit: deeper input is refused, never a RecursionError


class Field(dict):
    """One wire field: ``number``, ``wire_type``, ``value`` and the raw encodings that were not minimal.

    A dict with attribute access: tens of thousands are made per file, so it stays as light as a dict.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def encode_varint(value: int) -> bytes:
    """The minimal varint of an unsigned 64-bit value (negative ints as two's complement, 10 bytes)."""
    if value < 0:
        value &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


_TAGS = {key: encode_varint(key) for key in range(1 << 11)}  # tags of field numbers below 256


def read_varint(buf: Any, pos: int, end: int, path: str, base: int) -> tuple[int, int]:
    """(value, new position); at most 10 bytes, and the value must fit 64 bits."""
    result = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise fail(path, base + start, "varint is cut off", TruncatedError)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if pos - start >= 10:
            raise fail(path, base + start, "varint longer than 10 bytes", ValueMismatchError)
    if result >> 64:
        raise fail(path, base + start, "varint overflows 64 bits", ValueMismatchError)
    return result, pos


def _raw_if_odd(buf: Any, a: int, b: int, value: int) -> bytes | None:
    """The varint's bytes if they are not its minimal encoding (a multi-byte varint ending in 0x00)."""
    if b - a == 1 or buf[b - 1] != 0:
        return None
    return bytes(buf[a:b])


def parse_fields(buf: Any, pos: int, end: int, path: str, base: int, depth: int = 0,
                 group: int | None = None, first: int = 0) -> tuple[list[Field], int, bytes | None]:
    """Fields from ``pos`` to ``end`` (or to the end-group tag of field ``group``).

    Returns the fields, the position after them, and the end-group tag's raw bytes if not minimal.
    ``first``: the index of the first field in error paths (when earlier fields were read elsewhere).
    """
    if depth > MAX_DEPTH:
        raise fail(path, base + pos, f"nesting deeper than {MAX_DEPTH}", ValueMismatchError)
    fields: list[Field] = []
    i = first
    while pos < end:
        where = f"{path}[{i}]"
        tag_at = pos
        tag, pos = read_varint(buf, pos, end, where, base)
        number, wire = tag >> 3, tag & 7
        if number == 0 or number >= 1 << 29:
            raise fail(where, base + tag_at, f"field number {number} is out of range", ValueMismatchError)
        f = Field(number=number, wire_type=wire, raw_tag=_raw_if_odd(buf, tag_at, pos, tag))
        if wire == VARINT:
            at = pos
            value, pos = read_varint(buf, pos, end, where, base)
            f["value"], f["raw"] = value, _raw_if_odd(buf, at, pos, value)
        elif wire in (I64, I32):
            n = 8 if wire == I64 else 4
            if pos + n > end:
                raise fail(where, base + pos, f"fixed{8 * n} value is cut off", TruncatedError)
            f["value"] = bytes(buf[pos : pos + n])
            pos += n
        elif wire == LEN:
            at = pos
            n, pos = read_varint(buf, pos, end, where, base)
            f["raw_len"] = _raw_if_odd(buf, at, pos, n)
            if n > end - pos:
                raise fail(where, base + pos, f"length {n} is longer than the {end - pos} bytes that remain",
                           TruncatedError)
            f["value"] = bytes(buf[pos : pos + n])
            pos += n
        elif wire == SGROUP:
            f["value"], pos, f["raw_end"] = parse_fields(buf, pos, end, f"{where}.group", base, depth + 1, number)
        elif wire == EGROUP:
            if group != number:
                raise fail(where, base + tag_at, "end-group tag without a matching start", ValueMismatchError)
            return fields, pos, f.raw_tag
        else:
            raise fail(where, base + tag_at, f"wire type {wire} does not exist", ValueMismatchError)
        fields.append(f)
        i += 1
    if group is not None:
        raise fail(path, base + pos, f"group {group} is not closed", TruncatedError)
    return fields, pos, None


def build_fields(fields: list[Any], out: bytearray, path: str = "", depth: int = 0) -> None:
    """Append the encoding of ``fields`` to ``out`` (raw encodings where the parse kept them)."""
    if isinstance(fields, LazyMessage) and fields._fields is None:  # untouched: its own bytes
        out += fields.buf
        return
    if depth > MAX_DEPTH:
        raise BuildError(f"nesting deeper than {MAX_DEPTH}", path=path or None)
    for i, f in enumerate(fields):
        number, wire = f["number"], f["wire_type"]
        tag = f.get("raw_tag")
        if tag is None:
            key = number << 3 | wire
            tag = _TAGS.get(key) or encode_varint(key)
        out += tag
        value = f["value"]
        if wire == LEN:
            n = len(value)
            raw = f.get("raw_len")
            if raw is not None:
                out += raw
            elif n < 0x80:
                out.append(n)
            else:
                out += encode_varint(n)
            out += value
        elif wire == VARINT:
            raw = f.get("raw")
            out += raw if raw is not None else encode_varint(int(value))
        elif wire in (I64, I32):
            n = 8 if wire == I64 else 4
            if len(value) != n:
                raise BuildError(f"fixed{8 * n} value must be {n} bytes", path=f"{path}[{i}]")
            out += value
        elif wire == SGROUP:
            build_fields(value, out, f"{path}[{i}].group", depth + 1)
            out += f.get("raw_end") or encode_varint(number << 3 | EGROUP)
        else:
            raise BuildError(f"wire type {wire} cannot be built", path=f"{path}[{i}]")


class LazyMessage:
    """A top-level message whose leading run of same-number LEN fields is kept as offsets into the buffer.

    The fields after the run are parsed (and checked) at once; the run's records were checked by whoever
    found them (:func:`run_message`). ``fields`` materialises the whole list of :class:`Field` exactly as
    :func:`parse_fields` gives it; until then, ``by_number`` answers for the other numbers without it and
    the unmodified message builds back as its own bytes. ``columns``: the run's records as columns
    (:class:`.protocolumns.Columns`), when they were read so.
    """

    def __init__(self, buf: bytes, number: int, starts: Any, run_end: int, rest: list[Field],
                 columns: Any = None) -> None:
        self.buf, self.number, self.starts, self.run_end, self.rest = buf, number, starts, run_end, rest
        self.columns = columns
        self._fields: list[Field] | None = None

    @property
    def fields(self) -> list[Field]:
        if self._fields is None:
            buf, n = self.buf, self.number
            bounds = [*self.starts.tolist(), self.run_end]
            self._fields = [Field(number=n, wire_type=LEN, raw_tag=None, raw_len=None, value=buf[a + 2 : b])
                            for a, b in zip(bounds[:-1], bounds[1:], strict=True)] + self.rest
        return self._fields

    def by_number(self, number: int) -> list[Field]:
        if number == self.number and len(self.starts):
            return [f for f in self.fields if f["number"] == number]
        return [f for f in self.rest if f["number"] == number]

    def __iter__(self) -> Any:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.starts) + len(self.rest)

    def __getitem__(self, i: Any) -> Any:
        return self.fields[i]

    def __eq__(self, other: object) -> bool:
        return list(self.fields) == list(other)  # type: ignore[call-overload]

    __hash__ = None  # type: ignore[assignment]


def run_message(buf: bytes, number: int, starts: Any, run_end: int, path: str) -> LazyMessage:
    """A :class:`LazyMessage` of ``buf`` whose records at ``starts`` (checked by the caller: tag byte,
    one-byte length, each ending where the next starts, the last at ``run_end``) form its leading run."""
    rest, _, _ = parse_fields(buf, run_end, len(buf), path, 0, first=len(starts))
    return LazyMessage(buf, number, starts, run_end, rest)


class Message(Checked):
    """A protobuf message to the end of its stream (or ``length`` bytes): the ordered list of its fields."""

    def __init__(self, length: Any = None) -> None:
        super().__init__()
        self.length = length

    def _parse(self, stream: Any, context: Any, path: str) -> cs.ListContainer:
        buf, base = window(stream)
        pos = stream.tell() - base
        end = len(buf) if self.length is None else pos + int(evaluate(self.length, context))
        if end > len(buf):
            raise fail(path, base + pos, "message is cut off", TruncatedError)
        fields, pos, _ = parse_fields(buf, pos, end, dotted(path) or "fields", base)
        stream.seek(base + pos)
        return cs.ListContainer(fields)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        out = bytearray()
        build_fields(obj, out, path)
        stream.write(out)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)


def zigzag_decode(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def zigzag_encode(n: int) -> int:
    return (n << 1) ^ (n >> 63)
