"""Errors located at a field: construct's path as ``vocab.words[3]``, the byte offset, and length checks
that run before anything is allocated."""

from __future__ import annotations

import re
import warnings
from typing import Any

from ..errors import FormatError, TruncatedError, ValueMismatchError
from .streams import remaining

_PATH_SEP = re.compile(r"\s*->\s*")


def dotted(path: str | None) -> str:
    """construct's ``(parsing) -> vocab -> vocab -> words`` as ``vocab.words``."""
    if not path:
        return ""
    parts = [p for p in _PATH_SEP.split(path) if p and not p.startswith("(") and p != "None"]
    out: list[str] = []
    for p in parts:
        # "name" / X * "doc" nests two Renamed with one name; a table appends "[i]" to its own name
        if out and (p == out[-1] or p.startswith((out[-1] + "[", out[-1] + "."))):
            out.pop()
        out.append(p)
    return ".".join(out).replace(".[", "[")


def fail(
    path: str | None,
    offset: int | None,
    message: str,
    cls: type[FormatError] = FormatError,
    **kw: Any,
) -> FormatError:
    """A FormatError for a field at construct path ``path``; raise the result."""
    return cls(message, path=dotted(path) or None, offset=offset, **kw)


def warn(context: Any, path: str | None, offset: int | None, message: str, cls: type[Warning]) -> None:
    """Warn about a field that is read although it looks doubtful, located like a FormatError."""
    params = getattr(context, "_params", None) or {}
    located = FormatError(message, format=params.get("_format"), path=dotted(path) or None, offset=offset)
    warnings.warn(cls(str(located)), stacklevel=3)


def tell(stream: Any) -> int | None:
    """The stream's position, or None when it cannot tell (for the offset of an error)."""
    try:
        return int(stream.tell())
    except Exception:
        return None


def check_length(stream: Any, nbytes: int, path: str, what: str) -> None:
    """Raise TruncatedError unless ``nbytes`` more bytes remain; runs before any allocation."""
    left = remaining(stream)
    if nbytes < 0:
        raise fail(path, tell(stream), f"negative length for {what}", ValueMismatchError, found=nbytes)
    if left is not None and nbytes > left:
        raise fail(
            path,
            tell(stream),
            f"{what} needs {nbytes} bytes but only {left} remain",
            TruncatedError,
        )




_tell = tell  # the name before the framework's API was declared (see fields.py)
