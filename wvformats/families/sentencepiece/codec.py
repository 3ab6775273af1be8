"""Codec of SentencePiece ``tokenizer.model`` files (protobuf ModelProto, read losslessly)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...errors import BuildError, FormatError
from ...framework.protowire import LEN
from ...registry import Format, register, schema_io
from ...schemas import sentencepiece as schema
from ..ggml import GGUFModel
from .gguf import from_gguf
from .model import SentencePieceModel
from .sniff import SENTENCEPIECE

NAME = SENTENCEPIECE.name


# the ModelProto's fields, losslessly; the schema reads the leading run of pieces as columns (a LazyMessage)
parse, build = schema_io(NAME, schema.model_proto)


def to_model(parsed: Any, generation: str | None = None, **_: Any) -> SentencePieceModel:
    """``generation``: "0.2.0" or "0.2.3" to read with that schema (default: their union)."""
    if generation is not None and generation not in schema.GENERATIONS:
        raise FormatError(f"unknown schema generation {generation!r} (0.2.0 or 0.2.3)", format=NAME)
    try:
        return SentencePieceModel(parsed, generation)
    except FormatError as e:
        raise e.located(format=NAME) from None


def from_model(model: Any, **_: Any) -> Any:
    """A SentencePieceModel's fields (a LazyMessage of an unedited file builds as its own bytes); a GGUF model's
    SentencePiece vocabulary as a tokenizer.model (:func:`.gguf.from_gguf`)."""
    if isinstance(model, GGUFModel):
        try:
            model = from_gguf(model)
        except ValueError as e:
            raise BuildError(f"cannot write this GGUF's tokenizer as a tokenizer.model: {e}", format=NAME) from None
    if not isinstance(model, SentencePieceModel):
        raise BuildError(f"expected SentencePieceModel, got {type(model).__name__}", format=NAME)
    return model._msg


def check(parsed: Any) -> list[str]:
    return to_model(parsed).check()


def inspect(parsed: Any) -> dict[str, Any]:
    model = to_model(parsed)
    counts = Counter(t for _, _, t in model.pieces)
    sizes = Counter()
    for f in parsed:
        spec = schema.ModelProto.by_number.get(f["number"])
        sizes[spec.name if spec else f"field {f['number']}"] += len(f["value"]) if f["wire_type"] == LEN else 0
    return {"pieces": len(model), "piece_types": dict(counts),
            "model_type": schema.MODEL_TYPES.get(model.trainer_spec.model_type, "?"),
            "vocab_size": len(model), "normalizer": model.normalizer_spec.name,
            "charsmap": model.charsmap.to_dict() if model.charsmap else None,
            "field_bytes": dict(sizes)}


FIRST_PIECES = 10  # pieces a quick inspect shows


def inspect_head(buf: Any, **options: Any) -> dict[str, Any]:
    """The trainer and normalizer summary and the first pieces (the pieces stay unparsed offsets)."""
    model = to_model(parse(buf))

    def summary(spec: Any) -> dict[str, Any]:  # the fields the file sets; the charsmap by its size
        return {k: f"{len(getattr(spec, k))} bytes" if k == "precompiled_charsmap" else v
                for k, v in spec.to_dict().items()}

    trainer = summary(model.trainer_spec)
    if "model_type" in trainer:
        trainer["model_type"] = schema.MODEL_TYPES.get(trainer["model_type"], trainer["model_type"])
    return {"pieces": len(model), "model_type": schema.MODEL_TYPES.get(model.trainer_spec.model_type, "?"),
            "vocab_size": len(model),
            "first_pieces": [p for p, _, _ in model.pieces[:FIRST_PIECES]],
            "trainer": trainer, "normalizer": summary(model.normalizer_spec),
            "charsmap": model.charsmap.to_dict() if model.charsmap else None}


register(Format(
    **SENTENCEPIECE._asdict(), description="SentencePiece tokenizer.model: a protobuf ModelProto "
    "(pieces with scores and types, trainer and normalizer specs), read losslessly", schema=schema.model_proto,
    parse=parse, build=build, to_model=to_model, from_model=from_model,
    model=SentencePieceModel, writes=(GGUFModel,), inspect=inspect, inspect_head=inspect_head, check=check,
))
