"""SentencePiece models: pieces as a sequence and as numpy columns, typed specs, lossless bytes."""

from __future__ import annotations

import bisect
import re
import warnings
from typing import Any

import numpy as np

from ...errors import FormatError
from ...framework import parse
from ...framework.protobuf import View, decode_scalar, known_field, message_fields
from ...framework.protowire import LEN, LazyMessage, encode_varint, parse_fields
from ...schemas.sentencepiece import (
    BYTE_PIECES,
    CHARSMAP_TRIE_UNIT,
    GENERATIONS,
    MAX_PIECE_BYTES,
    PIECE_TYPES,
    ModelProto,
    PieceType,
    SentencePiece,
    model_proto,
)


def parse_model_fields(data: bytes) -> Any:
    """A ModelProto's fields as the schema reads them: its leading run of pieces as columns (a
    :class:`LazyMessage`), every other field parsed now."""
    return parse(model_proto, data, format="sentencepiece")


class CharsMap:
    """A NormalizerSpec's ``precompiled_charsmap``, decoded: ``<trie size: u32 LE> <darts-clone
    double-array units: u32 LE each> <replacement strings, each ending in NUL>``.

    ``mapping()`` walks the double array (vectorised, one trie level at a time) and returns every source
    sequence with the string that replaces it, as sentencepiece's normalizer applies them (longest match).
    """

    def __init__(self, blob: bytes) -> None:
        if len(blob) < 4:
            raise FormatError("precompiled_charsmap is shorter than its 4-byte trie size",
                              format="sentencepiece", path="normalizer_spec.precompiled_charsmap", offset=0)
        size = int.from_bytes(blob[:4], "little")
        if size % 4 or size > len(blob) - 4:
            raise FormatError(f"trie size {size} does not fit the {len(blob) - 4} bytes that follow (or is not "
                              "whole units)", format="sentencepiece",
                              path="normalizer_spec.precompiled_charsmap.trie_size", offset=0)
        self.trie_size = size
        self.units = np.frombuffer(blob, "<u4", size // 4, 4)
        self.normalized = bytes(blob[4 + size :])

    @property
    def replacements(self) -> list[str]:
        """The replacement strings of the blob, in order."""
        return [x.decode("utf-8", "surrogateescape") for x in self.normalized.split(b"\0")[:-1]]

    def mapping(self) -> dict[str, str]:
        u = self.units.astype(np.int64)
        n = len(u)
        if not n:
            return {}
        label = u & ((1 << 31) | 0xFF)
        leaf = (u >> 8) & 1
        offset = (u >> 10) << ((u & (1 << 9)) >> 6)
        value = u & ((1 << 31) - 1)
        # unit j with label c (1-255) is the child c of every node whose offset is j ^ c: the units sorted by
        # that parent offset give each node's children as one slice, with no frontier x 255 candidate matrix
        j = np.flatnonzero((label >= 1) & (label <= 255))
        parent = j ^ label[j]
        order = np.argsort(parent, kind="stable")
        j, parent = j[order], parent[order]
        frontier, keys = np.array([offset[0]]), [b""]
        # darts-clone shares common subtrees (sentencepiece's charsmaps hold ~5 keys per unit), so a key count
        # far past the units is a cycle, whose walk would grow without end
        most, reached = 16 * n + (1 << 16), 0
        out: dict[str, str] = {}
        strings: dict[int, str] = {}
        for _ in range(256):  # a key is at most as deep as the longest source sequence
            if not frontier.size:
                break
            lo, hi = np.searchsorted(parent, frontier), np.searchsorted(parent, frontier, "right")
            counts = hi - lo
            reached += int(counts.sum())
            if reached > most:  # checked before the level is made
                raise FormatError(f"the trie of {n} units expands into more than {most} keys (a cycle)",
                                  format="sentencepiece", path="normalizer_spec.precompiled_charsmap")
            fi = np.repeat(np.arange(len(frontier)), counts)
            child = j[lo[fi] + np.arange(len(fi)) - np.repeat(np.cumsum(counts) - counts, counts)]
            nxt = child ^ offset[child]
            if nxt.size and int(nxt.max()) >= n:  # a corrupt trie: its units point outside it
                raise FormatError(f"the trie points at unit {int(nxt.max())} of {n}", format="sentencepiece",
                                  path="normalizer_spec.precompiled_charsmap")
            keys = [keys[f] + bytes((c,)) for f, c in zip(fi.tolist(), label[child].tolist(), strict=True)]
            for k, at in zip(keys, np.where(leaf[child] == 1, value[nxt], -1).tolist(), strict=True):
                if at >= 0:
                    if at not in strings:  # a few thousand replacements serve a few hundred thousand keys
                        end = self.normalized.find(b"\0", at)
                        strings[at] = self.normalized[at : end if end >= 0 else None].decode("utf-8",
                                                                                              "surrogateescape")
                    out[k.decode("utf-8", "surrogateescape")] = strings[at]
            frontier = nxt
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"trie_size": self.trie_size, "trie_units": len(self.units),
                "replacements": len(self.replacements), "normalized_bytes": len(self.normalized)}


