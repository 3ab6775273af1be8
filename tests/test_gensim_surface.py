"""gensim's KeyedVectors surface, as a gensim user's code meets it: one function (``exercise``) calls every
name of it on a model, and runs on gensim's own KeyedVectors and on ``wv.read`` of the same real file (gensim's
test data: word2vec text and binary, a fastText .bin through gensim's ``load_facebook_vectors``, and a
finalfusion file finalfusion-python wrote, against gensim's KeyedVectors of finalfusion-python's rows). Every
answer is compared: rankings equal, scores within float32 rounding, the same types; gensim's evaluation files
(questions-words.txt, wordsim353.tsv) give the same scores."""

import logging
import warnings
from pathlib import Path

import gensim
import numpy as np
import pytest
from gensim.models import KeyedVectors
from gensim.models.fasttext import load_facebook_model, load_facebook_vectors

import wvformats as wv

DATA = Path(gensim.__file__).parent / "test" / "test_data"
QUESTIONS, PAIRS = DATA / "questions-words.txt", DATA / "wordsim353.tsv"


def exercise(kv, tmp, oov="nightt", editable=True, ints=True):
    """gensim code: every name of the query surface, called as gensim's docs show; what each gives (``ints``:
    with int keys as row numbers, which gensim's fastText vectors take as text to hash instead)."""
    w = kv.index_to_key
    a, b, c, d = w[10], w[20], w[30], w[40]
    out = {}

    def attempt(name, call):
        try:
            out[name] = call()
        except KeyError:
            out[name] = "KeyError"

    out["len"] = len(kv)
    out["index_to_key"] = list(kv.index_to_key)
    out["key_to_index"] = dict(kv.key_to_index)
    out["vector_size"] = kv.vector_size
    out["vectors"] = kv.vectors
    out["contains"] = (a in kv, oov in kv, "zz" + oov in kv)
    out["get_vector"] = kv.get_vector(a)
    out["get_vector_norm"] = kv.get_vector(a, norm=True)
    attempt("get_vector_oov", lambda: kv.get_vector(oov))
    attempt("get_vector_oov_norm", lambda: kv.get_vector(oov, norm=True))
    out["get_index"] = (kv.get_index(a), kv.get_index(5), kv.get_index(oov, -1), kv.get_index(oov, default=7))
    if ints:
        out["getitem_int"] = kv[3]
        out["most_similar_int"] = kv.most_similar(positive=[10], topn=4)
    attempt("get_index_oov", lambda: kv.get_index(oov))
    out["has_index_for"] = (kv.has_index_for(a), kv.has_index_for(oov), kv.has_index_for(3))
    out["getitem"] = kv[a]
    out["getitem_list"] = kv[[a, b, c]]
    attempt("getitem_oov", lambda: kv[oov])
    out["most_similar"] = kv.most_similar(a)
    out["most_similar_topn"] = kv.most_similar(a, topn=3)
    out["most_similar_analogy"] = kv.most_similar(positive=[b, c], negative=[a], topn=5)
    out["most_similar_weights"] = kv.most_similar(positive=[(a, 2.0), b], negative=[(c, 0.5)])
    out["most_similar_vectors"] = kv.most_similar(positive=[kv[a], b], negative=[kv[c] * 3])
    out["most_similar_matrix"] = kv.most_similar(positive=np.vstack([kv[a], kv[b]]), topn=4)
    out["most_similar_restrict"] = kv.most_similar(a, topn=20, restrict_vocab=100)
    out["most_similar_clip"] = kv.most_similar(a, topn=20, clip_start=50, clip_end=500)
    out["most_similar_all"] = kv.most_similar(a, topn=None)
    out["most_similar_all_clip"] = kv.most_similar(positive=[a, b], topn=None, clip_start=5, clip_end=60)
    out["most_similar_zero"] = kv.most_similar(a, topn=0)
    out["most_similar_indexer"] = kv.most_similar(a, topn=4, indexer=None)
    attempt("most_similar_oov", lambda: kv.most_similar(oov, topn=3))
    out["similar_by_word"] = kv.similar_by_word(a, topn=4)
    out["similar_by_key"] = kv.similar_by_key(b, topn=4, restrict_vocab=300)
    out["similar_by_vector"] = kv.similar_by_vector(kv[a] + kv[b], topn=4)
    out["similar_by_vector_all"] = kv.similar_by_vector(kv[a], topn=None)
    with warnings.catch_warnings():  # (gensim's cosmul calls its deprecated init_sims)
        warnings.simplefilter("ignore", DeprecationWarning)
        out["cosmul"] = kv.most_similar_cosmul(positive=[b, c], negative=[a], topn=5)
        out["cosmul_one"] = kv.most_similar_cosmul(a)
        out["cosmul_all"] = kv.most_similar_cosmul(positive=[a], negative=[b], topn=None)
    out["similarity"] = kv.similarity(a, b)
    attempt("similarity_oov", lambda: kv.similarity(a, oov))
    out["distance"] = kv.distance(a, b)
    out["distances"] = kv.distances(a)
    out["distances_some"] = kv.distances(a, [b, c, d])
    out["distances_vector"] = kv.distances(kv[a] * 2, (b, c))
    attempt("distances_oov", lambda: kv.distances(a, [b, oov]))
    out["n_similarity"] = kv.n_similarity([a, b], [c, d])
    out["n_similarity_oov"] = kv.n_similarity([a, "zz" + oov], [c])
    out["doesnt_match"] = kv.doesnt_match([a, b, c, d])
    out["rank_by_centrality"] = kv.rank_by_centrality([a, b, c, d])
    out["closer_than"] = kv.closer_than(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out["words_closer_than"] = kv.words_closer_than(a, c)
    out["rank"] = (kv.rank(a, b), kv.rank(b, a), kv.rank(c, d))
    out["most_similar_to_given"] = kv.most_similar_to_given(a, [b, c, d])
    out["relative_cosine_similarity"] = kv.relative_cosine_similarity(a, b)
    out["get_mean_vector"] = kv.get_mean_vector([a, b, kv[c]], weights=[1.0, 2.0, -1.0], post_normalize=True)
    out["cosine_similarities"] = kv.cosine_similarities(kv[a], kv[[b, c]])
    kv.fill_norms()
    out["get_normed_vectors"] = kv.get_normed_vectors()
    kv.fill_norms(force=True)
    out["analogies"] = kv.evaluate_word_analogies(QUESTIONS)
    out["analogies_cased"] = kv.evaluate_word_analogies(QUESTIONS, restrict_vocab=800, case_insensitive=False,
                                                        dummy4unknown=True)
    out["analogies_cosmul"] = kv.evaluate_word_analogies(QUESTIONS, similarity_function="most_similar_cosmul")
    out["pairs"] = [tuple(r) if not isinstance(r, float) else r for r in kv.evaluate_word_pairs(PAIRS)]
    out["pairs_dummy"] = [tuple(r) if not isinstance(r, float) else r
                          for r in kv.evaluate_word_pairs(PAIRS, restrict_vocab=600, dummy4unknown=True)]
    saved = {}
    for name, options in {"text": {}, "binary": {"binary": True}, "no_header": {"write_header": False},
                          "prefix": {"prefix": "x_", "binary": True}, "total_vec": {"total_vec": 5000}}.items():
        kv.save_word2vec_format(str(tmp / f"{name}.w2v"), **options)
        saved[name] = (tmp / f"{name}.w2v").read_bytes()
    out["save_word2vec_format"] = saved
    try:  # (word counts: a fastText model's; gensim refuses fvocab for a file without them)
        kv.save_word2vec_format(str(tmp / "v.w2v"), fvocab=str(tmp / "vocab.txt"))
        out["fvocab"] = (tmp / "vocab.txt").read_bytes()
    except ValueError:
        out["fvocab"] = "ValueError"
    if editable:
        rows = np.random.default_rng(5).normal(size=(9, kv.vector_size)).astype(np.float32)
        kv.add_vectors(["new1", a, "new2"], rows[:3])
        kv.fill_norms(force=True)  # (gensim's add_vectors leaves its norms as they were)
        out["add_vectors"] = (len(kv), kv.index_to_key[-2:], kv.get_index("new2"), kv["new1"], kv[a],
                              kv.most_similar("new1", topn=3))
        kv.add_vectors([b, "new3"], [rows[3], rows[4]], replace=True)
        kv.fill_norms(force=True)
        out["add_vectors_replace"] = (len(kv), kv[b], kv["new3"], kv.most_similar(b, topn=3))
        kv["new4"] = rows[5]
        kv[[c, "new5"]] = rows[6:8]
        kv.fill_norms(force=True)
        out["setitem"] = (len(kv), kv["new4"], kv[c], kv["new5"], kv.most_similar(c, topn=3))
        with warnings.catch_warnings():  # (gensim's: adding one at a time grows its matrix each time)
            warnings.simplefilter("ignore", UserWarning)
            out["add_vector"] = (kv.add_vector("new6", rows[8]), len(kv))
    return out


def same(ours, theirs, where="", atol=2e-6):
    """Equal answers: the same types and words, numbers within float32 rounding."""
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray) and ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=atol, err_msg=where)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), where
        for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
            same(o, t, f"{where}[{i}]", atol)
    elif isinstance(theirs, dict):
        assert type(ours) is dict and ours.keys() == theirs.keys(), where
        for k in theirs:
            same(ours[k], theirs[k], f"{where}[{k!r}]", atol)
    elif isinstance(theirs, (float, np.floating)) and not isinstance(theirs, bool):
        assert type(ours) is type(theirs), f"{where}: {type(ours)} is not {type(theirs)}"
        assert ours == pytest.approx(theirs, abs=atol, nan_ok=True), where
    else:
        assert type(ours) is type(theirs) and ours == theirs, where


