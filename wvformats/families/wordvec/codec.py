"""Codecs of the plain word-vector formats: Leader, word2vec binary, word2vec text, GloVe."""

from __future__ import annotations

from functools import partial
from typing import Any

import construct as cs
import numpy as np

from ...embeddings import Embeddings, unnormalized
from ...errors import BuildError, FormatError
from ...framework import TEXT_STYLES
from ...registry import Format, register, schema_io
from ...schemas import wordvec as schema
from ...spelling import as_read, decoded, decoded_all, spells, word_encoding, written_words
from ...words import repeats
from . import sniff
from .quick import FIRST_WORDS, SAMPLE_ROWS
from .stream import read_stream

# -- codec plumbing shared by the four formats ---------------------------------------------------------------

_READ_PARAMS = ("limit", "vocab", "unicode_errors")


def _in_encoding(read: Any) -> Any:
    """``read`` (a parse or a stream read) taking ``encoding=``: the words are read as their bytes (UTF-8 with
    surrogate escapes, ``vocab`` spelt so too) and decoded from ``encoding`` by :func:`_to_model`."""
    def reader(data: Any, *, encoding: str | None = None, **options: Any) -> Any:
        if (encoding := word_encoding(encoding)) is not None:
            options["unicode_errors"] = "surrogateescape"
            if options.get("vocab") is not None:
                options["vocab"] = set(as_read([w for w in options["vocab"] if spells(w, encoding)], encoding))
        return read(data, **options)

    return reader



def _to_model(parsed: Any, *, dtype: Any = np.float32, encoding: str | None = None,
              unicode_errors: str | None = None, **_: Any) -> Embeddings:
    """The embeddings of a parse; words read as their bytes are decoded from ``encoding`` (gensim's
    ``load_word2vec_format(encoding=, unicode_errors=)``), which the model keeps to write them in again."""
    rec = parsed["records"]
    vectors = rec["vectors"]
    if np.dtype(dtype) != vectors.dtype:
        vectors = vectors.astype(dtype)
    words = rec["words"]
    repeats = rec.get("_duplicates")  # (counted over the words' bytes by the table's kernel)
    if (encoding := word_encoding(encoding)) is not None:
        def fail(i: int, e: UnicodeDecodeError) -> FormatError:
            return FormatError(f"word {i} is not {encoding} ({e.reason}): read with unicode_errors='replace' or "
                               "'ignore'", path=f"records[{i}].word")

        words = decoded_all(words, encoding, unicode_errors or "strict", fail)
        repeats = None  # (other bytes may decode to equal words: counted again)
    emb = Embeddings(words, vectors, duplicates=repeats, copy=False)  # (the parse's own list)
    emb.encoding = encoding
    emb.warn_duplicates()
    return emb


def _embeddings(obj: Any, format: str, unnormalize: bool | None = None) -> Embeddings:
    """The model to write: rows times their stored norms when they have norms (finalfusion input), unless
    ``unnormalize=False`` (:func:`~wvformats.embeddings.unnormalized`)."""
    if isinstance(obj, tuple) and len(obj) == 2:
        obj = Embeddings(*obj)
    if not isinstance(obj, Embeddings):
        raise BuildError(f"expected Embeddings or (words, vectors), got {type(obj).__name__}", format=format)
    obj.check_parts(format)
    return unnormalized(obj, unnormalize, format)


def _records(emb: Embeddings, to_encoding: str | None, **layout: Any) -> cs.Container:
    vectors = np.asarray(emb.vectors)
    if vectors.ndim != 2:
        raise BuildError(f"vectors must be 2-D, got shape {vectors.shape}")
    return cs.Container(words=written_words(emb, to_encoding, "records"), vectors=vectors, **layout)



def _leader_from(obj: Any, *, unnormalize: bool | None = None, to_encoding: str | None = None) -> cs.Container:
    emb = _embeddings(obj, "leader", unnormalize)
    return cs.Container(vocab_size=len(emb), dim=emb.vectors.shape[1], records=_records(emb, to_encoding),
                        trailer=b"")


def _w2v_bin_from(obj: Any, *, newline: bool = False, unnormalize: bool | None = None,
                  to_encoding: str | None = None) -> cs.Container:
    """``newline=True`` writes word2vec.c's ``\\n`` after every vector; ``to_encoding`` the encoding of the words
    (default: the one they were read in, else UTF-8), as for every word-vector format."""
    emb = _embeddings(obj, "word2vec-binary", unnormalize)
    n, dim = len(emb), emb.vectors.shape[1]
    gaps = None
    if newline and n > 1:  # canonical form: no array when no record has a newline before it
        gaps = np.ones(n, np.uint32)
        gaps[0] = 0
    return cs.Container(header=cs.Container(count=n, dim=dim, raw=None),
                        records=_records(emb, to_encoding, newlines=gaps), trailer=b"\n" if newline and n else b"")


