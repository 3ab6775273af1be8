"""The word-vector formats as the registry sees them before the codec is imported: names, extensions,
priorities and sniffers (standard library only, so that telling a file's format imports no numpy)."""

from __future__ import annotations

import functools
import re
from typing import Any

from ...registry import Sniffer
from ...schemas.identity import LEADER_MAGIC

# (compiled by re's cache when a sniffer first runs, not when sniffing a file of another format imports this)
_HEADER = rb"\A[ \t]*(\d+)[ \t]+(\d+)[ \t]*\r?\n"
_NUMBER = rb"\A[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|-?Infinity|Inf)\Z"
_compiled = functools.cache(re.compile)


def _is_text_line(line: bytes, dim: int | None = None) -> bool:
    """``word v1 ... vD`` with decimal numbers (exponent and integer forms accepted)."""
    line = line.rstrip(b" \r\t")
    parts = line.split(b" ")
    if len(parts) < 2 or not parts[0]:
        return False
    if dim is not None and len(parts) - 1 != dim:
        return False
    number = _compiled(_NUMBER).match
    return all(number(p) for p in parts[1:])


def _lines(head: bytes, n: int) -> list[bytes]:
    lines = head.split(b"\n")
    complete = lines[:-1] if len(head) >= 65536 else lines
    return [x for x in complete[:n] if x or len(complete) <= n]


def sniff_leader(head: bytes) -> bool:
    return head[:8] == LEADER_MAGIC.to_bytes(8, "little")


def _header(head: bytes) -> tuple[int, int, int] | None:
    m = _compiled(_HEADER).match(head)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), m.end()


def sniff_w2v_binary(head: bytes) -> bool:
    h = _header(head)
    if h is None:
        return False
    count, dim, pos = h
    if count == 0:
        return len(head) == pos
    while pos < len(head) and head[pos] == 10:
        pos += 1
    sp = head.find(b" ", pos)
    if sp <= pos:
        return False
    end = sp + 1 + 4 * dim
    if len(head) >= end and _is_text_line(head[pos:end].split(b"\n", 1)[0], dim):
        return False  # the record reads as a text line: a text file
    return not _is_text(head, pos)  # a text file whose lines are shorter than its header says: damaged text


def _is_text(head: bytes, pos: int) -> bool:
    """From ``pos`` on, ``head`` is UTF-8 text (no NUL) and its first line reads ``word numbers...``, of any
    count: float32 rows almost never do (negative numbers and most exponents are bytes UTF-8 refuses)."""
    body = head[pos:]
    if b"\x00" in body or not _is_text_line(body.split(b"\n", 1)[0]):
        return False
    try:
        body[: body.rfind(b"\n") + 1 if len(head) >= 65536 else len(body)].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def resembles_w2v_text(head: bytes) -> bool:
    """A header line, then text lines of numbers, however many each holds (a damaged word2vec text file)."""
    h = _header(head)
    return h is not None and _is_text(head, h[2])


def resembles_glove(head: bytes) -> bool:
    """Text lines of numbers, however many each holds (a damaged GloVe file)."""
    return _header(head) is None and _is_text(head, 0)


def sniff_w2v_text(head: bytes) -> bool:
    h = _header(head)
    if h is None:
        return False
    count, dim, pos = h
    rest = _lines(head[pos:], 1)
    if count == 0:
        return not head[pos:].strip()
    return bool(rest) and _is_text_line(rest[0], dim)


def sniff_glove(head: bytes) -> bool:
    lines = [x for x in _lines(head, 3) if x.strip()]
    if not lines or b"\x00" in head[:4096]:
        return False
    try:
        lines[0].decode("utf-8")
    except UnicodeDecodeError:
        if len(head) > 65536 - 8:  # a multibyte character cut at the end of the head is fine
            pass
        else:
            return False
    width = len(lines[0].rstrip(b" \r\t").split(b" ")) - 1
    return all(_is_text_line(x, width) for x in lines)


def quick_w2v_text(buf: Any, **options: Any) -> dict[str, Any] | None:
    from .quick import summary

    return summary(buf, header=True, **options)


def quick_glove(buf: Any, **options: Any) -> dict[str, Any] | None:
    from .quick import summary

    return summary(buf, header=False, **options)


LEADER = Sniffer("leader", (".leader",), sniff_leader, priority=0)
WORD2VEC_BINARY = Sniffer("word2vec-binary", (".bin", ".w2v"), sniff_w2v_binary, priority=60)
WORD2VEC_TEXT = Sniffer("word2vec-text", (".txt", ".vec", ".w2v-text"), sniff_w2v_text, priority=55,
                        resembles=resembles_w2v_text, quick_inspect=quick_w2v_text)
GLOVE = Sniffer("glove", (".glove",), sniff_glove, priority=70, resembles=resembles_glove,
                quick_inspect=quick_glove)
FORMATS = (LEADER, WORD2VEC_BINARY, WORD2VEC_TEXT, GLOVE)
