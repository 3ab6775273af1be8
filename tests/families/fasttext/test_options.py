"""fastText's read and write options, with the fasttext module (in a subprocess) and gensim as oracles:
``encoding=`` for words that are not UTF-8, ``upgrade=True`` for files of older releases that fastText no
longer loads, ``limit=`` and ``deduplicate=`` for fastText sources and targets."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from test_fasttext import DATA, LINES, PEER, QUERY_WORDS, ask, f32

import wvformats as wv
from wvformats import cli
from wvformats.errors import BuildError, FormatError, OptionError
from wvformats.families.fasttext import codec

CP852 = DATA / "cp852_fasttext.bin"  # a release before the magic; its words are cp852 bytes
TRAINED = DATA / "trained"


def gensim_data(name: str) -> Path:
    from gensim.test.utils import datapath

    return Path(datapath(name))


def peer_refusal(model: Path) -> str:
    """What the fasttext module says when it cannot load ``model`` (it exits in C++: a subprocess)."""
    with tempfile.TemporaryDirectory() as tmp:
        q = Path(tmp) / "q.json"
        q.write_text(json.dumps({}))
        run = subprocess.run([sys.executable, str(PEER), "ask", str(model), str(q), str(Path(tmp) / "a.json")],
                             capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    return run.stderr


# -- encoding ---------------------------------------------------------------------------------------------------

def test_encoding_gives_gensims_words():
    """cp852_fasttext.bin read with encoding='cp852' has gensim's words (``který``, not ``kter\\ufffd``)."""
    from gensim.models.fasttext import load_facebook_model, load_facebook_vectors

    m = wv.read(CP852, encoding="cp852")
    assert m.words == load_facebook_model(str(CP852), encoding="cp852").wv.index_to_key
    assert m.words == load_facebook_vectors(str(CP852), encoding="cp852").index_to_key
    assert m.words[1] == "který" and m.encoding == "cp852"
    assert "který" in m.vocab and m.index("který") == 1


def test_encoding_looks_words_up_by_their_bytes_as_fasttext_does(tmp_path):
    """A word is found, and its n-grams hashed, by its bytes in the model's encoding: the fasttext module's
    get_word_vector of the cp852 bytes (the old file upgraded so that it loads it), bit for bit, in and out of
    the vocabulary. gensim finds the word by its decoded text but hashes the n-grams of its UTF-8 bytes
    (``compute_ngrams_bytes``), so its vectors of words with letters outside ASCII differ; those of ASCII
    words agree."""
    from gensim.models.fasttext import load_facebook_model

    m = wv.read(CP852, encoding="cp852")
    wv.convert(CP852, tmp_path / "up.bin", "fasttext", encoding="cp852", upgrade=True)
    words = m.words[:12] + ["kterýx", "žluťoučký", "zzqx"]
    peer = ask(tmp_path / "up.bin", raw_words=[w.encode("cp852").hex() for w in words])["raw_words"]
    want = np.array([f32(x) for x in peer])
    assert m.embedding_batch(words)[0].tobytes() == want.tobytes()
    assert np.array([m[w] for w in words]).tobytes() == want.tobytes()
    assert np.array([m.get_word_vector(w) for w in words]).tobytes() == want.tobytes()
    assert m.get_subwords("který")[0][:2] == ["který", "<k"]
    g = load_facebook_model(str(CP852), encoding="cp852").wv
    ascii_words = [w for w in words if w.isascii()]
    np.testing.assert_allclose([g[w] for w in ascii_words], [m[w] for w in ascii_words], rtol=0, atol=1e-6)
    assert np.abs(g["který"] - m["který"]).max() > 1e-2  # gensim: UTF-8 n-grams of a cp852 model


def test_neighbours_of_words_shown_otherwise_than_their_bytes():
    """Nearest neighbours rank every word by its own vector, found by id: words decoded with U+FFFD (an
    encoding that lacks their bytes, unicode_errors='replace') rank as the same words read in cp852."""
    shown = wv.read(CP852, encoding="ascii", unicode_errors="replace")
    right = wv.read(CP852, encoding="cp852")
    ids = {w: i for i, w in enumerate(right.words)}
    got = [(s, shown.words[ids[w]]) for s, w in right.get_nearest_neighbors("ji", 5)]
    assert shown.get_nearest_neighbors("ji", 5) == got


