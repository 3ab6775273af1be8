"""A fastText file whose dictionary lists a word twice (fastText never writes one; an edited file may) is looked
up as fastText looks it up: ``Dictionary::load`` fills its hash table entry after entry, ``word2int_[find(w)] =
i``, so the LAST entry's id wins, for every lookup by word (``get_word_id``, ``get_word_vector``,
``get_subwords``, ``predict``, sentence vectors, neighbours and analogies). The files are the trained models with
one entry's word byte-patched into another word of the same length; the fasttext module, run in a subprocess
(peer.py), is the oracle, bit for bit."""

import functools
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_fasttext import LINES, ask, f32

import wvformats as wv
from wvformats import cli
from wvformats.embeddings import DuplicateWordsWarning

TRAINED = Path(__file__).parents[2] / "data" / "fasttext" / "trained"
# (model, the word of the entry patched, the word it becomes): a later entry made a copy of an earlier word, or an
# earlier entry a copy of a later one; unsupervised, supervised (hs, word bigrams), quantized and pruned (.ftz with
# character n-grams) and quantized without character n-grams (a word is then its entry's row alone)
CASES = [("skipgram.bin", "night", "apple"), ("cbow.bin", "apple", "night"), ("sup-hs.bin", "cherry", "posish"),
         ("sup-softmax.ftz", "banana", "cherry"), ("sup-dsub3.ftz", "apple", "night")]


def patched(name: str, old: str, new: str, folder: Path) -> Path:
    """The trained model ``name`` with its entry ``old`` spelt ``new`` (the same byte length): a dictionary that
    lists ``new`` twice."""
    data = bytearray((TRAINED / name).read_bytes())
    was, now = f"\0{old}\0".encode(), new.encode()
    assert len(now) == len(was) - 2 and data.count(was) == 1
    at = data.index(was) + 1
    data[at : at + len(now)] = now
    out = folder / f"{Path(name).stem}-{new}-twice{Path(name).suffix}"
    out.write_bytes(data)
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("duplicates")


@functools.cache
def peer(path: Path, queries: str) -> dict:
    """The fasttext module's answers, asked once per file and queries (the tests run twice: kernels)."""
    return ask(path, **json.loads(queries))


def queries(m, dup: str) -> dict:
    """Every lookup of the duplicated word, of some others and of unknown ones, lines holding it."""
    words = [dup, "sun", "zzqx", "", "</s>", "日本語", *m.words]
    out = {"words": words, "nn": [dup, "sun"], "analogies": [[dup, "sun", "moon"], ["sun", dup, "apple"]],
           "k": 1000, "sentences": [f"{dup} apple zzz", f"sun {dup} {dup} moon", dup, *LINES]}
    if m.labels:
        out["lines"] = out["sentences"] + [f"__label__pos {dup}", f"{dup} {dup}"]
    return out


