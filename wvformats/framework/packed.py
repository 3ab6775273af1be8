"""A Struct whose runs of fixed-size fields are read with one ``struct.unpack`` and written with one ``pack``.

A hot record (a zip entry read once per member of an archive of thousands) spends most of its time in
construct's per-field machinery: a ``_parsereport``, a ``Renamed`` and a stream read for each integer.
:class:`PackedStruct` is a ``Struct`` written the same way, one field per line with its doc, that reads each
run of consecutive fixed-size fields (integers and doubles of one byte order, fixed-length ``Bytes``, ``Const``
of either, :class:`EnumField` of an integer, a :class:`Derived` count or size, and the :class:`Valid` checks
between them) in one unpack.

Only the path where every field is fine is fast: where the run's bytes are not all there, a constant or an
enum does not match or a check fails, the run is read again field by field as ``Struct`` reads it, so a
failure is the very error ``Struct`` gives (the field that does not fit, its path and offset). Its fields stay
the Struct's ``subcons``: docs, dumps and the annotated walk see each field and its doc.
"""

from __future__ import annotations

import struct
from typing import Any

import construct as cs

from .fields import Checked, EnumField, Valid, evaluate, exact_floats, unnamed
from .streams import BufferStream

_VALUE, _CONST, _ENUM, _CHECK, _DERIVED, _DERIVED_ENUM = range(6)
_update = dict.update  # (Container's own update is a Python loop)


class _NotFine(Exception):
    """A run whose fast read gives way to reading it field by field."""


def _fixed(con: cs.Construct) -> tuple[str, str] | None:
    """(byte order, struct letter) of a fixed-size field one unpack can read; None for any other field.
    The order is "" for a field whose order does not matter (one byte, bytes)."""
    if isinstance(con, cs.FormatField):
        order, letter = con.fmtstr[0], con.fmtstr[1:]
        if order not in "<>" or len(letter) != 1 or letter in "ef":  # (half, single: read bit for bit, alone)
            return None
        return ("" if con.length == 1 else order), letter
    if type(con) is cs.Bytes and isinstance(con.length, int):
        return "", f"{con.length}s"
    return None


class _Run:
    """Consecutive fields ``subcons`` read by one unpack: each item says what to do with the next value
    (keep it, compare it with a constant, name it by an enum) or which check to evaluate."""

    def __init__(self, subcons: list[cs.Construct], order: str, letters: list[str],
                 items: list[tuple[int, str | None, Any]]) -> None:
        self.subcons = subcons
        self.fmt = struct.Struct((order or "<") + "".join(letters))
        self.size = self.fmt.size
        self.items = items
        fields = [(kind, name, arg) for kind, name, arg in items if kind != _CHECK]
        self.names = tuple(name for _, name, _ in fields)
        self.consts = tuple((i, arg) for i, (kind, _, arg) in enumerate(fields) if kind == _CONST)
        self.enums = tuple((i, arg.enum if kind == _ENUM else arg.subcon.enum) for i, (kind, _, arg) in enumerate(fields)
                           if kind in (_ENUM, _DERIVED_ENUM))
        # the fields in stretches, each followed by the checks that come after it: a check sees the fields
        # before it, as in Struct
        self.stretches: list[tuple[tuple[str, ...], int, int, tuple[Any, ...]]] = []
        lo = hi = 0
        tests: list[Any] = []
        for kind, _, arg in items:
            if kind == _CHECK:
                tests.append(arg.test)
                continue
            if tests:
                self.stretches.append((self.names[lo:hi], lo, hi, tuple(tests)))
                lo, tests = hi, []
            hi += 1
        self.stretches.append((self.names[lo:hi], lo, hi, tuple(tests)))

    def parse(self, stream: Any, context: Any, obj: Any) -> bool:
        """Read the run into ``obj`` and ``context``; False (the stream back where it was) where anything is
        not fine, for the caller to read the run field by field."""
        at = stream.tell()
        try:
            if type(stream) is BufferStream:  # (unpacked in place: no bytes copied out)
                if stream.size - at < self.size:
                    raise _NotFine
                values = self.fmt.unpack_from(stream.buffer, at)
                stream.seek(at + self.size)
            else:
                values = self.fmt.unpack(stream.read(self.size))  # (struct.error where the input is short)
            for i, expected in self.consts:
                if values[i] != expected:
                    raise _NotFine
            if self.enums:
                values = list(values)
                for i, enum in self.enums:
                    values[i] = enum(values[i])
            for names, lo, hi, tests in self.stretches:
                pairs = tuple(zip(names, values[lo:hi], strict=True))
                _update(obj, pairs)
                _update(context, pairs)
                for test in tests:
                    if not evaluate(test, context):
                        raise _NotFine
            return True
        except Exception:  # noqa: BLE001 - not fine (an enum's unknown value, a check that fails or cannot be told)
            pass
        stream.seek(at)
        return False

    def build(self, obj: Any, stream: Any, context: Any) -> bool:
        """Write the run from ``obj`` in one write; False (nothing written) where anything is not fine."""
        values = []
        try:
            for kind, name, arg in self.items:
                if kind == _CHECK:
                    if not evaluate(arg.test, context):
                        return False
                    continue
                v = obj.get(name)
                if kind == _CONST:
                    if v is not None and v != arg:
                        return False
                    v = arg
                elif kind == _DERIVED:
                    v = evaluate(arg.func, context)
                elif kind == _DERIVED_ENUM:  # (an enum the builder derives: one of its members)
                    v = evaluate(arg.func, context)
                    if v not in arg.subcon.enum._value2member_map_:
                        return False
                elif kind == _ENUM:
                    if isinstance(v, str) or (arg.unknown == "refuse" and v not in arg.enum._value2member_map_):
                        return False
                    v = int(v)
                elif v is None:
                    return False
                values.append(v)
                context[name] = v if kind != _ENUM else obj.get(name)
            raw = self.fmt.pack(*values)
        except Exception:  # noqa: BLE001 - a value struct refuses: built field by field, which names it
            return False
        stream.write(raw)
        return True


