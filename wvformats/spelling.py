"""How words are spelt as bytes: the encoding a file's words are in (any that spells ASCII as ASCII bytes),
words read as bytes (UTF-8, surrogate escapes for the bytes that are not) and decoded from it, and the words a
writer writes."""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .errors import BuildError, OptionError


def word_encoding(encoding: str | None) -> str | None:
    """The codec name of ``encoding``, the words' encoding of a file (None for UTF-8, which words are read as),
    refusing one that does not spell ASCII as ASCII bytes (UTF-16, UTF-32): the formats end words at a NUL,
    a space or a newline byte."""
    if encoding is None:
        return None
    try:
        name = codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise OptionError(f"unknown encoding {encoding!r}") from None
    if name == "utf-8":
        return None
    probe = "".join(map(chr, range(128)))
    try:
        ascii_safe = probe.encode(name) == probe.encode("ascii")
    except (UnicodeError, LookupError):
        ascii_safe = False
    if not ascii_safe:
        raise OptionError(f"encoding {encoding!r} does not spell ASCII as ASCII bytes: words end at a NUL, space or "
                          "newline byte, so their encoding is an ASCII-compatible one (cp852, latin-1, cp1251, ...)")
    return name


def as_read(words: Iterable[str], encoding: str | None) -> list[str]:
    """Words (or lines) as the bytes they are in ``encoding`` (a :func:`word_encoding` name), spelt as files
    are read when their words are taken as bytes: UTF-8, surrogate escapes for the bytes that are not (the
    inverse of :func:`decoded`). UnicodeEncodeError for a character the encoding lacks."""
    if encoding is None:
        return list(words)
    return [w if w.isascii() else w.encode(encoding, "surrogateescape").decode("utf-8", "surrogateescape")
            for w in words]


def decoded(raw: str, encoding: str, errors: str = "strict") -> str:
    """A word read as bytes (:func:`as_read`'s spelling) decoded from ``encoding``."""
    return raw if raw.isascii() else raw.encode("utf-8", "surrogateescape").decode(encoding, errors)


def decoded_all(raws: Sequence[str], encoding: str, errors: str,
                fail: Callable[[int, UnicodeDecodeError], Exception]) -> list[str]:
    """:func:`decoded` of many words: joined by newlines and decoded at once when none holds one, else (or when
    that fails) one by one, raising ``fail(index, error)`` for the first word that does not decode."""
    joined = "\n".join(raws)
    if raws and joined.count("\n") == len(raws) - 1:
        try:
            out = joined.encode("utf-8", "surrogateescape").decode(encoding, errors).split("\n")
        except UnicodeDecodeError:
            out = []
        if len(out) == len(raws):
            return out
    words = []
    for i, w in enumerate(raws):
        try:
            words.append(decoded(w, encoding, errors))
        except UnicodeDecodeError as e:
            raise fail(i, e) from None
    return words


def spells(word: str, encoding: str | None) -> bool:
    """``word`` can be written in ``encoding``."""
    try:
        as_read([word], encoding)[0].encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def written_words(emb: Any, to_encoding: str | None, path: str) -> list[str]:
    """The words of ``emb`` as the bytes a writer writes (:func:`as_read`'s spelling): in ``to_encoding``, else
    in the encoding they were read in (``emb.encoding``), else UTF-8. A word the encoding cannot spell is a
    BuildError naming it (``path``: where the format keeps its words)."""
    encoding = word_encoding(to_encoding or getattr(emb, "encoding", None))
    try:
        words = as_read(emb.words, encoding)
        if encoding is None:  # a lone surrogate (one no file's bytes gave) has no UTF-8: one encode finds it
            "\n".join(words).encode("utf-8", "surrogateescape")
        return words
    except UnicodeEncodeError as e:
        i = next(i for i, w in enumerate(emb.words) if not spells(w, encoding))
        raise BuildError(f"word {i} ({emb.words[i]!r}) cannot be written in {encoding or 'UTF-8'}: {e.reason}",
                         path=f"{path}[{i}]") from None
