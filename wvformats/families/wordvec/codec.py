"""Codecs of the plain word-vector formats: Leader, word2vec binary, word2vec text, GloVe."""

from __future__ import annotations

import re
from functools import partial
from typing import Any

import construct as cs
import numpy as np

from ...embeddings import Embeddings, count_duplicates, warn_if_changed
from ...errors import BuildError
from ...registry import Format, register, schema_io
from ...schemas import wordvec as schema
from .stream import read_stream

_HEADER = re.compile(rb"\A[ \t]*(\d+)[ \t]+(\d+)[ \t]*\r?\n")
_NUMBER = re.compile(rb"\A[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|-?Infinity|Inf)\Z")


def _is_text_line(line: bytes, dim: int | None = None) -> bool:
    """``word v1 ... vD`` with decimal numbers (exponent and integer forms accepted)."""
    line = line.rstrip(b" \r\t")
    parts = line.split(b" ")
    if len(parts) < 2 or not parts[0]:
        return False
    if dim is not None and len(parts) - 1 != dim:
        return False
    return all(_NUMBER.match(p) for p in parts[1:])


def _lines(head: bytes, n: int) -> list[bytes]:
    lines = head.split(b"\n")
    complete = lines[:-1] if len(head) >= 65536 else lines
    return [x for x in complete[:n] if x or len(complete) <= n]


def sniff_leader(head: bytes) -> bool:
    return head[:8] == schema.LEADER_MAGIC.to_bytes(8, "little")


def _header(head: bytes) -> tuple[int, int, int] | None:
    m = _HEADER.match(head)
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
    return True


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


# -- codec plumbing shared by the four formats ---------------------------------------------------------------

_READ_PARAMS = ("limit", "vocab", "unicode_errors")


def _to_model(parsed: Any, *, dtype: Any = np.float32, **_: Any) -> Embeddings:
    rec = parsed["records"]
    vectors = rec["vectors"]
    if np.dtype(dtype) != vectors.dtype:
        vectors = vectors.astype(dtype)
    emb = Embeddings(rec["words"], vectors)
    emb.warn_duplicates()
    return emb


def _embeddings(obj: Any, format: str, unnormalize: bool = False) -> Embeddings:
    """The model to write; ``unnormalize=True`` multiplies rows by their stored norms (finalfusion input),
    with a warning when that changes them."""
    if isinstance(obj, tuple) and len(obj) == 2:
        obj = Embeddings(*obj)
    if not isinstance(obj, Embeddings):
        raise BuildError(f"expected Embeddings or (words, vectors), got {type(obj).__name__}", format=format)
    obj.check_parts(format)
    if unnormalize:
        if obj.norms is None:
            raise BuildError("unnormalize needs norms, and these embeddings have none", format=format)
        vectors = np.asarray(obj.vectors, np.float32)
        scaled = vectors * np.asarray(obj.norms, np.float32)[:, None]
        warn_if_changed("unnormalize", "rows multiplied by their stored norms", vectors, scaled)
        return Embeddings(obj.words, scaled)
    return obj


def _records(emb: Embeddings, **layout: Any) -> cs.Container:
    vectors = np.asarray(emb.vectors)
    if vectors.ndim != 2:
        raise BuildError(f"vectors must be 2-D, got shape {vectors.shape}")
    return cs.Container(words=emb.words, vectors=vectors, **layout)


def _leader_from(obj: Any, *, unnormalize: bool = False) -> cs.Container:
    emb = _embeddings(obj, "leader", unnormalize)
    return cs.Container(vocab_size=len(emb), dim=emb.vectors.shape[1], records=_records(emb), trailer=b"")


def _w2v_bin_from(obj: Any, *, newline: bool = False, unnormalize: bool = False) -> cs.Container:
    """``newline=True`` writes word2vec.c's ``\\n`` after every vector."""
    emb = _embeddings(obj, "word2vec-binary", unnormalize)
    n, dim = len(emb), emb.vectors.shape[1]
    gaps = None
    if newline and n > 1:  # canonical form: no array when no record has a newline before it
        gaps = np.ones(n, np.uint32)
        gaps[0] = 0
    return cs.Container(header=cs.Container(count=n, dim=dim, raw=None),
                        records=_records(emb, newlines=gaps), trailer=b"\n" if newline and n else b"")


