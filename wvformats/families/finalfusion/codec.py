"""Codec of finalfusion (``.fifu``) embeddings: the format registered, its chunk types extended, a parse
read into embeddings (the rows ``limit`` and ``vocab`` keep) and checked as reading needs it. The model is
made in :mod:`.reading`, the chunks of a model in :mod:`.writing`, the summaries in :mod:`.summary`."""

from __future__ import annotations

from typing import Any

import construct as cs
import numpy as np

from ...embeddings import Embeddings
from ...errors import FormatError
from ...framework.records import selected_rows
from ...registry import Format, register, schema_io
from ...schemas import finalfusion as schema
from .chunks import NAME, STORAGES, VOCABS, C, chunk_of, parts
from .reading import embeddings
from .sniff import FINALFUSION
from .summary import inspect, inspect_head
from .writing import from_model


def register_chunk(chunk_id: int, name: str, body: cs.Construct) -> None:
    """Make chunk type ``chunk_id`` known: it is then parsed, built, validated, dumped and documented."""
    if chunk_id in schema.CHUNK_TYPES and schema.CHUNK_TYPES[chunk_id][0] != name:
        raise ValueError(f"chunk id {chunk_id} is already {schema.CHUNK_TYPES[chunk_id][0]!r}")
    schema.CHUNK_TYPES[chunk_id] = (name, body)
    _FORMAT.schemas[f"chunk {chunk_id}: {name}"] = body


parse, build = schema_io(NAME, schema.finalfusion)


def to_model(parsed: Any, *, dtype: Any = np.float32, limit: int | None = None, vocab: Any = None,
             **_: Any) -> Embeddings:
    """The embeddings of a parsed file; ``limit`` and ``vocab`` keep some word rows (the subword rows and the
    n-gram lookups stay those of the file, and a file written from the result holds the kept words)."""
    vocab_chunk, storage = chunk_of(parsed, VOCABS), chunk_of(parsed, STORAGES)
    words = vocab_chunk["body"].get("words", []) if vocab_chunk is not None else []
    keep = selected_rows(words, limit, vocab)
    if keep is None or storage is None or vocab_chunk is None:  # (embeddings() says what is missing)
        return embeddings(parsed, dtype)
    n, rows = len(words), np.array(keep, np.intp)
    if storage["chunk_id"] == C.QUANTIZED_ARRAY:
        # the file as if it held only the kept words: the quantized array's codes (and norms) are picked, never
        # reconstructed, and the subword rows after the words stay
        norms_chunk = parts(parsed)[2]  # the chunks checked before their rows are picked
        q = storage["body"]
        pick = np.concatenate([rows, np.arange(n, len(q["codes"]))])
        bodies = {id(storage): cs.Container(q, n_embeddings=len(pick), codes=q["codes"][pick],
                                            norms=q["norms"][pick] if q["use_norms"] else q["norms"])}
        if "words" in vocab_chunk["body"]:
            bodies[id(vocab_chunk)] = cs.Container(vocab_chunk["body"], words=[words[i] for i in keep],
                                                   n_words=len(keep))
        if norms_chunk is not None:
            bodies[id(norms_chunk)] = cs.Container(norms_chunk["body"], n_norms=len(rows),
                                                   norms=norms_chunk["body"]["norms"][rows])
        chunks = [cs.Container(c, body=bodies[id(c)]) if id(c) in bodies else c for c in parsed["chunks"]]
        return embeddings(cs.Container(parsed, chunks=chunks), dtype)
    # dense: the kept rows are copied (a slice stays a view); lookups keep reading the file's matrix
    full = embeddings(parsed, dtype)
    vectors = full.vectors[: len(rows)] if keep == list(range(len(rows))) else full.vectors[rows]
    norms = None if full.norms is None else np.asarray(full.norms)[rows]
    # (the word rows are no longer the storage matrix's head: written as the kept rows + the subword rows)
    return Embeddings([words[i] for i in keep], vectors, norms=norms, metadata=full.metadata,
                      subwords=full.subwords, kept=full.kept)


def check(parsed: Any) -> list[str]:
    """Header list versus chunks present; storage rows, norms and metadata as reading needs them (a file of
    single chunks, with no vocabulary or no storage, is not embeddings but is not wrong)."""
    problems = []
    present = [int(c["chunk_id"]) for c in parsed["chunks"]]
    listed = [int(x) for x in parsed["chunk_ids"]]
    if present != listed:
        extra = present[len(listed):] if present[: len(listed)] == listed else None
        if extra == [C.ND_NORMS]:
            problems.append("note: trailing NdNorms chunk not listed in the header (written by old writers)")
        else:
            problems.append(f"header lists chunks {listed} but the file holds {present}")
    if chunk_of(parsed, VOCABS) is not None and chunk_of(parsed, STORAGES) is not None:
        try:
            parts(parsed)
        except FormatError as e:
            problems.append(str(e).removeprefix(f"{NAME} "))
    return [p for p in problems if not p.startswith("note:")]


_FORMAT = register(Format(
    **FINALFUSION._asdict(), description="finalfusion: header, then typed chunks (vocabulary, "
    "storage, norms, TOML metadata) with 4-byte aligned arrays", schema=schema.finalfusion,
    parse=parse, build=build,
    to_model=to_model, from_model=from_model, model=Embeddings, inspect=inspect, inspect_head=inspect_head, check=check,
    array_views=True,
    schemas={f"chunk {i}: {name}": body for i, (name, body) in schema.CHUNK_TYPES.items()},
    read_options=("limit", "vocab", "dtype"),
))
