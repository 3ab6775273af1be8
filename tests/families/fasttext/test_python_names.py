"""fastText's Python names on the fastText model (get_subwords, get_words, get_labels, get_input_matrix,
get_output_matrix, get_nearest_neighbors, get_analogies), each answering as the fasttext module does (run in a
subprocess: it is compiled and can crash)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import gensim
import numpy as np
import pytest

import wvformats as wv

DATA = Path(__file__).parents[2] / "data" / "fasttext" / "trained"
GENSIM = Path(gensim.__file__).parent / "test" / "test_data"
WORDS = ["night", "nightt", "apple", "été", "日本", "</s>", "a"]

PEER = textwrap.dedent('''
    import json, sys
    import numpy as np
    import fasttext
    m = fasttext.load_model(sys.argv[1])
    out = {"subwords": [[list(s), [int(i) for i in ids]] for s, ids in map(m.get_subwords, json.loads(sys.argv[2]))]}
    words, freq = m.get_words(include_freq=True)
    labels, lfreq = m.get_labels(include_freq=True)
    out.update(words=list(words), freq=[int(x) for x in freq], labels=list(labels), lfreq=[int(x) for x in lfreq])
    for name in ("input", "output"):
        try:
            out[name] = getattr(m, f"get_{name}_matrix")().tobytes().hex()
        except ValueError as e:
            out[name] = "refused: " + str(e)
    print(json.dumps(out))
''')


def peer(model: Path, words: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", PEER, str(model), json.dumps(words)], capture_output=True,
                          text=True, timeout=300, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("model", [DATA / "skipgram.bin", DATA / "sup-softmax.bin", DATA / "sup-softmax.ftz",
                                   DATA / "sup-plain.ftz", GENSIM / "lee_fasttext_new.bin"])
def test_the_python_names_answer_as_fasttext(model):
    want = peer(model, WORDS)
    m = wv.read(model)
    for word, (strings, ids) in zip(WORDS, want["subwords"], strict=True):
        got_strings, got_ids = m.get_subwords(word)
        assert (got_strings, got_ids.tolist()) == (strings, ids), word
    words, freq = m.get_words(include_freq=True)
    assert (words, freq.tolist()) == (want["words"], want["freq"])
    labels, lfreq = m.get_labels(include_freq=True)
    assert (labels, lfreq.tolist()) == (want["labels"], want["lfreq"])
    assert m.get_words() == want["words"] and m.get_labels() == want["labels"]
    for name in ("input", "output"):
        if want[name].startswith("refused"):
            with pytest.raises(ValueError, match="quantized"):
                getattr(m, f"get_{name}_matrix")()
        else:
            assert np.ascontiguousarray(getattr(m, f"get_{name}_matrix")()).tobytes().hex() == want[name]


def test_nearest_neighbors_and_analogies_are_the_modules():
    model = GENSIM / "lee_fasttext_new.bin"
    code = ("import fasttext, json, sys; m = fasttext.load_model(sys.argv[1]); "
            "print(json.dumps([m.get_nearest_neighbors('night', k=5), m.get_analogies('night', 'day', 'sun', k=5)]))")
    nn, an = json.loads(subprocess.run([sys.executable, "-c", code, str(model)], capture_output=True, text=True,
                                       check=True, timeout=300).stdout)
    m = wv.read(model)
    for got, want in ((m.get_nearest_neighbors("night", k=5), nn), (m.get_analogies("night", "day", "sun", k=5), an)):
        assert [w for _, w in got] == [w for _, w in want]
        np.testing.assert_allclose([s for s, _ in got], [s for s, _ in want], atol=1e-6)
