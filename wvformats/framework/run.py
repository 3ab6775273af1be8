"""Running schemas: :func:`parse` and :func:`build`, which turn every failure into the library's own error
naming the format, the field path and the byte offset, and the compiled form of a schema."""

from __future__ import annotations

import io
import mmap
import struct
from typing import Any

import construct as cs
import numpy as np

from ..errors import BuildError, FormatError
from .fields import require_bound_checks, unnamed_field
from .located import translate, unwrapped
from .streams import BufferStream
from .walk import locate


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


def _unlocated(schema: cs.Construct) -> bool:
    """Whether construct's own error paths can leave out where a failure is: the schema holds an array of
    construct's, or a field without a name (cached per schema)."""
    got = _ELEMENTS.get(id(schema))
    if got is None or got[0] is not schema:
        found = False
        seen: set[int] = set()

        def visit(con: Any, named: bool) -> None:
            nonlocal found
            if found or not isinstance(con, cs.Construct) or id(con) in seen:
                return
            seen.add(id(con))
            if isinstance(con, (cs.Array, cs.GreedyRange, cs.RepeatUntil)) or (not named and unnamed_field(con)):
                found = True
            for sub in getattr(con, "subcons", None) or ():
                visit(sub, bool(sub.name) or isinstance(con, (cs.Sequence,)))
            for attr in ("subcon", "thensubcon", "elsesubcon", "default"):
                visit(getattr(con, attr, None), True)
            for case in (getattr(con, "cases", None) or {}).values():
                visit(case, True)

        visit(schema, True)
        got = _ELEMENTS[id(schema)] = (schema, found)
    return got[1]


_ELEMENTS: dict[int, tuple[cs.Construct, bool]] = {}


def parse(
    schema: cs.Construct,
    data: Any,
    *,
    format: str,
    compile: bool = False,
    lazy: bool = False,
    **params: Any,
) -> Any:
    """Parse ``data`` (bytes, memoryview, mmap or a binary stream) with ``schema``.

    Every failure becomes a :class:`FormatError` naming ``format``, the field path and the byte offset.
    ``lazy``: parsed as far as its fields are asked for (:mod:`.lazy`; a Struct gives a ``LazyFields``),
    each failure located alike whenever it is found.
    """
    require_bound_checks(schema)
    stream = _as_stream(data)
    if lazy:
        from .lazy import parse_lazy  # (lazy imports the string tables: loaded only for lazy parses)

        return parse_lazy(schema, stream, format=format, **params)
    start = stream.tell()
    runner = compiled(schema) if compile else schema
    params.setdefault("_format", format)  # for the warnings of doubtful fields
    try:
        return runner.parse_stream(stream, **params)
    except FormatError as e:
        error = e.located(format=format)
    except _TRANSLATE as e:
        error = translate(e, stream, format, schema)
    if compile or _unlocated(schema):
        # compiled code carries no field paths, nor construct's the index of an array's element or a field
        # without a name: parse again with the walk (interpreted) to name the failing field
        stream.seek(start)
        error = locate(schema, stream, format=format, **params) or error
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
        err = translate(e, out, format)
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
    for sub in getattr(unwrapped(schema), "subcons", []):
        name = getattr(sub, "name", None)
        doc = getattr(sub, "docs", "") or ""
        inner = sub
        while isinstance(inner, cs.Renamed):
            doc = doc or getattr(inner, "docs", "") or ""
            inner = inner.subcon
        out.append((name or "", inner, doc))
    return out
