"""``wvformats fasttext ...``: fastText's own commands, their output checked against the fasttext module (run in a
subprocess: it is compiled and can crash) on models it trained and on gensim's fastText models."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gensim
import pytest

DATA = Path(__file__).parents[2] / "data" / "fasttext" / "trained"
GENSIM = Path(gensim.__file__).parent / "test" / "test_data"
LINES = ["apple banana night", "sun moon", "", "  cat  dog\t", "unknownword w3 w7 été", "日本 naïve über",
         "__label__pos apple"]

PEER = textwrap.dedent('''
    import json, sys
    import fasttext
    m = fasttext.load_model(sys.argv[1])
    q = json.loads(sys.stdin.read())
    out = {}
    if "predict" in q:
        k, t = q["k"], q["threshold"]
        out["predict"] = [[list(m.predict(line, k=k, threshold=t)[0]),
                           [float(p) for p in m.predict(line, k=k, threshold=t)[1]]] for line in q["predict"]]
    out["words"] = [[float(x) for x in m.get_word_vector(w)] for w in q.get("words", [])]
    out["sentences"] = [[float(x) for x in m.get_sentence_vector(s)] for s in q.get("sentences", [])]
    out["nn"] = [[[float(s), w] for s, w in m.get_nearest_neighbors(w, k=q["k"])] for w in q.get("nn", [])]
    out["analogies"] = [[[float(s), w] for s, w in m.get_analogies(*t, k=q["k"])] for t in q.get("analogies", [])]
    print(json.dumps(out))
''')


def peer(model: Path, **queries) -> dict:
    done = subprocess.run([sys.executable, "-c", PEER, str(model)], input=json.dumps(queries), capture_output=True,
                          text=True, timeout=300, check=True)
    return json.loads(done.stdout)


def wvformats(*args: str, stdin: str = "") -> str:
    done = subprocess.run([sys.executable, "-m", "wvformats.cli", "fasttext", *args], input=stdin.encode(),
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def vector(values: list[float]) -> str:
    return "".join(f"{v:.5g} " for v in values)


@pytest.mark.parametrize("name", ["sup-softmax.bin", "sup-hs.bin", "sup-ova.bin", "sup-softmax.ftz",
                                  "many-ova.ftz"])
@pytest.mark.parametrize(("k", "threshold"), [(1, 0.0), (3, 0.0), (-1, 0.01)])
def test_predict_prints_what_fasttext_predicts(tmp_path, name, k, threshold):
    model = DATA / name
    want = peer(model, predict=LINES, k=k, threshold=threshold)["predict"]
    text = tmp_path / "in.txt"
    text.write_text("\n".join(LINES) + "\n")
    args = [str(model), str(text), "-k", str(k), "--threshold", str(threshold)]
    assert wvformats("predict", *args).splitlines() == [" ".join(labels) for labels, _ in want]
    got = wvformats("predict", *args, "--prob").splitlines()
    # fastText's program prints each probability as a float with %g (6 digits); ours are its bits
    assert got == [" ".join(f"{lab} {p:g}" for lab, p in zip(labels, probs, strict=True)) for labels, probs in want]
    # standard input, and a last line without its newline, read alike
    stdin_args = [str(model), "-", "-k", str(k), "--threshold", str(threshold), "--prob"]
    assert wvformats("predict", *stdin_args, stdin="\n".join(LINES)).splitlines() == got


# A token </s> ends an example where fastText reads it (Dictionary::getLine stops there). fastText's program reads
# its input as one stream, so the rest of such a line is the next example: these are the examples fastText 0.9.2's
# `predict` and `print-sentence-vectors` (of a supervised model) read from EOS_LINES, as the Debian package's
# program printed them; the module's predict of one string reads its first example only.
EOS_LINES = ["</s> posish apple", "posish </s> apple", "apple </s>", "</s>", "a </s> b </s>", "night"]
EOS_EXAMPLES = ["</s>", "posish apple", "posish </s>", "apple", "apple </s>", "", "</s>", "", "a </s>", "b </s>", "",
                "night"]


@pytest.mark.parametrize("name", ["sup-softmax.bin", "sup-softmax.ftz", "sup-ngrams.ftz"])
def test_a_token_eos_ends_the_example_as_fasttext_reads_it(tmp_path, name):
    import wvformats as wv

    model = DATA / name
    want = peer(model, predict=EOS_EXAMPLES + EOS_LINES, k=2, threshold=0.0, sentences=EOS_EXAMPLES + EOS_LINES)
    by_example, by_line = want["predict"][: len(EOS_EXAMPLES)], want["predict"][len(EOS_EXAMPLES) :]
    text = tmp_path / "in.txt"
    text.write_text("\n".join(EOS_LINES) + "\n")
    got = wvformats("predict", str(model), str(text), "-k", "2", "--prob").splitlines()
    assert got == [" ".join(f"{lab} {p:g}" for lab, p in zip(ls, ps, strict=True)) for ls, ps in by_example]
    got = wvformats("print-sentence-vectors", str(model), stdin=text.read_text()).splitlines()
    assert got == [vector(v) for v in want["sentences"][: len(EOS_EXAMPLES)]]
    m = wv.read(model)
    for line, (labels, probs) in zip(EOS_LINES, by_line, strict=True):  # one string: its first example
        found, p = m.predict(line, k=2)
        assert (found, p.tolist()) == (tuple(labels), probs)
    assert [[float(x) for x in m.get_sentence_vector(line)] for line in EOS_LINES] == want["sentences"][
        len(EOS_EXAMPLES) :]


def test_an_unsupervised_model_reads_each_line_whole(tmp_path):
    model = DATA / "skipgram.bin"
    want = peer(model, sentences=EOS_LINES)["sentences"]
    got = wvformats("print-sentence-vectors", str(model), stdin="\n".join(EOS_LINES) + "\n").splitlines()
    assert got == [vector(v) for v in want]


@pytest.mark.parametrize("model", [DATA / "skipgram.bin", DATA / "sup-softmax.ftz", GENSIM / "lee_fasttext_new.bin"])
def test_print_word_and_sentence_vectors_as_fasttext(model):
    words = ["night", "nightt", "apple", "été", "zzzz"]
    sentences = ["the night sun", "apple banana", "", "unknown words only"]
    want = peer(model, words=words, sentences=sentences)
    got = wvformats("print-word-vectors", str(model), stdin=" ".join(words[:2]) + "\n" + "\n".join(words[2:]))
    assert got.splitlines() == [f"{w} {vector(v)}" for w, v in zip(words, want["words"], strict=True)]
    got = wvformats("print-sentence-vectors", str(model), stdin="\n".join(sentences) + "\n")
    assert got.splitlines() == [vector(v) for v in want["sentences"]]


@pytest.mark.parametrize("model", [DATA / "skipgram.bin", GENSIM / "lee_fasttext_new.bin"])
def test_nn_and_analogies_answer_as_fasttext(model):
    want = peer(model, nn=["night", "nightt"], analogies=[["night", "day", "sun"]], k=5)
    got = wvformats("nn", str(model), "night", "nightt", "-k", "5").splitlines()
    # each query's results under the line fastText's interactive program shows: its prompt and the query
    assert got[0] == "Query word? night" and got[6] == "Query word? nightt" and len(got) == 12
    got = got[1:6] + got[7:]
    expected = [pair for query in want["nn"] for pair in query]
    assert [line.split(" ")[0] for line in got] == [w for _, w in expected]
    assert [float(line.split(" ")[1]) for line in got] == pytest.approx([s for s, _ in expected], abs=2e-6)
    got = wvformats("analogies", str(model), "-k", "5", stdin="night day sun\n").splitlines()
    assert got[0] == "Query triplet (A - B + C)? night day sun"
    assert [line.split(" ")[0] for line in got[1:]] == [w for _, w in want["analogies"][0]]
    assert [float(line.split(" ")[1]) for line in got[1:]] == pytest.approx(
        [s for s, _ in want["analogies"][0]], abs=2e-6)


def test_each_query_is_labelled_and_json_gives_an_object_per_query(tmp_path):
    """Several queries, one of them unknown to the vocabulary: the text output says which query each result
    line answers, and ``--json`` gives one object (a line) per query, of the same results."""
    model = DATA / "skipgram.bin"
    text = wvformats("nn", str(model), "night", "xyzzyq", "-k", "3").splitlines()
    assert [line for line in text if line.startswith("Query word? ")] == ["Query word? night", "Query word? xyzzyq"]
    assert len(text) == 8 and text.index("Query word? xyzzyq") == 4
    objects = [json.loads(line) for line in wvformats("nn", str(model), "night", "xyzzyq", "-k", "3", "--json")
               .splitlines()]
    assert [o["query"] for o in objects] == ["night", "xyzzyq"]
    assert [f"{r['word']} {r['similarity']:g}" for o in objects for r in o["results"]] == text[1:4] + text[5:]
    got = [json.loads(line) for line in wvformats("analogies", str(model), "night", "day", "sun", "apple", "sun",
                                                  "moon", "-k", "2", "--json").splitlines()]
    assert [(o["query"], o["expression"]) for o in got] == [(["night", "day", "sun"], "night - day + sun"),
                                                           (["apple", "sun", "moon"], "apple - sun + moon")]
    assert all(len(o["results"]) == 2 for o in got)
    # the commands whose text output is fastText's, byte for byte: a JSON object per word, line or example
    words = [json.loads(line) for line in wvformats("print-word-vectors", str(model), "--json",
                                                    stdin="night zzzz\n").splitlines()]
    plain = wvformats("print-word-vectors", str(model), stdin="night zzzz\n").splitlines()
    assert [f"{o['word']} {vector(o['vector'])}" for o in words] == plain
    sentences = [json.loads(line) for line in wvformats("print-sentence-vectors", str(model), "--json",
                                                        stdin="the night\n\nsun\n").splitlines()]
    plain = wvformats("print-sentence-vectors", str(model), stdin="the night\n\nsun\n").splitlines()
    assert [o["text"] for o in sentences] == ["the night", "", "sun"]
    assert [vector(o["vector"]) for o in sentences] == plain
    (tmp_path / "in.txt").write_text("apple banana\nsun moon\n")
    sup = DATA / "sup-softmax.bin"
    found = [json.loads(line) for line in wvformats("predict", str(sup), str(tmp_path / "in.txt"), "-k", "2",
                                                    "--json").splitlines()]
    plain = wvformats("predict", str(sup), str(tmp_path / "in.txt"), "-k", "2", "--prob").splitlines()
    assert [o["text"] for o in found] == ["apple banana", "sun moon"]
    assert [" ".join(f"{lab} {p:g}" for lab, p in zip(o["labels"], o["probabilities"], strict=True))
            for o in found] == plain


def test_the_python_functions_equal_the_peer():
    import wvformats as wv
    from wvformats.families.fasttext import neighbors

    model = GENSIM / "lee_fasttext_new.bin"
    want = peer(model, nn=["night"], analogies=[["night", "day", "sun"]], k=10)
    m = wv.read(model)
    got = neighbors.nearest_neighbors(m, "night", 10)
    assert [w for _, w in got] == [w for _, w in want["nn"][0]]
    assert [s for s, _ in got] == pytest.approx([s for s, _ in want["nn"][0]], abs=1e-6)
    got = neighbors.analogies(m, "night", "day", "sun", 10)
    assert [w for _, w in got] == [w for _, w in want["analogies"][0]]


def _peak_rss_kb(args: list[str], stdin_path: Path) -> int:
    code = ("import resource, sys\nfrom wvformats import cli\nrc = cli.main(sys.argv[1:])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\nsys.exit(rc)")
    with open(stdin_path, "rb") as f:
        done = subprocess.run([sys.executable, "-c", code, *args], stdin=f, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=600, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    return int(done.stderr.split()[-1])


def test_predict_streams_its_input_in_constant_memory(tmp_path):
    """Memory holds a block of lines, not the input: 8x the lines, about the same peak."""
    model = str(DATA / "sup-softmax.ftz")
    line = "apple banana night sun moon cat dog w1 w2 w3 " * 3 + "\n"
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    small.write_text(line * 20_000)
    large.write_text(line * 160_000)  # 21 MB of text: held whole with its predictions, +100 MB
    peaks = [_peak_rss_kb(["fasttext", "predict", model, "-"], p) for p in (small, large)]
    assert peaks[1] - peaks[0] < 20_000, peaks  # KB
