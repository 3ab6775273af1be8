"""A JSON text as a field (safetensors' header), kept byte-exact when read and written back unchanged."""

from __future__ import annotations

import json
import re
import struct
import sys
from typing import Any

import construct as cs

from ..errors import BuildError, ValueMismatchError
from .fields import LEN_FORMATS, Checked, decode_utf8, evaluate
from .located import check_length, fail, tell


class JSONObject(dict):
    """A JSON object read from a file; ``raw`` holds its bytes, written back as they are while the object is
    unchanged."""

    raw: bytes | None = None


class JSONArray(list):
    """A JSON array read from a file; ``raw`` holds its bytes (see :class:`JSONObject`)."""

    raw: bytes | None = None


_KEPT = {dict: JSONObject, list: JSONArray}


class _Repeated(Exception):
    """A key given twice in one object, found while the text is parsed."""


_WS = re.compile(r"[ \t\n\r]*")


def first_repeated_key(text: str) -> tuple[str, int] | None:
    """The first key, in text order, that an object of the JSON ``text`` gives twice, and the character
    position of its second occurrence; None when there is none (or the text is not JSON). One pass: the
    strings and numbers by json's own scanner, the keys of each open object in a set."""
    scan = json.JSONDecoder().scan_once
    ws = _WS.match
    keys: list[set[str] | None] = []  # of each open container: an object's keys so far, None for an array
    i = ws(text, 0).end()
    want_key = False
    try:
        while True:
            if want_key:
                key, after = json.decoder.scanstring(text, i + 1)
                seen = keys[-1]
                assert seen is not None  # (keys are read in objects only)
                if key in seen:
                    return key, i
                seen.add(key)
                i = ws(text, ws(text, after).end() + 1).end()  # (past the colon)
            if text[i] in "{[":
                opened = text[i]
                i = ws(text, i + 1).end()
                if text[i] not in "}]":
                    keys.append(set() if opened == "{" else None)
                    want_key = opened == "{"
                    continue
                i += 1
            else:
                i = scan(text, i)[1]
            while True:  # after a value: the next item, or the end of containers
                if not keys:
                    return None
                i = ws(text, i).end()
                if text[i] == ",":
                    i = ws(text, i + 1).end()
                    want_key = keys[-1] is not None
                    break
                keys.pop()
                i += 1
    except (IndexError, ValueError, StopIteration):  # (not JSON where the parse left it)
        return None


def _bytes_before(text: str, pos: int) -> int:
    """The UTF-8 byte length of ``text[:pos]``: a character position as a byte offset."""
    return len(text[:pos].encode("utf-8"))


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
        self._prefix = struct.Struct(LEN_FORMATS[length]) if isinstance(length, str) else None
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
                raise _Repeated()  # (which key, and where: first_repeated_key)
            return out

        def constant(name: str) -> None:
            raise fail(path, at + text.encode("utf-8").find(name.encode()), f"{name} is not JSON",
                       ValueMismatchError)

        def integer(digits: str) -> int:
            limit = sys.get_int_max_str_digits()  # (0: none; int() refuses more with a ValueError of its own)
            if limit and len(digits.lstrip("-")) > limit:
                raise fail(path, at + len(text[: text.find(digits)].encode("utf-8")), f"a number of "
                           f"{len(digits.lstrip('-'))} digits (more than the {limit} Python reads)",
                           ValueMismatchError)
            return int(digits)

        try:
            return json.loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_int=integer)
        except json.JSONDecodeError as e:
            raise fail(path, at + _bytes_before(text, e.pos), f"invalid JSON: {e.msg}", ValueMismatchError) from None
        except RecursionError:
            raise fail(path, at, "JSON nested too deeply", ValueMismatchError) from None
        except _Repeated:
            key, pos = first_repeated_key(text) or ("?", 0)  # (the text parsed up to the repeat: it finds it)
            raise fail(path, at + _bytes_before(text, pos), f"key {key!r} appears twice in one JSON object",
                       ValueMismatchError, found=key) from None

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
