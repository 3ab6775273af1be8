"""fastText's ``predict`` on the language-identification model most users run (``lid.176.ftz``: character
n-grams 2-4, pruned, quantized, hierarchical softmax) and on the trained hs model: labels and probabilities
bit-identical to the fasttext module's, one line at a time and batched, and the caches bounded."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import wvformats as wv

pytest.importorskip("fasttext")  # the peer (fasttext-numpy2-wheel), in the 'peers' extra
pytestmark = pytest.mark.usefixtures("kernels")  # each test with the C kernel and with its pure-Python twin

PEER = Path(__file__).with_name("peer.py")
TRAINED = Path(__file__).parents[2] / "data" / "fasttext" / "trained"
SENTENCES = ["Hello world", "Bonjour tout le monde, comment allez-vous aujourd'hui ?", "Das ist ein Test.",
             "これは日本語の文です", "¿Dónde está la biblioteca?", "Привет, как дела?", "مرحبا بالعالم",
             "Το σπίτι είναι μεγάλο", "我们今天去公园", "नमस्ते दुनिया", "Hyvää huomenta kaikille",
             "", "   ", "__label__en hello", "a\tb\vc\fd\re", "123 456", "😀 emoji 😀"]


def ask(model: Path, lines: list[str], k: int, threshold: float) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        q, a = Path(tmp) / "q.json", Path(tmp) / "a.json"
        q.write_text(json.dumps({"lines": lines, "k": k, "threshold": threshold}))
        subprocess.run([sys.executable, str(PEER), "ask", str(model), str(q), str(a)], check=True, timeout=300)
        return json.loads(a.read_text())["predictions"]


def mixed_lines(m, count: int, seed: int = 0) -> list[str]:
    """Lines of the model's own words (most of them) and of unknown words in several scripts."""
    rng = np.random.default_rng(seed)
    alphabets = ["abcdefghijklmnopqrstuvwxyzéü", "абвгдежзиклмнопрст", "αβγδεζηθικλμν", "あいうえおかきくけこ",
                 "ابتثجحخدذرز"]
    out = []
    for _ in range(count):
        words = []
        for _ in range(int(rng.integers(1, 16))):
            if rng.random() < 0.7:
                words.append(m.words[int(rng.integers(1, len(m.words)))])
            else:
                letters = alphabets[int(rng.integers(len(alphabets)))]
                words.append("".join(rng.choice(list(letters), int(rng.integers(1, 9)))))
        out.append(" ".join(words))
    return out


def assert_same(ours: tuple, theirs: list, line: str) -> None:
    labels, probs = ours
    assert list(labels) == theirs[0], line
    assert [float(p) for p in probs] == theirs[1], line  # bit for bit: the C library's expf and log


@pytest.mark.parametrize("k,threshold", [(1, 0.0), (3, 0.0), (-1, 0.0), (5, 0.1), (2, 1.0)])
def test_lid_predict_equals_the_peer_bit_for_bit(lid, k, threshold):
    """One line at a time (the scalar depth-first search) and batched (every node of the tree at once)."""
    m = wv.read(lid)
    lines = SENTENCES + mixed_lines(m, 300)
    theirs = ask(lid, lines, k, threshold)
    batch = m.predict(lines, k=k, threshold=threshold)
    for i, line in enumerate(lines):
        assert_same(m.predict(line, k=k, threshold=threshold), theirs[i], line)
        assert_same((batch[0][i], batch[1][i]), theirs[i], line)


@pytest.mark.parametrize("name", ["sup-hs.bin", "sup-softmax.bin", "sup-ova.bin", "sup-ns.bin", "sup-softmax.ftz",
                                  "sup-plain.ftz", "many-ova.ftz", "sup-dsub3.ftz", "sup-ngrams.ftz"])
def test_trained_predict_equals_the_peer_bit_for_bit(name):
    """Every loss: softmax's exp in double and its sum label after label, the sigmoid table's and the
    probabilities' expf, std_log's log: the peer's float32 values, not a few ulps off."""
    path = TRAINED / name
    m = wv.read(path)
    lines = ["apple banana day", "night sun über naïve", "日本 cat dog zzz", "", "w1 w2 w3 w4 w5 w6 w7 w8",
             "__label__pos moon", "cat\vdog\fsun\rmoon __label__zz", "zzqx yyq"]
    for k in (1, 2, -1):
        theirs = ask(path, lines, k, 0.0)
        batch = m.predict(lines, k=k)
        for i, line in enumerate(lines):
            assert_same(m.predict(line, k=k), theirs[i], line)
            assert_same((batch[0][i], batch[1][i]), theirs[i], line)


