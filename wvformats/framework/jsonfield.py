"""A JSON text as a field (safetensors' header), kept byte-exact when read and written back unchanged."""

from __future__ import annotations

import json
import struct
from typing import Any

import construct as cs

from ..errors import BuildError
from .fields import LEN_FORMATS, Checked, evaluate
from .located import fail, tell
from .plain import JSONArray, JSONObject, compact, first_repeated_key, read_json  # noqa: F401 - (their names here too)


class JSONField(Checked):
    """A UTF-8 JSON text whose top-level value is a ``top`` (``dict`` or ``list``).

    ``length``: ``"u8"``, ``"u16"``, ``"u32"`` or ``"u64"`` for a little-endian byte count stored just before
    the text (part of this field; written from the text's size), or an int or ``this`` expression for a
    count stored elsewhere (a build checks it unless it is None). ``limit``: the largest text read (a longer
    one is refused before it is read).

    Parsed as a :class:`JSONObject` (a dict) or :class:`JSONArray` (a list) remembering its bytes: built
    back unchanged, the field writes those bytes, whatever their spacing, key order, escapes, number
    spellings or padding. A changed or new value is written by ``dumps`` (:func:`compact` by default), then
    ``pad`` bytes up to a multiple of ``align`` of the absolute position where the text ends (JSON allows
    trailing spaces). Text that is not UTF-8 or not JSON, a key given twice in one object, NaN or Infinity,
    and another top-level value are ValueMismatchErrors naming the field and the byte offset of the fault.
    """

    def __init__(self, length: Any, *, top: type = dict, limit: int | None = None, align: int = 1,
                 pad: bytes = b" ", dumps: Any = compact) -> None:
        super().__init__()
        self.length = length
        self._prefix = struct.Struct(LEN_FORMATS[length]) if isinstance(length, str) else None
        self.top = top
        self.limit = limit
        self.align = align
        self.pad = pad
        self.dumps = dumps

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        length = self.length if isinstance(self.length, str) else evaluate(self.length, context)
        return read_json(stream, length, self.limit, self.top, path)

    def plan(self) -> tuple[str, dict[str, Any]] | None:
        """The step of a cached plan (:mod:`.plans`) that reads this field: a prefixed text only."""
        if not isinstance(self.length, str):
            return None
        return "json", {"length": self.length, "limit": self.limit, "top": self.top.__name__}

    def encode(self, obj: Any, path: str, stream: Any) -> bytes:
        """The bytes of ``obj``'s text: its own where it is unchanged, else ``dumps`` and the padding."""
        if not isinstance(obj, self.top):
            raise fail(path, tell(stream), f"expected a {self.top.__name__}", BuildError, found=type(obj).__name__)
        raw = getattr(obj, "raw", None)
        if raw is not None:
            try:
                if json.loads(raw) == obj:
                    return raw
            except ValueError:  # (bytes that were never this object's)
                pass
        try:
            text = self.dumps(obj).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise fail(path, tell(stream), f"cannot be written as JSON: {e}", BuildError) from None
        if self.align > 1:
            end = (tell(stream) or 0) + (self._prefix.size if self._prefix else 0) + len(text)
            text += self.pad * (-end % self.align)
        return text

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        text = self.encode(obj, path, stream)
        if self.limit is not None and len(text) > self.limit:
            raise fail(path, tell(stream), f"JSON text of {len(text)} bytes is longer than the {self.limit} "
                       "allowed", BuildError)
        if self._prefix is not None:
            if len(text) >= 1 << (8 * self._prefix.size):
                raise fail(path, tell(stream), "JSON text too long for its length field", BuildError)
            stream.write(self._prefix.pack(len(text)))
        else:
            n = evaluate(self.length, context)
            if n is not None and int(n) != len(text):
                raise fail(path, tell(stream), "JSON text length does not match its length field", BuildError,
                           expected=int(n), found=len(text))
        stream.write(text)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)
