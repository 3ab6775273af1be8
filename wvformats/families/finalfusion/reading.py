"""finalfusion chunks to the Embeddings model: the word rows (a view, or reconstructed on demand from a
quantized array), the subword lookups, the norms and metadata, and what a write needs to give the file back."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...embeddings import Embeddings, LazyRows, Storage, Subwords
from . import lookups
from .chunks import C, chunk_of, parts
from .quantized import reconstruct


def _layout(parsed: Any, vocab: Any, storage: Any, norms: Any) -> list[Any]:
    """The file's chunks in order: the ones the model holds by their role ("metadata", "vocab", "storage",
    "norms"), any other (a user-registered type, an unknown id) as the parsed chunk, written back as it is."""
    held = {"metadata": chunk_of(parsed, {C.METADATA: "metadata"}), "vocab": vocab, "storage": storage, "norms": norms}
    roles = {id(c): role for role, c in held.items() if c is not None}
    return [roles.get(id(c), c) for c in parsed["chunks"]]


def embeddings(parsed: Any, dtype: Any) -> Embeddings:
    """The embeddings of a parse's chunks, checked against one another, the rows as ``dtype``."""
    vocab, storage, norms, metadata = parts(parsed)
    words = vocab["body"].get("words", [])
    n = len(words)
    body = storage["body"]
    if storage["chunk_id"] == C.NDARRAY:
        vectors: Any = body["data"][:n]
    elif np.dtype(dtype) != np.float32:
        vectors = reconstruct(body, slice(0, n))
    else:  # rows reconstructed on demand: opening reads the codes, not a dense matrix
        vectors = LazyRows((n, int(body["reconstructed_len"])), lambda rows: reconstruct(body, rows))
    if isinstance(vectors, np.ndarray) and np.dtype(dtype) != vectors.dtype:
        vectors = vectors.astype(dtype)
    vocab_fields = {k: v for k, v in vocab["body"].items() if k != "words" and not k.startswith("_")}
    # what this format keeps to write the file back as it was (no other format reads it)
    kept: dict[str, Any] = {"chunks": [c["name"] for c in parsed["chunks"]],
                            "layout": _layout(parsed, vocab, storage, norms)}
    listed, present = [int(i) for i in parsed["chunk_ids"]], [int(c["chunk_id"]) for c in parsed["chunks"]]
    if present == [*listed, C.ND_NORMS]:  # finalfusion-rust 0.6-0.10 did not list its NdNorms: kept while the chunks are
        kept["legacy_header"] = listed
    meta = chunk_of(parsed, {C.METADATA: "metadata"})
    if meta is not None:  # written back as these bytes while the table is unchanged
        kept["metadata_toml"] = bytes(meta["body"]["toml"])
    if storage["chunk_id"] == C.NDARRAY:
        # the whole matrix: written in one piece while vectors is its head; the rows after the words (a view)
        held = Storage(matrix=body["data"], rows=lambda rows: body["data"][rows])
        subword_rows: Any = body["data"][n:]
    else:
        # written back as it is while the word rows still reconstruct from it
        held = Storage(quantized=body, rows=lambda rows: reconstruct(body, np.asarray(rows)))
        subword_rows = lambda: reconstruct(body, slice(n, None))  # noqa: E731 - made when first asked for
    storage_rows = held.rows
    rows_of = lookups.indexer(vocab["name"], vocab_fields, n)
    # the vectorised batch path needs rows that fit int64 (a storage has 2^bucket_exp subword rows anyway)
    if vocab["name"] == "bucket_subword_vocab" and vocab_fields["bucket_exp"] <= 40:
        lo, hi, exp = int(vocab_fields["min_n"]), int(vocab_fields["max_n"]), int(vocab_fields["bucket_exp"])
        dense = body["data"] if storage["chunk_id"] == C.NDARRAY else None

        def oov_batch(batch: list[str]) -> tuple[np.ndarray, np.ndarray]:
            rows, owner = lookups.bucket_rows_batch(batch, lo, hi, exp, n)
            if dense is not None:
                return lookups.composed_batch(rows, owner, len(batch), dense)
            # quantized: each n-gram row the batch needs is reconstructed once
            needed, at = np.unique(rows, return_inverse=True)
            return lookups.composed_batch(at.reshape(-1), owner, len(batch), reconstruct(body, needed))
    else:
        oov_batch = None
    subwords = None
    if vocab["name"] != "simple_vocab":
        subwords = Subwords(vocab["name"], vocab_fields, subword_rows, indices=rows_of, lookup_batch=oov_batch,
                            lookup=None if rows_of is None else
                            lookups.oov_lookup(rows_of, storage_rows, int(vectors.shape[1]),
                                               body["data"] if storage["chunk_id"] == C.NDARRAY else None))
    return Embeddings(words, vectors, norms=None if norms is None else norms["body"]["norms"],
                      metadata=metadata, subwords=subwords, storage=held, kept=kept)
