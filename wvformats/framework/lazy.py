"""Lazy parsing: a member found at an offset another field gives (:class:`At`, Kaitai's ``instances`` with
``pos:``), and a whole schema parsed only as far as its fields are asked for (``parse(..., lazy=True)``).

A lazily parsed Struct is a :class:`LazyFields`: a read-only mapping whose fields are parsed in file order
when one is asked for (a field after a table needs the table's end: it is then parsed). Inside it, a
:class:`~wvformats.framework.Chunks` is a :class:`LazyChunks` (each chunk's id and length read as the chunks
are walked, its body a LazyFields of its own bytes) and a plain :class:`~wvformats.framework.StringTable` is
a :class:`LazyStrings` (``words[:10]`` reads ten words). Every other field is parsed by the walker
(:func:`~wvformats.framework.walk.walked`) when it is reached, so that an error in it, whenever it is
raised, names the format, the field path (with array indices) and its absolute byte offset.

The values read the input while they live: keep it open (a memory map) as long as they are used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import construct as cs

from ..errors import FormatError, TruncatedError, ValueMismatchError
from .chunks import Chunks
from .fields import Checked, decode_utf8, evaluate, unnamed, unnamed_field
from .located import check_length, fail, translate
from .streams import BufferStream, remaining
from .strings import StringTable
from .walk import locate_in, walked


class At(Checked, cs.Pointer):
    """A member at the absolute offset ``pos`` (an expression of the fields before it: ``this.body_offset``;
    negative: from the end), taking no bytes where it is declared: Kaitai's ``instances: {x: {pos: ...}}``,
    construct's ``Pointer`` parsed when asked for. Its value is a :class:`Deferred`: calling it parses the
    member (once), an error naming its path and absolute offset. A lazily parsed schema
    (``parse(..., lazy=True)``) gives the member itself when the field is asked for. Built as ``Pointer``
    builds (the bytes written at ``pos``, a Deferred given back parsed first); ``dump`` and the docs show
    the member's fields where they lie."""

    def __init__(self, pos: Any, subcon: cs.Construct) -> None:
        cs.Pointer.__init__(self, pos, subcon)

    def _parse(self, stream: Any, context: Any, path: str) -> Deferred:
        return Deferred(self.subcon, stream, context, evaluate(self.offset, context), path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        return cs.Pointer._build(self, obj() if isinstance(obj, Deferred) else obj, stream, context, path)

    def _sizeof(self, context: Any, path: str) -> int:
        return 0


class Deferred:
    """A member parsed when called (then kept): the value of an :class:`At` field."""

    def __init__(self, con: cs.Construct, stream: Any, context: Any, offset: int, path: str) -> None:
        self.con, self.stream, self.context, self.offset = con, stream, context, offset
        self.path = path  # construct's path of the field ("(parsing) -> header -> body")
        self._value: Any = _UNSET

    def __call__(self) -> Any:
        if self._value is _UNSET:
            stream, back = self.stream, self.stream.tell()
            try:
                stream.seek(self.offset, 2 if self.offset < 0 else 0)
                self._value = parse_member(self.con, stream, self.context, self.path)
            finally:
                stream.seek(back)
        return self._value

    def __repr__(self) -> str:
        return f"<{type(self.con).__name__} at byte {self.offset}, parsed when called>"


_UNSET = object()


def _format(context: Any) -> str:
    params = context.get("_params") if hasattr(context, "get") else None
    return (params or {}).get("_format") or ""


def parse_member(con: cs.Construct, stream: Any, context: Any, path: str) -> Any:
    """``con`` parsed from the stream's position in ``context`` (the fields before it), for a member parsed
    apart from its parents: a failure is the format's error naming the member's field path (``path``,
    construct's or dotted) with array indices, and the absolute offset, as :func:`walk.locate` finds it."""
    format = _format(context)
    start = stream.tell()
    try:
        return con._parsereport(stream, context, path)
    except Exception as e:  # noqa: BLE001 - every failure becomes a FormatError
        first = e
    stream.seek(start)  # the walk parses it again to name the failing element or unnamed field
    error = locate_in(con, stream, context, path, format)
    if error is None:
        error = first.located(format=format) if isinstance(first, FormatError) else \
            translate(first, stream, format)
    raise error from None


@contextmanager
def _located(stream: Any, format: str, prefix: str = "", field: cs.Construct | None = None) -> Iterator[None]:
    """Any failure inside as the format's error, its path below ``prefix``; ``field``: the one field parsed
    (a constant that does not match is then located where it starts)."""
    try:
        yield
    except FormatError as e:
        raise e.located(format=format, prefix=prefix or None) from None
    except Exception as e:  # noqa: BLE001 - every failure becomes a FormatError
        error = translate(e, stream, format, cs.Struct(field) if field is not None else None)
        raise error.located(prefix=prefix or None) from error.__cause__


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path and name else path or name


class LazyValue:
    """A field's value parsed as far as it is asked for."""

    def lazy_end(self) -> int:
        """The offset after the field (it is parsed as far as that takes)."""
        raise NotImplementedError


def lazy_value(con: cs.Construct, stream: Any, context: Any, parent: str, path: str) -> Any:
    """``con`` (the field at ``path`` of the struct at ``parent``) at the stream's position, parsed lazily: a
    LazyValue (the stream then anywhere), or the value parsed now (the stream then after it) for a field
    that has no lazy form."""
    inner = unnamed(con)
    format = _format(context)
    if isinstance(inner, cs.Struct):  # (inside its parent's bytes, where they are bounded)
        left = remaining(stream)
        return LazyFields(inner, stream, context, path, stream.tell(), None if left is None else stream.tell() + left)
    if isinstance(inner, Chunks):
        return LazyChunks(inner, stream, context, path)
    if isinstance(inner, StringTable) and inner.index is None:
        with _located(stream, format, path):
            count = int(evaluate(inner.count, context))
            if count < 0:
                raise fail("", stream.tell(), "negative string count", ValueMismatchError, found=count)
            check_length(stream, count * inner._fmt.size, "", f"{count} strings")  # (as the whole parse does)
        return LazyStrings(inner, stream, context, path, stream.tell(), count)
    if isinstance(inner, At):  # (asked for: the member itself)
        return inner._parse(stream, context, path)()
    with _located(stream, format, parent if con.name else path, con):  # (the walk names the field itself)
        return walked(con, stream, context)


class LazyFields(Mapping, LazyValue):
    """A Struct parsed field by field as they are asked for (``fields["n_words"]``, or ``fields.n_words`` for
    a name that is not one of its methods); the fields before the one asked for are parsed first, in file
    order, and their checks run. ``keys()`` names the fields without parsing any."""

    def __init__(self, con: cs.Struct, stream: Any, context: Any, path: str, start: int, stop: int | None) -> None:
        self._con, self._stream, self._path = con, stream, path
        self._stop = stop  # where its bytes end, when its container says (a chunk's length)
        self._pos, self._next = start, 0
        self._names = tuple(sc.name for sc in con.subcons if sc.name)  # the named fields, in file order
        ctx = cs.Container(_=context, _params=context.get("_params", context), _root=None, _parsing=True,
                           _building=False, _sizing=False, _subcons=con._subcons, _io=stream,
                           _index=context.get("_index"))
        ctx._root = ctx._.get("_root") or ctx
        self._ctx = ctx
        self._offsets: dict[str, int] = {}
        self._pending: LazyValue | None = None  # the last field parsed, where its end is not yet known

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        while name not in self._ctx:
            self._step()
        return self._ctx[name]

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def offset_of(self, name: str) -> int:
        """Where the field starts (the fields before it are parsed)."""
        self[name]
        return self._offsets[name]

    def leading(self) -> dict[str, Any]:
        """The named fields before the first whose size depends on the data (a table, an array, padding):
        the counts and settings of a header, every one parsed and checked."""
        out = {}
        for i, sc in enumerate(self._con.subcons):
            if isinstance(unnamed(sc), At):  # (a member elsewhere: parsed when asked for)
                break
            try:
                sc._sizeof(self._ctx, self._path)
            except (cs.SizeofError, KeyError, AttributeError, TypeError):
                break
            if i >= self._next:
                self._step()
            if sc.name:
                out[sc.name] = self._ctx[sc.name]
        return out

    def lazy_end(self) -> int:
        while self._next < len(self._con.subcons):
            self._step()
        self._settle()
        return self._pos

    def _settle(self) -> None:
        if self._pending is not None:
            self._pos, self._pending = self._pending.lazy_end(), None

    def _step(self) -> None:
        self._settle()
        sc = self._con.subcons[self._next]
        stream = self._stream
        stream.seek(self._pos)
        path = _join(self._path, sc.name or unnamed_field(sc))
        with _until(stream, self._stop):
            value = lazy_value(sc, stream, self._ctx, self._path, path)
        if sc.name:
            self._ctx[sc.name] = value
            self._offsets[sc.name] = self._pos
        if isinstance(value, LazyValue):
            self._pending = value
        else:
            self._pos = stream.tell()
        self._next += 1


class LazyStrings(Sequence, LazyValue):
    """A StringTable read as far as it is asked for: ``words[:10]`` decodes ten strings; ``len()`` is the
    count (nothing read)."""

    def __init__(self, con: StringTable, stream: Any, context: Any, path: str, start: int, count: int) -> None:
        self._con, self._stream, self._context, self._path = con, stream, context, path
        self._count = count
        left = remaining(stream)
        self._stop = None if left is None else start + left
        self._start = self._next = start  # where the table starts, and the first string not read yet
        self._items: list[str] = []
        self._end: int | None = None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            indices = range(*i.indices(self._count))
            if indices:
                self._read(max(indices[0], indices[-1]))  # (a range's ends: max() would count through it)
            return [self._items[j] for j in indices]
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(i)
        self._read(i)
        return self._items[i]

    def _read(self, last: int) -> None:
        """Read the strings up to index ``last``: one tight loop, each failure naming the string."""
        stream, fmt, items = self._stream, self._con._fmt, self._items
        width, pos = fmt.size, self._next
        buf, base = (stream.raw, 0) if isinstance(stream, BufferStream) else (None, 0)
        stop = self._stop
        try:
            while len(items) <= last:
                where = f"{self._path}[{len(items)}]"
                if stop is not None and pos + width > stop:
                    raise fail(where, pos, "string length", TruncatedError)
                head = buf[pos - base : pos - base + width] if buf is not None else _read_at(stream, pos, width)
                (n,) = fmt.unpack(head)
                if stop is not None and pos + width + n > stop:
                    raise fail(where, pos + width, f"string needs {n} bytes but only {stop - pos - width} remain",
                               TruncatedError)
                raw = buf[pos + width - base : pos + width + n - base] if buf is not None else \
                    _read_at(stream, pos + width, n)
                items.append(decode_utf8(raw, "strict", where, pos + width))
                pos += width + n
                self._next = pos
        except FormatError as e:
            raise e.located(format=_format(self._context)) from None

    def lazy_end(self) -> int:
        if self._end is None:
            stream = self._stream
            stream.seek(self._start)
            with _until(stream, self._stop):
                with _located(stream, _format(self._context), self._path):
                    self._items = self._con._parse(stream, self._context, self._path)
                self._end = stream.tell()
        return self._end


def _read_at(stream: Any, pos: int, n: int) -> bytes:
    """``n`` bytes at ``pos`` of a stream that is not a buffer."""
    stream.seek(pos)
    data = stream.read(n)
    if len(data) < n:
        raise fail("", pos, f"string needs {n} bytes but only {len(data)} remain", TruncatedError)
    return data


@contextmanager
def _until(stream: Any, stop: int | None) -> Iterator[None]:
    """The stream ended at ``stop`` (a BufferStream) while the block runs."""
    if stop is None or not isinstance(stream, BufferStream):
        yield
        return
    size = stream.size
    stream.size = min(size, stop)
    try:
        yield
    finally:
        stream.size = size


class LazyChunks(Sequence, LazyValue):
    """Chunks walked as they are asked for: each a Container of ``chunk_id``, ``name``, ``_offset`` (where
    its id is), ``length``, ``end`` and ``body`` (a LazyFields over the chunk's bytes; raw bytes for an
    unknown id). A writer's length quirk (``Chunks(quirks=...)``) is told without parsing the body: the
    chunk ends where the file or a chunk of a known type goes on."""

    def __init__(self, con: Chunks, stream: Any, context: Any, path: str) -> None:
        self._con, self._stream, self._context, self._path = con, stream, context, path
        self._next = stream.tell()
        self._size = self._next + (remaining(stream) or 0)
        self._chunks: list[cs.Container] = []
        self._done = False

    def __len__(self) -> int:
        while not self._done:
            self._walk()
        return len(self._chunks)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        while len(self._chunks) <= i and not self._done:
            self._walk()
        return self._chunks[i]

    def __iter__(self) -> Iterator[Any]:
        i = 0
        while i < len(self._chunks) or not self._done and self._walk():
            yield self._chunks[i]
            i += 1

    def lazy_end(self) -> int:
        len(self)
        return self._size

    def _known(self, pos: int) -> bool:
        """A chunk of a known type starts at ``pos``, its body in the input."""
        if pos + 12 > self._size:
            return False
        self._stream.seek(pos)
        chunk_id, length = self._con._head.unpack(self._stream.read(12))
        return chunk_id in self._con.types and pos + 12 + length <= self._size

    def _walk(self) -> bool:
        """Read the next chunk's header; False at the end of the input."""
        stream, con, pos, i = self._stream, self._con, self._next, len(self._chunks)
        format, where = _format(self._context), f"{self._path}[{i}]"
        if pos >= self._size:
            self._done = True
            with _located(stream, format):
                listed = int(evaluate(con.listed, self._context))
                if i < listed:
                    raise fail(where, pos, f"the header lists {listed} chunks, the file ends after {i}",
                               TruncatedError)
            return False
        stream.seek(pos)
        with _located(stream, format):
            check_length(stream, 12, where, "chunk id and length")
            chunk_id, length = self._con._head.unpack(stream.read(12))
            entry, quirk = con.types.get(chunk_id), con.quirks.get(chunk_id)
        name = entry[0] if entry is not None else "unknown"
        chunk = cs.Container(chunk_id=chunk_id, name=name, _offset=pos, length=length)
        end = pos + 12 + length
        if entry is None:
            if end <= self._size:  # (raw bytes: a view of a buffer)
                stream.seek(pos + 12)
                chunk.body = stream.view(length) if isinstance(stream, BufferStream) else stream.read(length)
        else:
            context = con.body_context(self._context, length)
            chunk.body = LazyFields(unnamed(entry[1]), stream, context, f"{where}.{name}", pos + 12, end)
            short = int(quirk(chunk.body)) if quirk is not None and end <= self._size else 0
            if short and end != self._size and not self._known(end) and (
                    end + short == self._size or self._known(end + short)):
                chunk.length_short_by = short  # (a known writer's length field: the next chunk is further on)
                end = chunk.body._stop = end + short
        if end > self._size:
            raise fail(where, pos, f"the file ends inside the {name} chunk ({end - pos} bytes from its start, "
                       f"{self._size - pos} left)", TruncatedError).located(format=format)
        chunk.end = end
        self._chunks.append(chunk)
        self._next = end
        return True


def parse_lazy(schema: cs.Construct, stream: Any, *, format: str, **params: Any) -> Any:
    """``schema`` parsed lazily from the stream's position (see the module's doc)."""
    context = cs.Container({"_format": format, **params})
    context._parsing, context._building, context._sizing = True, False, False
    context._params = context
    return lazy_value(schema, stream, context, "", "")
