"""SentencePiece ``tokenizer.model`` <-> the tokenizer of a GGUF file (``tokenizer.ggml.model`` = ``llama``).

``to_gguf`` writes the tokenizer keys as llama.cpp's converter (``convert_hf_to_gguf.py``,
``_create_vocab_sentencepiece``) writes them from a ``tokenizer.model``; ``from_gguf`` writes back a
``tokenizer.model`` that sentencepiece loads and that tokenizes as llama.cpp's SPM tokenizer does (merges by
score: a BPE model; an identity normalizer that keeps whitespace; the dummy prefix unless
``tokenizer.ggml.add_space_prefix`` is false). The messages are built by field name from
``schemas/sentencepiece.py``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...framework.protobuf import encode_message
from ...schemas.constructs.gguf import StringArray
from ...schemas.sentencepiece import ModelProto, ModelType, PieceType
from ..ggml import GGUFModel, Metadata
from .checks import check_pieces
from .model import SentencePieceModel, parse_model_fields

# sentencepiece piece type -> GGUF token_type as llama.cpp's converter sets it (from IsUnknown, IsControl,
# IsUnused, IsByte): USER_DEFINED is not asked for, so it becomes NORMAL
_TO_GGUF = {PieceType.NORMAL: 1, PieceType.UNKNOWN: 2, PieceType.CONTROL: 3, PieceType.USER_DEFINED: 1,
            PieceType.UNUSED: 5, PieceType.BYTE: 6}
# GGUF token_type -> sentencepiece piece type, as llama.cpp treats each: UNKNOWN tokens but the unk one (a
# sentencepiece model has exactly one) are never produced, as UNUSED pieces; USER_DEFINED tokens match
# in any text, as sentencepiece's do; 0 (UNDEFINED) is NORMAL
_FROM_GGUF = {0: PieceType.NORMAL, 1: PieceType.NORMAL, 2: PieceType.UNUSED, 3: PieceType.CONTROL,
              4: PieceType.USER_DEFINED, 5: PieceType.UNUSED, 6: PieceType.BYTE}
# TrainerSpec id and piece fields, their GGUF key, and sentencepiece's defaults
_SPECIAL = (("unk", "unknown_token_id", 0, "<unk>"), ("bos", "bos_token_id", 1, "<s>"),
            ("eos", "eos_token_id", 2, "</s>"), ("pad", "padding_token_id", -1, "<pad>"))
_INTEGERS = {"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "UINT64", "INT64"}
# the value types the keys read here must have
_KEY_TYPES = {"tokenizer.ggml.tokens": {"ARRAY[STRING]"},
              "tokenizer.ggml.scores": {f"ARRAY[{t}]" for t in ("FLOAT32", "FLOAT64", *_INTEGERS)},
              "tokenizer.ggml.token_type": {f"ARRAY[{t}]" for t in _INTEGERS},
              "tokenizer.ggml.add_space_prefix": {"BOOL"}, "tokenizer.ggml.remove_extra_whitespaces": {"BOOL"},
              **{f"tokenizer.ggml.{key}": _INTEGERS for _, key, _, _ in _SPECIAL}}
_TOKENIZER_KEYS = ("model", "pre", "tokens", "scores", "token_type", "add_space_prefix",
                   "remove_extra_whitespaces", *(key for _, key, _, _ in _SPECIAL))


def to_gguf(sp: SentencePieceModel) -> GGUFModel:
    """A vocabulary-only GGUF (architecture ``llama``, no tensors) with the tokenizer keys llama.cpp's converter
    writes for ``sp``: model ``llama``, pre ``default``, tokens, scores, token types, the special ids the
    trainer spec sets (>= 0), and ``add_space_prefix`` / ``remove_extra_whitespaces`` where the normalizer
    differs from llama.cpp's defaults for SPM (a dummy prefix, whitespace kept)."""
    meta = Metadata()
    meta.set("general.architecture", "llama")
    meta.set("llama.vocab_size", len(sp), type="UINT32")
    meta.set("tokenizer.ggml.model", "llama")
    meta.set("tokenizer.ggml.pre", "default")
    meta.set("tokenizer.ggml.tokens", StringArray(sp.piece_strings), type="ARRAY", element_type="STRING")
    meta.set("tokenizer.ggml.scores", np.asarray(sp.scores, "<f4"), type="ARRAY", element_type="FLOAT32")
    types = np.vectorize(lambda t: _TO_GGUF.get(t, 1), otypes=[np.int32])(np.asarray(sp.types)) if len(sp) else []
    meta.set("tokenizer.ggml.token_type", np.asarray(types, "<i4"), type="ARRAY", element_type="INT32")
    spec = sp.trainer_spec
    for name, key, _, _ in _SPECIAL:
        value = int(getattr(spec, f"{name}_id"))
        if value >= 0:
            meta.set(f"tokenizer.ggml.{key}", value, type="UINT32")
    norm = sp.normalizer_spec
    if not norm.add_dummy_prefix:
        meta.set("tokenizer.ggml.add_space_prefix", False, type="BOOL")
    if norm.remove_extra_whitespaces and norm.has("remove_extra_whitespaces"):
        meta.set("tokenizer.ggml.remove_extra_whitespaces", True, type="BOOL")
    return GGUFModel(meta)