class SentencePieceModel:
    """A ``tokenizer.model``: ``pieces`` (piece, score, type per id), trainer/normalizer specs as views.

    Holds the file's wire fields, so writing it back reproduces the input byte for byte. Built from a
    :class:`LazyMessage` (what the codec parses), the pieces come from one vectorised pass and the field
    dicts are only made when something asks for ``fields``.
    """

    def __init__(self, fields: Any, generation: str | None = None) -> None:
        self._msg = fields
        self.generation = generation
        self.proto = View(ModelProto if generation is None else GENERATIONS[generation], fields, "model",
                          "sentencepiece")
        cols = getattr(fields, "columns", None)  # the leading run of pieces, as columns
        raw = [f["value"] for f in (fields.rest if cols is not None else fields)
               if f["number"] == 1 and f["wire_type"] == LEN]
        pieces, types = [], np.ones(len(raw), np.int32)
        score_bytes = [b"\0\0\0\0"] * len(raw)  # raw f32 bits: a signalling NaN stays as it was
        for i, data in enumerate(raw):
            sub, _, _ = parse_fields(data, 0, len(data), f"pieces[{i + (len(cols) if cols else 0)}]", 0)
            piece = ""
            for f in sub:  # last occurrence wins; what protobuf keeps as unknown fields is skipped
                spec = SentencePiece.by_number.get(f["number"])
                if spec is None or not known_field(spec, f):
                    continue
                if spec.name == "score":
                    score_bytes[i] = f["value"]  # raw f32 bits
                elif spec.name == "piece":
                    piece = decode_scalar(spec.type, f)
                else:
                    types[i] = decode_scalar(spec.type, f)
            pieces.append(piece)
        scores = np.frombuffer(b"".join(score_bytes), "<f4")
        self._cols, self._strings = cols, pieces
        if cols is None:
            self.scores, self.types = scores, types
        else:  # the run's strings are decoded when first asked for (piece_strings)
            self.scores = np.concatenate([cols.floats("score"), scores]) if raw else cols.floats("score")
            run_types = cols.ints("type").astype(np.int32)
            self.types = np.concatenate([run_types, types]) if raw else run_types

    @property
    def piece_strings(self) -> list[str]:
        """Every piece's text, by id (the run read as columns is decoded on first use)."""
        if self._cols is not None:
            self._strings = self._cols.strings("piece") + self._strings
            self._cols = None
        return self._strings

    @property
    def fields(self) -> list[Any]:
        """The ModelProto's wire fields, in file order (a list; made on first use for a parsed file)."""
        return self._msg.fields if isinstance(self._msg, LazyMessage) else self._msg

    def piece(self, i: int) -> tuple[str, float, str]:
        """Piece ``i`` as (piece, score, type name)."""
        t = int(self.types[i])
        return self.piece_strings[i], float(self.scores[i]), PIECE_TYPES.get(t, str(t))

    @property
    def pieces(self) -> list[tuple[str, float, str]]:
        return [(p, float(s), PIECE_TYPES.get(int(t), str(int(t))))
                for p, s, t in zip(self.piece_strings, self.scores, self.types, strict=True)]

    def __len__(self) -> int:
        return len(self.types)

    def __repr__(self) -> str:
        return f"<SentencePieceModel {self.trainer_spec.model_type}: {len(self)} pieces>"

    @property
    def trainer_spec(self) -> View:
        return self.proto.trainer_spec

    @property
    def charsmap(self) -> CharsMap | None:
        """The normalizer's precompiled charsmap decoded (None when the model has none)."""
        blob = self.normalizer_spec.precompiled_charsmap
        return CharsMap(blob) if blob else None

    @property
    def normalizer_spec(self) -> View:
        return self.proto.normalizer_spec

    @property
    def denormalizer_spec(self) -> View:
        return self.proto.denormalizer_spec

    @property
    def self_test_data(self) -> View | None:
        """SelfTestData (field 4 of 0.2.0 files); None under the 0.2.3 schema, where it is an unknown field."""
        if self.generation == "0.2.3":
            return None
        return self.proto.self_test_data

    def piece_to_id(self, piece: str) -> int:
        return self.piece_strings.index(piece)

    def check(self) -> list[str]:
        """What would make sentencepiece refuse to load the model (its loader's messages quoted), each with its
        field path (and the piece's byte offset where the pieces are in one run), and a trainer_spec.unk_id
        that is not the UNKNOWN piece (sentencepiece takes the piece; tools that read the field do not)."""
        starts = self._msg.starts if isinstance(self._msg, LazyMessage) and not any(
            f["number"] == 1 for f in self._msg.rest) else None
        out = []
        for i, text in check_pieces(self.piece_strings, self.types, bool(self.trainer_spec.byte_fallback)):
            at = f" at byte {int(starts[i])}" if starts is not None and i is not None else ""
            out.append(f"pieces[{i}]{at}: {text}" if i is not None else text)
        unknown = np.flatnonzero(self.types == PieceType.UNKNOWN)
        ts = self.trainer_spec
        if len(unknown) == 1 and ts.unk_id != unknown[0]:
            out.append(f"trainer_spec.unk_id: {ts.unk_id}, but the UNKNOWN piece is id {unknown[0]} (sentencepiece "
                       "takes the piece; tools that read the field take another)")
        blob = self.normalizer_spec.precompiled_charsmap
        if blob and (problem := _charsmap_problem(blob)):
            out.append(f"normalizer_spec.precompiled_charsmap: {problem}")
        return out


