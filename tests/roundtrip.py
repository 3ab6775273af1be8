"""The one round-trip helper every schema test uses, in interpreted and compiled construct mode."""

from __future__ import annotations

from typing import Any

import construct as cs
import numpy as np
import pytest

from wvformats import framework
from wvformats.errors import FormatError

MODES = pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])


def equal(a: Any, b: Any) -> bool:
    """Structural equality; arrays compare bit for bit (NaN payloads and -0.0 included)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, dict) and isinstance(b, dict):
        ka = {k for k in a if not str(k).startswith("_")}
        kb = {k for k in b if not str(k).startswith("_")}
        # a None in the built object marks a field computed while building (padding): any parsed value fits
        return ka == kb and all(b[k] is None or equal(a[k], b[k]) for k in ka)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def roundtrip(schema: cs.Construct, obj: Any, *, format: str, compiled: bool, **params: Any) -> bytes:
    """build(obj) -> bytes; parse(bytes) == obj; build(parse(bytes)) == bytes. Returns the bytes."""
    data = framework.build(schema, obj, format=format, compile=compiled, **params)
    back = framework.parse(schema, data, format=format, compile=compiled, **params)
    assert equal(back, obj), f"parse(build(x)) != x:\n{back}\n!=\n{obj}"
    again = framework.build(schema, back, format=format, compile=compiled, **params)
    assert again == data, "build(parse(b)) != b"
    return data


def bytes_roundtrip(schema: cs.Construct, data: bytes, *, format: str, compiled: bool) -> Any:
    """parse(b) then build: the same bytes."""
    obj = framework.parse(schema, data, format=format, compile=compiled)
    assert framework.build(schema, obj, format=format, compile=compiled) == bytes(data)
    return obj


def assert_truncations_fail(schema: cs.Construct, data: bytes, *, format: str, compiled: bool,
                            step: int = 1) -> None:
    """Every strict prefix of a valid file raises FormatError (never another exception)."""
    for n in range(0, len(data), step):
        with pytest.raises(FormatError) as info:
            framework.parse(schema, data[:n], format=format, compile=compiled)
        assert info.value.format == format