def from_gguf(model: GGUFModel, *, warn: bool = True) -> SentencePieceModel:
    """A ``tokenizer.model`` that sentencepiece loads, from a GGUF with a SentencePiece vocabulary: the tokens,
    scores and types (the unk token UNKNOWN, other UNKNOWN tokens UNUSED), a BPE trainer spec with the special
    ids and their pieces (so that sentencepiece's ``eos_id()`` is llama.cpp's), ``byte_fallback`` with the
    256 byte tokens, and an identity normalizer. A vocabulary sentencepiece cannot hold (duplicate or empty
    tokens, some byte tokens but not all 256) is a ValueError naming the token. ``warn``: one warning line
    naming what the tokenizer.model does not hold (the model's other keys and its tensors)."""
    meta = model.metadata
    kind = meta.get("tokenizer.ggml.model")
    if kind != "llama":
        raise ValueError(f"the GGUF holds a {kind!r} vocabulary, not SentencePiece's (tokenizer.ggml.model "
                         "'llama'): only that one becomes a tokenizer.model" if kind is not None else
                         "the GGUF has no tokenizer (no tokenizer.ggml.model key)")
    for key, kinds in _KEY_TYPES.items():
        if key in meta and meta.type(key) not in kinds:
            raise ValueError(f"{key} is {meta.type(key)}, llama.cpp reads {' or '.join(sorted(kinds))}")
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is None:
        raise ValueError("the GGUF has no tokenizer.ggml.tokens")
    pieces = tokens.tolist() if isinstance(tokens, StringArray) else list(tokens)
    n = len(pieces)
    scores = _column(meta, "scores", n, np.zeros(n, "<f4"), "<f4")
    gguf_types = _column(meta, "token_type", n, np.ones(n, np.int32), np.int64)
    unknown_types = sorted(set(np.unique(gguf_types).tolist()) - set(_FROM_GGUF))
    if unknown_types:
        raise ValueError(f"tokenizer.ggml.token_type holds {unknown_types[0]}, no token type llama.cpp knows")
    types = np.array([_FROM_GGUF[t] for t in range(7)], np.int32)[gguf_types]
    ids = {}
    for name, key, default, _ in _SPECIAL:
        ids[name] = int(meta.get(f"tokenizer.ggml.{key}", default))
        if ids[name] >= n and name != "pad":  # (a padding id past the tokens is written as none, -1)
            raise ValueError(f"tokenizer.ggml.{key} is {ids[name]}, past the {n} tokens")
    if 0 <= ids["unk"] < n:
        types[ids["unk"]] = PieceType.UNKNOWN
    byte_fallback = bool((types == PieceType.BYTE).any())
    trainer: dict[str, Any] = {"model_type": ModelType.BPE, "vocab_size": n, "byte_fallback": byte_fallback}
    for name, _, _, piece in _SPECIAL:
        value = ids[name] if 0 <= ids[name] < n else -1
        trainer[f"{name}_id"] = value
        if value >= 0 and pieces[value] != piece:
            trainer[f"{name}_piece"] = pieces[value]
    normalizer = {"name": "identity", "add_dummy_prefix": bool(meta.get("tokenizer.ggml.add_space_prefix", True)),
                  "remove_extra_whitespaces": bool(meta.get("tokenizer.ggml.remove_extra_whitespaces", False)),
                  "escape_whitespaces": True}
    problems = check_pieces(pieces, types, byte_fallback)
    if problems:
        i, text = problems[0]
        raise ValueError(f"sentencepiece cannot load this vocabulary: tokenizer.ggml.tokens"
                         f"{f'[{i}]' if i is not None else ''}: {text}")
    raw = scores.tobytes()  # (each score's bits as read: a NaN payload stays)
    data = encode_message(ModelProto, {
        "pieces": [{"piece": p, "score": raw[4 * i : 4 * i + 4], **({"type": t} if t != PieceType.NORMAL else {})}
                   for i, (p, t) in enumerate(zip(pieces, types.tolist(), strict=True))],
        "trainer_spec": trainer, "normalizer_spec": normalizer})
    if warn:
        dropped = [k for k in meta if not k.startswith("tokenizer.ggml.") or k[15:] not in _TOKENIZER_KEYS]
        if dropped or model.tensors:
            warnings.warn(f"GGUF to SentencePiece: the tokenizer only ({len(dropped)} other metadata keys, e.g. "
                          f"{dropped[0] if dropped else '-'}, and {len(model.tensors)} tensors not written)",
                          UserWarning, stacklevel=2)
    return SentencePieceModel(parse_model_fields(data))


def _column(meta: Metadata, name: str, n: int, default: np.ndarray, dtype: Any) -> np.ndarray:
    """The per-token array ``tokenizer.ggml.<name>`` (``default`` when absent), of one value per token."""
    value = np.asarray(meta.get(f"tokenizer.ggml.{name}", default), dtype)
    if value.shape != (n,):
        raise ValueError(f"tokenizer.ggml.{name} holds {value.size} values for {n} tokens")
    return value