def check_pieces(pieces: list[str], types: np.ndarray, byte_fallback: bool) -> list[tuple[int | None, str]]:
    """What sentencepiece's loader (``ModelInterface::InitializePieces``) refuses in a vocabulary: (id or None,
    the problem with sentencepiece's message)."""
    out: list[tuple[int | None, str]] = []
    first: dict[str, int] = {}
    unknown, found_bytes = [], set()
    valid_bytes = set(BYTE_PIECES)
    for i, (p, t) in enumerate(zip(pieces, types.tolist(), strict=True)):
        raw = p.encode("utf-8", "surrogateescape")
        if not raw:
            out.append((i, "an empty piece (sentencepiece: piece must not be empty)"))
        elif b"\0" in raw:
            out.append((i, f"{p!r} holds a NUL (sentencepiece 0.2.2 on: piece must not include null character)"))
        if len(raw) >= MAX_PIECE_BYTES:
            out.append((i, f"a piece of {len(raw)} bytes (sentencepiece: piece is too long; under "
                           f"{MAX_PIECE_BYTES})"))
        if first.setdefault(p, i) != i:
            out.append((i, f"{p!r} is piece {first[p]} too (sentencepiece: {p} is already defined)"))
        if t == PieceType.UNKNOWN:
            unknown.append(i)
            if len(unknown) == 2:
                out.append((i, f"a second UNKNOWN piece, after id {unknown[0]} (sentencepiece: unk is already "
                               "defined)"))
        elif t == PieceType.BYTE:
            if p not in valid_bytes:
                out.append((i, f"the BYTE piece {p!r} is none of <0x00>..<0xFF> (sentencepiece: byte piece {p} "
                               "is invalid)"))
            elif not byte_fallback and not found_bytes:
                out.append((i, f"the BYTE piece {p} without trainer_spec.byte_fallback (sentencepiece: byte "
                               f"piece {p} is found although `byte_fallback` is false)"))
            found_bytes.add(p)
    if not unknown:
        out.append((None, "no UNKNOWN piece (sentencepiece: unk is not defined)"))
    if byte_fallback and len(found_bytes) < 256:
        missing = [b for b in BYTE_PIECES if b not in found_bytes]
        out.append((None, f"trainer_spec.byte_fallback without {len(missing)} of the 256 BYTE pieces, e.g. "
                          f"{missing[0]} (sentencepiece: there are not 256 byte pieces although `byte_fallback` "
                          "is true)"))
    return out


