"""A JSON text as a field (safetensors' header), kept byte-exact when read and written back unchanged."""

from __future__ import annotations

import json
import struct
from typing import Any

import construct as cs

from ..errors import BuildError, ValueMismatchError
from .fields import _LEN_FORMATS, Checked, decode_utf8, evaluate
from .located import check_length, fail, tell


class JSONObject(dict):
    """A JSON object read from a file; ``raw`` holds its bytes, written back as they are while the object is
    unchanged."""

    raw: bytes | None = None


class JSONArray(list):
    """A JSON array read from a file; ``raw`` holds its bytes (see :class:`JSONObject`)."""

    raw: bytes | None = None


_KEPT = {dict: JSONObject, list: JSONArray}


def compact(value: Any) -> str:
    """JSON without spaces, non-ASCII characters as themselves (serde_json's ``to_string``)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


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
        self._prefix = struct.Struct(_LEN_FORMATS[length]) if isinstance(length, str) else None
        self.top = top
        self.limit = limit
        self.align = align
        self.pad = pad
        self.dumps = dumps

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = tell(stream) or 0
        if self._prefix is not None:
            check_length(stream, self._prefix.size, path, "the JSON length")
            (n,) = self._prefix.unpack(stream.read(self._prefix.size))
        else:
            n = int(evaluate(self.length, context))
        at = tell(stream) or 0
        if self.limit is not None and n > self.limit:
            raise fail(path, start, f"JSON text of {n} bytes is longer than the {self.limit} allowed",
                       ValueMismatchError, found=n)
        check_length(stream, n, path, "JSON text")
        raw = stream.read(n)
        text = decode_utf8(raw, "strict", path, at)
        value = self._loads(text, path, at)
        if type(value) is not self.top:
            raise fail(path, at, f"the JSON text holds a {type(value).__name__}, not a {self.top.__name__}",
                       ValueMismatchError)
        kept = _KEPT[self.top](value)
        kept.raw = bytes(raw)
        return kept

    @staticmethod
    def _loads(text: str, path: str, at: int) -> Any:
        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            out = dict(items)
            if len(out) != len(items):
                keys = [k for k, _ in items]
                twice = next(k for i, k in enumerate(keys) if k in keys[:i])
                raise fail(path, at, f"key {twice!r} appears twice in one JSON object", ValueMismatchError,
                           found=twice)
            return out

        def constant(name: str) -> None:
            raise fail(path, at + text.encode("utf-8").find(name.encode()), f"{name} is not JSON",
                       ValueMismatchError)

        try:
            return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
        except json.JSONDecodeError as e:
            offset = at + len(text[: e.pos].encode("utf-8"))
            raise fail(path, offset, f"invalid JSON: {e.msg}", ValueMismatchError) from None
        except RecursionError:
            raise fail(path, at, "JSON nested too deeply", ValueMismatchError) from None

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
