"""Codec of finalfusion (``.fifu``) embeddings: chunks to and from the Embeddings model."""

from __future__ import annotations

import tomllib
from typing import Any

import construct as cs
import numpy as np
import tomli_w

from ... import framework
from ...embeddings import Embeddings, LazyRows, Storage, Subwords, warn_if_changed
from ...errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from ...framework import field_docs
from ...framework.records import selected_rows
from ...registry import Format, register, schema_io
from ...schemas import finalfusion as schema
from . import lookups
from .sniff import FINALFUSION

NAME = FINALFUSION.name
C = schema.ChunkId
VOCABS = {i: schema.CHUNK_TYPES[i][0] for i in schema.VOCAB_CHUNKS}
STORAGES = {i: schema.CHUNK_TYPES[i][0] for i in schema.STORAGE_CHUNKS}
HEAD = schema.chunk_header.sizeof()  # the bytes of a chunk's id and length


def register_chunk(chunk_id: int, name: str, body: cs.Construct) -> None:
    """Make chunk type ``chunk_id`` known: it is then parsed, built, validated, dumped and documented."""
    if chunk_id in schema.CHUNK_TYPES and schema.CHUNK_TYPES[chunk_id][0] != name:
        raise ValueError(f"chunk id {chunk_id} is already {schema.CHUNK_TYPES[chunk_id][0]!r}")
    schema.CHUNK_TYPES[chunk_id] = (name, body)
    _FORMAT.schemas[f"chunk {chunk_id}: {name}"] = body


parse, build = schema_io(NAME, schema.finalfusion)


def _chunk(parsed: Any, ids: dict[int, str]) -> Any:
    found = [c for c in parsed["chunks"] if c["chunk_id"] in ids]
    return found[0] if found else None


def _at(parsed: Any, chunk: Any, field: str) -> dict[str, Any]:
    """Where a field of a parsed chunk is, named as parse errors name it (``chunks[2].nd_norms.n_norms``
    and its byte offset): for the errors found when the chunks are put together."""
    index = next(i for i, c in enumerate(parsed["chunks"]) if c is chunk)
    offset = chunk.get("_offset")
    if offset is not None:
        offset += HEAD
        for name, con, _ in field_docs(schema.CHUNK_TYPES[chunk["chunk_id"]][1]):
            if name == field:
                break
            offset += con.sizeof()  # the fields errors name follow fixed-size ones
    return {"path": f"chunks[{index}].{chunk['name']}.{field}", "offset": offset}


def reconstruct(q: Any, rows: Any = None) -> np.ndarray:
    """Dense rows of a QuantizedArray body: centroid concat, optional projection, optional norms."""
    codes = q["codes"] if rows is None else q["codes"][rows]
    sub = q["subquantizers"]  # (quantized_len, n_centroids, sub_len)
    nq, nc, width = sub.shape
    codes = codes.reshape(-1, nq)
    if codes.size and int(codes.max()) >= nc:  # checked on the rows made: opening never reads every code
        raise FormatError(f"a code picks centroid {int(codes.max())} of {nc}", format=NAME,
                          path="chunks.storage.codes")
    # one gather: code j of a row picks centroid (j, code) from the flattened table; rows come out concatenated
    # (np.take copies the centroids twice as fast as indexing with the same array)
    at = codes.astype(np.intp)
    at += np.arange(0, nq * nc, nc)
    x = np.take(sub.reshape(nq * nc, width), at, axis=0).reshape(len(codes), nq * width)
    x = x.astype(np.float32, copy=False)
    if q["use_projection"]:
        x = x @ q["projection"].T
    if q["use_norms"]:
        norms = q["norms"] if rows is None else q["norms"][rows]
        x *= norms[:, None]
    return x.astype(np.float32, copy=False)


