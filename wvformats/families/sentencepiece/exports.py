"""A SentencePiece model's vocabulary exported: as TSV, JSON, and a Hugging Face ``tokenizer.json``."""

from __future__ import annotations

import bisect
import re
import warnings
from typing import Any

from .model import SentencePieceModel


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