@pytest.mark.usefixtures("kernels")  # with the C kernel and with its pure-Python twin
@pytest.mark.parametrize("name,old,dup", CASES)
def test_every_lookup_of_a_word_listed_twice_is_fasttexts(folder, name, old, dup):
    path = patched(name, old, dup, folder)
    m = wv.read(path)
    first, last = [i for i, w in enumerate(m.words) if w == dup]
    q = queries(m, dup)
    a = peer(path, json.dumps(q))
    words = q["words"]
    want = np.array([f32(x) for x in a["words"]])
    assert a["ids"][0] == last  # (the oracle's: the later entry)
    composes = int(m.args.maxn) > 0

    # one word at a time, on a fresh model (the compact index, no vocab dict), then by the dict
    for w, v, wid in zip(words, want, a["ids"], strict=True):
        assert m.get_word_vector(w).tobytes() == v.tobytes(), w
        assert m.get_word_id(w) == wid, w
        known = wid >= 0 or composes
        assert (w in m) == known, w
        if known:
            assert m[w].tobytes() == m.embedding(w).tobytes() == m.get(w).tobytes() == v.tobytes(), w
        else:
            assert m.embedding(w) is None and m.get(w, "none") == "none"
    assert m._index is None
    assert m.vocab[dup] == m.index(dup) == last and m.duplicates == 1
    assert m[dup].tobytes() == want[0].tobytes()
    assert m.astype(np.float64)[dup].tolist() == want[0].tolist()  # (a copy of the rows looks up as the model)

    # many at once
    vecs, found = m.embedding_batch(words)
    assert vecs.tobytes() == want.tobytes()
    assert found.tolist() == [wid >= 0 or composes for wid in a["ids"]]
    assert m.word_vectors(words).tobytes() == want.tobytes()
    assert [m.subword_indices(w) for w in words] == a["subwords"]
    assert [m.get_subwords(w)[1].tolist() for w in words] == a["subwords"]
    sentences = np.array([f32(x) for x in a["sentences"]])
    assert m.sentence_vectors(q["sentences"]).tobytes() == sentences.tobytes()
    assert np.array([m.get_sentence_vector(t) for t in q["sentences"]]).tobytes() == sentences.tobytes()

    # prediction, one line at a time and batched
    if m.labels:
        batch = m.predict(q["lines"], k=q["k"])  # (every label)
        for i, (line, (labels, probs)) in enumerate(zip(q["lines"], a["predictions"], strict=True)):
            got = m.predict(line, k=q["k"])
            assert (list(got[0]), got[1].tolist()) == (labels, probs), line
            assert (list(batch[0][i]), [float(p) for p in batch[1][i]]) == (labels, probs), line

    # neighbours and analogies: each entry's vector is its word's (fastText's precomputeWordVectors), so the
    # word listed twice may come twice; the query word's every entry left out
    assert [[s, w] for s, w in m.get_nearest_neighbors(dup, 1000)] == a["nn"][0]
    assert [[s, w] for s, w in m.get_nearest_neighbors("sun", 1000)] == a["nn"][1]
    assert [w for _, w in m.get_nearest_neighbors("sun", 1000)].count(dup) == 2
    for (x, y, z), theirs in zip(q["analogies"], a["analogies"], strict=True):
        assert [[s, w] for s, w in m.get_analogies(x, y, z, 1000)] == theirs


@pytest.mark.parametrize("name,old,dup", CASES)
def test_words_and_vectors_keep_every_entry_in_file_order(folder, name, old, dup):
    """``.words`` is fastText's ``get_words`` (both entries); ``.vectors`` one row per entry, each of its own
    input row: the entries the patch left alone have the original model's vectors (the fasttext module's of the
    unpatched file), and the entry lookups use is the word's."""
    path = patched(name, old, dup, folder)
    m = wv.read(path)
    original = wv.read(TRAINED / name)
    at = original.words.index(old)
    a = peer(path, json.dumps({"words": [dup]}))
    theirs = peer(TRAINED / name, json.dumps({"words": original.words}))
    assert m.words == a["dictionary"] == original.words[:at] + [dup] + original.words[at + 1 :]
    vectors = np.asarray(m.vectors)
    others = [i for i in range(len(m.words)) if i != at]
    assert vectors[others].tobytes() == np.array([f32(x) for x in theirs["words"]])[others].tobytes()
    assert vectors[m.vocab[dup]].tobytes() == f32(a["words"][0]).tobytes()


@pytest.mark.parametrize("name,old,dup", CASES)
def test_dedupe_keeps_the_entry_fasttext_looks_up(folder, tmp_path, name, old, dup):
    """``deduplicated()`` and ``convert --dedupe`` (to fastText, to finalfusion) keep the last entry of the word,
    the one lookups use: the fasttext module on the written file gives every word and line what it gave on the
    file with the word twice."""
    path = patched(name, old, dup, folder)
    m = wv.read(path)
    first = m.words.index(dup)
    kept = m.words[:first] + m.words[first + 1 :]
    d = m.deduplicated()
    assert d.words == kept and d.duplicates == 0
    assert d.vectors.tobytes() == m.embedding_batch(kept)[0].tobytes()
    assert cli.main(["convert", str(path), str(tmp_path / f"once{path.suffix}"), "--dedupe"]) == 0
    once = wv.read(tmp_path / f"once{path.suffix}")
    assert once.words == kept
    q = queries(m, dup)
    q.pop("nn"), q.pop("analogies")
    before, after = peer(path, json.dumps(q)), ask(tmp_path / f"once{path.suffix}", **q)
    assert after["words"] == before["words"] and after["sentences"] == before["sentences"]
    assert after.get("predictions") == before.get("predictions")
    with warnings.catch_warnings():  # (a pruned model's buckets all written: a warning says how large)
        warnings.filterwarnings("ignore", "a pruned fastText model to finalfusion", UserWarning)
        wv.convert(path, tmp_path / "once.fifu", deduplicate=True, normalize=False)
    fifu = wv.read(tmp_path / "once.fifu")
    assert fifu.words == kept
    assert fifu.embedding_batch(kept)[0].tobytes() == m.embedding_batch(kept)[0].tobytes()


