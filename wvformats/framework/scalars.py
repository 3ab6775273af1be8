"""A number at a byte of a buffer, read as a field declares it: standard library only, so that the sniffers,
which tell a file's format before numpy or construct is imported, read their numbers here too."""

from __future__ import annotations

import struct
from typing import Any

LEN_FORMATS = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q"}  # the length prefixes' names, as struct formats

_SCALARS: dict[str, struct.Struct] = {}


def _struct(fmt: str) -> struct.Struct:
    s = _SCALARS.get(fmt)
    if s is None:
        s = _SCALARS[fmt] = struct.Struct(LEN_FORMATS.get(fmt, fmt))
    return s


def scalar_size(fmt: str) -> int:
    """The bytes of a number of struct format ``fmt`` (or a name of :data:`LEN_FORMATS`)."""
    return _struct(fmt).size


def scalar(fmt: str, data: Any, at: int = 0) -> Any:
    """The number of struct format ``fmt`` (``"<Q"``, or a name of :data:`LEN_FORMATS`: ``"u64"``) at byte ``at``
    of ``data``; None where ``data`` ends before it (a sniffer's first bytes)."""
    s = _struct(fmt)
    if at < 0 or len(data) < at + s.size:
        return None
    return s.unpack_from(data, at)[0]


def reinterpret(value: Any, stored: str, read_as: str) -> Any:
    """The bytes of ``value`` as struct format ``stored`` read back as ``read_as``: a double a schema keeps as
    its bits (an i64, so that NaN payloads round-trip) as the double, ``reinterpret(bits, "<q", "<d")``."""
    return _struct(read_as).unpack(_struct(stored).pack(value))[0]
