"""Many strings at once: decoding byte spans with a few vectorised passes, and :class:`StringTable`, a
table of length-prefixed UTF-8 strings parsed by one tight, checked loop."""

from __future__ import annotations

import struct
from typing import Any

import construct as cs
import numpy as np

from ..errors import BuildError, TruncatedError, ValueMismatchError
from .fields import LEN_FORMATS, Checked, decode_utf8, encode_utf8, evaluate
from .located import check_length, fail, tell
from .records import pack_records, prefixed_starts
from .streams import release, window


def decode_all(raws: list[Any], errors: str, path: str, offsets: Any, field: str = ".word", lo: int = 0) -> list[str]:
    """Decode many words at once when they can be joined safely, else one by one (naming the bad one: record
    ``lo + i``, ``offsets(i)`` its byte offset)."""
    blob = b"\x00".join(raws)
    if errors == "strict" and blob.count(0) == max(len(raws) - 1, 0):
        try:
            return blob.decode("utf-8").split("\x00") if raws else []
        except UnicodeDecodeError:
            pass
    out = []
    for i, raw in enumerate(raws):
        try:
            out.append(str(raw, "utf-8", errors))
        except UnicodeDecodeError as e:
            raise fail(f"{path}[{lo + i}]{field}", int(offsets(i)) + e.start, f"invalid UTF-8: {e.reason}",
                       ValueMismatchError, found=bytes(raw[e.start : e.end])) from None
    return out


# words gathered per pass by decode_spans: its index temporaries stay near 0.5 MB (freeing a bigger one raises
# glibc's mmap threshold past it, and the later arrays and dicts below it then stay in the heap once freed)
_SPAN_CHUNK = 1 << 13


