"""Running schemas: :func:`parse` and :func:`build`, which turn every failure into the library's own error
naming the format, the field path and the byte offset, and the compiled form of a schema."""

from __future__ import annotations

import ast
import io
import mmap
import re
import struct
from typing import Any

import construct as cs
import numpy as np

from ..errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from .fields import require_bound_checks
from .located import dotted, tell
from .streams import BufferStream, remaining


def compiled(schema: cs.Construct) -> cs.Construct:
    """The compiled form of a schema (cached); the only place that touches construct's compile API."""
    got = _COMPILED.get(id(schema))
    if got is None or got[0] is not schema:
        got = (schema, schema.compile())
        _COMPILED[id(schema)] = got
    return got[1]


_COMPILED: dict[int, tuple[cs.Construct, cs.Construct]] = {}

# Schemas that must not be compiled, with the reason; the compile-policy test reads this.
INTERPRETED_ONLY: dict[str, str] = {}


def _as_stream(data: Any) -> Any:
    if isinstance(data, (bytes, bytearray, memoryview, mmap.mmap, np.ndarray)):
        return BufferStream(data)
    return data


_TRANSLATE = (
    cs.ConstructError,
    struct.error,
    IndexError,
    KeyError,
    ValueError,
    TypeError,
    OverflowError,
    ArithmeticError,
    MemoryError,
    UnicodeError,
    EOFError,
    AttributeError,
)


def parse(
    schema: cs.Construct,
    data: Any,
    *,
    format: str,
    compile: bool = False,
    **params: Any,
) -> Any:
    """Parse ``data`` (bytes, memoryview, mmap or a binary stream) with ``schema``.

    Every failure becomes a :class:`FormatError` naming ``format``, the field path and the byte offset.
    """
    require_bound_checks(schema)
    stream = _as_stream(data)
    start = stream.tell()
    runner = compiled(schema) if compile else schema
    params.setdefault("_format", format)  # for the warnings of doubtful fields
    try:
        return runner.parse_stream(stream, **params)
    except FormatError as e:
        error = e.located(format=format)
    except _TRANSLATE as e:
        error = _translate(e, stream, format, schema)
    if compile:
        # compiled code carries no field paths: parse again interpreted to name the failing field
        stream.seek(start)
        try:
            schema.parse_stream(stream, **params)
        except FormatError as e:
            error = e.located(format=format)
        except _TRANSLATE as e:
            error = _translate(e, stream, format, schema)
    raise error


def build(
    schema: cs.Construct,
    obj: Any,
    stream: Any = None,
    *,
    format: str,
    compile: bool = False,
    **params: Any,
) -> bytes | None:
    """Build ``obj`` with ``schema`` into ``stream`` (or return bytes); failures become BuildError."""
    require_bound_checks(schema)
    out = io.BytesIO() if stream is None else stream
    start = out.tell()
    try:
        _build_into(compiled(schema) if compile else schema, obj, out, format, params)
    except FormatError as e:
        if not compile:
            raise
        error = e
        # compiled code carries no field paths: build again interpreted, into nothing, to name the field
        sink = _Sink(start)
        try:
            _build_into(schema, obj, sink, format, params)
        except FormatError as again:
            error = again
        raise error from None
    return out.getvalue() if stream is None else None


def _build_into(runner: cs.Construct, obj: Any, out: Any, format: str, params: dict[str, Any]) -> None:
    try:
        runner.build_stream(_strip_private(obj), out, **params)
    except FormatError as e:
        raise e.located(format=format) from None
    except _TRANSLATE as e:
        err = _translate(e, out, format)
        raise BuildError(err.message, format=format, path=err.path, offset=err.offset) from None


class _Sink(io.RawIOBase):
    """A seekable stream that keeps nothing: where a failed build is run again for its error."""

    def __init__(self, pos: int) -> None:
        super().__init__()
        self.pos = self.size = pos

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        n = memoryview(b).nbytes
        self.pos += n
        self.size = max(self.size, self.pos)
        return n

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: 0, 1: self.pos, 2: self.size}[whence] + offset
        return self.pos


_CONST = re.compile(r"expected (.+) but parsed (.+)\Z", re.S)
_SHORT = re.compile(r"stream read less than specified amount, expected (\d+), found (\d+)\Z")