def to_model(parsed: Any, *, dtype: Any = np.float32, limit: int | None = None, vocab: Any = None,
             **_: Any) -> Embeddings:
    """The embeddings of a parsed file; ``limit`` and ``vocab`` keep some word rows (the subword rows and the
    n-gram lookups stay those of the file, and a file written from the result holds the kept words)."""
    vocab_chunk, storage = _chunk(parsed, VOCABS), _chunk(parsed, STORAGES)
    words = vocab_chunk["body"].get("words", []) if vocab_chunk is not None else []
    keep = selected_rows(words, limit, vocab)
    if keep is None or storage is None or vocab_chunk is None:  # (_model says what is missing)
        return _model(parsed, dtype)
    n, rows = len(words), np.array(keep, np.intp)
    if storage["chunk_id"] == C.QUANTIZED_ARRAY:
        # the file as if it held only the kept words: the quantized array's codes (and norms) are picked, never
        # reconstructed, and the subword rows after the words stay
        norms_chunk = _parts(parsed)[2]  # the chunks checked before their rows are picked
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
        return _model(cs.Container(parsed, chunks=chunks), dtype)
    # dense: the kept rows are copied (a slice stays a view); lookups keep reading the file's matrix
    full = _model(parsed, dtype)
    vectors = full.vectors[: len(rows)] if keep == list(range(len(rows))) else full.vectors[rows]
    norms = None if full.norms is None else np.asarray(full.norms)[rows]
    # (the word rows are no longer the storage matrix's head: written as the kept rows + the subword rows)
    return Embeddings([words[i] for i in keep], vectors, norms=norms, metadata=full.metadata,
                      subwords=full.subwords, kept=full.kept)


def _parts(parsed: Any) -> tuple[Any, Any, Any, Any]:
    """The vocabulary, storage and NdNorms chunks and the metadata table, checked against one another: what
    reading needs of a file, and what check() reports."""
    vocab, storage = _chunk(parsed, VOCABS), _chunk(parsed, STORAGES)
    if vocab is None or storage is None:
        raise FormatError("a finalfusion file needs a vocabulary and a storage chunk", format=NAME)
    n = len(vocab["body"].get("words", []))  # floret vocabularies have no word list
    body = storage["body"]
    total = len(body["data"]) if storage["chunk_id"] == C.NDARRAY else len(body["codes"])  # storage rows
    rows_at = _at(parsed, storage, "rows" if storage["chunk_id"] == C.NDARRAY else "n_embeddings")
    if total < n:
        raise FormatError(f"storage has {total} rows for {n} words", format=NAME, **rows_at)
    subword = lookups.subword_rows(vocab["name"], vocab["body"])
    if total < n + subword:
        raise FormatError(f"storage has {total} rows, but the {vocab['name']} addresses {n} + {subword}",
                          format=NAME, **rows_at)
    meta = _chunk(parsed, {5: "metadata"})
    metadata = None
    if meta is not None:
        toml_at = _at(parsed, meta, "toml")
        try:
            metadata = tomllib.loads(bytes(meta["body"]["toml"]).decode("utf-8"))
        except UnicodeDecodeError as e:
            if toml_at["offset"] is not None:
                toml_at["offset"] += e.start
            raise FormatError(f"invalid UTF-8 in the metadata: {e.reason}", format=NAME, **toml_at) from None
        except tomllib.TOMLDecodeError as e:
            raise FormatError(f"metadata is not valid TOML: {e}", format=NAME, **toml_at) from None
        except RecursionError:  # tomllib reads nested arrays and tables by recursion
            raise FormatError("metadata TOML nests too deeply to read", format=NAME, **toml_at) from None
    norms = _chunk(parsed, {C.ND_NORMS: "nd_norms"})
    if norms is not None and len(norms["body"]["norms"]) != n:  # both references assert one norm per word
        raise FormatError(f"{len(norms['body']['norms'])} norms for {n} words", format=NAME,
                          **_at(parsed, norms, "n_norms"))
    return vocab, storage, norms, metadata