def test_encoding_round_trips_byte_exact(tmp_path):
    """A model read with an encoding is written in its own bytes: the same file again (and on the command
    line); its words decode strictly (a byte the encoding lacks is an error naming the entry)."""
    assert cli.main(["convert", str(CP852), str(tmp_path / "c.bin"), "--encoding", "cp852"]) == 0
    assert (tmp_path / "c.bin").read_bytes() == CP852.read_bytes()
    wv.write(wv.read(CP852, encoding="cp852"), tmp_path / "d.bin")
    assert (tmp_path / "d.bin").read_bytes() == CP852.read_bytes()
    with pytest.raises(FormatError) as info:
        wv.read(CP852, encoding="ascii")
    assert info.value.path.startswith("dictionary.entries.words[") and info.value.offset > 0


def test_encoding_is_refused_where_a_format_fixes_it(tmp_path):
    """finalfusion's words are UTF-8 by its spec, as GGUF's and SentencePiece's strings; UTF-16 cannot spell
    fastText's NUL-ended words."""
    wv.convert(TRAINED / "skipgram.bin", tmp_path / "s.fifu", normalize=False)
    samples = Path(wv.__file__).parent / "sample_files"
    for path in (tmp_path / "s.fifu", samples / "sample-tiny.gguf", samples / "sample-bpe.model"):
        with pytest.raises(OptionError, match="encoding"):
            wv.read(path, encoding="cp852")
    with pytest.raises(OptionError, match="ASCII"):
        wv.read(CP852, encoding="utf-16")


# -- upgrade ----------------------------------------------------------------------------------------------------

def test_upgrade_writes_an_old_file_as_one_fasttext_loads(tmp_path):
    """gensim's lee_fasttext.bin (written by fastText before the magic, 2017): the fasttext module refuses it;
    ``convert --upgrade`` writes version 12, which it loads and whose get_word_vector is what wvformats reads
    from the old file, bit for bit (gensim's within 1e-6), for words and unknown words. Without --upgrade the
    old file is written as it is."""
    old = gensim_data("lee_fasttext.bin")
    assert "wrong file format" in peer_refusal(old)
    assert cli.main(["convert", str(old), str(tmp_path / "up.bin"), "--upgrade"]) == 0
    up = wv.read(tmp_path / "up.bin")
    assert up.version == 12 and wv.validate(tmp_path / "up.bin").ok
    m = wv.read(old)
    words = m.words[:50] + QUERY_WORDS[:-1]
    a = ask(tmp_path / "up.bin", words=words)
    assert a["dictionary"] == m.words
    assert np.array([f32(x) for x in a["words"]]).tobytes() == m.embedding_batch(words)[0].tobytes()
    from gensim.models.fasttext import load_facebook_model

    g = load_facebook_model(str(old)).wv
    np.testing.assert_allclose([g[w] for w in words if w != "</s>"],
                               [m[w] for w in words if w != "</s>"], rtol=0, atol=1e-6)
    wv.convert(old, tmp_path / "same.bin", "fasttext")
    assert (tmp_path / "same.bin").read_bytes() == old.read_bytes()


def test_upgrade_of_a_version_11_supervised_model_keeps_its_predictions(tmp_path):
    """fastText reads a supervised model of version 11 without its character n-grams; the upgrade writes
    maxn 0, so that version 12 predicts the same (the fasttext module on both files)."""
    p = wv.parse_file(TRAINED / "sup-softmax.bin")
    p.version = 11
    with open(tmp_path / "v11.bin", "wb") as f:
        codec.build(p, f)
    wv.convert(tmp_path / "v11.bin", tmp_path / "v12.bin", upgrade=True)
    assert wv.read(tmp_path / "v12.bin").args.maxn == 0
    queries = dict(words=QUERY_WORDS[:-1], lines=LINES, k=3)
    assert ask(tmp_path / "v11.bin", **queries) == ask(tmp_path / "v12.bin", **queries)


