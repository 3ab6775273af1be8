"""Round-trip checks of a schema or a registered format, in interpreted and compiled construct mode."""

from __future__ import annotations

import io
from typing import Any, NamedTuple

import construct as cs
import numpy as np

from .. import framework, registry
from ..errors import FormatError


class Target(NamedTuple):
    """What a check runs: a schema and the format name its errors carry, and the registered format when
    there is one (its codec's ``parse`` and ``build`` are checked as well)."""

    schema: cs.Construct
    format: str
    registered: registry.Format | None = None


def target(what: Any, format: str | None = None) -> Target:
    """A :class:`Target` from a schema (with ``format``, the name its errors carry), a registered format's
    name or a :class:`registry.Format`."""
    if isinstance(what, Target):
        return what
    if isinstance(what, str):
        what = registry.get(what)
    if isinstance(what, registry.Format):
        if what.schema is None:
            raise ValueError(f"format {what.name!r} has no schema to test")
        return Target(what.schema, format or what.name, what)
    if isinstance(what, cs.Construct):
        return Target(what, format or "test")
    raise TypeError(f"expected a schema, a format name or a Format, not {type(what).__name__}")


def equal(a: Any, b: Any) -> bool:
    """Structural equality; arrays compare bit for bit (NaN payloads and -0.0 included). A None in ``b`` (the
    built object), or a field it lacks, marks a field computed while building (padding, a derived count, a
    constant): any parsed value fits it."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, dict) and isinstance(b, dict):
        ka = {k for k in a if not str(k).startswith("_")}
        kb = {k for k in b if not str(k).startswith("_")}
        return kb <= ka and all(b[k] is None or equal(a[k], b[k]) for k in kb)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN, as a field holds it
    return bool(a == b)


def roundtrip(schema: Any, obj: Any, *, format: str | None = None, compiled: bool = False,
              **params: Any) -> bytes:
    """build(obj) -> bytes; parse(bytes) == obj; build(parse(bytes)) == bytes. Returns the bytes."""
    t = target(schema, format)
    data = framework.build(t.schema, obj, format=t.format, compile=compiled, **params)
    back = framework.parse(t.schema, data, format=t.format, compile=compiled, **params)
    assert equal(back, obj), f"parse(build(x)) != x:\n{back}\n!=\n{obj}"
    again = framework.build(t.schema, back, format=t.format, compile=compiled, **params)
    assert again == data, "build(parse(b)) != b"
    return data


def bytes_roundtrip(schema: Any, data: bytes, *, format: str | None = None, compiled: bool = False,
                    **params: Any) -> Any:
    """parse(b), then build: the same bytes. Returns the parsed value."""
    t = target(schema, format)
    obj = framework.parse(t.schema, data, format=t.format, compile=compiled, **params)
    again = framework.build(t.schema, obj, format=t.format, compile=compiled, **params)
    assert again == bytes(data), "build(parse(b)) != b"
    return obj


def check_roundtrip(what: Any, obj: Any, *, format: str | None = None, **params: Any) -> bytes:
    """:func:`roundtrip` interpreted and compiled (the same bytes from both); for a registered format, its
    codec's ``parse`` and ``build`` (what ``read`` and ``validate`` run) give those bytes back as well."""
    t = target(what, format)
    data = roundtrip(t, obj, compiled=False, **params)
    assert roundtrip(t, obj, compiled=True, **params) == data, "compiled build != interpreted build"
    if t.registered is not None:
        out = io.BytesIO()
        t.registered.build(t.registered.parse(data), out)
        assert out.getvalue() == data, f"{t.format}: the codec's build(parse(b)) != b"
    return data


def assert_truncations_fail(schema: Any, data: bytes, *, format: str | None = None, compiled: bool = False,
                            step: int = 1, whole: bool = False, **params: Any) -> None:
    """Every strict prefix of a valid file raises a FormatError naming the format (never another exception,
    never a silent short parse). ``whole=True``: a prefix may also be a whole file of its own (a table that
    runs to the end of the file, cut between records), when it builds back to exactly its bytes."""
    t = target(schema, format)
    for n in range(0, len(data), step):
        try:
            got = framework.parse(t.schema, data[:n], format=t.format, compile=compiled, **params)
        except FormatError as e:
            assert e.format == t.format, f"{e!r} does not name {t.format}"
            continue
        if whole and framework.build(t.schema, got, format=t.format, compile=compiled, **params) == data[:n]:
            continue
        raise AssertionError(f"{t.format}: the first {n} of {len(data)} bytes parse without an error")