def records(data, binary, dim):
    """(header, [(word, vector)]) of a word2vec file gensim's save wrote: its words, and its numbers as floats."""
    header, rest = data.split(b"\n", 1) if data[:1].isdigit() else (None, data)
    out = []
    if not binary:
        for line in rest.decode().splitlines():
            word, *numbers = line.split(" ")
            out.append((word, np.array(numbers, np.float32)))
        return header, out
    while rest:
        word, rest = rest.split(b" ", 1)
        out.append((word.decode(), np.frombuffer(rest[: 4 * dim], "<f4")))
        rest = rest[4 * dim :]
    return header, out


def compare(ours, theirs, tmp_path, files_exact=True, **options):
    """``exercise`` on both; ``files_exact=False``: the files saved hold the same words and header, and numbers
    within float32 rounding (a fastText model's vectors are fastText's float32 sums; gensim's differ in an ulp)."""
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    got = exercise(ours, tmp_path / "ours", **options)
    want = exercise(theirs, tmp_path / "theirs", **options)
    assert got.keys() == want.keys()
    for name in want:
        if name == "save_word2vec_format" and not files_exact:
            for kind in want[name]:
                (h1, r1), (h2, r2) = (records(x[name][kind], "binary" in kind or kind == "prefix", ours.vector_size)
                                      for x in (got, want))
                assert h1 == h2 and [w for w, _ in r1] == [w for w, _ in r2], kind
                np.testing.assert_allclose(np.vstack([v for _, v in r1]), np.vstack([v for _, v in r2]), atol=2e-6)
            continue
        same(got[name], want[name], name)
    return got, want


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("gensim").setLevel(logging.ERROR)  # (gensim's save warns that the file has no counts)
    logging.getLogger("wvformats").setLevel(logging.ERROR)


