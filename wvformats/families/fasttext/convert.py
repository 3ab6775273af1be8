"""fastText models to and from embeddings of other formats (finalfusion's above all), keeping what fastText
looks up: the n-gram bucket rows, hashed the same way in both (finalfusion's fastText vocabulary uses
fastText's hash, the same n-grams and the same bucket count).

Into finalfusion, a word's row is fastText's ``get_word_vector`` (the mean of its own input row and its
n-gram rows) and the bucket rows follow the words. Back into fastText, each word's own input row is solved
from its vector so that fastText's mean gives the vector again: ``count * vector - sum(n-gram rows)``,
then corrected against fastText's float32 sums. fastText gives unknown words the vectors they had bit for
bit, and words theirs within 2 ulps of the vector's largest value (gensim's lee_fasttext_new.bin through a
finalfusion file: 96% of the values bit for bit from its rows as stored, 89% through unit rows and norms).
"""

from __future__ import annotations

import struct
import warnings
from typing import TYPE_CHECKING, Any

import construct as cs
import numpy as np

from ...embeddings import Embeddings, unnormalized, warn_if_changed
from ...errors import BuildError, FormatError
from ...schemas import fasttext as schema
from ...spelling import written_words
from ..finalfusion import composed_batch
from . import subwords
from .edit import CURRENT
from .sniff import FASTTEXT
from .subwords import EOS

if TYPE_CHECKING:
    from .model import FastText

NAME = FASTTEXT.name
_T = struct.unpack("<q", struct.pack("<d", 1e-4))[0]  # fastText's default sampling threshold, as stored
# finalfusion vocabularies fastText's bucket table cannot hold, and why
_NO_FASTTEXT_FORM = {
    "bucket_subword_vocab": "finalfusion's own n-gram hash (FNV-1a-64 into 2^bucket_exp buckets)",
    "explicit_subword_vocab": "an explicit n-gram table (fastText hashes every n-gram into buckets)",
    "floret_subword_vocab": "floret's MurmurHash3 buckets",
}
_I32_MAX = (1 << 31) - 1  # fastText's args are i32
_SOLVE_BLOCK = 1 << 18  # values of the words solved at once (with ~16 n-gram rows each: ~32 MB of float64)
# corrections of the words' own rows against fastText's sums: two Newton steps, two to the neighbouring float32
# (on gensim's lee_fasttext_new.bin: 65% of the values bit for bit before, 96% after; more rounds gain nothing)
_SOLVE_ROUNDS = 4


DEFAULT_BUCKET = 2_000_000  # fastText's -bucket
_BUCKETS_PER_KEPT = 64  # a pruned model's buckets, past the default, at most this many per kept one


def bucket_rows(m: FastText) -> np.ndarray:
    """The model's n-gram rows as finalfusion's fastText vocabulary addresses them, bucket ``b`` at row ``b``:
    a view of a dense matrix, reconstructed from a quantized one. A pruned model's (its prune index keeps
    some buckets) are all ``bucket`` rows, the pruned ones zero: fastText skips a pruned n-gram, and a zero
    row adds nothing to finalfusion's sum, whose unit vector is fastText's mean's. finalfusion has no prune
    index, so a warning line says how large the storage grows."""
    n, bucket = m.nwords, int(m.args["bucket"])
    _warn_short_ngrams(int(m.args["minn"]), int(m.args["maxn"]), "fastText model to finalfusion",
                       "finalfusion's lookups add")
    if not m.buckets.pruned:
        return m.input.rows(np.arange(n, n + bucket)) if m.input.quantized else m.input.part["data"][n:]
    keys = m.buckets.keys
    if len(keys) and (int(keys.min()) < 0 or int(keys.max()) >= bucket):
        bad = int(keys.min()) if int(keys.min()) < 0 else int(keys.max())
        raise FormatError(f"a prune index entry names n-gram bucket {bad}, outside the model's {bucket}",
                          format=NAME, path="dictionary.pruneidx")
    if bucket > max(DEFAULT_BUCKET, _BUCKETS_PER_KEPT * len(keys)):  # (zero rows out of proportion to the file)
        raise FormatError(f"a pruned model of {bucket} buckets keeps {len(keys)}: finalfusion, which has no prune "
                          f"index, would need {bucket * m.input.shape[1] * 4 / 1e9:.1f} GB of zero rows for the "
                          "others; refused", format=NAME, path="args.bucket",
                          offset=schema.args_offset(m.parsed["new_format"], "bucket") if m.parsed is not None else None)
    out = np.zeros((bucket, m.input.shape[1]), "<f4")
    out[keys] = m.input.rows(m.buckets.values + n)
    warnings.warn(f"a pruned fastText model to finalfusion: its {len(keys)} kept n-gram rows are written among "
                  f"all {bucket} buckets, the pruned ones as zero rows (finalfusion has no prune index): "
                  f"{out.nbytes / 1e6:.1f} MB of storage", UserWarning, stacklevel=2)
    return out