def test_commands_look_the_word_up_as_fasttext(folder):
    """``wvformats fasttext print-word-vectors``, ``predict --prob`` and ``nn`` print what fastText's program
    prints of the word listed twice."""
    name, old, dup = CASES[2]
    path = patched(name, old, dup, folder)
    lines = [f"{dup} apple zzz", f"sun {dup}"]
    a = peer(path, json.dumps({"words": [dup], "lines": lines, "k": 2, "nn": [dup]}))

    def run(*args: str, stdin: str = "") -> str:
        done = subprocess.run([sys.executable, "-m", "wvformats.cli", "fasttext", *args], input=stdin.encode(),
                              capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    vector = "".join(f"{float(v):.5g} " for v in f32(a["words"][0]))
    assert run("print-word-vectors", str(path), stdin=dup) == f"{dup} {vector}\n"
    want = "".join(" ".join(f"{lab} {p:g}" for lab, p in zip(*pred, strict=True)) + "\n" for pred in a["predictions"])
    assert run("predict", str(path), "-", "-k", "2", "--prob", stdin="\n".join(lines) + "\n") == want
    assert run("nn", str(path), dup, "-k", "2") == f"Query word? {dup}\n" + "".join(
        f"{w} {s:g}\n" for s, w in a["nn"][0])  # (k 2 too)


def test_validate_inspect_and_the_warning_say_fasttext_uses_the_last(folder, capsys):
    """A file fastText loads is valid (exit 0); validate, inspect and the duplicate-words warning say that
    lookups use the last occurrence, as fastText does; a word-vector file says the first."""
    name, old, dup = CASES[0]
    path = patched(name, old, dup, folder)
    said = "lookups use the last occurrence (fastText uses the last)"
    assert cli.main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok") and said in out and f"first {dup!r}, entries [1, 6]" in out
    info = wv.inspect(path, full=True)
    assert info["duplicates"] == 1 and info["lookups_use"] == "the last occurrence (fastText uses the last)"
    assert info["first_duplicate"] == {"word": dup, "rows": [1, 6]}
    with pytest.warns(DuplicateWordsWarning, match=r"lookups use the last occurrence \(fastText uses the last\)"):
        wv.read(path).warn_duplicates()
    assert wv.inspect(TRAINED / name, full=True)["duplicates"] == 0
    words = wv.Embeddings(["a", "b", "a"], np.eye(3, dtype=np.float32))
    with pytest.warns(DuplicateWordsWarning, match="lookups use the first occurrence"):
        words.warn_duplicates()
    assert words.vocab["a"] == 0


def test_most_similar_ranks_each_word_by_the_vector_lookups_use(folder):
    """gensim's ``most_similar`` on the model: the query word is the last entry's vector, and a word listed twice
    is ranked once, by that vector (not by the shadowed entry's row, which lookups never give)."""
    name, old, dup = CASES[0]
    path = patched(name, old, dup, folder)
    m = wv.read(path)
    a = peer(path, json.dumps({"words": [dup, "sun"]}))
    query, sun = (f32(x) for x in a["words"])  # (the fasttext module's vectors)
    got = m.most_similar(dup, topn=len(m.words))
    # (as in gensim, a word's query is its unit row, a vector's the vector: their means agree to float32 rounding)
    want = [(w, s) for w, s in m.most_similar(positive=[query], topn=len(m.words)) if w != dup]
    assert [w for w, _ in got] == [w for w, _ in want]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=0, atol=1e-6)
    assert len({w for w, _ in got}) == len(got) == len(m.words) - 2
    near = dict(m.most_similar("sun", topn=len(m.words)))
    cosine = query @ sun / np.linalg.norm(query) / np.linalg.norm(sun)
    assert near[dup] == pytest.approx(float(cosine), abs=1e-6)
    shadowed = np.asarray(m.vectors)[m.words.index(dup)]
    assert abs(float(shadowed @ sun / np.linalg.norm(shadowed) / np.linalg.norm(sun)) - near[dup]) > 1e-3