@pytest.mark.parametrize(("name", "binary"), [("word2vec_pre_kv_c", False), ("euclidean_vectors.bin", True)])
def test_word2vec_files_answer_as_gensims_keyedvectors(name, binary, tmp_path):
    got, _ = compare(wv.read(DATA / name), KeyedVectors.load_word2vec_format(str(DATA / name), binary=binary),
                     tmp_path)
    assert got["get_vector_oov"] == got["getitem_oov"] == got["most_similar_oov"] == "KeyError"
    assert got["contains"] == (True, False, False)
    assert len(got["analogies"][1]) == 15 and got["analogies"][1][-1]["section"] == "Total accuracy"
    assert got["fvocab"].startswith(f"{got['index_to_key'][0]} {got['len']}\n".encode())  # (gensim's made-up counts)


def test_a_fasttext_model_answers_as_gensims_fasttextkeyedvectors(tmp_path):
    """``load_facebook_vectors``: an unknown word is composed from its n-grams (``in`` is True, get_vector its
    n-grams' mean), ``has_index_for`` and ``get_index`` know the dictionary's words only; ``save_word2vec_format``
    writes the words by count, most frequent first, as gensim does with the counts the file keeps."""
    path = DATA / "lee_fasttext_new.bin"
    theirs, ours = load_facebook_vectors(str(path)), wv.read(path)
    # gensim composes "</s>" from its n-grams too, where fastText's get_word_vector takes its own row only (ours
    # are fastText's bits, tests/families/fasttext): the oracle gets fastText's vector of that one word
    eos = theirs.get_index("</s>")
    assert np.abs(theirs.vectors[eos] - ours["</s>"]).max() > 0.1
    theirs.vectors[eos] = ours["</s>"]
    theirs.fill_norms(force=True)
    got, _ = compare(ours, theirs, tmp_path, files_exact=False, editable=False, ints=False)
    assert got["contains"] == (True, True, True) and got["has_index_for"] == (True, False, True)
    assert got["get_vector_oov"].shape == (10,) and got["get_index_oov"] == "KeyError"
    # an int key is a row number, as in gensim's KeyedVectors (its fastText vectors hash it as text instead)
    assert 3 in ours and 10**6 not in ours and [1] not in ours
    np.testing.assert_array_equal(ours[3], ours[ours.index_to_key[3]])
    np.testing.assert_array_equal(ours[[3, "night"]], np.vstack([ours.vectors[3], ours["night"]]))
    assert got["fvocab"].startswith(b"the 3523\n") and got["fvocab"].count(b"\n") == len(theirs)