def _charsmap_problem(blob: bytes) -> str | None:
    """What sentencepiece's normalizer refuses in a non-empty precompiled charsmap (normalizer.cc), or None."""
    if len(blob) <= 4:
        return f"{len(blob)} bytes (sentencepiece: Blob for normalization rule is broken)"
    size = int.from_bytes(blob[:4], "little")
    if size >= len(blob) - 4:
        return f"a trie of {size} bytes in {len(blob)} (sentencepiece: Trie data size exceeds the input blob size)"
    if size < CHARSMAP_TRIE_UNIT or size % CHARSMAP_TRIE_UNIT:
        return (f"a trie of {size} bytes (sentencepiece: Trie data size is not divisible by "
                f"{CHARSMAP_TRIE_UNIT})")
    if blob[-1] != 0:
        return "the replacement strings do not end in NUL (sentencepiece: normalized block must be null terminated)"
    return None


# -- editing: every field that is not touched keeps its exact bytes ------------------------------------------

def _piece_message(piece: str, score: float, type_id: int) -> bytes:
    from ...framework.protobuf import encode_message

    values: dict[str, Any] = {"piece": piece, "score": score}
    if type_id != PieceType.NORMAL:  # the default: sentencepiece omits it
        values["type"] = type_id
    return encode_message(SentencePiece, values)


_TYPE_IDS = {v: k for k, v in PIECE_TYPES.items()}


def _edited(model: SentencePieceModel, fields: list[Any]) -> SentencePieceModel:
    return SentencePieceModel(fields, model.generation)


def _piece_positions(model: SentencePieceModel) -> list[int]:
    return [i for i, f in enumerate(model.fields) if f["number"] == 1 and f["wire_type"] == LEN]


def _record(piece: str, score: float, type_id: int) -> bytes:
    body = _piece_message(piece, score, type_id)
    return b"\x0a" + encode_varint(len(body)) + body


def _splice(model: SentencePieceModel, first: int, stop: int, records: bytes) -> SentencePieceModel | None:
    """Pieces ``first:stop`` replaced by ``records`` (encoded piece fields) in the file's bytes, when the
    model's pieces are all in its leading run; None otherwise (the caller edits the field list)."""
    msg = model._msg
    if not isinstance(msg, LazyMessage) or any(f["number"] == 1 for f in msg.rest):
        return None
    bounds = [*msg.starts[[first, stop]].tolist()] if stop < len(msg.starts) else (
        [int(msg.starts[first]) if first < len(msg.starts) else msg.run_end, msg.run_end])
    data = msg.buf[: bounds[0]] + records + msg.buf[bounds[1] :]
    return SentencePieceModel(parse_model_fields(data), model.generation)


def set_piece(model: SentencePieceModel, index: int, *, piece: str | None = None, score: float | None = None,
              type: str | None = None) -> SentencePieceModel:
    """A copy with piece ``index`` renamed, re-scored or re-typed (only that piece's bytes change)."""
    index = range(len(model))[index]
    p, s, t = model.piece(index)
    args = (p if piece is None else piece, s if score is None else score, _TYPE_IDS[str(t if type is None else type)])
    spliced = _splice(model, index, index + 1, _record(*args))
    if spliced is not None:
        return spliced
    pos = _piece_positions(model)[index]
    data = _piece_message(*args)
    fields = list(model.fields)
    fields[pos] = dict(number=1, wire_type=LEN, value=data)
    return _edited(model, fields)


