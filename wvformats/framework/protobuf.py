"""Declarative protobuf message descriptions and typed views over the lossless wire layer.

``MessageType("Name", [F(1, "piece", "string"), F(2, "score", "float", default=0.0), ...])`` describes a
message as its ``.proto`` does. :func:`view` reads wire fields through a description: values by name
(the last occurrence wins for singular scalars, and the occurrences of a singular sub-message merge, as
protobuf does), ``has(name)`` for presence, defaults for absent fields, repeated fields as lists,
sub-messages as views, and ``unknown`` for what protobuf keeps as unknown fields: numbers the description
does not name, a named field on a wire type its type cannot have, and an enum value the enum does not
name (proto2); packed repeated scalars (LEN) are not described here (no sentencepiece field is one).
Integers are cut to their type's width as protobuf reads them (a 64-bit varint read as int32 keeps its low
32 bits). Views never rewrite bytes: the wire fields they were read from rebuild the file exactly.
"""

from __future__ import annotations

import enum as _enum
import struct
from dataclasses import dataclass, field
from typing import Any

from ..errors import FormatError
from .fields import SchemaError
from .located import dotted
from .protocolumns import parse_columns
from .protowire import (
    I32,
    I64,
    LEN,
    VARINT,
    Field,
    Message,
    encode_varint,
    parse_fields,
    zigzag_decode,
    zigzag_encode,
)
from .streams import window

SCALARS = {"string", "bytes", "float", "double", "int32", "int64", "uint32", "uint64", "bool", "enum", "fixed32",
           "fixed64", "sint32", "sint64"}


class ProtoEnum(_enum.IntEnum):
    """A protobuf enum: its values read as named ints (``ModelType.BPE``, printed ``BPE``), equal to their
    numbers, written as their numbers."""

    def __str__(self) -> str:
        return self.name


@dataclass
class F:
    """One field: number, name, type (a scalar name or a MessageType), label, default and what it means; an
    enum field names its values with ``enum``, a :class:`ProtoEnum` (or a dict number -> name)."""

    number: int
    name: str
    type: Any
    label: str = "optional"
    default: Any = None
    enum: Any = None
    doc: str = ""
    named: type[ProtoEnum] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.type == "float" and self.default is not None:  # a float default is a float32, as protobuf reads it
            self.default = struct.unpack("<f", struct.pack("<f", self.default))[0]
        if isinstance(self.enum, type) and issubclass(self.enum, _enum.IntEnum):
            self.named, self.enum = self.enum, {m.value: m.name for m in self.enum}
            if self.default is not None:
                self.default = self.named(self.default)

    def value(self, v: Any) -> Any:
        """A decoded value as the view gives it: an enum's named member, else ``v``."""
        return self.named(v) if self.named is not None and v in self.enum else v


