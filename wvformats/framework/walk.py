"""The one annotated walker: field spans (path, byte range, value, doc) of a parsed file.

Used by ``validate`` (which field covers the first differing byte), ``dump`` (the annotated hex dump) and
``inspect`` (offsets of the major parts). It parses like construct's ``Struct`` but records where each
field starts and ends.

A custom construct whose value holds fields of its own (a record table) shows them through one protocol: a
method ``parts(value)`` giving a :class:`Part` (or a 5-tuple in its order) for each, its path relative to
the construct's own (``[3].key``). :func:`walk_parts` gives the parts of a sub-construct parsed again
from a position, for a table whose elements are construct schemas.
"""

from __future__ import annotations

import re
import struct
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import construct as cs
import numpy as np

from ..errors import FormatError
from .chunks import Chunks
from .fields import evaluate, require_bound_checks, unnamed, unnamed_field
from .located import dotted, translate
from .streams import BufferStream

if TYPE_CHECKING:
    from .protobuf import MessageType, ProtoMessage


@dataclass
class Span:
    path: str
    start: int
    end: int
    value: Any
    doc: str
    construct: cs.Construct


class Part(NamedTuple):
    """One field inside a custom construct's value, as its ``parts(value)`` gives it for dumps: the path
    below the construct's own (``[3].key``, ``.header``), the byte range ``[start, end)`` in the file, the
    value and a short doc."""

    path: str
    start: int
    end: int
    value: Any
    doc: str


def walk_parts(con: cs.Construct, stream: Any, context: Any, path: str) -> list[Part]:
    """The fields of ``con`` parsed again from the stream's position (the element of a table at its offset),
    as Parts under ``path`` (``[3]``): what a table's ``parts`` gives for elements that are schemas."""
    spans: list[Span] = []
    walk_into(con, stream, context, path, "", spans)
    return [Part(s.path, s.start, s.end, s.value, s.doc) for s in spans]


def _join(path: str, name: str | None) -> str:
    if not name:
        return path
    return f"{path}.{name}" if path else name


def walk(schema: cs.Construct, data: Any, *, format: str = "", **params: Any) -> tuple[Any, list[Span]]:
    """Parse ``data`` with ``schema`` and return (value, spans in file order, parents after children)."""
    require_bound_checks(schema)
    stream = data if isinstance(data, BufferStream) else BufferStream(data)
    context = cs.Container(_format=format, **params)  # the format names the warnings of doubtful fields
    context._parsing, context._building, context._sizing = True, False, False
    context._params = context
    spans: list[Span] = []
    try:
        value = walk_into(schema, stream, context, "", "", spans)
    except FormatError as e:
        raise e.located(format=format) from None
    except Exception as e:  # noqa: BLE001 - every failure becomes a FormatError
        error = translate(e, stream, format, schema)
        raise error from error.__cause__  # (an unchecked input's error keeps the one it came from)
    return value, spans