def add_piece(model: SentencePieceModel, piece: str, score: float = 0.0, type: str = "USER_DEFINED"
              ) -> SentencePieceModel:
    """A copy with ``piece`` appended as the last id; ``type`` a name ("CONTROL") or a ``PieceType``."""
    if piece in model.piece_strings:
        raise ValueError(f"piece {piece!r} already exists (id {model.piece_to_id(piece)})")
    spliced = _splice(model, len(model), len(model), _record(piece, score, _TYPE_IDS[str(type)]))
    if spliced is not None:
        return spliced
    positions = _piece_positions(model)
    at = positions[-1] + 1 if positions else 0
    fields = list(model.fields)
    fields.insert(at, dict(number=1, wire_type=LEN, value=_piece_message(piece, score, _TYPE_IDS[str(type)])))
    return _edited(model, fields)


def remove_piece(model: SentencePieceModel, index: int) -> SentencePieceModel:
    """A copy without piece ``index`` (later ids shift down by one)."""
    index = range(len(model))[index]
    spliced = _splice(model, index, index + 1, b"")
    if spliced is not None:
        return spliced
    fields = list(model.fields)
    del fields[_piece_positions(model)[index]]
    return _edited(model, fields)


def set_normalizer(model: SentencePieceModel, **flags: Any) -> SentencePieceModel:
    """A copy with NormalizerSpec fields set (``add_dummy_prefix=False``, ...); other bytes unchanged."""
    from ...framework.protowire import build_fields
    from ...schemas.sentencepiece import NormalizerSpec

    fields = list(model.fields)
    where = [i for i, f in enumerate(fields) if f["number"] == 3 and f["wire_type"] == LEN]
    sub: list[Any] = []
    if where:
        sub = message_fields(fields[where[-1]]["value"], "normalizer_spec", "sentencepiece")
    for name, value in flags.items():
        spec = next((f for f in NormalizerSpec.fields if f.name == name), None)
        if spec is None:
            raise ValueError(f"NormalizerSpec has no field {name!r}")
        if spec.type == "bool":
            new = dict(number=spec.number, wire_type=0, value=int(bool(value)))
        else:
            raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
            new = dict(number=spec.number, wire_type=LEN, value=raw)
        same = [i for i, f in enumerate(sub) if f["number"] == spec.number]
        if same:
            sub[same[-1]] = new
        else:
            sub.append(new)
            sub.sort(key=lambda f: f["number"])  # a new field goes where protobuf would write it
    out = bytearray()
    build_fields(sub, out)
    entry = dict(number=3, wire_type=LEN, value=bytes(out))
    if where:
        fields[where[-1]] = entry
    else:
        fields.append(entry)
        fields.sort(key=lambda f: f["number"])
    return _edited(model, fields)


def merge(first: SentencePieceModel, second: SentencePieceModel, score: float | None = None
          ) -> SentencePieceModel:
    """``first`` plus the pieces of ``second`` it lacks (appended, keeping their type; optional score)."""
    have = set(first.piece_strings)
    new = []
    for p, s, t in second.pieces:
        if p not in have and t in ("NORMAL", "USER_DEFINED"):
            new.append((p, s if score is None else score, t))
            have.add(p)
    spliced = _splice(first, len(first), len(first), b"".join(_record(p, s, _TYPE_IDS[t]) for p, s, t in new))
    if spliced is not None:
        return spliced
    out = first
    for p, s, t in new:
        out = add_piece(out, p, s, t)
    return out


# -- exports -------------------------------------------------------------------------------------------------

def to_tsv(model: SentencePieceModel) -> str:
    """``piece<TAB>score<TAB>type`` lines, one per id (the .vocab layout plus the type)."""
    return "".join(f"{p}\t{s!r}\t{t}\n" for p, s, t in model.pieces)


def to_json(model: SentencePieceModel) -> list[dict[str, Any]]:
    return [{"id": i, "piece": p, "score": s, "type": t} for i, (p, s, t) in enumerate(model.pieces)]