def _warn_short_ngrams(minn: int, maxn: int, what: str, differ: str) -> None:
    """One warning line when n-grams of one character are taken (minn <= 1): fastText leaves out those that
    are its brackets, ``<`` and ``>``, which finalfusion's fastText vocabulary takes (the two agree from
    minn 2 on), so unknown words' vectors differ by those two rows."""
    if minn <= 1 <= maxn:
        warnings.warn(f"{what}: with n-grams of one character (minn {minn}), {differ} the n-grams '<' and '>' "
                      "(finalfusion takes them, fastText does not): unknown words' vectors differ by those two "
                      "rows", UserWarning, stacklevel=3)


def from_embeddings(obj: Any, unnormalize: bool | None = None, to_encoding: str | None = None) -> cs.Container:
    """Embeddings -> an unsupervised fastText model whose ``get_word_vector`` gives each word its vector
    (rows multiplied by their stored norms unless ``unnormalize=False``). A fastText subword vocabulary
    (finalfusion's, or a fastText model's) is kept: its bucket, minn and maxn, and the bucket rows, so that
    words outside the vocabulary get the vectors they had; the words' own rows are solved so that fastText's
    means give their vectors (within 2 ulps of each vector's largest value, most bit for bit). Other subword
    vocabularies have no fastText form: the words are written without n-grams (maxn 0), with a warning line
    saying so. The words are written in ``to_encoding``, else in the encoding they were read in, else UTF-8."""
    if isinstance(obj, tuple):
        obj = Embeddings(*obj)
    if not isinstance(obj, Embeddings):
        raise BuildError(f"expected Embeddings, got {type(obj).__name__}", format=NAME)
    obj.check_parts(NAME)
    if obj.duplicates:
        raise BuildError(f"a fastText dictionary holds each word once; {obj.duplicates} row(s) repeat another's "
                         f"word; deduplicate=True (--dedupe) keeps the {obj.occurrence} of each, which lookups "
                         "use", format=NAME,
                         path="dictionary.entries.words")
    sw = obj.subwords
    vocab_type, fields = (sw.kind, sw.settings) if sw is not None else (None, {})
    vectors = np.ascontiguousarray(unnormalized(obj, unnormalize, NAME).vectors, "<f4")
    n, dim = vectors.shape
    words = written_words(obj, to_encoding, "dictionary.entries.words")  # (their bytes: n-grams hash those)
    bucket = minn = maxn = 0
    inputs = vectors
    if vocab_type == "fasttext_subword_vocab":
        bucket, minn, maxn = int(fields["buckets"]), int(fields["min_n"]), int(fields["max_n"])
        if max(bucket, minn, maxn) > _I32_MAX:
            raise BuildError(f"fastText holds at most {_I32_MAX} buckets and n-grams that long (i32); this vocabulary "
                             f"has {bucket} buckets, n-grams of {minn} to {maxn}", format=NAME, path="args")
        _warn_short_ngrams(minn, maxn, "finalfusion to fastText", "fastText's lookups leave out")
        sub = sw.matrix()
        if sub is None or sub.shape != (bucket, dim):
            raise BuildError(f"a fastText subword vocabulary of {bucket} buckets needs {bucket} subword rows of "
                             f"{dim} values (subwords.rows)", format=NAME, path="input")
        inputs = np.concatenate([vectors, np.asarray(sub, "<f4")])
        _own_rows(words, vectors, inputs, minn, maxn, bucket)
    elif vocab_type in _NO_FASTTEXT_FORM:
        warnings.warn(f"finalfusion to fastText: the vocabulary's subwords ({_NO_FASTTEXT_FORM[vocab_type]}) have "
                      "no fastText form; written without n-grams (maxn 0): fastText gives words outside the "
                      "vocabulary zeros", UserWarning, stacklevel=2)
    args = cs.Container(dim=dim, ws=5, epoch=5, minCount=1, neg=5, wordNgrams=1, loss=2, model=2, bucket=bucket,
                        minn=minn, maxn=maxn, lrUpdateRate=100, t=_T)
    entries = cs.Container(words=words, counts=np.ones(n, "<i8"), types=np.zeros(n, "i1"))
    dictionary = cs.Container(nwords=n, ntokens=n, pruneidx_size=-1, entries=entries, pruneidx=np.zeros((0, 2), "<i4"))
    return cs.Container(head=schema.MAGIC, new_format=True, magic=schema.MAGIC, version=CURRENT, args=args,
                        dictionary=dictionary, quant_input=0, input=cs.Container(data=inputs),
                        qout=0, output=cs.Container(data=np.zeros((n, dim), "<f4")))