class _Field:
    """A field read on its own: its ``Renamed`` layers (name, doc) unwrapped into the path suffix they add."""

    def __init__(self, field: cs.Construct) -> None:
        self.field = self.inner = field
        self.name = field.name
        self.suffix = ""
        while isinstance(self.inner, cs.Renamed) and self.inner.parsed is None:
            self.suffix += f" -> {self.inner.name}"
            self.inner = self.inner.subcon
        # its _parse, where _parsereport would only call it (no ``parsed`` hook)
        self.read = self.inner._parse if self.inner.parsed is None else self.inner._parsereport


def _plan(subcons: list[cs.Construct]) -> list[Any]:
    """The struct's fields as steps: runs of two or more fixed-size fields, and the other fields."""
    steps: list[Any] = []
    run: list[cs.Construct] = []
    letters: list[str] = []
    items: list[tuple[int, str | None, Any]] = []
    order = ""

    def close() -> None:
        nonlocal run, letters, items, order
        fields = len(letters)
        tail = []
        while run and isinstance(unnamed(run[-1]), Valid):  # checks after the last field go on their own
            tail.insert(0, run.pop())
            items.pop()
        if fields >= 2:
            steps.append(_Run(run, order, letters, items))
        else:
            steps.extend(map(_Field, run))
        steps.extend(map(_Field, tail))
        run, letters, items, order = [], [], [], ""

    for sc in subcons:
        con = unnamed(sc)
        if isinstance(con, Valid):
            if run:
                run.append(sc)
                items.append((_CHECK, None, con))
            else:
                steps.append(_Field(sc))
            continue
        kind, arg, field = _VALUE, None, con
        if isinstance(con, cs.Const):
            kind, arg, field = _CONST, con.value, con.subcon
        elif isinstance(con, EnumField):
            kind, arg, field = _ENUM, con, con.subcon
        elif isinstance(con, cs.Rebuild):  # (a count or size the builder derives: Derived, Rebuild)
            kind, arg, field = _DERIVED, con, con.subcon
            if isinstance(con.subcon, EnumField):  # (an enum it derives: read as the enum reads it)
                kind, field = _DERIVED_ENUM, con.subcon.subcon
        spec = _fixed(field) if sc.name else None
        if spec is not None and order and spec[0] and spec[0] != order:
            close()
        if spec is None:
            close()
            steps.append(_Field(sc))
            continue
        order = order or spec[0]
        run.append(sc)
        letters.append(spec[1])
        items.append((kind, sc.name, arg))
    close()
    return steps


class PackedStruct(Checked, cs.Struct):
    """A ``Struct`` (written and documented the same way) whose runs of consecutive fixed-size fields are read
    with one unpack and written with one pack: for hot records, read once per entry of a long table. The
    parsed Container, the built bytes and every error are those of ``Struct``; compiled, it calls back into
    these (construct's generated Struct code reads field by field)."""

    def __init__(self, *subcons: Any, **subconskw: Any) -> None:
        super().__init__(*subcons, **subconskw)
        exact_floats(self)  # (before the plan: a step holds the field it reads)
        self.steps = _plan(self.subcons)

    def _context(self, stream: Any, context: Any) -> Any:
        ctx = cs.Container(_=context, _params=context["_params"], _root=None, _parsing=context["_parsing"],
                           _building=context["_building"], _sizing=context["_sizing"], _subcons=self._subcons,
                           _io=stream, _index=context.get("_index", None))
        ctx["_root"] = context.get("_root", ctx)
        return ctx

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        obj = cs.Container(_io=stream)
        context = self._context(stream, context)
        try:
            for step in self.steps:
                if type(step) is _Field:  # (its name's layers unwrapped: what Renamed does, without the calls)
                    value = step.read(stream, context, path + step.suffix)
                    if step.name:
                        obj[step.name] = context[step.name] = value
                elif not step.parse(stream, context, obj):
                    for sc in step.subcons:
                        value = sc._parsereport(stream, context, path)
                        if sc.name:
                            obj[sc.name] = context[sc.name] = value
        except cs.StopFieldError:
            pass
        return obj

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            obj = cs.Container()
        context = self._context(stream, context)
        context.update(obj)
        for step in self.steps:
            if type(step) is _Field:
                fields = (step.field,)
            elif step.build(obj, stream, context):
                continue
            else:
                fields = step.subcons
            for sc in fields:
                value = obj.get(sc.name, None) if sc.flagbuildnone else obj[sc.name]
                if sc.name:
                    context[sc.name] = value
                try:
                    value = sc._build(value, stream, context, path)
                except cs.StopFieldError:
                    return context
                if sc.name:
                    context[sc.name] = value
        return context