# the words that open the message of an error raised by numpy, construct or Python inside a reader rather than
# by a check of ours: wvformats lacks a check for that input (a bug to report); the fuzz tests look for them
UNCHECKED = "unchecked input:"


def _const_size(schema: cs.Construct | None, path: str | None) -> int | None:
    """The byte size of the Const field at dotted ``path`` of ``schema`` (None when it cannot be told)."""
    con = schema
    for name in (path or "").split("."):
        name = name.split("[", 1)[0]
        con = _unwrap(con) if con is not None else None
        con = next((c for c in getattr(con, "subcons", []) if getattr(c, "name", None) == name), None)
    con = _unwrap(con) if con is not None else None
    if not isinstance(con, cs.Const):
        return None
    try:
        return int(con.subcon.sizeof())
    except (cs.SizeofError, TypeError):
        return None


def _translate(e: BaseException, stream: Any, format: str, schema: cs.Construct | None = None) -> FormatError:
    path = dotted(getattr(e, "path", None)) or None
    offset = tell(stream)
    if isinstance(e, cs.ConstError) and (m := _CONST.search(str(e))):
        # construct has read the field when it compares: name where it starts, and what it holds
        size = _const_size(schema, path)
        start = offset - size if offset is not None and size is not None else offset
        return ValueMismatchError("constant field does not match", format=format, path=path, offset=start,
                                  expected=_literal(m.group(1)), found=_literal(m.group(2)))
    message = str(e)
    if isinstance(e, cs.ConstructError):
        # construct prefixes "Error in path ... |"; the path is ours to print
        message = message.split("\n")[-1].split(" | ", 1)[-1].strip()
    if isinstance(e, cs.StreamError) and (m := _SHORT.search(message)):
        # a fixed-size field the file ends inside: the stream has read what there was of it
        needs, found = int(m.group(1)), int(m.group(2))
        return TruncatedError(f"the field needs {needs} bytes but only {found} remain", format=format,
                              path=path, offset=None if offset is None else offset - found)
    if isinstance(e, cs.TerminatedError):  # a schema that ends with Terminated: bytes after the data
        end = None if offset is None else offset - 1  # (Terminated has read the first byte past the end)
        after = remaining(stream)  # bytes after the one Terminated read
        left = "" if end is None else f" ({after + 1} more bytes)" if after is not None else " (more bytes)"
        return ValueMismatchError(f"the data ends here but the file goes on{left}", format=format, path=path,
                                  offset=end)
    if isinstance(e, MemoryError):
        return FormatError("a length in the file asks for more memory than is available", format=format,
                           path=path, offset=offset)
    if isinstance(e, (cs.ValidationError, cs.CheckError, cs.MappingError)):  # a schema's own Check, Enum
        return ValueMismatchError(message, format=format, path=path, offset=offset)
    cls = TruncatedError if isinstance(e, (cs.StreamError, EOFError)) else FormatError
    error = cls(f"{UNCHECKED} {type(e).__name__}: {message or '(no message)'} (a check wvformats lacks: "
                "please report it)", format=format, path=path, offset=offset)
    error.__cause__ = e
    return error


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _strip_private(obj: Any) -> Any:
    """Drop construct's ``_io`` and other private keys from a parsed Container before rebuilding.

    A parsed Container carries its parse stream; rebuilding from it would clobber ``context._io``.
    """
    if isinstance(obj, cs.Container):
        return cs.Container({k: _strip_private(v) for k, v in obj.items() if not str(k).startswith("_")})
    if isinstance(obj, cs.ListContainer):
        return cs.ListContainer(_strip_private(v) for v in obj)
    return obj


def field_docs(schema: cs.Construct) -> list[tuple[str, cs.Construct, str]]:
    """The (name, construct, doc) of each field of a Struct, in file order."""
    out = []
    for sub in getattr(_unwrap(schema), "subcons", []):
        name = getattr(sub, "name", None)
        doc = getattr(sub, "docs", "") or ""
        inner = sub
        while isinstance(inner, cs.Renamed):
            doc = doc or getattr(inner, "docs", "") or ""
            inner = inner.subcon
        out.append((name or "", inner, doc))
    return out


def _unwrap(c: cs.Construct) -> cs.Construct:
    while isinstance(c, (cs.Renamed, cs.Transformed, cs.Restreamed)) or type(c).__name__ == "Compiled":
        c = c.subcon
    return c