def test_expf_and_std_log_are_the_c_librarys():
    """numpy's float32 exp is a few ulps off glibc's expf (the peer's std::exp of a float); the fallback
    near float32 rounding boundaries makes ours the C library's."""
    import ctypes
    import ctypes.util
    import math

    from wvformats.families.fasttext import arithmetic

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.expf.restype, libm.expf.argtypes = ctypes.c_float, [ctypes.c_float]
    x = (np.random.default_rng(0).standard_normal(200_000) * 8).astype(np.float32)
    assert arithmetic.expf(x).tolist() == [libm.expf(v) for v in x.tolist()]
    y = np.random.default_rng(1).random(200_000).astype(np.float32)
    assert arithmetic.std_log(y).tolist() == np.array(
        [math.log(v + 1e-5) for v in y.astype(np.float64).tolist()], np.float32).tolist()


def test_line_caches_are_bounded_and_change_nothing(lid, monkeypatch):
    """The token cache is cleared when full; the predictions stay the same."""
    from wvformats.families.fasttext import predict

    m = wv.read(lid)
    lines = mixed_lines(m, 200, seed=1)
    expected = m.predict(lines, k=2)
    monkeypatch.setattr(predict, "MAX_TOKENS", 50)
    small = wv.read(lid)
    for i, line in enumerate(lines):
        got = small.predict(line, k=2)
        assert list(got[0]) == list(expected[0][i]) and np.array_equal(got[1], expected[1][i])
        rows = small._predict.rows
        assert len(rows.tokens) <= 50
    batch = small.predict(lines, k=2)
    assert batch[0] == expected[0] and all(map(np.array_equal, batch[1], expected[1]))


def test_a_big_quantized_input_is_not_reconstructed_whole(lid, monkeypatch):
    from wvformats.families.fasttext import predict

    size = predict.TABLE_BYTES
    monkeypatch.setattr(predict, "TABLE_BYTES", 1024)
    m = wv.read(lid)
    lines = mixed_lines(m, 50, seed=2)
    labels, probs = m.predict(lines, k=3)
    one = [m.predict(line, k=3) for line in lines]
    assert m._predict.rows.table is None  # rows reconstructed per call instead
    monkeypatch.setattr(predict, "TABLE_BYTES", size)
    whole = wv.read(lid)
    expected = whole.predict(lines, k=3)
    assert whole._predict.rows.table is not None
    assert labels == expected[0] and all(map(np.array_equal, probs, expected[1]))
    assert [o[0] for o in one] == expected[0]
    assert all(np.array_equal(o[1], p) for o, p in zip(one, expected[1], strict=True))


def test_one_lines_subwords_equal_the_vectorised_cut(lid):
    """The scalar computeSubwords (one line) cuts and hashes what the vectorised one does, bytes that are
    not UTF-8 (read as surrogate escapes: each counts as a character unless it continues one) included."""

    m = wv.read(lid)
    rows = m._predictor().rows
    words = ["hello", "été", "日本語", "a", "", "caf\udce9", "\udc80x\udcbf", "x\udcc3", "😀ok", "</s>x", "Ελλάδα"]
    for w in words:
        assert rows._ngram_rows(w) == m._rows_of([w], np.array([-1]))[0].tolist(), repr(w)
    line = " ".join(words)
    assert m.predict(line, k=3)[0] == m.predict([line, "x"], k=3)[0][0]


def test_a_lines_tokens_are_cut_at_fasttexts_separators_only(lid):
    """The printable-ASCII shortcut (str.split) cuts where Dictionary::readWord does; other lines (a control
    character, a separator of Python's that is not fastText's, a NUL) go through fastText's own separators."""
    import re

    m = wv.read(lid)
    lines = ["Hello  world ", " a b ", "", "x\x1cy z", "x\x1fy", "a\x85b c", "a\xa0b", "a\u2003b", "a\0b",
             "tab\there", "a\vb\fc\rd\ne", "!?.,;:'\"()[]{}<>~`@#$%^&*-_=+|\\/"]
    for line in lines:
        assert m._tokens(line) == [*re.findall("[^ \n\r\t\v\f\0]+", line), "</s>"], repr(line)


def test_tied_scores_leave_in_fasttexts_order(tmp_path):
    """With every output row zero, each node's f is 0.5 and leaves at one depth tie (the labels' counts made equal:
    three leaves at the top depth): which of them fastText keeps and in what order is its heap's (libstdc++'s
    push_heap / pop_heap / sort_heap), for every k."""
    import struct

    src = TRAINED / "sup-hs.bin"
    m = wv.read(src)
    data = bytearray(src.read_bytes())
    size = len(m.labels) * m.dim * 4  # the output matrix is the file's last bytes
    data[-size:] = bytes(size)
    for label in m.labels:  # each label's entry: its bytes, a NUL, its int64 count
        at = data.index(label.encode() + b"\0") + len(label) + 1
        data[at : at + 8] = struct.pack("<q", 100)
    tied = tmp_path / "tied.bin"
    tied.write_bytes(bytes(data))
    m = wv.read(tied)
    lines = ["apple banana day", "night sun", "zzqx"]
    for k in (1, 2, 3, 4, -1):
        theirs = ask(tied, lines, k, 0.0)
        batch = m.predict(lines, k=k)
        for i, line in enumerate(lines):
            assert_same(m.predict(line, k=k), theirs[i], line)
            assert_same((batch[0][i], batch[1][i]), theirs[i], line)
    assert theirs[0][1][:3] == [theirs[0][1][0]] * 3  # (the best three tie)