def walk_into(con: cs.Construct, stream: Any, context: Any, path: str, doc: str, out: list[Span]) -> Any:
    """Parse ``con`` from the stream in ``context`` as :func:`walk` does, appending the spans of its fields
    (under ``path``) to ``out``; returns the value."""
    named = False  # ("name" / X * "doc" nests two Renamed of one name: one path segment)
    while isinstance(con, cs.Renamed):
        if con.name and not named:
            path, named = _join(path, con.name), True
        doc = doc or (con.docs or "")
        con = con.subcon
    start = stream.tell()
    if isinstance(con, Chunks):
        return _walk_chunks(con, stream, context, path, doc, out)
    # (protobuf is imported by the schemas that use it: a construct of it exists only once it is)
    protobuf = sys.modules.get(f"{__package__}.protobuf")
    if protobuf is not None and isinstance(con, protobuf.ProtoMessage):
        fields = con._parsereport(stream, context, f"(parsing) -> {path.replace('.', ' -> ')}")
        _walk_message(con.mtype, fields, start, path, out, con)
        out.append(Span(path, start, stream.tell(), fields, doc, con))
        return fields
    if isinstance(con, (cs.Struct, cs.Sequence, cs.FocusedSeq)):
        value = _walk_fields(con, stream, context, path, out)
    elif isinstance(con, cs.IfThenElse):  # (If too) the branch the condition picks, under the field's own name
        branch = con.thensubcon if evaluate(con.condfunc, context) else con.elsesubcon
        value = walk_into(branch, stream, context, path, "", out)
    elif isinstance(con, cs.Switch):
        value = walk_into(con.cases.get(evaluate(con.keyfunc, context), con.default), stream, context, path, "", out)
    elif isinstance(con, (cs.Array, cs.GreedyRange, cs.RepeatUntil)) and (
            isinstance(out, _Drop) or isinstance(unnamed(con.subcon), _COMPOUND)):  # (numbers: one field)
        value = _walk_elements(con, stream, context, path, out)
    elif isinstance(con, cs.Pointer) and con.stream is None:  # a member at an offset another field gives
        back = stream.tell()
        offset = evaluate(con.offset, context)
        stream.seek(offset, 2 if offset < 0 else 0)
        value = walk_into(con.subcon, stream, context, path, doc, out)
        stream.seek(back)
        return value
    else:
        value = con._parsereport(stream, context, f"(parsing) -> {path.replace('.', ' -> ')}")
        if hasattr(con, "parts") and not isinstance(out, _Drop):  # a record table that says where each
            out += [Span(path + sub, a, b, v, d, con) for sub, a, b, v, d in con.parts(value)]  # record's fields lie
    span = Span(path, start, stream.tell(), value, doc, con)
    if out and (out[-1].path, out[-1].start, out[-1].end) == (path, span.start, span.end):
        span.doc = doc or out[-1].doc  # a branch (of If, Switch) that is the field itself: one span of it
        out[-1] = span
    else:
        out.append(span)
    return value


# the elements of an array that a dump shows one by one: those with fields of their own
_COMPOUND = (cs.Struct, cs.Sequence, cs.FocusedSeq, cs.IfThenElse, cs.Switch, cs.Array, cs.GreedyRange,
             cs.RepeatUntil, Chunks)


def _walk_fields(con: cs.Construct, stream: Any, context: Any, path: str, out: list[Span]) -> Any:
    """A Struct's (Sequence's, FocusedSeq's) fields in their own context, as construct parses them."""
    ctx = cs.Container(_=context, _params=context._params, _root=None, _parsing=True, _building=False,
                       _sizing=False, _subcons=con._subcons, _io=stream, _index=context.get("_index"))
    ctx._root = ctx._.get("_root", ctx)
    values = []
    for i, sc in enumerate(con.subcons):
        where = _join(path, unnamed_field(sc)) if not sc.name else path
        if isinstance(con, cs.Sequence) and not sc.name:
            where = f"{path}[{i}]"
        try:
            sub = walk_into(sc, stream, ctx, where, "", out)
        except cs.StopFieldError:
            break
        values.append((sc.name, sub))
        if sc.name:
            ctx[sc.name] = sub
    if isinstance(con, cs.Sequence):
        return cs.ListContainer(v for _, v in values)
    if isinstance(con, cs.FocusedSeq):
        focus = evaluate(con.parsebuildfrom, ctx)
        return next((v for name, v in values if name == focus), None)
    return cs.Container((name, v) for name, v in values if name)


