"""Edits of a SentencePiece model: each returns a new model in which every field not touched keeps its exact
bytes. The fields written are the schema's (their numbers and tags from its declarations)."""

from __future__ import annotations

from typing import Any

from ...framework.protobuf import encode_message, message_fields, occurrences, wire_field
from ...framework.protowire import LazyMessage, build_fields
from ...schemas.sentencepiece import (
    PIECE_TYPES,
    ModelProto,
    NormalizerSpec,
    PieceType,
)
from .model import SentencePieceModel, parse_model_fields

PIECES = ModelProto.named("pieces")
NORMALIZER = ModelProto.named("normalizer_spec")


def _piece(piece: str, score: float, type_id: int) -> dict[str, Any]:
    """A SentencePiece message's values."""
    values: dict[str, Any] = {"piece": piece, "score": score}
    if type_id != PieceType.NORMAL:  # the default: sentencepiece omits it
        values["type"] = type_id
    return values


_TYPE_IDS = {v: k for k, v in PIECE_TYPES.items()}


def _edited(model: SentencePieceModel, fields: list[Any]) -> SentencePieceModel:
    return SentencePieceModel(fields, model.generation)


def _record(piece: str, score: float, type_id: int) -> bytes:
    """A pieces field of ModelProto, encoded."""
    return encode_message(ModelProto, {"pieces": [_piece(piece, score, type_id)]})


def _splice(model: SentencePieceModel, first: int, stop: int, records: bytes) -> SentencePieceModel | None:
    """Pieces ``first:stop`` replaced by ``records`` (encoded piece fields) in the file's bytes, when the
    model's pieces are all in its leading run; None otherwise (the caller edits the field list)."""
    msg = model._msg
    if not isinstance(msg, LazyMessage) or any(f["number"] == PIECES.number for f in msg.rest):
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
    fields = list(model.fields)
    fields[occurrences(fields, PIECES)[index]] = wire_field(ModelProto, "pieces", _piece(*args))
    return _edited(model, fields)


def add_piece(model: SentencePieceModel, piece: str, score: float = 0.0, type: str = "USER_DEFINED"
              ) -> SentencePieceModel:
    """A copy with ``piece`` appended as the last id; ``type`` a name ("CONTROL") or a ``PieceType``."""
    if piece in model.piece_strings:
        raise ValueError(f"piece {piece!r} already exists (id {model.piece_to_id(piece)})")
    spliced = _splice(model, len(model), len(model), _record(piece, score, _TYPE_IDS[str(type)]))
    if spliced is not None:
        return spliced
    fields = list(model.fields)
    positions = occurrences(fields, PIECES)
    at = positions[-1] + 1 if positions else 0
    fields.insert(at, wire_field(ModelProto, "pieces", _piece(piece, score, _TYPE_IDS[str(type)])))
    return _edited(model, fields)


def remove_piece(model: SentencePieceModel, index: int) -> SentencePieceModel:
    """A copy without piece ``index`` (later ids shift down by one)."""
    index = range(len(model))[index]
    spliced = _splice(model, index, index + 1, b"")
    if spliced is not None:
        return spliced
    fields = list(model.fields)
    del fields[occurrences(fields, PIECES)[index]]
    return _edited(model, fields)


def set_normalizer(model: SentencePieceModel, **flags: Any) -> SentencePieceModel:
    """A copy with NormalizerSpec fields set (``add_dummy_prefix=False``, ...); other bytes unchanged."""
    fields = list(model.fields)
    where = occurrences(fields, NORMALIZER)
    sub: list[Any] = []
    if where:
        sub = message_fields(fields[where[-1]]["value"], NORMALIZER.name, "sentencepiece")
    for name, value in flags.items():
        spec = NormalizerSpec.named(name)
        if spec.type != "bool" and not isinstance(value, bytes):
            value = str(value).encode("utf-8")
        new = wire_field(NormalizerSpec, name, value)
        same = [i for i, f in enumerate(sub) if f["number"] == spec.number]
        if same:
            sub[same[-1]] = new
        else:
            sub.append(new)
            sub.sort(key=lambda f: f["number"])  # a new field goes where protobuf would write it
    out = bytearray()
    build_fields(sub, out)
    entry = wire_field(ModelProto, NORMALIZER.name, bytes(out))
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
