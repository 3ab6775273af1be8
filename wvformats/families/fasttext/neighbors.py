"""fastText's nearest neighbours and analogies (``FastText::getNN``, ``getAnalogies``), computed as fastText
computes them: the words' vectors made unit length once (``lazyComputeWordVectors``), each similarity a float32
dot product summed column after column (``DenseMatrix::dotRow``), divided by the query's norm.

Their argument order is fastText's: ``analogies(model, a, b, c)`` ranks words by ``a - b + c`` (fastText's
"A - B + C"), where gensim's ``most_similar(positive=[b, c], negative=[a])`` and this library's
``Embeddings.analogy(a, b, c)`` ("a is to b as c is to ?") rank by ``b - a + c``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

f32 = np.float32


def vector_norm(v: np.ndarray) -> np.float32:
    """``Vector::norm``: the square root of a float32 sum of squares taken in order."""
    return f32(np.sqrt(np.cumsum(v * v, dtype=f32)[-1])) if len(v) else f32(0)


def unit_vectors(model: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Every word's vector divided by its norm (``Vector::mul(1.0 / norm)``; zero rows stay zero), made once per
    model and kept with it (words x dim float32: the memory of the matrix of word vectors). As fastText's
    ``precomputeWordVectors`` makes them: entry ``i``'s is ``getWordVector(getWord(i))``, the later entry's for
    each entry of a word listed twice. With them, the id each entry's word is looked up as (``Dictionary::find``),
    or None when every entry is its own."""
    cached = getattr(model, "_fasttext_unit", None)
    if cached is None:
        m = np.array(model.vectors, f32)  # (by id: a word shown otherwise than its bytes is still itself)
        own = np.arange(model.nwords)
        ids = model._ids(model._raw[: model.nwords])
        ids = np.where(ids < model.nwords, ids, own)  # (a word a later label repeats: its own row, not the label's)
        if np.array_equal(ids, own):
            ids = None
        if ids is not None:
            m = m[ids]
        sq = np.zeros(len(m), f32)
        for j in range(m.shape[1]):  # the squares summed in order, as Vector::norm sums them
            sq += m[:, j] * m[:, j]
        norms = np.sqrt(sq)
        scale = np.where(norms > 0, (1.0 / np.where(norms > 0, norms, 1).astype(np.float64)).astype(f32), f32(1))
        cached = m * scale[:, None], ids
        model._fasttext_unit = cached
    return cached


def _dot_rows(m: np.ndarray, q: np.ndarray) -> np.ndarray:
    out = np.zeros(len(m), f32)
    for j in range(m.shape[1]):
        out += m[:, j] * q[j]
    return out


def nearest(model: Any, query: np.ndarray, k: int, banned: Iterable[str]) -> list[tuple[float, str]]:
    """``FastText::getNN``: the ``k`` words most similar to ``query`` (words of ``banned`` left out, every entry
    of one: fastText compares the strings), as (similarity, word) pairs from the most similar (a word listed
    twice may come twice, as in fastText)."""
    unit, ids = unit_vectors(model)
    qn = vector_norm(query)
    if abs(qn) < 1e-8:
        qn = f32(1)
    sims = _dot_rows(unit, query.astype(f32)) / qn
    ban = [i for w in set(model._raw_words(list(banned))) if 0 <= (i := model._raw_id(w)) < model.nwords]
    if ban and ids is not None:
        ban = np.flatnonzero(np.isin(ids, ban)).tolist()
    if ban:
        sims[ban] = -np.inf
    k = max(0, min(k, len(sims) - len(ban)))
    top = np.argsort(-sims, kind="stable")[:k]
    return [(float(sims[i]), model.words[i]) for i in top.tolist()]


def nearest_neighbors(model: Any, word: str, k: int = 10) -> list[tuple[float, str]]:
    """fastText's ``get_nearest_neighbors(word, k)``: (similarity, word) pairs, the word itself left out."""
    return nearest(model, model.get_word_vector(word), k, [word])


def analogies(model: Any, a: str, b: str, c: str, k: int = 10) -> list[tuple[float, str]]:
    """fastText's ``get_analogies(a, b, c, k)``: the words nearest to ``a - b + c``, each term of unit length
    (``1 / (norm + 1e-8)``), the three words left out."""
    query = np.zeros(model.dim, f32)
    for word, sign in ((a, 1.0), (b, -1.0), (c, 1.0)):
        v = model.get_word_vector(word)
        query += f32(sign / (float(vector_norm(v)) + 1e-8)) * v
    return nearest(model, query, k, [a, b, c])