def _walk_elements(con: cs.Construct, stream: Any, context: Any, path: str, out: list[Span]) -> Any:
    """An Array's (GreedyRange's, RepeatUntil's) elements as ``path[i]``, each with its fields."""
    items = cs.ListContainer()
    count = evaluate(con.count, context) if isinstance(con, cs.Array) else None
    if count is not None and count < 0:
        raise cs.RangeError(f"invalid count {count}", path=f"(parsing) -> {path.replace('.', ' -> ')}")
    i = 0
    while count is None or i < count:
        context._index = i
        back, kept = stream.tell(), len(out)
        try:
            item = walk_into(con.subcon, stream, context, f"{path}[{i}]", "", out)
        except (cs.StopFieldError, cs.ExplicitError, FormatError):
            raise
        except Exception:
            if not isinstance(con, cs.GreedyRange):
                raise
            del out[kept:]  # (a GreedyRange ends at the first element that does not parse)
            stream.seek(back)
            break
        if not con.discard:
            items.append(item)
        i += 1
        if isinstance(con, cs.RepeatUntil) and _until(con.predicate, item, items, context):
            break
    return items


def _until(predicate: Any, item: Any, items: Any, context: Any) -> bool:
    return bool(predicate(item, items, context) if callable(predicate) else predicate)


class _Drop(list):
    """Spans not kept: a walk that only locates a failure (:func:`locate`)."""

    def append(self, span: Any) -> None:
        pass

    def __iadd__(self, spans: Any) -> _Drop:
        return self


def walked(con: cs.Construct, stream: Any, context: Any, path: str = "") -> Any:
    """``con`` parsed from the stream's position in ``context`` as the walk parses it (array elements by
    index, fields without a name by their kind, in its errors), keeping no spans."""
    return walk_into(con, stream, context, path, "", _Drop())


def locate(schema: cs.Construct, stream: Any, *, format: str, **params: Any) -> FormatError | None:
    """The error of parsing ``schema`` from the stream's position, located by the walk: array elements by
    index (``items[3].y``) and fields without a name by their kind (``<Terminated>``), which construct's
    own paths leave out; None when the walk parses it (the stream is then past it)."""
    context = cs.Container({"_format": format, **params})
    context._parsing, context._building, context._sizing = True, False, False
    context._params = context
    return locate_in(schema, stream, context, "", format)


def locate_in(con: cs.Construct, stream: Any, context: Any, path: str, format: str) -> FormatError | None:
    """:func:`locate` of a member parsed apart from its parents (a lazily parsed one): ``con`` from the
    stream's position in ``context`` (the fields before it), its error's path below ``path`` (construct's
    or dotted) and its offset absolute."""
    prefix = dotted(path) or None
    try:  # (walked with paths relative to con, which the offset of a constant is found by)
        walked(con, stream, context)
    except FormatError as e:
        return e.located(format=format, prefix=prefix)
    except Exception as e:  # noqa: BLE001 - every failure becomes a FormatError
        return translate(e, stream, format, con).located(prefix=prefix)
    return None


def _walk_chunks(con: Chunks, stream: Any, context: Any, path: str, doc: str, out: list[Span]) -> Any:
    """Chunks are parsed (and checked) as a whole, then walked again chunk by chunk: id, length and the
    fields of each body whose type is registered (built-in or a user's), so that dumps show them."""
    start = stream.tell()
    value = con._parsereport(stream, context, f"(parsing) -> {path.replace('.', ' -> ')}")
    end = stream.tell()
    pos = start
    for i, chunk in enumerate(value):
        where = f"{path}[{i}]"
        stream.seek(pos)
        chunk_id, length = struct.unpack("<IQ", stream.read(12))
        out.append(Span(f"{where}.chunk_id", pos, pos + 4, chunk_id, f"chunk type: {chunk['name']}", con))
        out.append(Span(f"{where}.length", pos + 4, pos + 12, length, "bytes after the length field", con))
        entry = con.types.get(chunk_id)
        if entry is None:
            out.append(Span(f"{where}.body", pos + 12, pos + 12 + length, chunk["body"],
                            "unknown chunk type: kept as raw bytes", con))
            stream.seek(pos + 12 + length)
        else:
            walk_into(entry[1], stream, con.body_context(context, length), f"{where}.body", "", out)
        out.append(Span(where, pos, stream.tell(), chunk, "", con))
        pos = stream.tell()
    stream.seek(end)
    out.append(Span(path, start, end, value, doc, con))
    return value