def old_release(path: Path, out: Path, **args) -> Path:
    """The model at ``path`` written as a release before the magic writes it (no magic, version, prune index
    nor quantization flags), with ``args`` changed."""
    p = wv.parse_file(path)
    p.update(dict(new_format=False, head=int(p.args.dim), magic=None, version=None, quant_input=None, qout=None))
    p.args.update(args)
    p.dictionary.pruneidx_size = None
    with open(out, "wb") as f:
        codec.build(p, f)
    return out


def test_an_old_supervised_model_has_no_character_ngrams(tmp_path):
    """A supervised model before the magic looked its words up by id only (``Dictionary::getLine`` of 2017):
    read so (as fastText reads version 11), and upgraded with maxn 0, on which the fasttext module predicts
    what wvformats predicts from the old file."""
    old = old_release(TRAINED / "sup-softmax.bin", tmp_path / "old.bin", wordNgrams=1)
    m = wv.read(old)
    assert m.version is None and int(m.args.maxn) > 0 and "zzqx" not in m
    wv.convert(old, tmp_path / "up.bin", upgrade=True)
    a = ask(tmp_path / "up.bin", words=QUERY_WORDS[:-1], lines=LINES, k=2)
    assert [list(m.predict(line, k=2)[0]) for line in LINES] == [labels for labels, _ in a["predictions"]]
    assert m.embedding_batch(QUERY_WORDS[:-1])[0].tobytes() == np.array([f32(x) for x in a["words"]]).tobytes()


def test_upgrade_refuses_what_no_current_file_can_say(tmp_path):
    """A supervised model before the magic with word n-grams hashed word ids: refused, naming the field; so
    is predicting with it."""
    old_release(TRAINED / "sup-softmax.bin", tmp_path / "old.bin")  # (trained with wordNgrams 2)
    m = wv.read(tmp_path / "old.bin")
    assert m.version is None
    with pytest.raises(ValueError, match="word ids"):
        m.predict("apple")
    with pytest.raises(BuildError) as info:
        wv.convert(tmp_path / "old.bin", tmp_path / "up.bin", upgrade=True)
    assert info.value.path == "args.wordNgrams"


def test_upgrade_is_a_fasttext_option(tmp_path):
    with pytest.raises(OptionError, match="upgrade"):
        wv.convert(TRAINED / "skipgram.bin", tmp_path / "s.vec", upgrade=True)


# -- limit and deduplicate ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["skipgram.bin", "sup-softmax.bin", "sup-softmax.ftz", "sup-ngrams.ftz"])
def test_limit_keeps_the_first_words_and_what_fasttext_looks_up(tmp_path, name):
    """``convert --limit N`` to fastText: the first N words, every label and n-gram bucket; the fasttext
    module on the result gives the kept words, labels and unknown words the vectors the whole model gives
    them (a dropped word is now unknown: its n-grams' mean), and the lines made of kept words the same
    predictions."""
    src = TRAINED / name
    whole = wv.read(src)
    n = 12
    assert cli.main(["convert", str(src), str(tmp_path / name), "--limit", str(n)]) == 0
    part = wv.read(tmp_path / name)
    assert part.words == whole.words[:n] and list(part.labels) == list(whole.labels)
    assert wv.validate(tmp_path / name).ok
    words = whole.words[: n + 5] + list(whole.labels) + QUERY_WORDS[:-1]
    a = ask(tmp_path / name, words=words)
    assert a["dictionary"] == whole.words[:n] and a["labels"] == list(part.labels)
    got = np.array([f32(x) for x in a["words"]])
    assert got.tobytes() == part.embedding_batch(words)[0].tobytes()
    kept = [i for i, w in enumerate(words) if w not in whole.words[n:]]
    assert got[kept].tobytes() == whole.embedding_batch([words[i] for i in kept])[0].tobytes()
    if whole.labels:
        lines = [" ".join(whole.words[i : i + 3]) for i in range(1, n - 2)]
        b = ask(tmp_path / name, lines=lines, k=2)["predictions"]
        assert b == ask(src, lines=lines, k=2)["predictions"]
        assert [p[0] for p in b] == [list(part.predict(t, k=2)[0]) for t in lines]


