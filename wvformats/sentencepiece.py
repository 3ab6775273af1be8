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
        pieces, scores, types = [], np.zeros(len(raw), "<f4"), np.ones(len(raw), np.int32)
        for i, data in enumerate(raw):
            sub, _, _ = parse_fields(data, 0, len(data), f"pieces[{i}]", 0)
            piece = ""
            for f in sub:  # last occurrence wins, as in protobuf
                n = f["number"]
                if n == 1:
                    piece = f["value"].decode("utf-8", "surrogateescape")
                elif n == 2 and f["wire_type"] == 5:
                    scores[i] = struct.unpack("<f", f["value"])[0]
                elif n == 3:
                    types[i] = f["value"]
            pieces.append(piece)
        self.piece_strings = pieces
        self.scores = scores
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