class _Named(int):
    """An enum value shown with its name: ``2 BPE``."""

    name = ""

    def __repr__(self) -> str:
        return f"{int(self)} {self.name}"


def _walk_message(mtype: MessageType, fields: list[Any], pos: int, path: str, out: list[Span],
                  con: ProtoMessage) -> None:
    """Spans of a protobuf message's wire fields from ``pos``, named by ``mtype``: ``pieces[3].piece``,
    ``trainer_spec.model_type``; a sub-message's tag and length as ``<field>.(tag, length)``, then its fields;
    numbers ``mtype`` does not name as ``field_<number>``. Each span holds the field's tag and value: the
    bytes protobuf writes for that field alone."""
    from .protobuf import MessageType, decode_scalar, enum_names, known_field, wire_type_of
    from .protowire import WIRE_NAMES, build_fields, parse_fields

    seen: dict[int, int] = {}
    repeated: dict[str, list[Any]] = {}  # [first start, last end, count, doc, index in out after the last]
    for f in fields:
        encoded = bytearray()
        build_fields([f], encoded)  # the parse is lossless: the field's own bytes, so its size
        end = pos + len(encoded)
        number, wire = f["number"], f["wire_type"]
        spec = mtype.by_number.get(number)
        i = seen[number] = seen.get(number, -1) + 1
        if spec is None:
            ext = mtype.extensions and mtype.extensions[0] <= number <= mtype.extensions[1]
            kind = "extension" if ext else "reserved" if number in mtype.reserved else "unknown"
            out.append(Span(_join(path, f"field_{number}"), pos, end, f["value"],
                            f"{kind} field {number} of {mtype.name} ({WIRE_NAMES[wire]}), kept as it is", con))
            pos = end
            continue
        where = _join(path, spec.name) + (f"[{i}]" if spec.label == "repeated" else "")
        if not known_field(spec, f):
            if wire != wire_type_of(spec.type):
                why = f"{WIRE_NAMES[wire]}, where {spec.type if isinstance(spec.type, str) else 'a message'} " \
                      f"is {WIRE_NAMES[wire_type_of(spec.type)]}"
                value = f["value"]
            else:
                value = decode_scalar("int32", f)
                why = f"{spec.name} has no value {value}"
            out.append(Span(where, pos, end, value, f"{spec.doc} (unknown to protobuf: {why}; kept as it is)", con))
        elif isinstance(spec.type, MessageType):
            body = f["value"]
            at = end - len(body)
            out.append(Span(f"{where}.(tag, length)", pos, at, len(body),
                            f"field {number} LEN: a {spec.type.name} of {len(body)} bytes follows", con))
            sub = parse_fields(body, 0, len(body), where, at)[0]  # errors name the field and absolute offset
            _walk_message(spec.type, sub, at, where, out, con)
            out.append(Span(where, pos, end, sub, spec.doc, con))
        else:
            value = decode_scalar(spec.type, f)
            if spec.enum is not None:
                value = _Named(value)
                value.name = enum_names(spec.enum)[value]
            elif spec.type == "float":
                value = np.float32(value)
            out.append(Span(where, pos, end, value, spec.doc, con))
        if spec.label == "repeated":
            run = repeated.setdefault(_join(path, spec.name), [pos, end, 0, spec.doc, 0])
            run[1:] = [end, run[2] + 1, spec.doc, len(out)]
        pos = end
    # a repeated field as a whole (first element to last) goes after its last element's spans, in file order
    for name, (a, b, n, doc, after) in sorted(repeated.items(), key=lambda r: -r[1][4]):
        out.insert(after, Span(name, a, b, n, doc, con))


def covering(spans: list[Span], offset: int) -> str:
    """The deepest field path whose byte range holds ``offset`` ("" when none does)."""
    best: Span | None = None
    for s in spans:
        if s.start <= offset < s.end and (best is None or s.end - s.start < best.end - best.start):
            best = s
    return best.path if best else ""


