"""Errors located at a field: construct's path as ``vocab.words[3]``, the byte offset, and length checks
that run before anything is allocated."""

from __future__ import annotations

import re
import warnings
from typing import TYPE_CHECKING, Any

from ..errors import FormatError, TruncatedError, ValueMismatchError
from .streams import remaining

if TYPE_CHECKING:  # (construct is imported where a failure is translated: a read served by a cached plan,
    import construct as cs  # which uses fail and check_length, imports none)

# patterns as text: re compiles (and caches) one when an error needs it, not when a read imports this module
_PATH_SEP = r"\s*->\s*"


def dotted(path: str | None) -> str:
    """construct's ``(parsing) -> vocab -> vocab -> words`` as ``vocab.words``."""
    if not path:
        return ""
    parts = [p for p in re.split(_PATH_SEP, path) if p and not p.startswith("(") and p != "None"]
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


_CONST = r"(?s)expected (.+) but parsed (.+)\Z"
_UNFIT = r"(?s)struct '([<>=!@]?\w)' error during building, given value (.+)\Z"
# struct's format letters as people write the types (errors and the docs pages)
SCALAR_NAMES = {"B": "u8", "H": "u16", "I": "u32", "L": "u32", "Q": "u64", "b": "i8", "h": "i16", "i": "i32",
                "l": "i32", "q": "i64", "e": "f16", "f": "f32", "d": "f64", "?": "bool"}
_SHORT = r"stream read less than specified amount, expected (\d+), found (\d+)\Z"

# the words that open the message of an error raised by numpy, construct or Python inside a reader rather than
# by a check of ours: wvformats lacks a check for that input (a bug to report); the fuzz tests look for them
UNCHECKED = "unchecked input:"


def _const_size(schema: cs.Construct | None, path: str | None) -> int | None:
    """The byte size of the Const field at dotted ``path`` of ``schema`` (None when it cannot be told)."""
    import construct as cs

    con = schema
    for name in (path or "").split("."):
        name = name.split("[", 1)[0]
        con = unwrapped(con) if con is not None else None
        con = next((c for c in getattr(con, "subcons", []) if getattr(c, "name", None) == name), None)
    con = unwrapped(con) if con is not None else None
    if not isinstance(con, cs.Const):
        return None
    try:
        return int(con.subcon.sizeof())
    except (cs.SizeofError, TypeError):
        return None


def translate(e: BaseException, stream: Any, format: str, schema: cs.Construct | None = None) -> FormatError:
    import construct as cs

    path = dotted(getattr(e, "path", None)) or None
    offset = tell(stream)
    if isinstance(e, cs.ConstError) and (m := re.search(_CONST, str(e))):
        # construct has read the field when it compares: name where it starts, and what it holds
        size = _const_size(schema, path)
        start = offset - size if offset is not None and size is not None else offset
        return ValueMismatchError("constant field does not match", format=format, path=path, offset=start,
                                  expected=_literal(m.group(1)), found=_literal(m.group(2)))
    message = str(e)
    if isinstance(e, cs.ConstructError):
        # construct prefixes "Error in path ... |"; the path is ours to print
        message = message.split("\n")[-1].split(" | ", 1)[-1].strip()
    if isinstance(e, cs.StreamError) and (m := re.search(_SHORT, message)):
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
    if isinstance(e, cs.FormatFieldError) and (m := re.search(_UNFIT, message)):
        # a number the field cannot hold (a negative count into an unsigned field, a value past its width)
        kind = SCALAR_NAMES.get(m.group(1)[-1], m.group(1))
        return ValueMismatchError(f"{m.group(2)} does not fit the field ({kind})", format=format, path=path,
                                  offset=offset, found=_literal(m.group(2)))
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
        import ast

        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def unwrapped(c: cs.Construct) -> cs.Construct:
    import construct as cs

    while isinstance(c, (cs.Renamed, cs.Transformed, cs.Restreamed)) or type(c).__name__ == "Compiled":
        c = c.subcon
    return c



_tell = tell  # the name before the framework's API was declared (see fields.py)
