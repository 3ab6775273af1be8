"""gensim's query names on every embedding model (most_similar with positive and negative words, weights and
restrict_vocab, most_similar_cosmul, similarity, n_similarity, doesnt_match), answered as gensim answers them
on its own test files; and the `similar` command's several words."""

import json
import subprocess
import sys
from pathlib import Path

import gensim
import numpy as np
import pytest
from gensim.models import KeyedVectors

import wvformats as wv

DATA = Path(gensim.__file__).parent / "test" / "test_data"


@pytest.fixture(scope="module")
def pair():
    path = DATA / "lee_fasttext.vec"
    return wv.read(path), KeyedVectors.load_word2vec_format(str(path))


def same(ours, theirs, tol=1e-5):
    assert [w for w, _ in ours] == [w for w, _ in theirs]
    np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], atol=tol)


QUERIES = [
    dict(positive="night"),
    dict(positive=["night", "day"]),
    dict(positive=["police", "minister"], negative=["man"]),
    dict(positive=[("night", 2.0), "fire"], negative=["day"]),
    dict(positive=["night"], restrict_vocab=200),
    dict(positive="president", topn=3),
]


@pytest.mark.parametrize("query", QUERIES)
def test_most_similar_is_gensims(pair, query):
    ours, kv = pair
    same(ours.most_similar(**query), kv.most_similar(**query))


def test_a_vector_is_a_query_too(pair):
    ours, kv = pair
    v = kv["night"] + kv["day"]
    same(ours.most_similar(positive=[v]), kv.most_similar(positive=[v]))


@pytest.mark.filterwarnings("ignore:Call to deprecated `init_sims`:DeprecationWarning")
@pytest.mark.parametrize("query", [dict(positive=["night", "fire"], negative=["day"]), dict(positive="night"),
                                   dict(positive=["president", "year"], topn=5)])
def test_most_similar_cosmul_is_gensims(pair, query):
    ours, kv = pair
    same(ours.most_similar_cosmul(**query), kv.most_similar_cosmul(**query))


def test_restrict_vocab_searches_the_first_rows(pair):
    ours, _ = pair
    found = ours.most_similar_cosmul(positive=["night"], restrict_vocab=100, topn=20)
    assert len(found) == 20 and all(ours.index(w) < 100 for w, _ in found)


def test_similarity_n_similarity_doesnt_match_are_gensims(pair):
    ours, kv = pair
    assert ours.similarity("night", "day") == pytest.approx(float(kv.similarity("night", "day")), abs=1e-6)
    a, b = ["night", "fire", "police"], ["day", "year"]
    assert ours.n_similarity(a, b) == pytest.approx(float(kv.n_similarity(a, b)), abs=1e-6)
    words = ["night", "day", "year", "president"]
    assert ours.doesnt_match(words) == kv.doesnt_match(words)
    with pytest.raises(ZeroDivisionError):
        ours.n_similarity([], b)


def test_subword_models_answer_for_unknown_words_as_gensim():
    """gensim's fastText vectors compose an unknown word from its n-grams; so does a fastText model here."""
    from gensim.models.fasttext import load_facebook_vectors

    path = DATA / "lee_fasttext_new.bin"
    ours, kv = wv.read(path), load_facebook_vectors(str(path))
    assert "nightt" not in kv.key_to_index
    assert ours.similarity("nightt", "night") == pytest.approx(float(kv.similarity("nightt", "night")), abs=1e-5)
    same(ours.most_similar(positive=["nightt"], topn=5), kv.most_similar(positive=["nightt"], topn=5))


def test_the_old_positional_limit_still_works(pair):
    ours, _ = pair
    assert ours.most_similar("night", 3) == ours.most_similar("night", topn=3) == ours.most_similar("night", limit=3)
    assert len(ours.most_similar("night", 3)) == 3


def test_similar_command_takes_several_and_negative_words(pair):
    ours, kv = pair
    out = subprocess.run([sys.executable, "-m", "wvformats.cli", "similar", str(DATA / "lee_fasttext.vec"),
                          "night", "fire", "--negative", "day", "-k", "4", "--json"], capture_output=True,
                         text=True, check=True).stdout
    got = json.loads(out)
    assert got["query"] == ["night", "fire"] and got["negative"] == ["day"]
    same([(r["word"], r["similarity"]) for r in got["results"]],
         kv.most_similar(positive=["night", "fire"], negative=["day"], topn=4))


def test_assigning_vectors_is_what_the_queries_then_use():
    """Regression: ``emb.vectors = new`` kept the unit rows of the old matrix for most_similar (failed before)."""
    e = wv.Embeddings(["a", "b", "c"], np.array([[1, 0], [0.9, 0.1], [0, 1]], np.float32))
    assert e.most_similar("a", topn=1)[0][0] == "b"
    e.vectors = np.array([[1, 0], [0, 1], [0.9, 0.1]], np.float32)
    assert e.most_similar("a", topn=1)[0][0] == "c"


def test_integer_vectors_are_queried_as_their_float32_values(tmp_path):
    """An .npz of words and integer vectors (read as they are): the queries compute in float32, as for the same
    values stored as floats; most_similar and doesnt_match raised numpy's UFuncTypeError (found by the mutation
    fuzz)."""
    rng = np.random.default_rng(3)
    words, vectors = np.array(["king", "queen", "man", "woman", "apple"]), rng.integers(-9, 9, (5, 6))
    np.savez(tmp_path / "ints.npz", words=words, vectors=vectors)
    np.savez(tmp_path / "floats.npz", words=words, vectors=vectors.astype(np.float32))
    ints, floats = wv.read(tmp_path / "ints.npz"), wv.read(tmp_path / "floats.npz")
    assert ints.vectors.dtype.kind == "i"
    for m in (ints, floats):
        assert m.get_mean_vector(["king", "man"]).dtype == np.float32
    assert ints.most_similar("king", topn=4) == floats.most_similar("king", topn=4)
    assert ints.most_similar(positive=["king", "woman"], negative=["man"]) == \
        floats.most_similar(positive=["king", "woman"], negative=["man"])
    assert ints.doesnt_match(["king", "queen", "apple"]) == floats.doesnt_match(["king", "queen", "apple"])