def test_limit_reads_the_first_words_of_a_fasttext_source(tmp_path):
    """``read(limit=N)`` of a fastText model, and ``convert --limit`` from one to a word-vector format."""
    src = TRAINED / "cbow.bin"
    whole = wv.read(src)
    m = wv.read(src, limit=7)
    assert m.words == whole.words[:7] and m.vectors.tobytes() == whole.vectors[:7].tobytes()
    assert cli.main(["convert", str(src), str(tmp_path / "c.vec"), "--limit", "7"]) == 0
    back = wv.read(tmp_path / "c.vec")
    assert back.words == whole.words[:7]
    np.testing.assert_allclose(back.vectors, whole.vectors[:7], rtol=1e-6)


def test_dedupe_writes_each_word_once_to_fasttext(tmp_path):
    """Embeddings that repeat a word: refused by the fastText writer, or (``--dedupe``) written with the
    first row of each word, which the fasttext module gives back."""
    emb = wv.Embeddings(["a", "b", "a", "c"], np.arange(8, dtype=np.float32).reshape(4, 2))
    wv.write(emb, tmp_path / "d.vec")
    with pytest.raises(BuildError, match="deduplicate"), pytest.warns(UserWarning, match="duplicate"):
        wv.convert(tmp_path / "d.vec", tmp_path / "d.bin", "fasttext")
    assert cli.main(["convert", str(tmp_path / "d.vec"), str(tmp_path / "d.bin"), "--to", "fasttext",
                     "--dedupe"]) == 0
    a = ask(tmp_path / "d.bin", words=["a", "b", "c"])
    assert a["dictionary"] == ["a", "b", "c"]
    assert np.array([f32(x) for x in a["words"]]).tobytes() == emb.vectors[[0, 1, 3]].tobytes()


def test_dedupe_of_a_fasttext_model_that_repeats_a_word(tmp_path):
    """A fastText file whose dictionary repeats a word (fastText never writes one): --dedupe keeps the last,
    with its own row, as fastText and wvformats look it up; the fasttext module gives the same vectors on both
    files (test_duplicates.py tests every lookup)."""
    p = wv.parse_file(TRAINED / "skipgram.bin")
    p.dictionary.entries.words[3] = p.dictionary.entries.words[1]
    with open(tmp_path / "rep.bin", "wb") as f:
        codec.build(p, f)
    m = wv.read(tmp_path / "rep.bin")
    wv.convert(tmp_path / "rep.bin", tmp_path / "once.bin", deduplicate=True)
    once = wv.read(tmp_path / "once.bin")
    assert once.words == m.words[:1] + m.words[2:]
    a = ask(tmp_path / "once.bin", words=once.words[:6])
    assert np.array([f32(x) for x in a["words"]]).tobytes() == m.embedding_batch(once.words[:6])[0].tobytes()
    assert a["words"] == ask(tmp_path / "rep.bin", words=once.words[:6])["words"]


def test_fasttext_commands_read_and_print_in_the_models_encoding(tmp_path):
    """``wvformats fasttext print-word-vectors MODEL --encoding cp852``: the words read from standard input and
    printed back in cp852, as fastText's program reads and prints bytes; their vectors the fasttext module's of
    those bytes; ``nn`` prints its neighbours in cp852 too."""
    wv.convert(CP852, tmp_path / "up.bin", "fasttext", encoding="cp852", upgrade=True)
    words = ["který", "kterýx", "podle", "žluťoučký"]
    peer = ask(tmp_path / "up.bin", raw_words=[w.encode("cp852").hex() for w in words])["raw_words"]
    run = subprocess.run([sys.executable, "-m", "wvformats.cli", "fasttext", "print-word-vectors", str(CP852),
                          "--encoding", "cp852"], input=" ".join(words).encode("cp852"), capture_output=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    want = "".join(f"{w} " + "".join(f"{float(v):.5g} " for v in f32(bits)) + "\n"
                   for w, bits in zip(words, peer, strict=True))
    assert run.stdout == want.encode("cp852")
    run = subprocess.run([sys.executable, "-m", "wvformats.cli", "fasttext", "nn", str(CP852), "který", "-k", "3",
                          "--encoding", "cp852"], capture_output=True, timeout=120)
    m = wv.read(CP852, encoding="cp852")
    assert run.stdout.decode("cp852").splitlines() == ["Query word? který"] + [
        f"{w} {s:g}" for s, w in m.get_nearest_neighbors("který", 3)]