# Where a pre-tokenizer may cut the text, finest first, with what a piece holds when it would span a cut: before
# every U+2581; after every one (treat_whitespace_as_suffix); before a run of them (allow_whitespace_only_pieces);
# after a run (both options).
_SPLITS = [("\u2581[^\u2581]*|[^\u2581]+", re.compile(".\u2581", re.S)),
           ("[^\u2581]*\u2581|[^\u2581]+", re.compile("\u2581.", re.S)),
           ("\u2581*[^\u2581]+|\u2581+", re.compile("[^\u2581]\u2581")),
           ("[^\u2581]+\u2581*|\u2581+", re.compile("\u2581[^\u2581]"))]


class InexactExportWarning(UserWarning):
    """The exported tokenizer.json cannot give sentencepiece's ids on every text (the message names why)."""


def _word_split(pieces: list[str], types: list[int]) -> dict[str, Any] | None:
    """The finest pre-tokenizer split that no NORMAL piece spans, or None (no split).

    sentencepiece's BPE and Unigram encode the whole normalized text at once (its ``SplitIntoWords`` serves
    only WORD models); cutting it into words first gives the same ids exactly when no piece that merges or
    Viterbi could choose spans a cut. The trainer's whitespace options decide which cuts that is, so the
    vocabulary is checked rather than the options.
    """
    normal = [p for p, t in zip(pieces, types, strict=True) if t == 1 and "\u2581" in p]
    for pattern, spans in _SPLITS:
        if not any(spans.search(p) for p in normal):
            return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
    return None