def test_a_finalfusion_file_answers_as_gensim_on_its_rows(tmp_path):
    """finalfusion-python reads gensim's word2vec file and writes it (rows unit length, their norms in NdNorms);
    gensim's KeyedVectors of finalfusion-python's rows is the oracle of our read of that file."""
    ff = pytest.importorskip("finalfusion")
    emb = ff.load_word2vec(str(DATA / "euclidean_vectors.bin"))
    emb.write(str(tmp_path / "e.fifu"))
    rows = KeyedVectors(emb.storage.shape[1])
    rows.add_vectors(list(emb.vocab.words), np.asarray(emb.storage))
    rows.save_word2vec_format(str(tmp_path / "rows.bin"), binary=True)  # (float32: the rows exactly)
    theirs = KeyedVectors.load_word2vec_format(str(tmp_path / "rows.bin"), binary=True)
    ours = wv.read(tmp_path / "e.fifu")
    assert ours.norms is not None  # (the stored norms stay; gensim's own .norms is not compared: docs/queries.md)
    compare(ours, theirs, tmp_path)


def test_finalfusion_subword_lookups_are_finalfusions_for_unknown_words():
    """A finalfusion file with a bucket subword vocabulary (the bundled sample) composes an unknown word as
    finalfusion-python does; as gensim's fastText vectors, ``in`` is True for it, get_vector and ``m[w]`` give
    the composed vector and most_similar ranks by it; has_index_for knows the vocabulary's words only."""
    ff = pytest.importorskip("finalfusion")
    from wvformats.samples import sample_dir

    path = sample_dir() / "sample-bucket.fifu"
    emb, ours = ff.load_finalfusion(str(path)), wv.read(path)
    n = len(emb.vocab.words)
    theirs = KeyedVectors(emb.storage.shape[1])
    theirs.add_vectors(list(emb.vocab.words), np.asarray(emb.storage)[:n])
    oov, known = "zzqxy", emb.vocab.words[1]
    assert oov in ours and not ours.has_index_for(oov) and ours.get_index(oov, -1) == -1
    v = emb.embedding(oov)
    np.testing.assert_allclose(ours.get_vector(oov), v, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours[[oov, known]], np.vstack([v, emb[known]]), rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours.get_vector(oov, norm=True), v / np.linalg.norm(v), rtol=0, atol=1e-6)
    want, got = theirs.most_similar(positive=[v], topn=5), ours.most_similar(oov, topn=5)
    assert [w for w, _ in got] == [w for w, _ in want]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-5)
    assert ours.similarity(oov, known) == pytest.approx(float(theirs.cosine_similarities(v, emb[known][None])[0]),
                                                        abs=1e-6)
    with pytest.raises(ValueError, match="subword vocabulary"):
        ours.add_vectors(["new"], np.ones((1, ours.vector_size)))
    assert len(ours) == n


