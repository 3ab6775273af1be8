"""The property-test kit on Leader, word2vec binary and text, and GloVe: files drawn from the schemas (any
words each format can hold, any float32 values, bytes after the records) round-trip in both construct modes
and through the codec, every cut of a binary file fails, and mutants of files the peers wrote (gensim's
word2vec and GloVe files, word-vectors' Leader and word2vec files) fail cleanly."""

import tempfile
from pathlib import Path

import numpy as np
import pytest

from wvformats.testing import property_tests

word_vectors = pytest.importorskip("word_vectors")  # part of the 'peers' extra that CI installs
KeyedVectors = pytest.importorskip("gensim.models").KeyedVectors

WORDS = ["king", "queen", "Daniël", "日本", "a\u00a0b"]
VECTORS = np.random.default_rng(3).normal(size=(len(WORDS), 4)).astype(np.float32)


def written_by_peers() -> dict[str, list[bytes]]:
    kv = KeyedVectors(vector_size=VECTORS.shape[1])
    kv.add_vectors(WORDS, VECTORS)
    writers = {
        "leader": [lambda p: word_vectors.write_leader(p, WORDS, VECTORS)],
        "word2vec-binary": [lambda p: kv.save_word2vec_format(p, binary=True),
                            lambda p: word_vectors.write_w2v(p, WORDS, VECTORS)],
        "word2vec-text": [lambda p: kv.save_word2vec_format(p, binary=False),
                          lambda p: word_vectors.write_w2v_text(p, WORDS, VECTORS)],
        "glove": [lambda p: kv.save_word2vec_format(p, binary=False, write_header=False),
                  lambda p: word_vectors.write_glove(p, WORDS, VECTORS)],
    }
    out: dict[str, list[bytes]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, fns in writers.items():
            for i, write in enumerate(fns):
                path = str(Path(tmp) / f"{fmt}-{i}")
                write(path)
                out.setdefault(fmt, []).append(Path(path).read_bytes())
    return out


# a text table cut inside its last number is a whole file of its own ("0.5" cut to "0."), which the reader
# warns of but cannot refuse: cuts are checked on the binary formats
for _fmt, _samples in written_by_peers().items():
    _tests = property_tests(_fmt, samples=_samples, cases=6, truncations=_fmt in ("leader", "word2vec-binary"))
    globals().update({f"{name}_{_fmt.replace('-', '_')}": test for name, test in _tests.items()})