def _gather_spans(buf: Any, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of the spans ``[starts, starts + lens)`` of ``buf`` joined into one array, and where each
    span starts in it; a chunk of spans at a time, letting go of the pages read."""
    n = len(starts)
    u8 = np.frombuffer(buf, np.uint8)
    first = np.cumsum(lens) - lens  # offset of each span inside the blob
    blob = np.empty(int(lens.sum()), np.uint8)
    ordered = bool((starts[1:] >= starts[:-1]).all())
    for a in range(0, n, _SPAN_CHUNK):
        b = min(n, a + _SPAN_CHUNK)
        lo, hi = int(first[a]), int(first[b - 1] + lens[b - 1])
        blob[lo:hi] = u8[np.repeat(starts[a:b] - first[a:b], lens[a:b]) + np.arange(lo, hi, dtype=np.int64)]
        if ordered:
            release(buf, int(starts[b - 1]))
    return blob, first


def decode_spans(buf: Any, starts: np.ndarray, ends: np.ndarray, errors: str, path: str,
                 base: int, field: str = ".word", sep: bytes | None = None, lo: int = 0) -> list[str]:
    """Decode the words at byte spans [starts, ends) of ``buf`` with a few vectorised passes.

    The word bytes are gathered into one blob and decoded once; each word's character count (bytes that
    are not UTF-8 continuation bytes) then slices the decoded text. A word that starts with a continuation
    byte, or a blob that does not decode, falls back to per-word decoding, which names the bad word.
    ``sep``: a one-byte ASCII separator that the byte at every ``ends[i]`` is and no word holds (the space
    after a word2vec word); the words are then gathered with it and ``str.split`` cuts them. ``lo``: the
    index of the first span's record (a bad word is named by its record's index).
    """
    n = len(starts)
    if n == 0:
        return []
    # (surrogate escapes decode byte by byte: an ASCII separator cuts the words as apart, as for strict)
    joinable = errors in ("strict", "surrogateescape")
    if sep is not None and joinable:
        blob = _gather_spans(buf, starts, ends + 1 - starts)[0]
        try:
            text = str(memoryview(blob)[:-1], "utf-8", errors)  # (no bytes copy)
            del blob  # (the bytes let go before the words are made: they and the text peak together)
            words = text.split(sep.decode("ascii"))
            del text
        except UnicodeDecodeError:
            words = []  # the general path below names the bad word
        if len(words) == n:  # (a word holding the separator would cut into two: the general path then)
            return words
    lens = ends - starts
    total = int(lens.sum())
    blob, first = _gather_spans(buf, starts, lens)
    if joinable and n > 1 and not (blob == 10).any():
        # no word holds a newline: put one between the words, decode once and let str.split cut them (a
        # word that is not UTF-8 on its own fails the decode, whatever its neighbours)
        try:
            return np.insert(blob, first[1:], 10).tobytes().decode("utf-8", errors).split("\n")
        except UnicodeDecodeError:
            pass
    lead = (blob & 0xC0) != 0x80
    nonempty = lens > 0
    if errors == "strict" and bool(lead[first[nonempty]].all()):
        try:
            text = blob.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            if len(text) == total:  # all ASCII: byte offsets are character offsets
                cuts = np.cumsum(lens).tolist()
            else:
                chars = np.add.reduceat(lead, first[nonempty]) if total else np.zeros(0, np.int64)
                clens = np.zeros(n, np.int64)
                clens[nonempty] = chars
                cuts = np.cumsum(clens).tolist()
            return [text[a:b] for a, b in zip([0, *cuts[:-1]], cuts, strict=True)]
    mv = memoryview(buf)
    return decode_all([mv[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)], errors, path,
                      lambda i: base + int(starts[i]), field, lo)



class StringTable(Checked):
    """``count`` length-prefixed UTF-8 strings back to back, parsed by one tight, checked loop.

    Errors name the index (``words[1234]``) and the byte offset. Parses from a buffer without copying it.
    """

    def __init__(self, count: Any, length: str = "u32", index: str | None = None) -> None:
        super().__init__()
        self.count = count
        self.length = length
        self._fmt = struct.Struct(LEN_FORMATS[length])
        # index="u64": every string is followed by an integer; parsed as Container(strings, indices)
        self.index = index
        self._ifmt = struct.Struct(LEN_FORMATS[index]) if index else None

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        count = int(evaluate(self.count, context))
        start = stream.tell()
        width = self._fmt.size
        if count < 0:
            raise fail(path, start, "negative string count", ValueMismatchError, found=count)
        # every string needs at least its length field
        check_length(stream, count * width, path, f"{count} strings")
        buf, base = window(stream)
        unpack = self._fmt.unpack_from
        end = len(buf)
        pos = start - base
        if width == 4 and not self._ifmt:  # the common table: vectorised offsets, one decode
            starts, n, pos = prefixed_starts(buf, pos, end, count, path, base)
            out = decode_spans(buf, starts + 4, starts + 4 + n, "strict", path, base, field="")
            stream.seek(base + pos)
            return out
        out: list[str] = []
        append = out.append
        indices: list[int] = []
        iw = self._ifmt.size if self._ifmt else 0
        for i in range(count):
            if pos + width > end:
                raise fail(f"{path}[{i}]", base + pos, "string length", TruncatedError)
            (n,) = unpack(buf, pos)
            pos += width
            if pos + n + iw > end:
                raise fail(f"{path}[{i}]", base + pos, f"string needs {n + iw} bytes but only {end - pos} remain",
                           TruncatedError)
            try:
                append(str(buf[pos : pos + n], "utf-8"))
            except UnicodeDecodeError:
                append(decode_utf8(buf[pos : pos + n], "strict", f"{path}[{i}]", base + pos))
            pos += n
            if iw:
                indices.append(self._ifmt.unpack_from(buf, pos)[0])
                pos += iw
        stream.seek(base + pos)
        if self._ifmt:
            return cs.Container(strings=out, indices=np.array(indices, dtype=np.uint64))
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        count = int(evaluate(self.count, context))
        strings = obj["strings"] if self._ifmt else obj
        indices = [int(x) for x in obj["indices"]] if self._ifmt else None
        if len(strings) != count or indices is not None and len(indices) != count:
            raise fail(path, tell(stream), "string count does not match its header", BuildError,
                       expected=count, found=len(obj))
        done = 0
        if self._fmt.size == 4 and not self._ifmt:  # vectorised up to a string only the loop can judge
            done = pack_records(strings, np.zeros((count, 0), np.uint8), stream, length_prefix=True)
        pack = self._fmt.pack
        limit = 1 << (8 * self._fmt.size)
        parts = []
        for i, s in enumerate(strings[done:], done):
            raw = encode_utf8(s, f"{path}[{i}]", stream)
            if len(raw) >= limit:
                raise fail(f"{path}[{i}]", tell(stream), "string too long for its length field", BuildError)
            parts.append(pack(len(raw)))
            parts.append(raw)
            if indices is not None:
                parts.append(self._ifmt.pack(indices[i]))
        stream.write(b"".join(parts))
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)