def _layout(parsed: Any, vocab: Any, storage: Any, norms: Any) -> list[Any]:
    """The file's chunks in order: the ones the model holds by their role ("metadata", "vocab", "storage",
    "norms"), any other (a user-registered type, an unknown id) as the parsed chunk, written back as it is."""
    held = {"metadata": _chunk(parsed, {5: "metadata"}), "vocab": vocab, "storage": storage, "norms": norms}
    roles = {id(c): role for role, c in held.items() if c is not None}
    return [roles.get(id(c), c) for c in parsed["chunks"]]


def _model(parsed: Any, dtype: Any) -> Embeddings:
    vocab, storage, norms, metadata = _parts(parsed)
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
    meta = _chunk(parsed, {C.METADATA: "metadata"})
    if meta is not None:  # written back as these bytes while the table is unchanged
        kept["metadata_toml"] = bytes(meta["body"]["toml"])
    if storage["chunk_id"] == C.NDARRAY:
        # the whole matrix: written in one piece while vectors is its head; the rows after the words (a view)
        parts = Storage(matrix=body["data"], rows=lambda rows: body["data"][rows])
        subword_rows: Any = body["data"][n:]
    else:
        # written back as it is while the word rows still reconstruct from it
        parts = Storage(quantized=body, rows=lambda rows: reconstruct(body, np.asarray(rows)))
        subword_rows = lambda: reconstruct(body, slice(n, None))  # noqa: E731 - made when first asked for
    storage_rows = parts.rows
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
                      metadata=metadata, subwords=subwords, storage=parts, kept=kept)


_SUBWORD_IDS = {name: i for i, name in VOCABS.items() if i != C.SIMPLE_VOCAB}


def _vocab_chunk(obj: Embeddings) -> cs.Container:
    """The vocabulary the embeddings were read with (subword ones keep their n-gram settings), else simple."""
    vocab_type = obj.subwords.kind if obj.subwords is not None else None
    fields = obj.subwords.settings if obj.subwords is not None else None
    if obj.duplicates:  # finalfusion-rust and -python refuse such a vocabulary when they load it
        first = next(w for i, w in enumerate(obj.words) if obj.vocab[w] != i)
        raise BuildError(f"a finalfusion vocabulary holds each word once; {obj.duplicates} row(s) repeat an "
                         f"earlier word (first {first!r}); deduplicate=True (--dedupe) keeps the {obj.occurrence} "
                         "of each, which lookups use",
                         format=NAME, path="chunks.vocab.words")
    if vocab_type not in _SUBWORD_IDS or fields is None:
        return cs.Container(chunk_id=C.SIMPLE_VOCAB, name="simple_vocab",
                            body=cs.Container(words=list(obj.words)))
    body = cs.Container(**fields)
    if vocab_type == "floret_subword_vocab":
        if obj.words:
            raise BuildError("a floret vocabulary has no word list", format=NAME, path="chunks.vocab")
    else:
        body["words"] = list(obj.words)  # (n_words: the schema's)
    return cs.Container(chunk_id=_SUBWORD_IDS[vocab_type], name=vocab_type, body=body)


def _metadata_chunk(obj: Embeddings) -> cs.Container | None:
    """The metadata TOML: the bytes it was read from while it is the same table (another writer's layout and
    comments kept), else written anew; None without metadata."""
    toml = obj.kept.get("metadata_toml")
    if toml is None or obj.metadata is None or tomllib.loads(toml.decode("utf-8")) != obj.metadata:
        if not obj.metadata:
            return None
        try:
            toml = tomli_w.dumps(obj.metadata).encode("utf-8")
        except (TypeError, RecursionError) as e:  # a value TOML has no type for; nesting too deep to write
            raise BuildError(f"metadata cannot be written as TOML: {e}",
                             format=NAME, path="chunks.metadata") from None
    return cs.Container(chunk_id=C.METADATA, name="metadata", body=cs.Container(toml=toml))