def to_hf_tokenizer(model: SentencePieceModel) -> dict[str, Any]:
    """A Hugging Face ``tokenizer.json`` (as a dict) for a Unigram or BPE model, tokenizing as sentencepiece.

    Normalizer: the precompiled charsmap (``Precompiled``, the same blob), then sentencepiece's whitespace
    rules when ``remove_extra_whitespaces`` (strip and collapse spaces, and only spaces: tab, newline and U+00A0
    stay unless the charsmap maps them), the dummy ▁ (a suffix under ``treat_whitespace_as_suffix``) when
    ``add_dummy_prefix``, spaces as U+2581. Pre-tokenizer: sentencepiece's BPE and Unigram encode the whole text,
    so the export splits it only where no NORMAL piece spans a cut (before or after each ▁ or run of ▁, as the
    vocabulary allows: whitespace-only pieces of ``allow_whitespace_only_pieces`` stay whole), else not at all.
    Unigram: pieces with their scores and ``unk_id``. BPE: the vocabulary and merges recovered from it (every
    split of a piece into two pieces, ranked by the merged piece's score, as sentencepiece's BPE applies them).
    Control and unknown pieces become special added tokens, user-defined pieces non-special added tokens
    matched before normalisation. Byte fallback pieces (``<0x41>``) decode through ``ByteFallback``.

    What tokenizer.json cannot express, and so may still differ:

    - around a user-defined piece, Hugging Face normalises each stretch of text on its own (each gets the dummy
      prefix), where sentencepiece normalises the whole text once (``the<sep>fox`` gives ``fox`` there, ``▁fox``
      here); text that spells a control piece (``<s>``) matches it as a special token, where sentencepiece reads
      its characters (``encode(..., split_special_tokens=True)`` in transformers avoids that);
    - Unigram models with whitespace-only pieces: equal-score splits of a space run are broken by float32 sums
      in sentencepiece, float64 in tokenizers; the export warns (:class:`InexactExportWarning`);
    - ``Precompiled`` in tokenizers looks up whole grapheme clusters and keeps the shortest match, where
      sentencepiece takes the longest match from each character: "\\r\\n" (one grapheme) becomes one space there,
      two here, visible when ``remove_extra_whitespaces`` is off; likewise a mapped letter followed by a
      combining mark (``nfkc_cf``: "A" + U+0301).
    """
    import base64

    ts, ns = model.trainer_spec, model.normalizer_spec
    kind = {1: "Unigram", 2: "BPE"}.get(ts.model_type)
    if kind is None:
        name = {3: "WORD", 4: "CHAR"}.get(ts.model_type, str(ts.model_type))
        raise ValueError(f"tokenizer.json export covers Unigram and BPE models, not model_type {name}")
    pieces = model.piece_strings
    scores = model.scores.astype(float).tolist()
    types = model.types.tolist()
    added = [{"id": i, "content": p, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": t != 4} for i, (p, t) in enumerate(zip(pieces, types, strict=True)) if t in (2, 3, 4)]
    norms: list[dict[str, Any]] = []
    if ns.precompiled_charsmap:
        norms.append({"type": "Precompiled",
                      "precompiled_charsmap": base64.b64encode(ns.precompiled_charsmap).decode("ascii")})
    if ns.remove_extra_whitespaces:  # spaces only: tab, newline and U+00A0 (unless the charsmap maps it) stay
        norms += [{"type": "Replace", "pattern": {"Regex": r"\A +| +\z"}, "content": ""},
                  {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
    if ns.add_dummy_prefix and ts.treat_whitespace_as_suffix:  # a dummy suffix, then
        norms.append({"type": "Replace", "pattern": {"Regex": r"\z"}, "content": " "})
    elif ns.add_dummy_prefix:  # sentencepiece adds it even before a leading space (Metaspace's "always" does not)
        norms.append({"type": "Prepend", "prepend": "\u2581"})
    if ns.escape_whitespaces:
        norms.append({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})
    split = _word_split(pieces, types) if ns.escape_whitespaces else None
    decoders: list[dict[str, Any]] = [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}]
    if ts.byte_fallback:
        decoders.append({"type": "ByteFallback"})
    decoders.append({"type": "Fuse"})  # one string, so that Strip removes the dummy prefix's space once
    if ns.add_dummy_prefix:
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    runs = [p for p, t in zip(pieces, types, strict=True) if t == 1 and len(p) > 1 and not p.strip("\u2581")]
    if kind == "Unigram" and runs:
        # a run of spaces then has segmentations of equal score (▁▁▁+▁, ▁+▁▁▁); sentencepiece picks one by
        # float32 rounding of the path sums, tokenizers sums in float64 and can pick the other
        warnings.warn(InexactExportWarning(
            f"a Unigram model with whitespace-only pieces ({len(runs)}, allow_whitespace_only_pieces): runs of "
            "spaces can tokenize differently in tokenizers (sentencepiece breaks score ties by float32 sums)"),
            stacklevel=2)
    unk_id = ts.unk_id
    if kind == "Unigram":
        hf_model: dict[str, Any] = {"type": "Unigram", "unk_id": unk_id if unk_id >= 0 else None,
                                    "vocab": [[p, s] for p, s in zip(pieces, scores, strict=True)],
                                    "byte_fallback": bool(ts.byte_fallback)}
    else:
        vocab = {p: i for i, p in reversed(list(enumerate(pieces)))}
        lengths_set = {len(p) for p in pieces} - {0}  # both halves of a merge are pieces: cut at their lengths
        lengths = sorted(lengths_set)
        merges = []
        for i, p in enumerate(pieces):
            if types[i] != 1:  # only NORMAL pieces come from merges
                continue
            cuts = [k for k in lengths[: bisect.bisect_left(lengths, len(p))] if len(p) - k in lengths_set]
            local = [(vocab[p[:k]], vocab[p[k:]], p[:k], p[k:]) for k in cuts if p[:k] in vocab and p[k:] in vocab]
            merges += [(scores[i], i, a, b, left, right) for a, b, left, right in sorted(local)]
        merges.sort(key=lambda m: (-m[0], m[1], m[2], m[3]))
        hf_model = {"type": "BPE", "dropout": None, "unk_token": pieces[unk_id] if 0 <= unk_id < len(pieces)
                    else None, "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
                    "byte_fallback": bool(ts.byte_fallback), "ignore_merges": False, "vocab": vocab,
                    "merges": [[m[4], m[5]] for m in merges]}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "Sequence", "normalizers": norms}, "pre_tokenizer": split,
            "post_processor": None, "decoder": {"type": "Sequence", "decoders": decoders}, "model": hf_model}
