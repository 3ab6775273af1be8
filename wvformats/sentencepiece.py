"""SentencePiece models: pieces as a sequence and as numpy columns, typed specs, lossless bytes."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .protobuf import View
from .protowire import LEN, parse_fields
from .schemas.sentencepiece import PIECE_TYPES, ModelProto


class SentencePieceModel:
    """A ``tokenizer.model``: ``pieces`` (piece, score, type per id), trainer/normalizer specs as views.

    Holds the file's wire fields, so writing it back reproduces the input byte for byte.
    """

    def __init__(self, fields: list[Any]) -> None:
        self.fields = fields
        self.proto = View(ModelProto, fields, "model")
        raw = [f["value"] for f in fields if f["number"] == 1 and f["wire_type"] == LEN]
        pieces, types = [], np.ones(len(raw), np.int32)
        score_bytes = [b"\0\0\0\0"] * len(raw)  # raw f32 bits: a signalling NaN stays as it was
        for i, data in enumerate(raw):
            # the layout sentencepiece writes: 0a len piece, 15 score[4], optionally 18 type (one byte each)
            n = len(data)
            if n >= 7 and data[0] == 0x0A and data[1] < 0x80:
                end = 2 + data[1]
                if data[end : end + 1] == b"\x15" and (n == end + 5 or n == end + 7 and data[end + 5] == 0x18
                                                        and data[end + 6] < 0x80):
                    pieces.append(data[2:end].decode("utf-8", "surrogateescape"))
                    score_bytes[i] = data[end + 1 : end + 5]
                    if n == end + 7:
                        types[i] = data[end + 6]
                    continue
            sub, _, _ = parse_fields(data, 0, len(data), f"pieces[{i}]", 0)
            piece = ""
            for f in sub:  # last occurrence wins, as in protobuf
                n = f["number"]
                if n == 1:
                    piece = f["value"].decode("utf-8", "surrogateescape")
                elif n == 2 and f["wire_type"] == 5:
                    score_bytes[i] = f["value"]
                elif n == 3:
                    types[i] = f["value"]
            pieces.append(piece)
        self.piece_strings = pieces
        self.scores = np.frombuffer(b"".join(score_bytes), "<f4")
        self.types = types

    @property
    def pieces(self) -> list[tuple[str, float, str]]:
        return [(p, float(s), PIECE_TYPES.get(int(t), str(int(t))))
                for p, s, t in zip(self.piece_strings, self.scores, self.types, strict=True)]

    def __len__(self) -> int:
        return len(self.piece_strings)

    @property
    def trainer_spec(self) -> View:
        return self.proto.trainer_spec

    @property
    def normalizer_spec(self) -> View:
        return self.proto.normalizer_spec

    @property
    def denormalizer_spec(self) -> View:
        return self.proto.denormalizer_spec

    def piece_to_id(self, piece: str) -> int:
        return self.piece_strings.index(piece)


# -- editing: every field that is not touched keeps its exact bytes ------------------------------------------

def _piece_message(piece: str, score: float, type_id: int) -> bytes:
    from .protowire import build_fields

    fields = [dict(number=1, wire_type=LEN, value=piece.encode("utf-8")),
              dict(number=2, wire_type=5, value=struct.pack("<f", score))]
    if type_id != 1:  # NORMAL is the default: sentencepiece omits it
        fields.append(dict(number=3, wire_type=0, value=type_id))
    out = bytearray()
    build_fields(fields, out)
    return bytes(out)


_TYPE_IDS = {v: k for k, v in PIECE_TYPES.items()}


def _edited(model: SentencePieceModel, fields: list[Any]) -> SentencePieceModel:
    return SentencePieceModel(fields)


def _piece_positions(model: SentencePieceModel) -> list[int]:
    return [i for i, f in enumerate(model.fields) if f["number"] == 1 and f["wire_type"] == LEN]


def set_piece(model: SentencePieceModel, index: int, *, piece: str | None = None, score: float | None = None,
              type: str | None = None) -> SentencePieceModel:
    """A copy with piece ``index`` renamed, re-scored or re-typed (only that piece's bytes change)."""
    pos = _piece_positions(model)[index]
    p, s, t = model.pieces[index]
    data = _piece_message(p if piece is None else piece, s if score is None else score,
                          _TYPE_IDS[t if type is None else type])
    fields = list(model.fields)
    fields[pos] = dict(number=1, wire_type=LEN, value=data)
    return _edited(model, fields)


def add_piece(model: SentencePieceModel, piece: str, score: float = 0.0, type: str = "USER_DEFINED"
              ) -> SentencePieceModel:
    """A copy with ``piece`` appended as the last id."""
    if piece in model.piece_strings:
        raise ValueError(f"piece {piece!r} already exists (id {model.piece_to_id(piece)})")
    positions = _piece_positions(model)
    at = positions[-1] + 1 if positions else 0
    fields = list(model.fields)
    fields.insert(at, dict(number=1, wire_type=LEN, value=_piece_message(piece, score, _TYPE_IDS[type])))
    return _edited(model, fields)


def remove_piece(model: SentencePieceModel, index: int) -> SentencePieceModel:
    """A copy without piece ``index`` (later ids shift down by one)."""
    fields = list(model.fields)
    del fields[_piece_positions(model)[index]]
    return _edited(model, fields)


def set_normalizer(model: SentencePieceModel, **flags: Any) -> SentencePieceModel:
    """A copy with NormalizerSpec fields set (``add_dummy_prefix=False``, ...); other bytes unchanged."""
    from .protowire import build_fields
    from .schemas.sentencepiece import NormalizerSpec

    fields = list(model.fields)
    where = [i for i, f in enumerate(fields) if f["number"] == 3 and f["wire_type"] == LEN]
    sub: list[Any] = []
    if where:
        data = fields[where[-1]]["value"]
        sub, _, _ = parse_fields(data, 0, len(data), "normalizer_spec", 0)
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
    out = first
    have = set(first.piece_strings)
    for p, s, t in second.pieces:
        if p not in have and t in ("NORMAL", "USER_DEFINED"):
            out = add_piece(out, p, s if score is None else score, t)
            have.add(p)
    return out


# -- exports -------------------------------------------------------------------------------------------------

def to_tsv(model: SentencePieceModel) -> str:
    """``piece<TAB>score<TAB>type`` lines, one per id (the .vocab layout plus the type)."""
    return "".join(f"{p}\t{s!r}\t{t}\n" for p, s, t in model.pieces)


def to_json(model: SentencePieceModel) -> list[dict[str, Any]]:
    return [{"id": i, "piece": p, "score": s, "type": t} for i, (p, s, t) in enumerate(model.pieces)]
