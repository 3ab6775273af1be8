"""gensim's ``KeyedVectors`` query surface on every embedding model: gensim 4's names, signatures, defaults and
return types, and its answers (rankings; scores within float32 rounding), over each model's own lookups.

:class:`~wvformats.embeddings.Embeddings` (word2vec, GloVe, Leader, finalfusion, .npz, ...) and the fastText
model take it from :class:`KeyedVectorsMixin`, so that gensim code runs unchanged on ``wv.read(path)``:

    kv = wv.read("vectors.bin")          # was: KeyedVectors.load_word2vec_format("vectors.bin", binary=True)
    kv.most_similar("king", topn=5), kv.get_vector("king", norm=True), kv.evaluate_word_pairs("wordsim353.tsv")

An unknown word is a KeyError, or, where the model composes words from their subwords (fastText, finalfusion's
subword vocabularies), the composed vector, as gensim's ``FastTextKeyedVectors`` gives it (``w in kv`` is True
for any word such a model composes; ``has_index_for`` and ``key_to_index`` are the vocabulary's words only).
An int key is a row number, as in gensim. Left out, and why: docs/queries.md.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Iterable, Sequence
from numbers import Integral
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

# what gensim takes as one key (a word, or a row number) and, in most_similar, as one term (or a vector)
KEY_TYPES = (str, int, np.integer)
TERM_TYPES = (str, int, np.integer, np.ndarray)


def ensure_list(value: Any) -> list[Any]:
    """gensim's ``_ensure_list``: one key or 1-D vector as a list of one, a 2-D array as its rows, None as []."""
    if value is None:
        return []
    if isinstance(value, KEY_TYPES) or (isinstance(value, np.ndarray) and value.ndim == 1):
        return [value]
    if isinstance(value, np.ndarray) and value.ndim == 2:
        return list(value)
    return list(value)


def unitvec(vec: np.ndarray) -> np.ndarray:
    """gensim's ``matutils.unitvec`` of a dense vector: scaled in float64 by 1 / its length, in its own dtype
    again; a zero vector unchanged."""
    vec = np.asarray(vec)
    wide = vec.astype(np.float64)
    length = float(np.linalg.norm(wide)) if vec.size else 0.0
    if length > 0.0:
        return (wide * (1.0 / length)).astype(vec.dtype if vec.dtype.kind == "f" else np.float64)
    return vec


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"Call to deprecated `{old}` (Use {new} instead).", DeprecationWarning, stacklevel=3)


