"""Which finalfusion chunks hold what: the vocabulary, storage, norms and metadata chunks of a parse, found
and checked against one another, and where a field of a chunk is (for the errors found after parsing)."""

from __future__ import annotations

import tomllib
from typing import Any

from ...errors import FormatError
from ...framework import fixed_size
from ...schemas import finalfusion as schema
from . import lookups
from .sniff import FINALFUSION

NAME = FINALFUSION.name
C = schema.ChunkId
VOCABS = {i: schema.CHUNK_TYPES[i][0] for i in schema.VOCAB_CHUNKS}
STORAGES = {i: schema.CHUNK_TYPES[i][0] for i in schema.STORAGE_CHUNKS}
HEAD = schema.chunk_header.sizeof()  # the bytes of a chunk's id and length


def chunk_of(parsed: Any, ids: dict[int, str]) -> Any:
    """The first chunk of one of the types ``ids``, or None."""
    found = [c for c in parsed["chunks"] if c["chunk_id"] in ids]
    return found[0] if found else None


def field_at(parsed: Any, chunk: Any, field: str) -> dict[str, Any]:
    """Where a field of a parsed chunk is, named as parse errors name it (``chunks[2].nd_norms.n_norms``
    and its byte offset): for the errors found when the chunks are put together."""
    index = next(i for i, c in enumerate(parsed["chunks"]) if c is chunk)
    offset = chunk.get("_offset")
    if offset is not None:  # (the fields errors name follow fixed-size ones)
        offset += HEAD + fixed_size(schema.CHUNK_TYPES[chunk["chunk_id"]][1], stop=field)
    return {"path": f"chunks[{index}].{chunk['name']}.{field}", "offset": offset}


def parts(parsed: Any) -> tuple[Any, Any, Any, Any]:
    """The vocabulary, storage and NdNorms chunks and the metadata table, checked against one another: what
    reading needs of a file, and what check() reports."""
    vocab, storage = chunk_of(parsed, VOCABS), chunk_of(parsed, STORAGES)
    if vocab is None or storage is None:
        raise FormatError("a finalfusion file needs a vocabulary and a storage chunk", format=NAME)
    n = len(vocab["body"].get("words", []))  # floret vocabularies have no word list
    body = storage["body"]
    total = len(body["data"]) if storage["chunk_id"] == C.NDARRAY else len(body["codes"])  # storage rows
    rows_at = field_at(parsed, storage, "rows" if storage["chunk_id"] == C.NDARRAY else "n_embeddings")
    if total < n:
        raise FormatError(f"storage has {total} rows for {n} words", format=NAME, **rows_at)
    subword = lookups.subword_rows(vocab["name"], vocab["body"])
    if total < n + subword:
        raise FormatError(f"storage has {total} rows, but the {vocab['name']} addresses {n} + {subword}",
                          format=NAME, **rows_at)
    meta = chunk_of(parsed, {C.METADATA: "metadata"})
    metadata = None if meta is None else metadata_table(meta["body"]["toml"], field_at(parsed, meta, "toml"))
    norms = chunk_of(parsed, {C.ND_NORMS: "nd_norms"})
    if norms is not None and len(norms["body"]["norms"]) != n:  # both references assert one norm per word
        raise FormatError(f"{len(norms['body']['norms'])} norms for {n} words", format=NAME,
                          **field_at(parsed, norms, "n_norms"))
    return vocab, storage, norms, metadata


def metadata_table(toml: Any, at: dict[str, Any]) -> Any:
    """The metadata chunk's TOML as a table; ``at``: the path and offset of its ``toml`` field, for errors."""
    try:
        return tomllib.loads(bytes(toml).decode("utf-8"))
    except UnicodeDecodeError as e:
        if at["offset"] is not None:
            at = {**at, "offset": at["offset"] + e.start}
        raise FormatError(f"invalid UTF-8 in the metadata: {e.reason}", format=NAME, **at) from None
    except tomllib.TOMLDecodeError as e:
        raise FormatError(f"metadata is not valid TOML: {e}", format=NAME, **at) from None
    except RecursionError:  # tomllib reads nested arrays and tables by recursion
        raise FormatError("metadata TOML nests too deeply to read", format=NAME, **at) from None
