"""The summaries ``inspect`` gives of a finalfusion file: of a parse, and of the schema parsed lazily over
the header, the chunk headers, the metadata and each chunk's leading fields (no array, and no vocabulary
beyond its first words, read)."""

from __future__ import annotations

from typing import Any

import construct as cs

from ... import framework
from ...schemas import finalfusion as schema
from .chunks import NAME, STORAGES, VOCABS, C, chunk_of, metadata_table

FIRST_WORDS = 10  # words a quick inspect shows


def inspect(parsed: Any) -> dict[str, Any]:
    chunks = [{"id": int(c["chunk_id"]), "type": c["name"]} for c in parsed["chunks"]]
    info: dict[str, Any] = {"chunks": len(chunks), "chunk_types": chunks}
    quirks = [f"{c['name']}: length field {c['length_short_by']} bytes short (finalfusion-python 0.7.1)"
              for c in parsed["chunks"] if c.get("length_short_by")]
    if quirks:
        info["quirks"] = quirks
    vocab = chunk_of(parsed, VOCABS)
    if vocab is not None and isinstance(vocab["body"], cs.Container):
        info["words"] = len(vocab["body"].get("words", []))  # floret vocabularies have no word list
    storage = chunk_of(parsed, STORAGES)
    if storage is not None and storage["chunk_id"] == C.NDARRAY:
        info["dim"] = int(storage["body"]["cols"])
        info["rows"] = int(storage["body"]["rows"])
    elif storage is not None:  # quantized: the dimension of the reconstructed rows, and how they are coded
        q = storage["body"]
        info["dim"], info["rows"] = int(q["reconstructed_len"]), int(q["n_embeddings"])
        info["quantized"] = {"subquantizers": int(q["quantized_len"]), "centroids": int(q["n_centroids"]),
                             "projection": bool(q["use_projection"]), "norms": bool(q["use_norms"])}
    return info


def inspect_head(buf: Any, *, complete: bool = True, **_: Any) -> dict[str, Any]:
    """The summary :func:`inspect` gives, from the file parsed lazily: the chunks walked by their length
    fields, of each the fields before its first table or array, the metadata TOML and the first words."""
    parsed = framework.parse(schema.finalfusion, buf, format=NAME, lazy=True)
    chunks: list[dict[str, Any]] = []
    info: dict[str, Any] = {"chunks": 0, "chunk_types": chunks}
    for i, chunk in enumerate(parsed["chunks"]):
        chunks.append({"id": chunk.chunk_id, "type": chunk.name, "offset": chunk._offset,
                       "bytes": chunk.end - chunk._offset})
        if chunk.get("length_short_by"):
            info.setdefault("quirks", []).append(f"{chunk.name}: length field {chunk.length_short_by} bytes "
                                                 "short (finalfusion-python 0.7.1)")
        if chunk.name == "unknown":
            continue
        body = chunk.body
        fields = body.leading()
        if chunk.chunk_id == C.METADATA:
            at = {"path": f"chunks[{i}].metadata.toml", "offset": body.offset_of("toml")}
            info["metadata"] = metadata_table(body.toml, at)
        elif chunk.chunk_id in VOCABS:
            if settings := {k: int(v) for k, v in fields.items() if k != "n_words"}:
                info["vocab"] = settings
            info["words"] = int(fields.get("n_words", 0))  # floret vocabularies have no word list (inspect says 0)
            if "words" in body:
                info["first_words"] = body.words[:FIRST_WORDS]
        elif chunk.chunk_id == C.NDARRAY:
            info["dim"], info["rows"] = int(fields["cols"]), int(fields["rows"])
        elif chunk.chunk_id == C.QUANTIZED_ARRAY:
            info["dim"], info["rows"] = int(fields["reconstructed_len"]), int(fields["n_embeddings"])
            info["quantized"] = {"subquantizers": int(fields["quantized_len"]),
                                 "centroids": int(fields["n_centroids"]),
                                 "projection": bool(fields["use_projection"]), "norms": bool(fields["use_norms"])}
    info["chunks"] = len(chunks)
    listed = [int(i) for i in parsed["chunk_ids"]]
    if [c["id"] for c in chunks] != listed:
        info["header_lists"] = listed
    return info