def _layout(style: str = "repr", trailing_space: bool = False) -> cs.Container:
    if style not in ("repr", "fixed6", "g5"):
        raise BuildError(f"unknown number style {style!r}; use repr, fixed6 or g5")
    return cs.Container(style=style, trailing_space=trailing_space, crlf=False, final_newline=True)


def _w2v_text_from(obj: Any, *, style: str = "repr", trailing_space: bool = False,
                   unnormalize: bool = False) -> cs.Container:
    """``style``: "repr" (shortest float32, gensim), "fixed6" (word2vec.c), "g5" (fastText .vec)."""
    emb = _embeddings(obj, "word2vec-text", unnormalize)
    return cs.Container(header=cs.Container(count=len(emb), dim=emb.vectors.shape[1], raw=None),
                        records=_records(emb, layout=_layout(style, trailing_space)), trailer=b"")


def _glove_from(obj: Any, *, style: str = "repr", trailing_space: bool = False,
                unnormalize: bool = False) -> cs.Container:
    emb = _embeddings(obj, "glove", unnormalize)
    return cs.Container(records=_records(emb, layout=_layout(style, trailing_space)))


def _inspect(parsed: Any) -> dict[str, Any]:
    rec = parsed["records"]
    v = rec["vectors"]
    info: dict[str, Any] = {"words": len(rec["words"]), "dim": int(v.shape[1]), "dtype": v.dtype.str}
    if "header" in parsed:
        info["declared_words"] = parsed["header"]["count"]
    if "vocab_size" in parsed:
        info["declared_words"] = parsed["vocab_size"]
    if rec.get("layout") is not None:
        info["number_style"] = rec["layout"]["style"]
    if rec.get("newlines") is not None:
        info["newline_after_vectors"] = True
    trailer = parsed.get("trailer")
    if trailer:
        info["trailing_bytes"] = len(trailer)
    info["duplicates"] = count_duplicates(rec["words"])
    return info


def _check(parsed: Any) -> list[str]:
    """Problems a byte-exact round trip does not catch: bytes after the records."""
    trailer = parsed.get("trailer")
    if trailer and trailer.strip(b"\n"):
        return [f"{len(trailer)} bytes after the declared records (header count smaller than the file?)"]
    return []


def _register(name: str, ext: tuple[str, ...], desc: str, s: cs.Construct, sniff: Any, prio: int,
              from_model: Any, stream: Any = None) -> None:
    parse, build = schema_io(name, s, (*_READ_PARAMS, "dtype"))  # (text numbers parse at the dtype asked for)
    register(Format(
        name=name, extensions=ext, description=desc, schema=s, sniff=sniff, priority=prio,
        parse=parse, build=build, to_model=_to_model, from_model=from_model,
        model=Embeddings, inspect=_inspect, check=_check, read_options=(*_READ_PARAMS, "dtype"), stream=stream,
    ))


_register("leader", (".leader",), "Leader: u64 header, then u32-length-prefixed words with float32 vectors",
          schema.leader, sniff_leader, 0, _leader_from)
_register("word2vec-binary", (".bin", ".w2v"), "word2vec binary: text header, then word + space + float32 vector",
          schema.word2vec_binary, sniff_w2v_binary, 60, _w2v_bin_from)
_register("word2vec-text", (".txt", ".vec", ".w2v-text"), "word2vec text and fastText .vec: header line, "
          "then one text line per word", schema.word2vec_text, sniff_w2v_text, 55, _w2v_text_from,
          partial(read_stream, "word2vec-text"))
_register("glove", (".glove",), "GloVe text: no header, one line per word", schema.glove, sniff_glove, 70,
          _glove_from, partial(read_stream, "glove"))