class KeyedVectorsMixin:
    """gensim's ``KeyedVectors`` names over a model's ``words``, ``vectors``, ``vocab`` (word -> row) and
    ``embedding(word)`` (its vector, composed from subwords where the model can; None otherwise): the one home of
    the gensim surface, which :class:`~wvformats.embeddings.Embeddings` and every model built on it share."""

    words: list[str]
    vectors: Any
    vocab: dict[str, int]
    subwords: Any

    # -- gensim's attributes ------------------------------------------------------------------------------

    @property
    def index_to_key(self) -> list[str]:
        """The words in row order (gensim's ``index_to_key``: ``.words``)."""
        return self.words

    @property
    def key_to_index(self) -> dict[str, int]:
        """word -> its row (gensim's ``key_to_index``: ``.vocab``; of a repeated word, the row lookups use)."""
        return self.vocab

    @property
    def vector_size(self) -> int:
        """The dimensionality (gensim's ``vector_size``)."""
        return self.dim  # type: ignore[attr-defined,no-any-return]

    @property
    def wv(self) -> KeyedVectorsMixin:
        """The model itself: code written for gensim's ``model.wv.most_similar(...)`` runs as it is."""
        return self

    # -- keys and vectors ---------------------------------------------------------------------------------

    def get_index(self, key: Any, default: Any = None) -> int:
        """The row of ``key``: a word's, or an int key as a row number; ``default`` when it has none (if given),
        else KeyError (gensim's ``get_index``)."""
        val = self._word_row(key) if isinstance(key, str) else None
        if val is not None:
            return val
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < len(self.words):
            return int(key)
        if default is not None:
            return default  # type: ignore[no-any-return]
        raise KeyError(f"Key '{key}' not present")

    def _word_row(self, word: str) -> int | None:
        """The row of a word of the vocabulary (None: none); a model may look it up without making ``vocab``."""
        return self.vocab.get(word)

    def has_index_for(self, key: Any) -> bool:
        """Whether ``key`` has a row of its own (a word of the vocabulary, or a row number): False for a word
        that a subword model composes (gensim's ``has_index_for``)."""
        return self.get_index(key, -1) >= 0

    def __contains__(self, key: object) -> bool:
        """gensim's ``key in kv``: the word has a row, or (a subword vocabulary) can be composed."""
        if self.has_index_for(key):
            return True
        return isinstance(key, str) and self.subwords is not None and self.embedding(key) is not None

    def _key_vector(self, key: Any) -> np.ndarray:
        """The vector of a word or row number: the row, or a word composed from its subwords; else KeyError."""
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            return self._row(self.get_index(key))  # type: ignore[attr-defined,no-any-return]
        v = self.embedding(key) if isinstance(key, str) else None
        if v is None:
            raise KeyError(f"Key {key!r} not present: not in the vocabulary, and the model has no character n-grams "
                           f"to compose it from")
        return v

    def get_vector(self, key: Any, norm: bool = False) -> np.ndarray:
        """The vector of ``key`` (read-only), L2-normalised with ``norm=True`` (gensim's ``get_vector``). A
        word the vocabulary lacks is composed from its n-grams where the model can (gensim's fastText does),
        else KeyError."""
        if norm and self.has_index_for(key):
            result = self._unit_rows()[self.get_index(key)]
        else:
            result = self._key_vector(key)
            if norm:
                result = result / np.linalg.norm(result)
        result = result.view()
        result.flags.writeable = False
        return result

    def word_vec(self, *args: Any, **kwargs: Any) -> np.ndarray:
        """gensim's deprecated alias of :meth:`get_vector`."""
        _deprecated("word_vec", "get_vector")
        return self.get_vector(*args, **kwargs)

    def __getitem__(self, key_or_keys: Any) -> np.ndarray:
        """The vector of a key, or a matrix of the vectors of a list of keys (gensim's ``kv[...]``)."""
        if isinstance(key_or_keys, KEY_TYPES):
            return self.get_vector(key_or_keys)
        return np.vstack([self.get_vector(key) for key in key_or_keys])

    def get_mean_vector(self, keys: Any, weights: Any = None, pre_normalize: bool = True,
                        post_normalize: bool = False, ignore_missing: bool = True) -> np.ndarray:
        """The weighted mean of the vectors of ``keys`` (words, row numbers or vectors), each normalised first
        with ``pre_normalize``, the mean with ``post_normalize``; unknown keys left out unless
        ``ignore_missing=False`` (KeyError). gensim's ``get_mean_vector``, in gensim's arithmetic."""
        if len(keys) == 0:
            raise ValueError("cannot compute mean with no input")
        dtype = self._dtype()
        if isinstance(weights, list):
            weights = np.array(weights, dtype=dtype)
        if weights is None:
            weights = np.ones(len(keys), dtype=dtype)
        if len(keys) != weights.shape[0]:
            raise ValueError("keys and weights array must have same number of elements")
        mean = np.zeros(self.vector_size, dtype)
        total_weight = 0
        for idx, key in enumerate(keys):
            if isinstance(key, np.ndarray):
                mean += weights[idx] * key
                total_weight += abs(weights[idx])
            elif key in self:
                mean += weights[idx] * self.get_vector(key, norm=pre_normalize)
                total_weight += abs(weights[idx])
            elif not ignore_missing:
                raise KeyError(f"Key '{key}' not present in vocabulary")
        if total_weight > 0:
            mean = mean / total_weight
        if post_normalize:
            mean = unitvec(mean).astype(np.float32)
        return mean

    def _dtype(self) -> Any:
        """The float type the queries compute in: the vectors' own where they are floats, else float32 (an .npz of
        integer vectors)."""
        if getattr(self, "lazy", False):
            return np.float32
        dtype = np.asarray(self.vectors).dtype
        return dtype if dtype.kind == "f" else np.dtype(np.float32)

    # -- norms --------------------------------------------------------------------------------------------

    def fill_norms(self, force: bool = False) -> None:
        """Make (again, with ``force``) the unit-length rows the similarity queries use (gensim's
        ``fill_norms``; ``.norms`` stays the norms the file stores, see docs/queries.md)."""
        if force:
            self._unit_cache = None
        self._unit_rows()

    def get_normed_vectors(self) -> np.ndarray:
        """Every row scaled to unit length (gensim's ``get_normed_vectors``; a zero row stays zero). Read-only:
        the matrix the similarity queries use."""
        unit = self._unit_rows()
        unit.flags.writeable = False
        return unit  # type: ignore[no-any-return]

    def init_sims(self, replace: bool = False) -> None:
        """gensim's deprecated ``init_sims``: :meth:`fill_norms`; ``replace=True`` normalises the rows."""
        _deprecated("init_sims", "fill_norms()")
        self.fill_norms()
        if replace:
            self.unit_normalize_all()

    def unit_normalize_all(self) -> None:
        """Scale every row to unit length, in place (gensim's ``unit_normalize_all``)."""
        self.vectors = np.array(self._unit_rows())
        self._unit_cache = None

    # -- similarity ---------------------------------------------------------------------------------------

    def most_similar(self, positive: Any = None, negative: Any = None, topn: int | None = 10, clip_start: int = 0,
                     clip_end: int | None = None, restrict_vocab: int | None = None, indexer: Any = None, *,
                     limit: int | None = None) -> Any:
        """The ``topn`` words most similar to the mean of the ``positive`` keys' unit vectors minus the
        ``negative`` ones' (vectors taken as they are), by cosine similarity, the keys asked about left out;
        with ``topn=None`` the similarity of every row, as an array (gensim's ``most_similar``).

        ``positive`` and ``negative`` take a key, a vector, or a list of them (an item may be a ``(key,
        weight)`` pair); only rows ``clip_start:clip_end`` are searched, or the first ``restrict_vocab``;
        ``indexer`` (gensim's ``AnnoyIndexer``, ...) answers an int ``topn`` with its ``most_similar(mean,
        topn)``. ``most_similar(positive=["woman", "king"], negative=["man"])`` is the analogy man : king =
        woman : ?. (An int as the second argument is ``topn``, and ``limit=`` too, as in earlier releases.)
        """
        if isinstance(negative, (int, np.integer)) and not isinstance(negative, bool):
            topn, negative = int(negative), None
        if limit is not None:
            topn = limit
        if isinstance(topn, Integral) and topn < 1:
            return []
        positive, negative = ensure_list(positive), ensure_list(negative)
        clip_end = clip_end or len(self.words)
        if restrict_vocab:
            clip_start, clip_end = 0, restrict_vocab
        keys = []
        weight = np.concatenate((np.ones(len(positive)), -1.0 * np.ones(len(negative))))
        for idx, item in enumerate(positive + negative):
            if isinstance(item, TERM_TYPES):
                keys.append(item)
            else:
                keys.append(item[0])
                weight[idx] = item[1]
        mean = self.get_mean_vector(keys, weight, pre_normalize=True, post_normalize=True, ignore_missing=False)
        skip = {self.words[self.get_index(k)] for k in keys if isinstance(k, KEY_TYPES) and self.has_index_for(k)}
        if indexer is not None and isinstance(topn, int):
            return indexer.most_similar(mean, topn)
        sims = self._unit_rows()[clip_start:clip_end] @ mean
        if not topn:
            return sims
        return self._ranked(sims, skip, topn, offset=clip_start)  # type: ignore[attr-defined,no-any-return]

    def similar_by_word(self, word: Any, topn: int | None = 10, restrict_vocab: int | None = None) -> Any:
        """gensim's alias of :meth:`similar_by_key`."""
        return self.similar_by_key(word, topn, restrict_vocab)

    def similar_by_key(self, key: Any, topn: int | None = 10, restrict_vocab: int | None = None) -> Any:
        """The ``topn`` words nearest to ``key`` (gensim's ``similar_by_key``: ``most_similar([key])``)."""
        return self.most_similar(positive=[key], topn=topn, restrict_vocab=restrict_vocab)

    def similar_by_vector(self, vector: Any, topn: int | None = 10, restrict_vocab: int | None = None) -> Any:
        """The ``topn`` words nearest to ``vector`` (gensim's ``similar_by_vector``)."""
        return self.most_similar(positive=[vector], topn=topn, restrict_vocab=restrict_vocab)

    def most_similar_cosmul(self, positive: Any = None, negative: Any = None, topn: int | None = 10,
                            restrict_vocab: int | None = None) -> Any:
        """The words that maximise the product of their similarities to the ``positive`` keys divided by the
        product of those to the ``negative`` ones (Levy and Goldberg's 3CosMul, each similarity shifted to
        [0, 1]); ``topn=None``: every row's score, as an array (gensim's ``most_similar_cosmul``; a vector is
        taken as it is). ``restrict_vocab`` searches only the first that many rows (gensim 4.4 takes the
        argument and ignores it)."""
        if isinstance(topn, Integral) and topn < 1:
            return []
        positive, negative = ensure_list(positive), ensure_list(negative)
        skip = {w for w in positive + negative if isinstance(w, str) and self.has_index_for(w)}

        def term(t: Any) -> Any:
            return self.get_vector(t, norm=True) if isinstance(t, str) else t

        positive, negative = [term(t) for t in positive], [term(t) for t in negative]
        if not positive:
            raise ValueError("cannot compute similarity with no input")
        unit = self._unit_rows()
        unit = unit[:restrict_vocab] if restrict_vocab else unit
        pos = np.prod([(1 + unit @ t) / 2 for t in positive], axis=0)
        neg = np.prod([(1 + unit @ t) / 2 for t in negative], axis=0)
        sims = pos / (neg + 0.000001)
        if not topn:
            return sims
        return self._ranked(sims, skip, topn)  # type: ignore[attr-defined,no-any-return]

    def rank_by_centrality(self, words: Sequence[Any], use_norm: bool = True) -> list[tuple[Any, Any]]:
        """(similarity, word) pairs of ``words`` by their similarity to the mean of their vectors, most
        similar first; words the model lacks left out, with a warning (gensim's ``rank_by_centrality``)."""
        used = [w for w in words if w in self]
        if len(used) != len(words):
            logger.warning("vectors for words %s are not present in the model, ignoring these words",
                           set(words) - set(used))
        if not used:
            raise ValueError("cannot select a word from an empty list")
        vectors = np.vstack([self.get_vector(w, norm=use_norm) for w in used]).astype(np.float32)
        mean = self.get_mean_vector(vectors, post_normalize=True)
        return sorted(zip(vectors @ mean, used, strict=True), reverse=True)

    def doesnt_match(self, words: Sequence[Any]) -> Any:
        """The word furthest from the mean of the words' unit vectors (gensim's ``doesnt_match``)."""
        return self.rank_by_centrality(words)[-1][1]

    @staticmethod
    def cosine_similarities(vector_1: np.ndarray, vectors_all: np.ndarray) -> np.ndarray:
        """The cosine similarity of ``vector_1`` to each row of ``vectors_all`` (gensim's)."""
        norm = np.linalg.norm(vector_1)
        all_norms = np.linalg.norm(vectors_all, axis=1)
        return np.dot(vectors_all, vector_1) / (norm * all_norms)  # type: ignore[no-any-return]

    def distances(self, word_or_vector: Any, other_words: Iterable[Any] = ()) -> np.ndarray:
        """Cosine distances (1 - similarity) from a key or vector to each of ``other_words`` (keys of the
        vocabulary, else KeyError), or to every row when none are given (gensim's ``distances``)."""
        vector = self.get_vector(word_or_vector) if isinstance(word_or_vector, KEY_TYPES) else word_or_vector
        other_words = list(other_words)
        if not other_words:
            others = np.asarray(self.vectors)
        else:
            others = self.rows(np.array([self.get_index(w) for w in other_words], np.intp))  # type: ignore[attr-defined]
        return 1 - self.cosine_similarities(vector, others)  # type: ignore[no-any-return]

    def distance(self, w1: Any, w2: Any) -> Any:
        """Cosine distance of two keys: 1 - :meth:`similarity` (gensim's ``distance``)."""
        return 1 - self.similarity(w1, w2)

    def similarity(self, w1: Any, w2: Any) -> Any:
        """The cosine similarity of two keys, a numpy float32 as gensim gives it (gensim's ``similarity``)."""
        return np.dot(unitvec(self[w1]), unitvec(self[w2]))

    def n_similarity(self, ws1: Sequence[Any], ws2: Sequence[Any]) -> Any:
        """The cosine similarity of the means of two lists of keys (gensim's ``n_similarity``: keys the model
        lacks left out)."""
        if not (len(ws1) and len(ws2)):
            raise ZeroDivisionError("At least one of the passed list is empty.")
        mean1 = self.get_mean_vector(ws1, pre_normalize=False)
        mean2 = self.get_mean_vector(ws2, pre_normalize=False)
        return np.dot(unitvec(mean1), unitvec(mean2))

    def closer_than(self, key1: Any, key2: Any) -> list[str]:
        """Every word closer to ``key1`` than ``key2`` is (gensim's ``closer_than``)."""
        all_distances = self.distances(key1)
        e1_index, e2_index = self.get_index(key1), self.get_index(key2)
        closer = np.where(all_distances < all_distances[e2_index])[0]
        return [self.words[i] for i in closer.tolist() if i != e1_index]

    def words_closer_than(self, word1: Any, word2: Any) -> list[str]:
        """gensim's deprecated alias of :meth:`closer_than`."""
        _deprecated("words_closer_than", "closer_than")
        return self.closer_than(word1, word2)

    def rank(self, key1: Any, key2: Any) -> int:
        """The rank of ``key2`` among the words nearest to ``key1`` (1: the nearest; gensim's ``rank``)."""
        return len(self.closer_than(key1, key2)) + 1

    def most_similar_to_given(self, key1: Any, keys_list: Sequence[Any]) -> Any:
        """The key of ``keys_list`` most similar to ``key1`` (gensim's ``most_similar_to_given``)."""
        return keys_list[int(np.argmax([self.similarity(key1, key) for key in keys_list]))]

    def relative_cosine_similarity(self, wa: Any, wb: Any, topn: int = 10) -> float:
        """The similarity of ``wa`` and ``wb`` over the sum of ``wa``'s ``topn`` nearest similarities
        (gensim's ``relative_cosine_similarity``)."""
        sims = self.similar_by_word(wa, topn)
        if not sims:
            raise ValueError("Cannot calculate relative cosine similarity without any similar words.")
        return float(self.similarity(wa, wb)) / (sum(sim for _, sim in sims))

    def analogy(self, a: str, b: str, c: str, limit: int = 10) -> list[tuple[str, float]]:
        """``a`` is to ``b`` as ``c`` is to ...: nearest words to unit(b) - unit(a) + unit(c), inputs excluded
        (gensim's ``most_similar(positive=[b, c], negative=[a])``)."""
        return self.most_similar(positive=[b, c], negative=[a], topn=limit)  # type: ignore[no-any-return]

    # -- evaluation ---------------------------------------------------------------------------------------

    def _upper_vocab(self, restrict_vocab: int, case_insensitive: bool) -> dict[str, int]:
        """The evaluations' vocabulary: the first ``restrict_vocab`` words (upper-cased: the first of the
        words that differ in case only) -> their rows."""
        vocab = self.vocab
        ok_keys = self.words[:restrict_vocab]
        if case_insensitive:
            return {k.upper(): vocab[k] for k in reversed(ok_keys)}
        return {k: vocab[k] for k in reversed(ok_keys)}

    @staticmethod
    def _log_evaluate_word_analogies(section: dict[str, Any]) -> float:
        correct, incorrect = len(section["correct"]), len(section["incorrect"])
        if correct + incorrect == 0:
            return 0.0
        score = correct / (correct + incorrect)
        logger.info("%s: %.1f%% (%i/%i)", section["section"], 100.0 * score, correct, correct + incorrect)
        return score

    def evaluate_word_analogies(self, analogies: Any, restrict_vocab: int = 300000, case_insensitive: bool = True,
                                dummy4unknown: bool = False, similarity_function: str = "most_similar"
                                ) -> tuple[float, list[dict[str, Any]]]:
        """The accuracy of the model on an analogy file (``questions-words.txt``: ``a b c expected`` lines in
        sections opened by ``: name``), as gensim's ``evaluate_word_analogies`` computes it: each question
        answered by ``most_similar(positive=[b, c], negative=[a], topn=5)`` over the first ``restrict_vocab``
        words, upper-cased with ``case_insensitive``; questions with other words skipped (counted wrong with
        ``dummy4unknown``). (score, sections): each section's ``correct`` and ``incorrect`` questions, then
        "Total accuracy". ``similarity_function`` is taken and ignored, as gensim 4.4 does."""
        ok_vocab = self._upper_vocab(restrict_vocab, case_insensitive)
        oov = 0
        logger.info("Evaluating word analogies for top %i words in the model on %s", restrict_vocab, analogies)
        # each section's questions in file order, with whether they are asked (else counted wrong: dummy4unknown)
        read: list[tuple[str, list[tuple[tuple[str, str, str, str], bool]]]] = []
        quadruplets_no = 0
        with open(analogies, "rb") as fin:
            for line_no, raw in enumerate(fin):
                line = raw.decode("utf8")
                if line.startswith(": "):
                    read.append((line.lstrip(": ").strip(), []))
                    continue
                if not read:
                    raise ValueError(f"Missing section header before line #{line_no} in {analogies}")
                try:
                    a, b, c, expected = [w.upper() if case_insensitive else w for w in line.split()]
                except ValueError:
                    logger.info("Skipping invalid line #%i in %s", line_no, analogies)
                    continue
                quadruplets_no += 1
                known = all(w in ok_vocab for w in (a, b, c, expected))
                if not known:
                    oov += 1
                    if not dummy4unknown:
                        continue
                read[-1][1].append(((a, b, c, expected), known))
        asked = [q for _, questions in read for q, known in questions if known]
        right = iter(self._answer_analogies(asked, ok_vocab, restrict_vocab, case_insensitive))
        sections = []
        for name, questions in read:
            section: dict[str, Any] = {"section": name, "correct": [], "incorrect": []}
            for q, known in questions:
                section["correct" if known and next(right) else "incorrect"].append(q)
            sections.append(section)
            self._log_evaluate_word_analogies(section)
        total = {
            "section": "Total accuracy",
            "correct": list(itertools.chain.from_iterable(s["correct"] for s in sections)),
            "incorrect": list(itertools.chain.from_iterable(s["incorrect"] for s in sections)),
        }
        logger.info("Quadruplets with out-of-vocabulary words: %.1f%%", float(oov) / quadruplets_no * 100)
        if not dummy4unknown:
            logger.info("NB: analogies containing OOV words were skipped from evaluation! "
                        "To change this behavior, use \"dummy4unknown=True\"")
        analogies_score = self._log_evaluate_word_analogies(total)
        sections.append(total)
        return analogies_score, sections

    def _answer_analogies(self, questions: list[tuple[str, str, str, str]], ok_vocab: dict[str, int],
                          restrict_vocab: int, case_insensitive: bool) -> list[bool]:
        """Whether each question is answered right: ``most_similar(positive=[b, c], negative=[a], topn=5)``
        over the first ``restrict_vocab`` rows, its first word not one of a, b, c (or its last) the answer.
        Answered in batches, one matrix product for many (each question's mean in gensim's arithmetic)."""
        full = self._unit_rows()
        unit = full[:restrict_vocab] if restrict_vocab else full
        batch = max(1, (1 << 24) // max(1, len(unit)))  # similarities of at most 64 MB at a time
        out = []
        for start in range(0, len(questions), batch):
            part = questions[start : start + batch]
            rows = np.array([[ok_vocab[w] for w in q[:3]] for q in part], np.intp).reshape(len(part), 3)
            mean = np.zeros((len(part), full.shape[1]), full.dtype)
            mean += full[rows[:, 1]]  # positive b, c, then negative a, each added as gensim adds it
            mean += full[rows[:, 2]]
            mean += -1.0 * full[rows[:, 0]]
            wide = mean.astype(np.float64) / 3.0
            lengths = np.linalg.norm(wide, axis=1, keepdims=True)
            wide *= 1.0 / np.where(lengths > 0, lengths, 1)
            sims = wide.astype(np.float32) @ unit.T  # (a question's similarities in one contiguous row)
            for j, (a, b, c, expected) in enumerate(part):
                skip = {self.words[i] for i in rows[j].tolist()}
                ranked = self._ranked(sims[j], skip, 5)  # type: ignore[attr-defined]
                predicted = None
                for word, _ in ranked:
                    predicted = word.upper() if case_insensitive else word
                    if predicted in ok_vocab and predicted not in (a, b, c):
                        break
                out.append(predicted == expected)
        return out

    @staticmethod
    def log_accuracy(section: dict[str, Any]) -> None:
        correct, incorrect = len(section["correct"]), len(section["incorrect"])
        if correct + incorrect > 0:
            logger.info("%s: %.1f%% (%i/%i)", section["section"], 100.0 * correct / (correct + incorrect), correct,
                        correct + incorrect)

    @staticmethod
    def log_evaluate_word_pairs(pearson: Any, spearman: Any, oov: float, pairs: Any) -> None:
        logger.info("Pearson correlation coefficient against %s: %.4f", pairs, pearson[0])
        logger.info("Spearman rank-order correlation coefficient against %s: %.4f", pairs, spearman[0])
        logger.info("Pairs with unknown words ratio: %.1f%%", oov)

    def evaluate_word_pairs(self, pairs: Any, delimiter: str = "\t", encoding: str = "utf8",
                            restrict_vocab: int = 300000, case_insensitive: bool = True,
                            dummy4unknown: bool = False) -> tuple[Any, Any, float]:
        """The correlation of the model's similarities with human judgements (``wordsim353.tsv``: ``a b score``
        lines), as gensim's ``evaluate_word_pairs`` computes it: (pearson, spearman, oov_ratio), scipy's
        results with their p-values, over the pairs whose words are among the first ``restrict_vocab``
        (upper-cased with ``case_insensitive``); other pairs skipped, or scored 0 with ``dummy4unknown``.
        Needs scipy (``pip install scipy``)."""
        try:
            from scipy import stats
        except ImportError:
            raise ImportError("evaluate_word_pairs needs scipy for its correlations: pip install scipy") from None
        ok_vocab = self._upper_vocab(restrict_vocab, case_insensitive)
        similarity_gold, similarity_model = [], []
        oov = 0
        with open(pairs, encoding=encoding) as fin:
            for line_no, line in enumerate(fin):
                if not line or line.startswith("#"):
                    continue
                try:
                    a, b, sim = [w.upper() if case_insensitive else w for w in line.split(delimiter)]
                    sim = float(sim)
                except (ValueError, TypeError):
                    logger.info("Skipping invalid line #%d in %s", line_no, pairs)
                    continue
                if a not in ok_vocab or b not in ok_vocab:
                    oov += 1
                    if dummy4unknown:
                        similarity_model.append(0.0)
                        similarity_gold.append(sim)
                    else:
                        logger.info("Skipping line #%d with OOV words: %s", line_no, line.strip())
                    continue
                similarity_gold.append(sim)
                similarity_model.append(self.similarity(ok_vocab[a], ok_vocab[b]))
        if not similarity_gold:
            raise ValueError(f"No valid similarity judgements found in {pairs}: either invalid format or "
                             f"all are out-of-vocabulary in {self}")
        spearman = stats.spearmanr(similarity_gold, similarity_model)
        pearson = stats.pearsonr(similarity_gold, similarity_model)
        if dummy4unknown:
            oov_ratio = float(oov) / len(similarity_gold) * 100
        else:
            oov_ratio = float(oov) / (len(similarity_gold) + oov) * 100
        self.log_evaluate_word_pairs(pearson, spearman, oov_ratio, pairs)
        return pearson, spearman, oov_ratio

    # -- writing and adding -------------------------------------------------------------------------------

    def _counts(self) -> np.ndarray:
        """Each word's count, gensim's ``count`` attribute: the file's (fastText's), else the counts gensim's
        ``load_word2vec_format`` makes up for a file without them (the number of words, less the row)."""
        return np.arange(len(self.words), 0, -1)

    def save_word2vec_format(self, fname: Any, fvocab: Any = None, binary: bool = False, total_vec: int | None = None,
                             write_header: bool = True, prefix: str = "", append: bool = False,
                             sort_attr: str = "count") -> None:
        """Write the words and vectors as word2vec text (numbers as gensim spells them), or binary with
        ``binary=True``, as gensim's ``save_word2vec_format`` writes them: a header line ``"total_vec dim"``
        unless ``write_header=False``, each word after ``prefix``, most frequent first where the model has
        counts (a fastText model's; ``fvocab`` then gets ``word count`` lines), else in row order. Written
        atomically unless ``append=True``."""
        from . import framework
        from .fileio import atomic_output

        counts = self._counts() if sort_attr == "count" else None
        n = len(self.words)
        if counts is not None:
            order = np.lexsort((np.arange(n), -np.asarray(counts, np.int64)))  # by count, ties in row order
        else:  # (gensim's per-key attributes other than the count: none here)
            if fvocab is not None:
                raise ValueError(f"Cannot store vocabulary with '{sort_attr}' because that attribute does not exist")
            logger.warning("attribute %s not present in %s; will store in internal index_to_key order",
                           sort_attr, self)
            order = np.arange(n)
        words = [prefix + self.words[i] for i in order.tolist()]
        if fvocab is not None:
            assert counts is not None
            lines = "".join(f"{w} {int(counts[i])}\n" for w, i in zip(words, order.tolist(), strict=True))
            with _output(fvocab, append, atomic_output) as vout:
                vout.write(lines.encode("utf8"))
        vectors = np.asarray(self.vectors)
        vectors = vectors if np.array_equal(order, np.arange(n)) else vectors[order]
        total_vec = n if total_vec is None else total_vec
        if binary:
            records, obj = framework.Word2VecRecords(n, self.vector_size), {"newlines": None}
            vectors = vectors.astype(np.float32)
        else:
            records, obj = framework.TextRecords(n, self.vector_size), {
                "layout": {"style": "repr", "trailing_space": False, "crlf": False, "final_newline": True}}
        with _output(fname, append, atomic_output) as fout:
            if write_header:
                fout.write(f"{total_vec} {self.vector_size}\n".encode())
            framework.build(records, {"words": words, "vectors": vectors, **obj}, fout,
                            format="word2vec-binary" if binary else "word2vec-text")

    def add_vectors(self, keys: Any, weights: Any, extras: Any = None, replace: bool = False) -> None:
        """Append keys the model lacks with their vectors (gensim's ``add_vectors``); a key it has keeps its
        vector unless ``replace=True``. A model whose rows are a storage its lookups index into (subword
        vocabularies, a fastText model's composed vectors) is not edited: ValueError saying why."""
        if isinstance(keys, KEY_TYPES):
            keys = [keys]
            weights = np.array(weights).reshape(1, -1)
        elif isinstance(weights, list):
            weights = np.array(weights)
        if extras:
            raise ValueError("extras (gensim's per-key attributes) are not kept by wvformats models")
        self._check_editable()
        vectors = np.asarray(self.vectors)
        if weights.ndim != 2 or weights.shape[1] != vectors.shape[1]:
            raise ValueError(f"vectors of dimension {vectors.shape[1]} expected, got an array of shape {weights.shape}")
        vocab = self.vocab
        in_vocab = np.array([key in vocab for key in keys], bool)
        new = [keys[i] for i in np.flatnonzero(~in_vocab).tolist()]
        first = len(self.words)
        grown = np.vstack((vectors, weights[~in_vocab].astype(vectors.dtype)))
        if replace and in_vocab.any():
            grown[[vocab[keys[i]] for i in np.flatnonzero(in_vocab).tolist()]] = weights[in_vocab]
        self.words.extend(new)
        if self.norms is not None:  # (the stored norms of the rows as given: 1)
            self.norms = np.concatenate([np.asarray(self.norms), np.ones(len(new), np.asarray(self.norms).dtype)])
        self.vectors = grown
        for i, key in enumerate(new, first):
            if vocab.setdefault(key, i) != i and self._duplicates is not None:  # a key added twice: its first
                self._duplicates += 1  # row is the one looked up  # type: ignore[has-type]

    def _check_editable(self) -> None:
        if self.subwords is not None:
            raise ValueError("the rows of a model with a subword vocabulary are the head of the storage its "
                             "n-gram lookups index into: add words to an Embeddings of its words and vectors "
                             "(wv.Embeddings(m.words, np.array(m.vectors)))")

    def add_vector(self, key: Any, vector: Any) -> int:
        """Add one key and its vector (gensim's ``add_vector``); its row."""
        self.add_vectors([key], [vector])
        return self.get_index(key)

    def __setitem__(self, keys: Any, weights: Any) -> None:
        """Add keys with their vectors, replacing those of keys the model has (gensim's ``kv[keys] = ...``)."""
        if not isinstance(keys, list):
            keys = [keys]
            weights = np.asarray(weights).reshape(1, -1)
        self.add_vectors(keys, weights, replace=True)

    def vectors_for_all(self, keys: Iterable[Any], allow_inference: bool = True,
                        copy_vecattrs: bool = False) -> Any:
        """An :class:`~wvformats.embeddings.Embeddings` of the given keys (each once, in order) that the model
        has a vector for, composed ones too unless ``allow_inference=False`` (gensim's ``vectors_for_all``)."""
        vocab, seen = [], set()
        for key in keys:
            if key not in seen:
                seen.add(key)
                if (key in self) if allow_inference else self.has_index_for(key):
                    vocab.append(key)
        rows = np.vstack([self[k] for k in vocab]) if vocab else np.zeros((0, self.vector_size), np.float32)
        return self._plain(vocab, rows)

    def _plain(self, words: list[Any], vectors: np.ndarray) -> Any:
        """A plain model of these words and rows (:class:`~wvformats.embeddings.Embeddings` gives itself)."""
        raise NotImplementedError


def _output(path: Any, append: bool, atomic_output: Any) -> Any:
    """Where a gensim-style save writes: appended to ``path``, or atomically replacing it."""
    return open(path, "ab") if append else atomic_output(path)