def short(value: Any, limit: int = 60) -> str:
    """A one-line rendering of a field value for dumps."""
    if isinstance(value, np.ndarray):
        text = f"ndarray {value.dtype.str} {value.shape}"
    elif isinstance(value, np.generic):
        text = str(value)  # a float32 in its own shortest digits
    elif isinstance(value, cs.Container):
        keys = [k for k in value if not str(k).startswith("_")]
        if "words" in value and "vectors" in value:
            v = np.asarray(value["vectors"])
            text = f"{len(value['words'])} records, vectors {v.dtype.str} {v.shape}"
        else:
            text = ", ".join(f"{k}={short(value[k], 24)}" for k in keys)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value[:24])
        text = f"{len(value)} bytes {b.hex(' ')}" + (" ..." if len(value) > 24 else "")
    elif isinstance(value, list):
        simple = len(value) <= 8 and all(isinstance(x, (int, float, str)) for x in value)
        text = repr(list(value)) if simple else f"list of {len(value)}"
    else:
        text = repr(value)
    text = "".join(ch if ch.isprintable() else "?" for ch in text)  # never print control characters
    return text if len(text) <= limit else text[: limit - 3] + "..."


def leaves(spans: list[Span]) -> list[Span]:
    """The fields the walk did not descend into, in file order: they tile the file, each byte in one."""
    parents = {s.path[: m.start()] for s in spans for m in re.finditer(r"[.\[]", s.path)}
    parents |= {""} if any(s.path for s in spans) else set()  # the file itself, when it has fields
    return sorted((s for s in spans if s.path not in parents), key=lambda s: (s.start, s.end))


_ELEMENT = re.compile(r"([^\[]*)\[(\d+)\]")  # the array and index of a path's first [i]


def hexdump(spans: list[Span], data: Any, *, max_bytes: int = 32, keep: int | None = 4) -> list[str]:
    """Annotated hex dump lines: offset range, leading bytes, ``path = value``; bulk fields are elided.

    Of an array of more than ``2 * keep + 1`` elements (pieces, records, ...), only the fields of the first
    and last ``keep`` are shown, and one line says which elements and bytes lie between (``None``: all)."""
    mv = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    shown = leaves(spans)
    counts: dict[str, int] = {}
    for s in shown:
        if m := _ELEMENT.match(s.path):
            counts[m[1]] = max(counts.get(m[1], 0), int(m[2]) + 1)
    lines: list[str] = []
    hidden: list[tuple[str, int, Span]] = []
    for s in shown:
        m = _ELEMENT.match(s.path)
        if keep is not None and m and counts[m[1]] > 2 * keep + 1 and keep <= int(m[2]) < counts[m[1]] - keep:
            hidden.append((m[1], int(m[2]), s))
            continue
        lines += _elided(hidden)
        hidden = []
        raw = bytes(mv[s.start : min(s.end, s.start + max_bytes)])
        more = " ..." if s.end - s.start > max_bytes else ""
        where = f"{s.start:08x}-{s.end - 1:08x}" if s.end > s.start else f"{s.start:08x} (no bytes)"
        lines.append(f"{where}  {raw.hex(' ')}{more}".rstrip())
        lines.append(f"          {s.path or '(the whole file)'} = {short(s.value)}" + (f"    # {s.doc}" if s.doc else ""))
    return lines + _elided(hidden)


def _elided(hidden: list[tuple[str, int, Span]]) -> list[str]:
    """The line pair standing for a run of elided array elements."""
    if not hidden:
        return []
    first: dict[str, tuple[int, int]] = {}
    for array, i, _ in hidden:
        a, b = first.get(array, (i, i))
        first[array] = (min(a, i), max(b, i))
    what = "; ".join(f"{name}[{a}] to {name}[{b}]: {b - a + 1} elements not shown (--all shows them)"
                     for name, (a, b) in first.items())
    start, end = hidden[0][2].start, hidden[-1][2].end
    return [f"{start:08x}-{end - 1:08x}  ...", f"          {what}"]


_walk = walk_into  # the name before the framework's API was declared (see fields.py)