def _is_head(part: np.ndarray, whole: Any) -> bool:
    """``part`` is the first rows of ``whole`` in the same memory (the same array, not a copy)."""
    if not isinstance(whole, np.ndarray) or part.dtype != whole.dtype or part.shape[1:] != whole.shape[1:]:
        return False
    return (part.__array_interface__["data"][0] == whole.__array_interface__["data"][0]
            and part.strides == whole.strides and len(part) <= len(whole))


def subword_matrix(obj: Embeddings) -> np.ndarray | None:
    """The subword rows of embeddings with a subword vocabulary (the storage rows after the words): as read
    (a view), reconstructed from a quantized array, or None."""
    return obj.subwords.matrix() if obj.subwords is not None else None


def _quantized_kept(obj: Embeddings) -> Any:
    """The quantized array the embeddings were read with, while their word rows are still the ones it
    reconstructs (never reconstructed, or equal); None otherwise (an edited matrix is written dense)."""
    q = obj.storage.quantized_array() if obj.storage is not None else None
    if q is None or obj.lazy:
        return q
    vectors = np.asarray(obj.vectors)
    if len(q["codes"]) >= len(vectors) and np.array_equal(
            reconstruct(q, slice(0, len(vectors))), vectors, equal_nan=True):
        return q
    return None


def _dense_storage(obj: Embeddings, vectors: np.ndarray) -> cs.Container:
    """Dense word rows plus, for a subword vocabulary, the subword rows that were read."""
    if obj.subwords is not None and obj.subwords.kind in _SUBWORD_IDS:
        sub = subword_matrix(obj)
        if sub is None or sub.shape[1:] != vectors.shape[1:]:
            raise BuildError("a subword vocabulary needs its subword rows (subwords.rows)",
                             format=NAME, path="chunks.storage")
        whole = obj.storage.matrix if obj.storage is not None else None
        if _is_head(vectors, whole) and _is_head(np.asarray(sub), whole[len(vectors):]):
            vectors = whole  # word rows and subword rows still the read matrix: no copy
        else:
            vectors = np.concatenate([vectors, np.asarray(sub, "<f4")])
    return cs.Container(chunk_id=C.NDARRAY, name="ndarray", body=cs.Container(data=vectors))


_NORMALIZED = "rows L2-normalised, their norms kept in the NdNorms chunk"


def _lengths(rows: np.ndarray) -> np.ndarray:
    """The L2 norm of each row, taken in float64 and rounded to float32 once: ``unit * length`` in float32
    then gives each value back within an ulp (85% of the values of gensim's lee_fasttext_new.bin and 95% of
    normally distributed ones bit for bit)."""
    return np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64)).astype("<f4")