def _own_rows(words: list[str], vectors: np.ndarray, inputs: np.ndarray, minn: int, maxn: int, bucket: int) -> None:
    """Write into ``inputs`` each word's own input row, such that fastText's mean of it and the word's n-gram
    rows (``inputs`` after the words) is the word's vector: ``count * vector - sum(n-gram rows)`` in float64,
    then corrected value by value (each column of a mean depends on that column only) against fastText's own
    float32 sums, keeping the closer of each correction. A block of words at a time (bounded memory). A
    warning line says how far fastText's means are from the vectors where they are not them bit for bit."""
    n, dim = len(words), inputs.shape[1]
    means = np.empty_like(vectors)
    block = max(1, _SOLVE_BLOCK // max(dim, 1))
    buckets = subwords.Buckets(n, bucket, None)
    for a in range(0, n, block):
        chunk = words[a : a + block]
        rows, owner = subwords.subword_rows(chunk, minn, maxn, buckets)
        if EOS in chunk:  # fastText gives </s> no n-grams: its vector is its own row
            keep = owner != chunk.index(EOS)
            rows, owner = rows[keep], owner[keep]
        means[a : a + block] = _solve(inputs, vectors[a : a + block], a, rows, owner)
    warn_if_changed("fastText", "each word's own input row solved so that fastText's mean of it and its n-gram "
                    "rows gives the word's vector (float32 sums)", vectors, means)


def _solve(inputs: np.ndarray, vectors: np.ndarray, first: int, rows: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """:func:`_own_rows` for the words ``first, first + 1, ...`` of ``vectors``, whose n-gram rows are
    ``rows`` (``owner``: the index of each one's word in ``vectors``, grouped by word); fastText's means."""
    n = len(vectors)
    per_word = np.bincount(owner, minlength=n)  # each word's n-gram rows
    counts = (per_word + 1)[:, None]  # and its own
    # each word's own row first, then its n-grams: the order fastText sums them in
    ids = np.arange(first, first + n)
    order = np.argsort(np.concatenate([ids - first, owner]), kind="stable")
    all_rows = np.concatenate([ids, rows])[order]
    all_owner = np.concatenate([ids - first, owner])[order]

    def means(candidate: np.ndarray) -> np.ndarray:
        inputs[first : first + n] = candidate
        return composed_batch(all_rows, all_owner, n, inputs, mean=True)[0]

    want = vectors.astype(np.float64)
    grams = np.zeros(vectors.shape, np.float64)  # the sum of each word's n-gram rows, in float64
    has = per_word > 0
    if has.any():  # (each word's n-grams are together: one sum per run)
        grams[has] = np.add.reduceat(inputs[rows], (np.cumsum(per_word) - per_word)[has], axis=0, dtype=np.float64)
    own = (want * counts - grams).astype("<f4")
    got = means(own)
    for k in range(_SOLVE_ROUNDS):
        off = got != vectors
        if not off.any():
            break
        if k < _SOLVE_ROUNDS // 2:  # Newton's step: the error times the count
            step = (own + (want - got) * counts).astype("<f4")
        else:  # then the neighbouring float32 towards the vector
            step = np.nextafter(own, np.where(got < vectors, np.float32(np.inf), np.float32(-np.inf)))
        tried = means(np.where(off, step, own))
        better = np.abs(tried.astype(np.float64) - want) < np.abs(got.astype(np.float64) - want)
        own = np.where(better, step, own)
        got = np.where(better, tried, got)
    inputs[first : first + n] = own
    return got