def test_model_wv_code_ports_from_a_gensim_fasttext_model():
    """``load_facebook_model(path).wv.most_similar(...)``: the same line on ``wv.read(path).wv`` runs."""
    path = DATA / "lee_fasttext_new.bin"
    model, ours = load_facebook_model(str(path)), wv.read(path)
    for m in (model, ours):
        m.wv.fill_norms()
    assert ours.wv is ours
    same(ours.wv.most_similar("night", topn=5), model.wv.most_similar("night", topn=5))
    same(ours.wv["nightt"], model.wv["nightt"])


def test_a_fasttext_model_refuses_edits_before_changing_anything():
    ours = wv.read(DATA / "lee_fasttext_new.bin")
    n = len(ours)
    for edit in (lambda: ours.add_vectors(["new"], np.ones((1, 10))), lambda: ours.__setitem__("night", np.ones(10)),
                 lambda: ours.add_vector("new", np.ones(10))):
        with pytest.raises(ValueError, match="composed"):
            edit()
    assert len(ours) == n and ours.words[-1] != "new"


def test_an_indexer_answers_an_int_topn():
    """gensim's indexer protocol (AnnoyIndexer, NmslibIndexer): ``indexer.most_similar(mean, topn)`` answers
    for an int topn, given the query's unit mean vector."""
    ours = wv.read(DATA / "lee_fasttext.vec")
    asked = []

    class Indexer:
        def most_similar(self, vector, num_neighbors):
            asked.append((vector, num_neighbors))
            return [("x", 1.0)]

    assert ours.most_similar("night", topn=3, indexer=Indexer()) == [("x", 1.0)]
    np.testing.assert_allclose(asked[0][0], ours.get_vector("night", norm=True), atol=1e-7)
    assert asked[0][1] == 3
    assert isinstance(ours.most_similar("night", topn=None, indexer=Indexer()), np.ndarray)


def test_a_fasttext_models_single_word_lookups_make_no_word_dict():
    """get_index / has_index_for / kv[w] of a fastText model find a word in its compact index, as its other
    lookups of one word do: no dict of every word is made (16 MB for 200k words) for them."""
    ours = wv.read(DATA / "lee_fasttext_new.bin")
    theirs = load_facebook_vectors(str(DATA / "lee_fasttext_new.bin"))
    assert ours.get_index("night") == theirs.get_index("night") and ours.has_index_for("the")
    assert not ours.has_index_for("nightt") and ours.get_index("nightt", -1) == -1
    ours["night"], ours.get_vector("nightt")
    assert ours._index is None
