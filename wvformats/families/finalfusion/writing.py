"""The Embeddings model to finalfusion chunks: [Metadata] Vocab Storage [NdNorms], rows L2-normalised as
finalfusion's tools expect them, a file read from finalfusion written back as it was."""

from __future__ import annotations

import tomllib
from typing import Any

import construct as cs
import numpy as np
import tomli_w

from ...embeddings import Embeddings, warn_if_changed
from ...errors import BuildError
from ...schemas import finalfusion as schema
from .chunks import NAME, VOCABS, C
from .quantized import reconstruct

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


def _subword_matrix(obj: Embeddings) -> np.ndarray | None:
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
        sub = _subword_matrix(obj)
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