@dataclass
class MessageType:
    """A message: its fields, its extension range (``extensions 200 to max``) and reserved numbers."""

    name: str
    fields: list[F]
    extensions: tuple[int, int] | None = None
    reserved: tuple[int, ...] = ()
    by_number: dict[int, F] = field(init=False)
    # for encoding: name -> (number, tag bytes, type, repeated, wire type)
    plan: dict[str, tuple[int, bytes, Any, bool, int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_number = {f.number: f for f in self.fields}
        self.plan = {f.name: (f.number, encode_varint(f.number << 3 | wire_type_of(f.type)), f.type,
                              f.label == "repeated", wire_type_of(f.type)) for f in self.fields}

    def named(self, name: str) -> F:
        """The field called ``name``; ValueError where the message has none."""
        if name not in self.plan:
            raise ValueError(f"{self.name} has no field {name!r}")
        return self.by_number[self.plan[name][0]]


def enum_names(enum: Any) -> dict[int, str]:
    """The names of an enum's values by number (``enum``: a dict or an ``enum.IntEnum`` class)."""
    return dict(enum) if isinstance(enum, dict) else {int(m): m.name for m in enum}


WIRE_TYPES = {"string": LEN, "bytes": LEN, "float": I32, "fixed32": I32, "double": I64, "fixed64": I64}


def wire_type_of(kind: Any) -> int:
    """The wire type a field of this type is written with (unpacked); any other makes it an unknown field."""
    return LEN if isinstance(kind, MessageType) else WIRE_TYPES.get(kind, VARINT)


class ProtoMessage(Message):
    """A message of type ``mtype``: read and written losslessly as :class:`Message` (its wire fields), and
    described by ``mtype`` for the generated docs page and the annotated dump.

    ``columns``: the name of a repeated field whose records hold singular scalar fields numbered 1 to 15 (a
    vocabulary): the leading run of its records is read as columns (:mod:`.protocolumns`), kept as offsets in a
    :class:`~.protowire.LazyMessage` whose ``columns`` decode each field at once. The fields are the same as
    without it; only a message that is the whole data is read so.
    """

    def __init__(self, mtype: MessageType, length: Any = None, columns: str | None = None) -> None:
        super().__init__(length)
        self.mtype = mtype
        self.columns: F | None = None
        self._layout: list[tuple[str, int, int]] = []
        if columns is not None:
            spec = next((f for f in mtype.fields if f.name == columns), None)
            if spec is None or spec.label != "repeated" or not isinstance(spec.type, MessageType):
                raise SchemaError(f"columns={columns!r}: {mtype.name} has no repeated message field of that name")
            if (spec.number << 3 | LEN) >= 0x80:
                raise SchemaError(f"columns={columns!r}: its tag takes more than one byte (field {spec.number})")
            for f in sorted(spec.type.fields, key=lambda f: f.number):
                tag = f.number << 3 | wire_type_of(f.type)
                if not isinstance(f.type, str) or f.label == "repeated" or tag >= 0x80:
                    raise SchemaError(f"columns={columns!r}: {spec.type.name}.{f.name} is not a singular scalar "
                                      "numbered 1 to 15")
                self._layout.append((f.name, tag, wire_type_of(f.type)))
            self.columns = spec

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        if self.columns is not None and self.length is None:  # the message is the rest of the data
            start = stream.tell()
            buf, base = window(stream)
            data = buf if isinstance(buf, bytes) and start == base else bytes(buf[start - base :])
            spec = self.columns
            msg = parse_columns(spec.type, self._layout, spec.number, data, dotted(path) or "fields", start)
            stream.seek(start + len(data) if msg is not None else start)
            if msg is not None:
                return msg
        return super()._parse(stream, context, path)


    def strategy(self, context: Any) -> Any:
        """Messages of ``mtype`` (for the testing kit): values drawn field by field from the description,
        serialized as protobuf writes them and given as their wire fields."""
        def fields(values: dict[str, Any]) -> Any:
            data = encode_message(self.mtype, values)
            return parse_fields(data, 0, len(data), "fields", 0)[0]

        return _values(self.mtype, 2).map(fields)


def _values(mtype: MessageType, depth: int) -> Any:
    """A hypothesis strategy of a message's values by field name (sub-messages ``depth`` deep at most)."""
    from hypothesis import strategies as st

    def one(spec: F) -> Any:
        if isinstance(spec.type, MessageType):
            return _values(spec.type, depth - 1) if depth > 0 else st.just({})
        if spec.enum is not None:
            return st.sampled_from(sorted(enum_names(spec.enum)))
        return _SCALAR_DRAWS[spec.type](st)

    fields = {spec.name: st.lists(one(spec), max_size=2) if spec.label == "repeated" else one(spec)
              for spec in mtype.fields}
    return st.fixed_dictionaries({}, optional=fields)


_SCALAR_DRAWS = {  # each scalar type's values, as protobuf reads them back
    "string": lambda st: st.text(max_size=6),
    "bytes": lambda st: st.binary(max_size=6),
    "float": lambda st: st.floats(width=32, allow_nan=False),
    "double": lambda st: st.floats(allow_nan=False),
    "int32": lambda st: st.integers(-(1 << 31), (1 << 31) - 1),
    "enum": lambda st: st.integers(0, (1 << 31) - 1),
    "int64": lambda st: st.integers(-(1 << 63), (1 << 63) - 1),
    "sint32": lambda st: st.integers(-(1 << 31), (1 << 31) - 1),
    "sint64": lambda st: st.integers(-(1 << 63), (1 << 63) - 1),
    "uint32": lambda st: st.integers(0, (1 << 32) - 1),
    "uint64": lambda st: st.integers(0, (1 << 64) - 1),
    "fixed32": lambda st: st.integers(0, (1 << 32) - 1),
    "fixed64": lambda st: st.integers(0, (1 << 64) - 1),
    "bool": lambda st: st.booleans(),
}


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def decode_scalar(kind: str, wire_field: Any) -> Any:
    """A scalar field's value as protobuf reads it from its wire field (of the right wire type)."""
    v = wire_field["value"]
    if kind == "string":
        return v.decode("utf-8", "surrogateescape")
    if kind == "bytes":
        return v
    if kind == "float":
        return struct.unpack("<f", v)[0]
    if kind == "double":
        return struct.unpack("<d", v)[0]
    if kind in ("fixed32", "fixed64"):
        return int.from_bytes(v, "little")
    if kind in ("int32", "enum"):
        return _signed(v, 32)
    if kind == "int64":
        return _signed(v, 64)
    if kind == "uint32":
        return v & 0xFFFFFFFF
    if kind == "bool":
        return v != 0
    if kind in ("sint32", "sint64"):
        return zigzag_decode(v & (0xFFFFFFFF if kind == "sint32" else (1 << 64) - 1))
    return v  # uint64: a varint is at most 64 bits


def encode_scalar(kind: str, value: Any) -> Any:
    """The wire value of a scalar as protobuf writes it: strings as UTF-8, floats as their 32 (``bytes`` of 4:
    those raw bits, NaN payloads kept) or 64 bits, int32/int64/enum negatives sign-extended to 64 bits (ten
    varint bytes), bools as 0 or 1."""
    if kind == "string":
        return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    if kind == "bytes":
        return bytes(value)
    if kind in ("float", "double"):
        width = 4 if kind == "float" else 8
        if isinstance(value, (bytes, bytearray)) and len(value) == width:
            return bytes(value)
        return struct.pack("<f" if width == 4 else "<d", value)
    if kind in ("fixed32", "fixed64"):
        return int(value).to_bytes(4 if kind == "fixed32" else 8, "little")
    if kind == "bool":
        return int(bool(value))
    if kind in ("sint32", "sint64"):
        return zigzag_encode(int(value))
    return int(value) & ((1 << 64) - 1)  # int32, int64, enum (negatives: two's complement in 64 bits), uint*


def encode_message(mtype: MessageType, values: dict[str, Any]) -> bytes:
    """A message of type ``mtype`` serialized from its values by field name, in field-number order as protobuf
    writes it: a repeated field from a list, a sub-message from a dict of its values (or its encoded bytes), a
    scalar by its type (:func:`encode_scalar`). A name the type does not have is refused."""
    out = bytearray()
    _encode_into(mtype, values, out)
    return bytes(out)


def _encode_into(mtype: MessageType, values: dict[str, Any], out: bytearray) -> None:
    plan = mtype.plan
    try:
        names = sorted(values, key=lambda n: plan[n][0])
    except KeyError:
        unknown = sorted(set(values) - set(plan))
        raise ValueError(f"{mtype.name} has no field {', '.join(map(repr, unknown))}") from None
    for name in names:
        _, tag, kind, repeated, wire = plan[name]
        value = values[name]
        for item in value if repeated else (value,):
            out += tag
            if isinstance(kind, MessageType):
                if isinstance(item, (bytes, bytearray)):
                    body = item
                else:
                    body = bytearray()
                    _encode_into(kind, item, body)
                out += encode_varint(len(body))
                out += body
                continue
            encoded = encode_scalar(kind, item)
            if isinstance(encoded, bytes):
                if wire == LEN:
                    out += encode_varint(len(encoded))
                out += encoded
            else:
                out += encode_varint(encoded)


def wire_field(mtype: MessageType, name: str, value: Any) -> Field:
    """Field ``name`` of ``mtype`` holding ``value``, as a wire field written as protobuf writes it: a scalar by
    its type (:func:`encode_scalar`), a sub-message from a dict of its values or from its encoded bytes."""
    spec = mtype.named(name)
    if isinstance(spec.type, MessageType):
        body = bytes(value) if isinstance(value, (bytes, bytearray)) else encode_message(spec.type, value)
        return Field(number=spec.number, wire_type=LEN, value=body)
    return Field(number=spec.number, wire_type=wire_type_of(spec.type), value=encode_scalar(spec.type, value))


def occurrences(fields: list[Any], spec: F) -> list[int]:
    """Where field ``spec`` occurs among wire ``fields`` as protobuf reads it (:func:`known_field`), in order."""
    return [i for i, f in enumerate(fields) if f["number"] == spec.number and known_field(spec, f)]


def message_fields(data: bytes, path: str, format: str) -> list[Any]:
    """The wire fields of a sub-message's bytes; an error names ``format`` and the path inside it."""
    try:
        return parse_fields(data, 0, len(data), path, 0)[0]
    except FormatError as e:
        raise e.located(format=format) from None


def known_field(spec: F, f: Any) -> bool:
    """Whether protobuf reads wire field ``f`` as field ``spec`` (else it keeps it as an unknown field)."""
    if f["wire_type"] != wire_type_of(spec.type):
        return False
    return spec.enum is None or _signed(f["value"], 32) in spec.enum


class View:
    """A typed, read-only view of one message's wire fields."""

    def __init__(self, mtype: MessageType, fields: list[Any], path: str = "", format: str = "protobuf") -> None:
        self._type = mtype
        self._fields = fields
        self._path = path
        self._format = format  # named by the errors of fields decoded on access

    def _with(self, number: int) -> list[Any]:
        by_number = getattr(self._fields, "by_number", None)  # a LazyMessage answers without its run
        if by_number is not None:
            return by_number(number)
        return [f for f in self._fields if f["number"] == number]

    def _present(self, spec: F) -> list[Any]:
        return [f for f in self._with(spec.number) if known_field(spec, f)]

    def has(self, name: str) -> bool:
        return bool(self._present(self._type.by_number[self._number(name)]))

    def _number(self, name: str) -> int:
        for f in self._type.fields:
            if f.name == name:
                return f.number
        raise AttributeError(f"{self._type.name} has no field {name!r}")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        spec = self._type.by_number[self._number(name)]
        found = self._present(spec)
        if isinstance(spec.type, MessageType) and spec.label != "repeated":
            # the occurrences of a singular sub-message merge: their fields read as one message's
            merged = [sub for f in found for sub in self._fields_of(spec, f)]
            return View(spec.type, merged, f"{self._path}.{name}", self._format)
        values = [self._decode(spec, f) for f in found]
        if spec.label == "repeated":
            return values
        return values[-1] if values else spec.default

    def _fields_of(self, spec: F, f: Any) -> list[Any]:
        """The wire fields inside sub-message field ``f``."""
        return message_fields(f["value"], f"{self._path}.{spec.name}", self._format)

    def _decode(self, spec: F, f: Any) -> Any:
        if isinstance(spec.type, MessageType):
            return View(spec.type, self._fields_of(spec, f), f"{self._path}.{spec.name}", self._format)
        return spec.value(decode_scalar(spec.type, f))

    @property
    def unknown(self) -> list[Any]:
        """Wire fields that protobuf keeps as unknown (all kept in place when rebuilding): numbers the
        description does not name (extensions and reserved numbers included), fields on a wire type their
        type cannot have, and enum values the enum does not name."""
        by_number = self._type.by_number
        return [f for f in self._fields if f["number"] not in by_number or not known_field(by_number[f["number"]], f)]

    @property
    def extensions(self) -> list[Any]:
        """The unknown fields whose numbers lie in the message's extension range."""
        r = self._type.extensions
        return [f for f in self.unknown if r and r[0] <= f["number"] <= r[1]]

    def to_dict(self) -> dict[str, Any]:
        """Present fields by name (sub-messages as dicts); bytes as hex."""
        out: dict[str, Any] = {}
        for spec in self._type.fields:
            if not self.has(spec.name):
                continue
            v = getattr(self, spec.name)
            conv = (lambda x: x.to_dict()) if isinstance(spec.type, MessageType) else (
                lambda x: x.hex() if isinstance(x, bytes) else x)
            out[spec.name] = [conv(x) for x in v] if isinstance(v, list) else conv(v)
        return out

    def __repr__(self) -> str:
        return f"<{self._type.name} {self.to_dict()!r}>"
