"""SentencePiece models: pieces as a sequence and as numpy columns, typed specs, lossless bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...framework import parse
from ...framework.protobuf import View, decode_scalar, known_field
from ...framework.protowire import LEN, LazyMessage, parse_fields
from ...schemas.sentencepiece import (
    GENERATIONS,
    PIECE_TYPES,
    ModelProto,
    PieceType,
    SentencePiece,
    model_proto,
)
from .charsmap import CharsMap, charsmap_problem
from .checks import check_pieces


def parse_model_fields(data: bytes) -> Any:
    """A ModelProto's fields as the schema reads them: its leading run of pieces as columns (a
    :class:`LazyMessage`), every other field parsed now."""
    return parse(model_proto, data, format="sentencepiece")


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
        if blob and (problem := charsmap_problem(blob)):
            out.append(f"normalizer_spec.precompiled_charsmap: {problem}")
        return out