def _layout(style: str = "repr", trailing_space: bool = False) -> cs.Container:
    if style not in TEXT_STYLES:
        raise BuildError(f"unknown number style {style!r}; use {', '.join(TEXT_STYLES)}")
    return cs.Container(style=style, trailing_space=trailing_space, crlf=False, final_newline=True)


def _w2v_text_from(obj: Any, *, style: str = "repr", trailing_space: bool = False,
                   unnormalize: bool | None = None, to_encoding: str | None = None) -> cs.Container:
    """``style``: "repr" (shortest float32, gensim), "fixed6" (word2vec.c), "g5" (fastText .vec), "repr16"
    (repr as numpy before 2.3 spelt it: positional up to 1e16)."""
    emb = _embeddings(obj, "word2vec-text", unnormalize)
    return cs.Container(header=cs.Container(count=len(emb), dim=emb.vectors.shape[1], raw=None),
                        records=_records(emb, to_encoding, layout=_layout(style, trailing_space)), trailer=b"")


def _glove_from(obj: Any, *, style: str = "repr", trailing_space: bool = False,
                unnormalize: bool | None = None, to_encoding: str | None = None) -> cs.Container:
    emb = _embeddings(obj, "glove", unnormalize)
    return cs.Container(records=_records(emb, to_encoding, layout=_layout(style, trailing_space)))


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
    info.update(repeats(rec["words"]))
    return info


def _inspect_head(name: str, s: cs.Construct) -> Any:
    """The quick summary of a ``name`` file: its header and first records, never the rest of the file."""
    from ... import framework

    def inspect_head(buf: Any, *, complete: bool, unicode_errors: str | None = None, encoding: str | None = None,
                     **_: Any) -> dict[str, Any]:
        stream = framework.BufferStream(buf)
        encoding = word_encoding(encoding)
        wanted = {"unicode_errors": "surrogateescape" if encoding else unicode_errors} if unicode_errors or encoding \
            else {}
        parsed = framework.parse(s, stream, format=name, limit=SAMPLE_ROWS, **wanted)
        rec, sampled = parsed["records"], len(parsed["records"]["words"])
        info: dict[str, Any] = {}
        declared = parsed["header"]["count"] if "header" in parsed else parsed.get("vocab_size")
        if declared is not None:
            info["words"] = int(declared)  # as the header states it (--full counts the records)
        elif complete and stream.tell() >= stream.size:  # the sample is the whole file
            info["words"] = sampled
        elif complete and sampled:  # GloVe: no header; from the mean length of the sampled lines
            info["words_estimate"] = round(sampled * stream.size / stream.tell())
        else:
            info["words"] = "unknown without --full"
        info["dim"] = int(rec["vectors"].shape[1])
        info["dtype"] = rec["vectors"].dtype.str
        info["first_words"] = [decoded(w, encoding, unicode_errors or "strict") if encoding else w
                               for w in rec["words"][:FIRST_WORDS]]
        if rec.get("layout") is not None:
            info["number_style"] = rec["layout"]["style"]
        head = "header and the " if "header" in parsed or "vocab_size" in parsed else ""
        info["sampled"] = f"{head}first {sampled} records (--full: every record)"
        return info

    return inspect_head


def _check(parsed: Any) -> list[str]:
    """Problems a byte-exact round trip does not catch: bytes after the records."""
    trailer = parsed.get("trailer")
    if trailer and trailer.strip(b"\n"):
        return [f"{len(trailer)} bytes after the declared records (header count smaller than the file?)"]
    return []


def _register(found: sniff.Sniffer, desc: str, s: cs.Construct, from_model: Any, stream: Any = None) -> None:
    parse, build = schema_io(found.name, s, (*_READ_PARAMS, "dtype"))  # (text numbers parse at the dtype asked for)
    register(Format(
        **found._asdict(), description=desc, schema=s,
        parse=_in_encoding(parse), build=build, to_model=_to_model, from_model=from_model,
        model=Embeddings, inspect=_inspect, inspect_head=_inspect_head(found.name, s), check=_check,
        read_options=(*_READ_PARAMS, "dtype", "encoding"), stream=stream and _in_encoding(stream),
    ))


_register(sniff.LEADER, "Leader: u64 header, then u32-length-prefixed words with float32 vectors",
          schema.leader, _leader_from)
_register(sniff.WORD2VEC_BINARY, "word2vec binary: text header, then word + space + float32 vector",
          schema.word2vec_binary, _w2v_bin_from)
_register(sniff.WORD2VEC_TEXT, "word2vec text and fastText .vec: header line, then one text line per word",
          schema.word2vec_text, _w2v_text_from, partial(read_stream, "word2vec-text"))
_register(sniff.GLOVE, "GloVe text: no header, one line per word", schema.glove, _glove_from,
          partial(read_stream, "glove"))
