"""Declarative protobuf message descriptions and typed views over the lossless wire layer.

``MessageType("Name", [F(1, "piece", "string"), F(2, "score", "float", default=0.0), ...])`` describes a
message as its ``.proto`` does. :func:`view` reads wire fields through a description: values by name
(the last occurrence wins for singular fields, as protobuf does), ``has(name)`` for presence, defaults for
absent fields, repeated fields as lists, sub-messages as views, and ``unknown`` for fields the description
does not name. Views never rewrite bytes: the wire fields they were read from rebuild the file exactly.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from .errors import FormatError
from .protowire import LEN, parse_fields
from .protowire import as_int32 as _signed

SCALARS = {"string", "bytes", "float", "double", "int32", "int64", "uint32", "uint64", "bool", "enum", "fixed32",
           "fixed64", "sint32", "sint64"}


@dataclass
class F:
    """One field: number, name, type (a scalar name or a MessageType), label and default."""

    number: int
    name: str
    type: Any
    label: str = "optional"
    default: Any = None
    enum: dict[int, str] | None = None


@dataclass
class MessageType:
    """A message: its fields, its extension range (``extensions 200 to max``) and reserved numbers."""

    name: str
    fields: list[F]
    extensions: tuple[int, int] | None = None
    reserved: tuple[int, ...] = ()
    by_number: dict[int, F] = field(init=False)

    def __post_init__(self) -> None:
        self.by_number = {f.number: f for f in self.fields}


def decode_scalar(kind: str, wire_field: Any) -> Any:
    v = wire_field["value"]
    if kind == "string":
        return v.decode("utf-8", "surrogateescape")
    if kind == "bytes":
        return v
    if kind == "float":
        return struct.unpack("<f", v)[0]
    if kind == "double":
        return struct.unpack("<d", v)[0]
    if kind in ("int32", "int64", "enum"):
        return _signed(v)
    if kind == "bool":
        return bool(v)
    if kind in ("sint32", "sint64"):
        return (v >> 1) ^ -(v & 1)
    return v


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

    def has(self, name: str) -> bool:
        return bool(self._with(self._number(name)))

    def _number(self, name: str) -> int:
        for f in self._type.fields:
            if f.name == name:
                return f.number
        raise AttributeError(f"{self._type.name} has no field {name!r}")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        spec = self._type.by_number[self._number(name)]
        found = self._with(spec.number)
        values = [self._decode(spec, f) for f in found]
        if spec.label == "repeated":
            return values
        if values:
            return values[-1]
        if isinstance(spec.type, MessageType):
            return View(spec.type, [], f"{self._path}.{name}", self._format)
        return spec.default

    def _decode(self, spec: F, f: Any) -> Any:
        path = f"{self._path}.{spec.name}"
        if isinstance(spec.type, MessageType):
            if f["wire_type"] != LEN:
                raise FormatError(f"{spec.name} should be a sub-message", format=self._format, path=path)
            data = f["value"]
            try:
                sub, _, _ = parse_fields(data, 0, len(data), path, 0)
            except FormatError as e:
                raise e.located(format=self._format) from None
            return View(spec.type, sub, path, self._format)
        try:
            return decode_scalar(spec.type, f)
        except (TypeError, struct.error):  # a varint where bytes belong, or bytes of the wrong size
            raise FormatError(f"{spec.name} is a {spec.type}, which wire type {f['wire_type']} cannot hold",
                              format=self._format, path=path) from None

    @property
    def unknown(self) -> list[Any]:
        """Wire fields whose numbers the description does not name (kept in place when rebuilding),
        extensions and reserved numbers included."""
        return [f for f in self._fields if f["number"] not in self._type.by_number]

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