def _buckets(nwords: int, bucket: int, pruned: bool, seed: int):
    """(bucket count, Buckets): as drawn, or a pruned model's (at most 4,096 buckets, 50 of them kept, at random
    rows)."""
    from wvformats.families.fasttext import subwords

    if not pruned:
        return bucket, subwords.Buckets(nwords, bucket, None)
    bucket = bucket % 4096 + 1
    rng = np.random.default_rng(seed)
    keys = rng.choice(bucket, size=min(bucket, 50), replace=False)
    return bucket, subwords.Buckets(nwords, bucket, np.stack([keys, rng.integers(0, 1000, len(keys))], axis=1))


@given(st.binary(max_size=24), st.integers(0, 6), st.integers(-1, 8), st.integers(1, 2**31 - 1),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_the_kernels_computesubwords_is_the_python_loops(data, minn, maxn, bucket, pruned, seed):
    """``_kernel.ngram_rows`` cuts and hashes bytes as the pure-Python ``one_word_ngrams`` does: any bytes (not
    UTF-8 ones read as surrogate escapes), any n-gram lengths, with and without a prune index."""
    from wvformats import compiled
    from wvformats.families.fasttext import subwords

    kernel = compiled.kernel("wvformats.families.fasttext._kernel")
    bucket, b = _buckets(0, bucket, pruned, seed)
    word = data.decode("utf-8", "surrogateescape")
    got = kernel.ngram_rows(b"<" + data + b">", minn, maxn, bucket, 0, b.table() if pruned else None)
    kept, subwords._K = subwords._K, None
    try:
        assert got == subwords.one_word_ngrams(word, minn, maxn, b)
    finally:
        subwords._K = kept


@given(st.lists(st.integers(0, 2**32 - 1), max_size=12), st.integers(1, 5), st.integers(1, 2**31 - 1),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_the_kernels_word_ngrams_are_the_vectorised_ones(hashes, n, bucket, pruned, seed):
    """``_kernel.word_ngram_rows`` (``addWordNgrams`` of one line) gives the rows the vectorised batch path gives:
    int32 token hashes sign-extended and chained in u64, modulo the buckets, through a prune index."""
    from wvformats import compiled
    from wvformats.families.fasttext import subwords

    kernel = compiled.kernel("wvformats.families.fasttext._kernel")
    bucket, b = _buckets(7, bucket, pruned, seed)
    got: list[int] = []
    kernel.word_ngram_rows(got, hashes, n, bucket, 7, b.table() if pruned else None)
    rows, _ = subwords.word_ngram_rows(np.array(hashes, np.uint32), np.zeros(len(hashes), np.int64), n, b)
    assert got == rows.tolist()


@pytest.mark.parametrize("name", ["sup-softmax.ftz", "sup-dsub3.ftz", "many-ova.ftz", "sup-ngrams.ftz"])
def test_a_few_quantized_rows_are_the_reconstructed_ones(name, kernels):
    """``Matrix.few_rows`` (the kernel's ``pq_rows``: ProductQuantizer::addcode, a narrower last sub-quantizer,
    quantized norms) gives the bits of the vectorised reconstruction, for the input and the output matrix."""
    m = wv.read(TRAINED / name)
    rng = np.random.default_rng(1)
    for matrix in (m.input, m.output):
        assert matrix.quantized or matrix is m.output
        at = rng.integers(0, matrix.shape[0], 40).tolist()
        assert matrix.few_rows(at).tobytes() == matrix.rows(np.array(at, np.intp)).tobytes()


@given(st.floats() | st.sampled_from([3.4028235e38, 3.4028236e38, 3.40282357e38, 3.4028237e38, -3.4028237e38,
                                      1e-46, -1e-46, 7e-46, 0.0, -0.0]))
def test_a_threshold_is_the_float32_fasttext_takes(t):
    """predict's threshold is C's (float) of the double (numpy's float32 of it: infinite past float32's range,
    the sign of a zero kept), NaN as -inf; read without numpy's error state on every call since it is per call."""
    import math
    import struct

    from wvformats.families.fasttext.arithmetic import threshold32

    with np.errstate(over="ignore"):
        want = -math.inf if t != t else float(np.float32(t))
    assert struct.pack("<d", threshold32(t)) == struct.pack("<d", want)