def _unit(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows L2-normalised (a zero row stays zero) and their lengths."""
    lengths = _lengths(vectors)
    unit = (vectors / np.where(lengths > 0, lengths, 1).astype("<f4")[:, None]).astype("<f4", copy=False)
    return unit, lengths


def _normalized_quantized(q: Any, n: int) -> tuple[Any, np.ndarray]:
    """A quantized array whose first ``n`` rows (the words) reconstruct L2-normalised, and those rows'
    lengths: the array's own norms (one f32 per row, added when it has none) are divided by each word row's
    length, so that the codes and centroids stay as they are; subword rows are left as they are."""
    before = reconstruct(q, slice(0, n))
    lengths = _lengths(before)
    rows = len(q["codes"])
    scale = np.asarray(q["norms"], "<f4").copy() if q["use_norms"] else np.ones(rows, "<f4")
    scale[:n] = scale[:n] / np.where(lengths > 0, lengths, 1)
    unit = cs.Container(q, use_norms=1, norms=scale)
    warn_if_changed("normalize", _NORMALIZED, before, reconstruct(unit, slice(0, n)))
    return unit, lengths


def from_model(obj: Any, *, normalize: bool | None = None) -> cs.Container:
    """Embeddings -> [Metadata] Vocab Storage [NdNorms].

    ``normalize``: by default, embeddings of another format (word2vec, GloVe, a fastText model, ...) are
    written as finalfusion's tools write and expect them: word rows L2-normalised, their lengths in an NdNorms
    chunk (finalfusion-rust's ``read_word2vec_binary`` and ``read_fasttext``, finalfusion-utils' ``convert``),
    with one warning line saying the values changed and by how much; a word-vector writer multiplies them back
    (:func:`~wvformats.embeddings.unnormalized`), each value within an ulp of the original. Embeddings read from
    a finalfusion file keep their rows as read. ``normalize=True`` normalises those too; ``normalize=False``
    writes any rows as they are (a bit-exact round trip, which finalfusion's similarity queries misread unless
    the rows have unit length). Subword rows are never normalised (finalfusion's convention), and a quantized
    array stays quantized: its per-row norms take the normalisation.

    Embeddings read from a finalfusion file keep their vocabulary type (bucket, fastText, explicit or floret
    n-grams with their settings), their subword rows, their quantized storage (while the word rows are
    unchanged), their metadata bytes and any other chunk, so that reading and writing a file gives it back; a
    fastText model keeps its subword vocabulary and bucket rows. Word-vector input gets a simple vocab. A
    vocabulary holds each word once: embeddings that repeat a word are refused unless ``deduplicate=True``
    (the API's, :meth:`~wvformats.embeddings.Embeddings.deduplicated`) keeps the row of each that lookups use
    (the first; a fastText model's last) and the subword vocabulary.
    """
    if isinstance(obj, tuple):
        obj = Embeddings(*obj)
    if not isinstance(obj, Embeddings):
        raise BuildError(f"expected Embeddings, got {type(obj).__name__}", format=NAME)
    obj.check_parts(NAME)
    # (a vocabulary or metadata the format cannot hold is refused before the rows are computed)
    vocab, metadata = _vocab_chunk(obj), _metadata_chunk(obj)
    if normalize is None:  # finalfusion's convention for rows from elsewhere; a finalfusion file's rows as read
        normalize = obj.kept.get("layout") is None
    norms, lengths = obj.norms, None
    q = _quantized_kept(obj)
    if q is not None:  # rows still a read quantized array's are not made: the array is written, rescaled or not
        if normalize:
            q, lengths = _normalized_quantized(q, len(obj.words))
        storage = cs.Container(chunk_id=C.QUANTIZED_ARRAY, name="quantized_array", body=q)
    else:
        vectors = np.ascontiguousarray(obj.vectors, dtype="<f4")
        if normalize:
            unit, lengths = _unit(vectors)
            warn_if_changed("normalize", _NORMALIZED, vectors, unit)
            vectors = unit
        storage = _dense_storage(obj, vectors)
    if lengths is not None:  # norms already held stay the factor back to the input's rows
        norms = lengths if norms is None else (np.asarray(norms, "<f4") * lengths).astype("<f4")
    built = {"metadata": metadata, "vocab": vocab, "storage": storage, "norms": None}
    if norms is not None:
        built["norms"] = cs.Container(chunk_id=C.ND_NORMS, name="nd_norms",
                                      body=cs.Container(norms=np.asarray(norms, "<f4")))
    chunks = cs.ListContainer()
    for part in obj.kept.get("layout") or ["metadata", "vocab", "storage", "norms"]:
        chunk = built.pop(part, None) if isinstance(part, str) else part
        if chunk is not None:
            chunks.append(chunk)
    if built.get("metadata") is not None:  # new to this model: first, the only place the readers look
        chunks.insert(0, built["metadata"])
    if built.get("norms") is not None:  # after the storage
        chunks.insert(next(i for i, c in enumerate(chunks) if c is storage) + 1, built["norms"])
    listed = [int(c.chunk_id) for c in chunks]
    if obj.kept.get("legacy_header") is not None and listed == [*obj.kept["legacy_header"], C.ND_NORMS]:
        listed = obj.kept["legacy_header"]  # a legacy file comes back as it was
    ids = np.array(listed, "<u4")
    return cs.Container(magic=schema.MAGIC, version=schema.VERSION, n_chunks=len(ids), chunk_ids=ids, chunks=chunks)


def inspect(parsed: Any) -> dict[str, Any]:
    chunks = [{"id": int(c["chunk_id"]), "type": c["name"]} for c in parsed["chunks"]]
    info: dict[str, Any] = {"chunks": len(chunks), "chunk_types": chunks}
    quirks = [f"{c['name']}: length field {c['length_short_by']} bytes short (finalfusion-python 0.7.1)"
              for c in parsed["chunks"] if c.get("length_short_by")]
    if quirks:
        info["quirks"] = quirks
    vocab = _chunk(parsed, VOCABS)
    if vocab is not None and isinstance(vocab["body"], cs.Container):
        info["words"] = len(vocab["body"].get("words", []))  # floret vocabularies have no word list
    storage = _chunk(parsed, STORAGES)
    if storage is not None and storage["chunk_id"] == C.NDARRAY:
        info["dim"] = int(storage["body"]["cols"])
        info["rows"] = int(storage["body"]["rows"])
    elif storage is not None:  # quantized: the dimension of the reconstructed rows, and how they are coded
        q = storage["body"]
        info["dim"], info["rows"] = int(q["reconstructed_len"]), int(q["n_embeddings"])
        info["quantized"] = {"subquantizers": int(q["quantized_len"]), "centroids": int(q["n_centroids"]),
                             "projection": bool(q["use_projection"]), "norms": bool(q["use_norms"])}
    return info


FIRST_WORDS = 10  # words a quick inspect shows


def inspect_head(buf: Any, *, complete: bool = True, **_: Any) -> dict[str, Any]:
    """The header, the metadata TOML and each chunk's leading fields, found by walking the chunks by their
    length fields: no array body and no vocabulary beyond its first words is read."""

    view = memoryview(buf).cast("B")
    head = framework.parse(cs.Struct(*schema.header.subcons, "_end" / cs.Tell), view, format=NAME)
    listed = [int(i) for i in head["chunk_ids"]]
    pos, size = head["_end"], len(view)
    chunks: list[dict[str, Any]] = []
    info: dict[str, Any] = {"chunks": 0, "chunk_types": chunks}
    while pos < size:
        if pos + HEAD > size:
            raise TruncatedError("the file ends inside a chunk header", format=NAME, path=f"chunks[{len(chunks)}]",
                              offset=pos)
        chunk_id, length = _chunk_header(view, pos)
        name, body = schema.CHUNK_TYPES.get(chunk_id, ("unknown", None))
        row: dict[str, Any] = {"id": chunk_id, "type": name, "offset": pos, "bytes": HEAD + length}
        at = pos + HEAD
        fields = _leading_fields(body, view, at, f"chunks[{len(chunks)}].{name}") if body is not None else {}
        if chunk_id in schema.LENGTH_QUIRKS and "n_ngrams" in fields:
            short = schema.LENGTH_QUIRKS[chunk_id](cs.Container(fields))
            after = at + length + short  # a finalfusion-python 0.7.1 length: the next chunk is further on
            if short and at + length != size and not _chunk_at(view, at + length) and _chunk_at(view, after):
                row["bytes"] += short
                info.setdefault("quirks", []).append(f"{name}: length field {short} bytes short "
                                                     "(finalfusion-python 0.7.1)")
        if pos + row["bytes"] > size:
            raise TruncatedError(f"the file ends inside the {name} chunk ({row['bytes']} bytes from its start, "
                                 f"{size - pos} left)", format=NAME, path=f"chunks[{len(chunks)}]", offset=pos)
        chunks.append(row)
        if chunk_id == C.METADATA:
            info["metadata"] = _metadata_table(view[at : at + length], at)
        elif chunk_id in VOCABS:
            if settings := {k: v for k, v in fields.items() if k != "n_words"}:
                info["vocab"] = settings
            info["words"] = fields.get("n_words", 0)  # floret vocabularies have no word list (as inspect says)
            if "n_words" in fields:
                info["first_words"] = _first_words(view, at + _fixed_size(body), fields["n_words"])
        elif chunk_id == C.NDARRAY:
            info["dim"], info["rows"] = fields["cols"], fields["rows"]
        elif chunk_id == C.QUANTIZED_ARRAY:
            info["dim"], info["rows"] = fields["reconstructed_len"], fields["n_embeddings"]
            info["quantized"] = {"subquantizers": fields["quantized_len"], "centroids": fields["n_centroids"],
                                 "projection": bool(fields["use_projection"]), "norms": bool(fields["use_norms"])}
        pos += row["bytes"]
    info["chunks"] = len(chunks)
    if [c["id"] for c in chunks] != listed:
        info["header_lists"] = listed
    return info


def _leading_fields(body: cs.Construct, view: memoryview, at: int, path: str) -> dict[str, Any]:
    """The values of a chunk body's fixed-size fields before its first array or table (``path``: the chunk's,
    for errors)."""
    out: dict[str, Any] = {}
    for name, con, _ in field_docs(body):
        try:
            n = con.sizeof()
        except (cs.SizeofError, KeyError):
            break
        if name and n:
            if at + n > len(view):
                raise TruncatedError(f"the file ends inside the {name} field", format=NAME, path=f"{path}.{name}",
                                     offset=at)
            try:
                value = con.parse(view[at : at + n])
            except cs.ConstructError as e:  # a constant that does not match (a chunk's dtype id), a bad value
                found = int.from_bytes(view[at : at + n], "little") if n <= 8 else bytes(view[at : at + n])
                error = ValueMismatchError if isinstance(e, cs.ConstError) else FormatError
                raise error("field does not hold a value this chunk can have", format=NAME,
                            path=f"{path}.{name}", offset=at, found=found) from None
            out[name] = value if isinstance(value, (bytes, str)) else int(value)
        at += n
    return out


def _fixed_size(body: cs.Construct) -> int:
    """The bytes of a vocabulary body before its word table."""
    size = 0
    for name, con, _ in field_docs(body):
        if name == "words":
            return size
        size += con.sizeof()
    return size


def _chunk_header(view: memoryview, pos: int) -> tuple[int, int]:
    """The id and length of the chunk at ``pos`` (its header read with the schema's ``chunk_header``)."""
    head = schema.chunk_header.parse(view[pos : pos + HEAD])
    return head.chunk_id, head.length


def _chunk_at(view: memoryview, pos: int) -> bool:
    """A chunk header of a known type starts at ``pos`` whose length fits in the file."""
    if pos + HEAD > len(view):
        return False
    chunk_id, length = _chunk_header(view, pos)
    return chunk_id in schema.CHUNK_TYPES and pos + HEAD + length <= len(view)


def _first_words(view: memoryview, at: int, n_words: int) -> list[str]:
    """The first words of a table of u32-length-prefixed UTF-8 words (undecodable bytes shown replaced)."""
    words = []
    for _ in range(min(n_words, FIRST_WORDS)):
        if at + 4 > len(view):
            break
        n = int.from_bytes(view[at : at + 4], "little")
        words.append(bytes(view[at + 4 : at + 4 + n]).decode("utf-8", "replace"))
        at += 4 + n
    return words


def _metadata_table(toml: memoryview, at: int) -> Any:
    try:
        return tomllib.loads(bytes(toml).decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
        raise FormatError(f"metadata is not valid UTF-8 TOML: {e}", format=NAME, path="chunks.metadata.toml",
                          offset=at) from None


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
    if _chunk(parsed, VOCABS) is not None and _chunk(parsed, STORAGES) is not None:
        try:
            _parts(parsed)
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
