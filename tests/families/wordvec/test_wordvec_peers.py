"""word-vectors and gensim as oracles: their files read by us, our files read by them."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import wvformats as wv

word_vectors = pytest.importorskip("word_vectors")  # part of the 'peers' extra that CI installs
gensim_kv = pytest.importorskip("gensim.models").KeyedVectors

WORD = st.text(st.characters(blacklist_characters=" \n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
                             blacklist_categories=("Cs", "Cc")), min_size=1, max_size=10)
WORD = WORD.filter(lambda w: w == w.strip())  # the peers strip text lines; words keep NBSP inside


@st.composite
def embeddings(draw, finite=True):
    words = draw(st.lists(WORD, min_size=1, max_size=8, unique=True))
    dim = draw(st.integers(1, 6))
    values = st.floats(width=32, allow_nan=False, allow_infinity=not finite)
    flat = draw(st.lists(values, min_size=len(words) * dim, max_size=len(words) * dim))
    return words, np.array(flat, dtype="<f4").reshape(len(words), dim)


WV_WRITERS = {
    "leader": word_vectors.write_leader,
    "word2vec-binary": word_vectors.write_w2v,
    "word2vec-text": word_vectors.write_w2v_text,
    "glove": word_vectors.write_glove,
}
WV_READERS = {
    "leader": word_vectors.read_leader,
    "word2vec-binary": word_vectors.read_w2v,
    "word2vec-text": word_vectors.read_w2v_text,
    "glove": word_vectors.read_glove,
}


def same_bits(a, b):
    a, b = np.asarray(a, "<f4"), np.asarray(b, "<f4")
    return a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("fmt", sorted(WV_WRITERS))
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(emb=embeddings())
def test_word_vectors_files_read_bit_identical_and_rebuild_byte_exact(tmp_path_factory, text_parser, fmt, emb):
    words, vectors = emb
    p = tmp_path_factory.mktemp("wv") / "f"
    WV_WRITERS[fmt](str(p), words, vectors)
    got = wv.read(p, fmt)
    assert got.words == words and same_bits(got.vectors, vectors)
    if text_parser[0] != "lines" and fmt in ("glove", "word2vec-text") and words and vectors.shape[1]:
        assert text_parser[1], "the peer's text file did not take the fast path"
    assert wv.sniff(p) == fmt or (fmt == "glove" and len(words) == 1 and vectors.shape[1] == 1)
    report = wv.validate(p, fmt)
    assert report.ok, report


@pytest.mark.parametrize("fmt", sorted(WV_READERS))
@settings(max_examples=25)
@given(emb=embeddings())
def test_our_files_read_by_word_vectors(tmp_path_factory, fmt, emb):
    words, vectors = emb
    p = tmp_path_factory.mktemp("ours") / "f"
    wv.write(wv.Embeddings(words, vectors), p, fmt)
    vocab, mat = WV_READERS[fmt](str(p))
    assert list(vocab) == words and [vocab[w] for w in words] == list(range(len(words)))
    assert same_bits(mat, vectors)
    # and byte-identical to what word-vectors itself writes
    q = p.with_suffix(".peer")
    WV_WRITERS[fmt](str(q), words, vectors)
    assert p.read_bytes() == q.read_bytes()


def _kv(words, vectors):
    kv = gensim_kv(vector_size=vectors.shape[1])
    kv.add_vectors(words, vectors)
    return kv


GENSIM = {
    "word2vec-binary": dict(binary=True),
    "word2vec-text": dict(binary=False),
    "glove": dict(binary=False, no_header=True),
}


@pytest.mark.parametrize("fmt", sorted(GENSIM))
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(emb=embeddings(finite=False))
def test_gensim_files_read_bit_identical_and_rebuild_byte_exact(tmp_path_factory, text_parser, fmt, emb):
    words, vectors = emb
    p = tmp_path_factory.mktemp("gs") / "f"
    opts = GENSIM[fmt]
    _kv(words, vectors).save_word2vec_format(str(p), binary=opts["binary"],
                                             write_header=not opts.get("no_header"))
    got = wv.read(p, fmt)
    assert got.words == words and same_bits(got.vectors, vectors)
    if text_parser[0] != "lines" and not opts["binary"] and words and vectors.shape[1]:
        assert text_parser[1], "gensim's text file did not take the fast path"
    assert wv.validate(p, fmt).ok


@pytest.mark.parametrize("fmt", sorted(GENSIM))
@settings(max_examples=25)
@given(emb=embeddings(finite=False))
def test_our_files_read_by_gensim(tmp_path_factory, fmt, emb):
    words, vectors = emb
    p = tmp_path_factory.mktemp("ours") / "f"
    wv.write(wv.Embeddings(words, vectors), p, fmt)
    kv = gensim_kv.load_word2vec_format(str(p), **GENSIM[fmt])
    assert list(kv.index_to_key) == words and same_bits(kv.vectors, vectors)


def test_word2vec_c_newlines_read_like_gensim(tmp_path):
    words, vectors = ["</s>", "naïve", "東京"], np.arange(6, dtype="<f4").reshape(3, 2)
    p = tmp_path / "c.bin"
    p.write_bytes(b"3 2\n" + b"".join(w.encode() + b" " + v.tobytes() + b"\n" for w, v in zip(words, vectors, strict=True)))
    kv = gensim_kv.load_word2vec_format(str(p), binary=True)
    got = wv.read(p)
    assert got.words == list(kv.index_to_key) == words and same_bits(got.vectors, kv.vectors)
    assert wv.validate(p).ok


def test_fasttext_vec_and_crlf_read_like_gensim(tmp_path, text_parser):
    p = tmp_path / "x.vec"
    p.write_bytes("3 3 \r\n</s> 0.1 -0.2 3e-05 \r\nnaïve 1 2 3 \r\na\u00a0b 0.12345 -1.5 7 \r\n".encode())
    kv = gensim_kv.load_word2vec_format(str(p), binary=False)
    got = wv.read(p)
    assert got.words == list(kv.index_to_key)
    assert same_bits(got.vectors, kv.vectors)


@pytest.mark.parametrize("errors", ["replace", "ignore"])
def test_unicode_errors_match_gensim(tmp_path, errors):
    p = tmp_path / "cut.bin"
    vec = np.ones(2, "<f4").tobytes()
    p.write_bytes(b"2 2\n" + "ありがとう".encode()[:-1] + b" " + vec + b"clich\xe9s " + vec)
    kv = gensim_kv.load_word2vec_format(str(p), binary=True, unicode_errors=errors)
    assert wv.read(p, unicode_errors=errors).words == list(kv.index_to_key)


def test_limit_matches_gensim(tmp_path):
    words, vectors = [f"w{i}" for i in range(10)], np.random.default_rng(3).normal(size=(10, 4)).astype("<f4")
    for fmt in GENSIM:
        p = tmp_path / fmt
        wv.write(wv.Embeddings(words, vectors), p, fmt)
        kv = gensim_kv.load_word2vec_format(str(p), limit=4, **GENSIM[fmt])
        got = wv.read(p, fmt, limit=4)
        assert got.words == list(kv.index_to_key) and same_bits(got.vectors, kv.vectors)


def test_duplicates_first_wins_like_both_peers(tmp_path):
    p = tmp_path / "d.txt"
    p.write_bytes(b"4 1\na 1\nb 2\na 3\nc 4\n")
    vocab, mat = word_vectors.read_w2v_text(str(p))
    kv = gensim_kv.load_word2vec_format(str(p))
    with pytest.warns(wv.DuplicateWordsWarning):
        got = wv.read(p)
    for w in ["a", "b", "c"]:
        assert got[w][0] == mat[vocab[w]][0] == kv[w][0]


def test_most_similar_ranks_a_repeated_word_by_its_first_row_as_gensim(tmp_path):
    """gensim keeps a repeated word's first row only; most_similar ranks the word by that row, not by a later
    row lookups never give (which is nearer the query here)."""
    p = tmp_path / "d.txt"
    p.write_bytes(b"4 2\nq 1 0\na 0 1\nb 1 1\na 1 0.1\n")
    kv = gensim_kv.load_word2vec_format(str(p))
    with np.errstate(invalid="ignore"):  # gensim keeps the header's 4 rows: the unused one is zero, its norm 0
        theirs = kv.most_similar("q", topn=2)
    with pytest.warns(wv.DuplicateWordsWarning):
        got = wv.read(p)
    ours = got.most_similar("q", topn=2)
    assert [w for w, _ in ours] == [w for w, _ in theirs] == ["b", "a"]
    np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], rtol=1e-6)

