"""fastText binary models: the schema on real files (gensim's test data, models trained by the fasttext
module), hypothesis round trips of every part, bad input, and the model's lookups and predictions against
the fasttext module (run in a subprocess: it is compiled and can crash)."""

import json
import struct
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import construct as cs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from roundtrip import MODES, assert_truncations_fail, bytes_roundtrip, roundtrip
from wvformats.schemas import fasttext as schema

import wvformats as wv
from wvformats import framework
from wvformats.errors import FormatError, TruncatedError, ValueMismatchError
from wvformats.families.fasttext import codec
from wvformats.families.fasttext.model import FastText, Matrix

pytest.importorskip("fasttext")  # the peer (fasttext-numpy2-wheel), in the 'peers' extra

DATA = Path(__file__).parents[2] / "data" / "fasttext"
PEER = Path(__file__).with_name("peer.py")
REAL = sorted(DATA.glob("*.bin"))
TRAINED = ["skipgram.bin", "cbow.bin", "sup-softmax.bin", "sup-hs.bin", "sup-ova.bin", "sup-ns.bin",
           "sup-softmax.ftz", "sup-plain.ftz", "many-ova.ftz", "sup-dsub3.ftz", "sup-ngrams.ftz"]
F = "fasttext"


@pytest.fixture(scope="session")
def trained() -> Path:
    """Models trained by the fasttext module (fasttext-numpy2-wheel 0.9.2) with ``peer.py train``, shipped in
    tests/data/fasttext/trained: its training stops with "Encountered NaN" at random on these tiny corpora,
    some models in most tries on a busy machine, so a suite that trained them itself failed at random."""
    return DATA / "trained"


def lee() -> Path:
    """gensim's ``lee_fasttext_new.bin`` (version 11, skipgram, 1763 words, dim 10, bucket 1000, n-grams 3-6)."""
    from gensim.test.utils import datapath

    return Path(datapath("lee_fasttext_new.bin"))


def ask(model: Path, **queries) -> dict:
    """The peer's answers to ``queries`` about ``model`` (words, sentences, lines, k, threshold)."""
    with tempfile.TemporaryDirectory() as tmp:
        q, a = Path(tmp) / "q.json", Path(tmp) / "a.json"
        q.write_text(json.dumps(queries))
        subprocess.run([sys.executable, str(PEER), "ask", str(model), str(q), str(a)], check=True, timeout=120)
        return json.loads(a.read_text())


def f32(bits: list) -> np.ndarray:
    return np.array(bits, np.uint32).view(np.float32)


# -- the schema on real files --------------------------------------------------------------------------------

@MODES
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_gensim_files_rebuild_byte_exact(path, compiled):
    """gensim's test models: version 12 and an older release without magic (cp852 words), byte for byte."""
    parsed = bytes_roundtrip(schema.fasttext, path.read_bytes(), format=F, compiled=compiled)
    assert parsed.new_format == (path.name != "cp852_fasttext.bin")
    assert wv.validate(path).ok


@MODES
@pytest.mark.parametrize("name", TRAINED)
def test_trained_models_rebuild_byte_exact(trained, name, compiled):
    """Unsupervised, supervised (4 losses) and quantized models (pruned, quantized norms and output)."""
    parsed = bytes_roundtrip(schema.fasttext, (trained / name).read_bytes(), format=F, compiled=compiled)
    assert (parsed.quant_input == 1) == name.endswith(".ftz")
    assert wv.sniff(trained / name) == F and wv.validate(trained / name).ok


def test_quantized_parts_are_as_the_peer_wrote_them(trained):
    p = wv.parse_file(trained / "sup-softmax.ftz")
    assert p.dictionary.pruneidx_size == len(p.dictionary.pruneidx) > 0  # cutoff prunes the n-grams
    assert p.input.qnorm == 1 and p.input.npq.dim == 1 and p.input.pq.dsub == 3
    q = wv.parse_file(trained / "many-ova.ftz")
    assert q.qout == 1 and q.output.m == 300 and q.output.qnorm == 1


def test_sniffer_keeps_off_other_formats(tmp_path):
    """Old-release files have no magic: the sniffer checks their args, and takes no other format's file
    (word-vector files written here, and the bundled samples of every format)."""
    emb = wv.Embeddings(["a", "b"], np.ones((2, 5), np.float32))
    for fmt in ("word2vec-binary", "word2vec-text", "glove", "leader", "finalfusion"):
        wv.write(emb, tmp_path / "x", fmt, **({"normalize": False} if fmt == "finalfusion" else {}))
        assert wv.sniff(tmp_path / "x") == fmt
    samples = Path(wv.__file__).parent / "sample_files"
    for path in (p for p in samples.iterdir() if p.is_file()):
        is_fasttext = path.name == "sample-supervised.ftz"  # the one fastText sample (written by the peer)
        assert codec.sniff(path.read_bytes()[:65536]) == is_fasttext, path.name
    assert codec.sniff((DATA / "cp852_fasttext.bin").read_bytes()[:65536])
    assert not codec.sniff(b"\x00" * 100)


# -- hypothesis round trips of every part, both construct modes ---------------------------------------------

i32 = st.integers(-(2**31), 2**31 - 1)
# words as fastText holds them: any bytes but NUL (surrogate escapes for bytes that are not UTF-8)
word_st = st.binary(max_size=12).filter(lambda b: b"\0" not in b).map(
    lambda b: b.decode("utf-8", "surrogateescape"))


@st.composite
def dictionaries(draw, new_format=True):
    words = draw(st.lists(word_st, max_size=8))
    nlabels = draw(st.integers(0, len(words)))
    n = len(words)
    counts = np.array(draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n)), "<i8")
    types = np.array([0] * (n - nlabels) + [1] * nlabels, "i1")
    prune = draw(st.integers(-1, 4)) if new_format else None
    pairs = np.array(draw(st.lists(st.tuples(i32, i32), min_size=max(prune or 0, 0), max_size=max(prune or 0, 0))),
                     "<i4").reshape(-1, 2)
    return cs.Container(size=n, nwords=n - nlabels, nlabels=nlabels, ntokens=draw(st.integers(0, 2**63 - 1)),
                        pruneidx_size=prune, entries=cs.Container(words=words, counts=counts, types=types),
                        pruneidx=pairs if new_format else None)


@st.composite
def quantizers(draw, dim=None):
    nsubq = draw(st.integers(1, 3))
    dsub = draw(st.integers(1, 3))
    last = draw(st.integers(1, dsub))
    d = (nsubq - 1) * dsub + last if dim is None else dim
    if dim is not None:
        nsubq, dsub, last = 1, dim, dim
    return cs.Container(dim=d, nsubq=nsubq, dsub=dsub, lastdsub=last,
                        centroids=np.arange(d * 256, dtype="<f4") * draw(st.floats(-2, 2, width=32)))


@st.composite
def quant_matrices(draw):
    pq = draw(quantizers())
    m = draw(st.integers(0, 5))
    qnorm = draw(st.integers(0, 1))
    rng = np.random.default_rng(m)
    return cs.Container(qnorm=qnorm, m=m, n=pq.dim, codesize=m * pq.nsubq,
                        codes=rng.integers(0, 256, m * pq.nsubq).astype("u1"), pq=pq,
                        norm_codes=rng.integers(0, 256, m).astype("u1") if qnorm else None,
                        npq=draw(quantizers(dim=1)) if qnorm else None)


def dense(m, n):
    return cs.Container(m=m, n=n, data=np.arange(m * n, dtype="<f4").reshape(m, n))


@MODES
@given(d=dictionaries(), new=st.booleans())
def test_dictionary_roundtrip(compiled, d, new):
    if not new:
        d.pruneidx_size = d.pruneidx = None
    s = cs.Struct("new_format" / cs.Computed(new), "dictionary" / schema.dictionary)
    roundtrip(s, cs.Container(new_format=new, dictionary=d), format=F, compiled=compiled)


@MODES
@given(q=quant_matrices(), m=st.integers(0, 4), n=st.integers(0, 4))
def test_matrices_roundtrip(compiled, q, m, n):
    data = roundtrip(schema.quant_matrix, q, format=F, compiled=compiled)
    assert_truncations_fail(schema.quant_matrix, data, format=F, compiled=compiled, step=max(1, len(data) // 40))
    roundtrip(schema.product_quantizer, q.pq, format=F, compiled=compiled)
    roundtrip(schema.dense_matrix, dense(m, n), format=F, compiled=compiled)


@given(q=quant_matrices(), scaled=st.booleans())
def test_quantized_rows_are_addcode_and_c_contiguous(q, scaled):
    """Matrix.rows of a quantized matrix: each part the centroid of its code (ProductQuantizer::addcode,
    spelt out here), times the row's norm; C-contiguous, for the row gathers of composed_batch (rows that
    came out in Fortran order made every later gather strided: most of predict's time on a .ftz)."""
    ref = np.zeros((q.m, q.n), np.float32)
    codes = q.codes.reshape(q.m, q.pq.nsubq)
    for i in range(q.m):
        for j in range(q.pq.nsubq):
            width = q.pq.lastdsub if j == q.pq.nsubq - 1 else q.pq.dsub
            at = j * 256 * q.pq.dsub + int(codes[i, j]) * width
            ref[i, j * q.pq.dsub : j * q.pq.dsub + width] = q.pq.centroids[at : at + width]
        if q.qnorm and scaled:
            ref[i] *= q.npq.centroids[q.norm_codes[i]]
    got = Matrix(q, quantized=True).rows(np.arange(q.m)[::-1], scaled=scaled)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    assert got.tobytes() == ref[::-1].tobytes()


@MODES
@given(d=dictionaries(), new=st.booleans(), qin=st.booleans(), q=quant_matrices(), dim=st.integers(0, 3))
def test_file_roundtrip(compiled, d, new, qin, q, dim):
    if not new:
        d.pruneidx_size = d.pruneidx = None
        qin = False
    a = cs.Container(dim=dim if new else 1 + dim, ws=5, epoch=5, minCount=1, neg=5, wordNgrams=1, loss=2,
                     model=2, bucket=0, minn=0, maxn=0, lrUpdateRate=100, t=0)
    head = schema.MAGIC if new else a.dim
    obj = cs.Container(head=head, new_format=new, magic=schema.MAGIC if new else None, version=12 if new else None,
                       args=a, dictionary=d, quant_input=int(qin) if new else None,
                       input=q if qin else dense(d.nwords, dim), qout=0 if new else None,
                       output=dense(d.size, dim))
    data = roundtrip(schema.fasttext, obj, format=F, compiled=compiled)
    assert_truncations_fail(schema.fasttext, data, format=F, compiled=compiled, step=max(1, len(data) // 40))


# -- bad input --------------------------------------------------------------------------------------------------

def test_every_truncation_of_real_files_is_a_format_error():
    for path in REAL:
        data = path.read_bytes()
        assert_truncations_fail(schema.fasttext, data, format=F, compiled=True, step=max(1, len(data) // 300))
        assert_truncations_fail(schema.fasttext, data, format=F, compiled=False, step=max(1, len(data) // 300))


def _patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    return data[:offset] + struct.pack(fmt, value) + data[offset + struct.calcsize(fmt):]


@MODES
def test_hostile_counts_are_refused_before_allocation(compiled):
    """Counts that claim more than the file holds: FormatError naming the field and offset, nothing allocated."""
    data = (DATA / "toy-model.bin").read_bytes()
    dict_at = 8 + 56
    cases = {
        "dictionary.entries": (_patched(_patched(data, dict_at, "<i", 2**31 - 1), dict_at + 4, "<i", 2**31 - 1),
                               TruncatedError),
        "dictionary.size": (_patched(data, dict_at, "<i", -5), ValueMismatchError),
        "dictionary.nlabels": (_patched(data, dict_at + 8, "<i", 3), ValueMismatchError),
    }
    entries_end = next(part["offset"] for part in wv.inspect(DATA / "toy-model.bin")["parts"]
                       if part["field"] == "quant_input")
    cases["input.data"] = (_patched(data, entries_end + 1, "<q", 2**62), TruncatedError)
    cases["dictionary.pruneidx"] = (_patched(data, dict_at + 20, "<q", 2**40), TruncatedError)
    cases["quant_input"] = (_patched(data, entries_end, "<b", 2), ValueMismatchError)
    for path, (bad, cls) in cases.items():
        with pytest.raises(cls) as info:
            framework.parse(schema.fasttext, bad, format=F, compile=compiled)
        assert info.value.format == F and info.value.path.startswith(path), (path, info.value)
        assert info.value.offset is not None


def test_non_utf8_words_need_unicode_errors():
    path = DATA / "cp852_fasttext.bin"
    with pytest.raises(FormatError) as info:
        wv.read(path)
    assert info.value.path.startswith("dictionary.entries.words[") and info.value.offset > 0
    i = int(info.value.path.split("[")[1].rstrip("]"))
    raw = wv.parse_file(path).dictionary.entries.words[i].encode("utf-8", "surrogateescape")
    data = path.read_bytes()  # the offset is the entry's own: its bytes, then the NUL
    assert data[info.value.offset : info.value.offset + len(raw) + 1] == raw + b"\0"
    m = wv.read(path, unicode_errors="replace")
    assert len(m.words) == 171 and any("\ufffd" in w for w in m.words)
    ignored = wv.read(path, unicode_errors="ignore")
    assert not any("\ufffd" in w for w in ignored.words)
    assert np.array_equal(m.vectors, ignored.vectors)  # the rows come from the file's bytes either way



def test_an_entry_of_the_wrong_type_is_named_with_its_offset(tmp_path):
    """A word entry whose type byte says label: FormatError naming the entry and the offset where it
    starts (found from the words before it: no table of offsets is kept)."""
    data = bytearray((DATA / "toy-model.bin").read_bytes())
    word = wv.parse_file(DATA / "toy-model.bin").dictionary.entries.words[3].encode("utf-8")
    at = data.index(b"\0" + word + b"\0") + 1
    data[at + len(word) + 9] = 5  # its type, after the NUL and the i64 count
    (tmp_path / "bad.bin").write_bytes(bytes(data))
    with pytest.raises(FormatError) as info:
        wv.read(tmp_path / "bad.bin")
    assert info.value.path == "dictionary.entries.types[3]" and info.value.offset == at

# -- writing ---------------------------------------------------------------------------------------------------

def test_bin_is_written_by_the_models_type(tmp_path, trained):
    """.bin is word2vec-binary's and fastText's: a FastText model writes fastText (byte-identical to the
    file it was read from), any other Embeddings word2vec binary, as before."""
    for name in ("skipgram.bin", "sup-softmax.ftz"):
        m = wv.read(trained / name)
        wv.write(m, tmp_path / "out.bin")
        assert (tmp_path / "out.bin").read_bytes() == (trained / name).read_bytes()
        assert wv.convert(trained / name, tmp_path / f"c-{name}.bin") == "fasttext"
        assert (tmp_path / f"c-{name}.bin").read_bytes() == (trained / name).read_bytes()
    wv.write(wv.Embeddings(["a"], np.ones((1, 2), np.float32)), tmp_path / "plain.bin")
    assert wv.sniff(tmp_path / "plain.bin") == "word2vec-binary"
    wv.write(wv.Embeddings(["a"], np.ones((1, 2), np.float32)), tmp_path / "plain.ftz")
    assert wv.sniff(tmp_path / "plain.ftz") == "fasttext"


# -- the model against the peer ------------------------------------------------------------------------------

QUERY_WORDS = ["apple", "zzqx", "héllo", "running", "a", "", "</s>", "日本語", "été", "\udce9t\udce9"]
LINES = ["apple banana day", "night sun über naïve", "日本 cat dog zzz", "", "run running ran w3 w5 poshish",
         "__label__pos moon", "  sky\tsea  rain ", "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11",
         "cat\vdog\fsun\rmoon __label__zz"]  # every separator of readWord but \n and \0; an unseen label


@pytest.mark.usefixtures("kernels")  # with the C kernel and with its pure-Python twin
@pytest.mark.parametrize("name", TRAINED)
def test_lookups_equal_the_peer(trained, name):
    """get_word_vector (in and out of vocabulary), get_subwords ids and get_sentence_vector: bit-identical
    (the same float32 sums in the same order; quantized rows as ProductQuantizer::addcode makes them)."""
    m = wv.read(trained / name)
    assert isinstance(m, FastText) and isinstance(m, wv.Embeddings)
    words = QUERY_WORDS[:-1]  # (the peer's Python binding cannot take a lone surrogate)
    a = ask(trained / name, words=words + m.words, sentences=LINES)
    peer = np.array([f32(x) for x in a["words"]])
    vecs, found = m.embedding_batch(words + m.words)
    composes = int(m.args.maxn) > 0  # (a word out of the dictionary has a vector when it has n-grams)
    assert found.tolist() == [composes or w in m.words for w in words] + [True] * len(m.words)
    assert vecs.tobytes() == peer.tobytes()  # (fastText's zeros where nothing is found)
    assert np.asarray(m.vectors).tobytes() == peer[len(words):].tobytes()  # the .vec export's vectors
    assert [m.subword_indices(w) for w in words + m.words] == a["subwords"]
    assert m.get_word_vector("zzqx").tobytes() == peer[1].tobytes()
    if composes:
        assert m.embedding("zzqx").tobytes() == m["zzqx"].tobytes() == peer[1].tobytes()
    else:
        assert m.embedding("zzqx") is None and "zzqx" not in m
    sentences = np.array([f32(x) for x in a["sentences"]])
    assert m.sentence_vectors(LINES).tobytes() == sentences.tobytes()


# words as fastText's dictionary holds them: any characters, bytes that are not UTF-8 as surrogate escapes
escaped_words = st.lists(st.characters(exclude_categories=["Cs"]) | st.integers(0xDC80, 0xDCFF).map(chr),
                         max_size=6).map("".join)


@given(words=st.lists(escaped_words, max_size=6), brackets=st.booleans())
def test_words_are_encoded_in_one_blob_with_their_byte_lengths(words, brackets):
    """subwords.encode joins the words (between < and >) and encodes once, then finds each word's byte
    length from its characters' UTF-8 widths: the bytes fastText hashes, word by word."""
    from wvformats.families.fasttext import subwords

    bow, eow = ("<", ">") if brackets else ("", "")
    each = [(bow + w + eow).encode("utf-8", "surrogateescape") for w in words]
    blob, lengths = subwords.encode(words, bow, eow)
    assert blob.tobytes() == b"".join(each) and lengths.tolist() == [len(b) for b in each]


def compute_subwords(word: bytes, minn: int, maxn: int) -> list[bytes]:
    """``Dictionary::computeSubwords`` of fastText, line by line."""
    word, out = b"<" + word + b">", []
    for i in range(len(word)):
        if word[i] & 0xC0 == 0x80:
            continue
        ngram, j, n = b"", i, 1
        while j < len(word) and n <= maxn:
            ngram += word[j : j + 1]
            j += 1
            while j < len(word) and word[j] & 0xC0 == 0x80:
                ngram += word[j : j + 1]
                j += 1
            if n >= minn and not (n == 1 and (i == 0 or j == len(word))):
                out.append(ngram)
            n += 1
    return out


@given(words=st.lists(escaped_words, max_size=6), minn=st.integers(0, 3), more=st.integers(-1, 4))
def test_char_ngrams_are_compute_subwords(words, minn, more):
    """subwords.char_ngrams (vectorised over all the words) cuts what computeSubwords cuts, in its order."""
    from wvformats.families.fasttext import subwords

    blob, starts, lengths, owner = subwords.char_ngrams(words, minn, max(minn + more, 0))
    got = [[] for _ in words]
    for s, n, o in zip(starts.tolist(), lengths.tolist(), owner.tolist(), strict=True):
        got[o].append(blob[s : s + n].tobytes())
    assert got == [compute_subwords(w.encode("utf-8", "surrogateescape"), minn, max(minn + more, 0)) for w in words]


@pytest.mark.parametrize("name", [n for n in TRAINED if n.startswith(("sup", "many"))])
@pytest.mark.parametrize("k,threshold", [(1, 0.0), (3, 0.0), (-1, 0.0), (2, 0.2)])
def test_predict_equals_the_peer(trained, name, k, threshold):
    """Labels in the peer's order (ties as its heap leaves them) and its probabilities, one line at a time
    and batched."""
    m = wv.read(trained / name)
    a = ask(trained / name, lines=LINES, k=k, threshold=threshold)
    batch_labels, batch_probs = m.predict(LINES, k=k, threshold=threshold)
    for i, (line, (labels, probs)) in enumerate(zip(LINES, a["predictions"], strict=True)):
        ours, p = m.predict(line, k=k, threshold=threshold)
        assert list(ours) == labels and list(batch_labels[i]) == labels, line
        np.testing.assert_allclose(p, probs, rtol=2e-6, atol=1e-7)
        assert np.array_equal(p, batch_probs[i])


def test_gensim_models_equal_the_peer():
    """gensim's test models: version 12 read by the peer; cp852 words (older release, which the current peer
    refuses) read with unicode_errors."""
    path = DATA / "toy-model.bin"
    m = wv.read(path)
    a = ask(path, words=QUERY_WORDS[:-1] + m.words)
    assert m.embedding_batch(QUERY_WORDS[:-1] + m.words)[0].tobytes() == np.array(
        [f32(x) for x in a["words"]]).tobytes()
    old = wv.read(DATA / "cp852_fasttext.bin", unicode_errors="replace")
    assert old.args.dim == 2 and old.version is None and len(old.words) == 171
    # a cp852 word is found by its bytes (as fastText finds it), whatever unicode_errors shows of it
    raw = old._raw[5]
    assert np.array_equal(old.embedding(raw), old.vectors[5])


def test_most_similar_and_analogy_use_the_composed_vectors(trained):
    m = wv.read(trained / "skipgram.bin")
    unit = m.vectors / np.linalg.norm(m.vectors, axis=1, keepdims=True)
    q = m.embedding("apple") / np.linalg.norm(m.embedding("apple"))
    expected = [m.words[i] for i in np.argsort(-(unit @ q), kind="stable") if m.words[i] != "apple"][:5]
    assert [w for w, _ in m.most_similar("apple", 5)] == expected
    assert m.most_similar("zzqxy", 3)  # out of vocabulary: composed from its n-grams
    assert len(m.analogy("day", "night", "sun", 3)) == 3


def test_mmap_keeps_the_input_matrix_in_the_file(trained):
    m = wv.read(trained / "skipgram.bin", mmap=True)
    data = m.input.part["data"]
    assert not data.flags.owndata and not data.flags.writeable  # a view of the mapped file
    assert m.lazy  # no composed matrix made at open
    n = wv.read(trained / "skipgram.bin", mmap=False)
    assert np.array_equal(m.vectors, n.vectors)


# -- one vector per word (issue 27 item 4; issue 30: single lookups) ---------------------------------------------

@pytest.mark.usefixtures("kernels")  # with the C kernel and with its pure-Python twin
@pytest.mark.parametrize("name", TRAINED)
def test_every_lookup_gives_get_word_vector(trained, name):
    """``m[w]``, ``m.embedding(w)``, ``m.get(w)``, ``get_word_vector(w)`` and ``embedding_batch`` give fastText's
    get_word_vector bit for bit, for the dictionary's words, its labels and unknown words, however the vector
    is made: a word's first lookup in a fresh model (composed alone, in plain Python), a later one (its chunk
    composed and kept), the kept row, the whole table (.vectors). A word has a vector (``w in m``) when it is
    an entry or the model has character n-grams to compose it from; else ``m[w]`` raises KeyError."""
    path = trained / name
    probe = wv.read(path)
    words = probe.words + list(probe.labels) + QUERY_WORDS[:-1]
    peer = {w: f32(x).tobytes() for w, x in zip(words, ask(path, words=words)["words"], strict=True)}
    has = lambda m, w: int(m.args.maxn) > 0 or w in m.words or w in m.labels  # noqa: E731
    for w in words:  # each the first lookup of a fresh model
        assert wv.read(path).get_word_vector(w).tobytes() == peer[w], w
        first = wv.read(path).embedding(w)
        assert (first is not None) == has(probe, w) and (first is None or first.tobytes() == peer[w]), w
    m = wv.read(path)
    for _ in range(2):  # first lookups, then kept rows
        for w in words:
            assert m.get_word_vector(w).tobytes() == peer[w], w
            if has(m, w):
                assert w in m and m[w].tobytes() == m.embedding(w).tobytes() == m.get(w).tobytes() == peer[w], w
            else:
                assert w not in m and m.embedding(w) is None and m.get(w, "none") == "none"
                with pytest.raises(KeyError, match="no character n-grams"):
                    m[w]
    assert b"".join(m.vectors[m.index(w)].tobytes() for w in m.words) == b"".join(peer[w] for w in m.words)
    assert m.embedding_batch(words)[0].tobytes() == b"".join(peer[w] for w in words)


def test_lookups_across_chunks_equal_the_batch_and_the_peer(tmp_path):
    """A vocabulary of 10,000 words (3 chunks of the composed table): words looked up in any order, first
    alone, then by chunk, give the batch path's bits (and the peer's, for a sample); embedding_batch mixes
    kept and fresh rows."""
    n, dim, bucket = 10_000, 3, 500
    words = [f"w{i}{'é' if i % 7 == 0 else ''}" for i in range(n)]
    args = cs.Container(dim=dim, ws=5, epoch=5, minCount=1, neg=5, wordNgrams=1, loss=2, model=2, bucket=bucket,
                        minn=2, maxn=5, lrUpdateRate=100, t=0)
    entries = cs.Container(words=words, counts=np.ones(n, "<i8"), types=np.zeros(n, "i1"))
    d = cs.Container(size=n, nwords=n, nlabels=0, ntokens=n, pruneidx_size=-1, entries=entries,
                     pruneidx=np.zeros((0, 2), "<i4"))
    rows = np.random.default_rng(0).standard_normal((n + bucket, dim), np.float32)
    obj = cs.Container(head=schema.MAGIC, new_format=True, magic=schema.MAGIC, version=12, args=args, dictionary=d,
                       quant_input=0, input=cs.Container(m=n + bucket, n=dim, data=rows), qout=0,
                       output=cs.Container(m=n, n=dim, data=np.zeros((n, dim), "<f4")))
    path = tmp_path / "m.bin"
    with open(path, "wb") as f:
        codec.build(obj, f)
    want = wv.read(path).word_vectors(words)  # the batch path
    m = wv.read(path)
    order = np.random.default_rng(1).permutation(n)
    for i in order[:3000].tolist():
        assert m[words[i]].tobytes() == want[i].tobytes(), i
    batch, found = m.embedding_batch(words)  # some chunks kept, some not
    assert found.all() and batch.tobytes() == want.tobytes()
    assert np.asarray(m.vectors).tobytes() == want.tobytes()
    sample = [words[i] for i in (0, 4095, 4096, 8191, 8192, 9999)]
    peer = np.array([f32(x) for x in ask(path, words=sample)["words"]])
    assert np.array([m[w] for w in sample]).tobytes() == peer.tobytes()


def test_composed_vectors_are_read_only_and_say_why(tmp_path):
    """gensim's lee_fasttext_new.bin: an edit of the composed vectors raises ValueError saying why (they are
    means of input rows, and the file holds no composed vectors to write them to), as does replacing them;
    the matrices they come from are read-only. So every lookup and a write keep agreeing: the file's bytes
    come back. An edit goes through Embeddings, as the message says."""
    path = lee()
    ft = wv.read(path)
    i, before = ft.index("the"), ft["the"].copy()
    why = "composed from its input matrix"
    with pytest.raises(ValueError, match=why):
        ft.vectors[0] = 0
    with pytest.raises(ValueError, match=why):
        ft.vectors[i][:] = 0
    with pytest.raises(ValueError, match=why):
        ft.vectors += 1
    with pytest.raises(AttributeError, match=why):
        ft.vectors = np.zeros(ft.vectors.shape, np.float32)
    with pytest.raises(ValueError, match="read-only"):
        ft["the"][0] = 1
    with pytest.raises(ValueError, match="read-only"):
        ft.input.part["data"][i] = 0
    assert type(ft.vectors * 2) is np.ndarray  # arithmetic gives plain arrays
    for v in (ft["the"], ft.embedding("the"), ft.get_word_vector("the"), ft.vectors[i], ft.embedding_batch(["the"])[0][0]):
        assert v.tobytes() == before.tobytes()
    assert ft.most_similar("the", 3) == wv.read(path).most_similar("the", 3)
    wv.write(ft, tmp_path / "x.bin")
    assert (tmp_path / "x.bin").read_bytes() == path.read_bytes()
    edited = wv.Embeddings(ft.words, np.array(ft.vectors))
    edited.vectors[i] = 0
    wv.write(edited, tmp_path / "e.bin", "fasttext")
    assert not wv.read(tmp_path / "e.bin")["the"].any()


def test_subword_lookups_behave_as_gensims(tmp_path):
    """gensim's FastTextKeyedVectors as the oracle, on its lee_fasttext_new.bin: ``w in m`` is True and
    ``m[w]`` the n-grams' mean for any word (gensim's values within 1e-6: it divides where fastText multiplies
    by 1 / n; ours are fastText's bits), most_similar ranks as gensim's. A model without n-grams: ``w in m``
    False, ``m[w]`` KeyError, as gensim's; embedding None; get_word_vector fastText's zeros."""
    from gensim.models.fasttext import load_facebook_model

    path = lee()
    kv, ft = load_facebook_model(str(path)).wv, wv.read(path)
    queries = ["nightt", "night", "zzqx", "héllo"]
    peer = ask(path, words=queries)["words"]
    for w, bits in zip(queries, peer, strict=True):
        assert (w in ft) is (w in kv) is True
        np.testing.assert_allclose(ft[w], kv[w], rtol=0, atol=1e-6)
        assert ft[w].tobytes() == ft.embedding(w).tobytes() == ft.get_word_vector(w).tobytes() == f32(bits).tobytes()
    assert [w for w, _ in ft.most_similar("nightt", 8)] == [w for w, _ in kv.most_similar("nightt", topn=8)]
    wv.write(wv.Embeddings(["a", "b"], np.eye(2, dtype=np.float32)), tmp_path / "plain.bin", "fasttext")
    kv, ft = load_facebook_model(str(tmp_path / "plain.bin")).wv, wv.read(tmp_path / "plain.bin")
    assert ("zzqx" in ft) is ("zzqx" in kv) is False and ("a" in ft) is ("a" in kv) is True
    for m in (kv, ft):
        with pytest.raises(KeyError):
            m["zzqx"]
    assert ft.embedding("zzqx") is None and not ft.get_word_vector("zzqx").any()
    with pytest.raises(KeyError):
        ft.most_similar("zzqx")


def test_labels_are_looked_up_as_words(lid, trained):
    """fastText looks a label up as a word: its own id (past the words: an input row of the n-gram region),
    then its character n-grams. lid.176.ftz (pruned, quantized) and a dense supervised model, against the
    peer's get_word_vector and get_subwords."""
    for path in (lid, trained / "sup-softmax.bin"):
        m = wv.read(path)
        labels = list(m.labels)
        a = ask(path, words=labels)
        peer = np.array([f32(x) for x in a["words"]])
        assert [m.subword_indices(w) for w in labels] == a["subwords"]
        assert a["subwords"][0][0] == m.nwords  # the first label's own id
        assert m.embedding_batch(labels)[0].tobytes() == peer.tobytes()
        for label, want in zip(labels, peer, strict=True):
            assert label in m
            assert m.embedding(label).tobytes() == m[label].tobytes() == m.get_word_vector(label).tobytes() == \
                want.tobytes(), label


def test_version_11_supervised_models_have_no_character_ngrams(trained, tmp_path):
    """fastText's loadModel sets maxn to 0 for a supervised model of version 11 ("old supervised models do not
    use char ngrams"): its lookups and predictions then ignore the n-grams the args name."""
    p = wv.parse_file(trained / "sup-softmax.bin")
    assert int(p.args.maxn) > 0
    p.version = 11
    with open(tmp_path / "v11.bin", "wb") as f:
        codec.build(p, f)
    m = wv.read(tmp_path / "v11.bin")
    words = QUERY_WORDS[:-1] + m.words[:5]
    a = ask(tmp_path / "v11.bin", words=words, lines=LINES, k=2)
    assert m.embedding_batch(words)[0].tobytes() == np.array([f32(x) for x in a["words"]]).tobytes()
    assert [list(m.predict(line, k=2)[0]) for line in LINES] == [labels for labels, _ in a["predictions"]]
    assert "zzqx" not in m


def test_a_bucket_pruned_twice_maps_as_fasttexts_last(trained, tmp_path):
    """A prune index that lists a bucket twice: fastText's ``pruneidx_[first] = second`` keeps the last."""
    p = wv.parse_file(trained / "sup-softmax.ftz")
    m = wv.read(trained / "sup-softmax.ftz")
    idx = np.array(p.dictionary.pruneidx)
    used = [r - m.nwords for r in m.subword_indices("appleish")]
    j = next(j for j in range(len(idx) - 1) if idx[j, 1] in used)  # an entry a lookup of the word goes through
    idx[-1] = (idx[j, 0], idx[0, 1] if idx[0, 1] != idx[j, 1] else idx[1, 1])  # listed again, to another row
    p.dictionary.pruneidx = idx
    with open(tmp_path / "dup.ftz", "wb") as f:
        codec.build(p, f)
    words = ["appleish", "apple", "zzqx"]
    peer = np.array([f32(x) for x in ask(tmp_path / "dup.ftz", words=words)["words"]])
    dup = wv.read(tmp_path / "dup.ftz")
    assert np.array([dup.get_word_vector(w) for w in words]).tobytes() == peer.tobytes()
    assert dup.embedding_batch(words)[0].tobytes() == peer.tobytes()


def test_a_prune_index_key_no_hash_reaches_is_ignored(trained, tmp_path):
    """A prune index entry whose bucket is past the bucket count (found by the fuzz test: predict raised
    IndexError): fastText's map keeps it and no n-gram's hash modulo the buckets ever reaches it."""
    p = wv.parse_file(trained / "sup-softmax.ftz")
    idx = np.array(p.dictionary.pruneidx)
    idx[0, 0] = int(p.args.bucket) + 65000
    p.dictionary.pruneidx = idx
    with open(tmp_path / "far.ftz", "wb") as f:
        codec.build(p, f)
    m = wv.read(tmp_path / "far.ftz")
    a = ask(tmp_path / "far.ftz", words=["apple", "zzqx"], lines=LINES, k=2)
    assert [list(m.predict(line, k=2)[0]) for line in LINES] == [labels for labels, _ in a["predictions"]]
    assert m.embedding_batch(["apple", "zzqx"])[0].tobytes() == np.array([f32(x) for x in a["words"]]).tobytes()


def test_hs_label_counts_fasttext_cannot_build_a_tree_from_are_named(trained, tmp_path):
    """The hs loss builds a Huffman tree from the label counts, which fastText writes in decreasing order below
    its sentinel of 1e15; a count above it (found by the fuzz test: predict raised IndexError) makes the
    build take a node it has not made and read past its tree. check() names the counts; predict says so."""
    p = wv.parse_file(trained / "sup-hs.bin")
    counts = np.array(p.dictionary.entries.counts)
    counts[p.dictionary.nwords + 3] = 41939771529887775
    p.dictionary.entries.counts = counts
    with open(tmp_path / "hs.bin", "wb") as f:
        codec.build(p, f)
    report = wv.validate(tmp_path / "hs.bin")
    assert any(x.startswith("dictionary.entries.counts: the label counts make fastText's hs tree take node")
               for x in report.problems), report.problems
    with pytest.raises(FormatError, match="hs tree") as info:
        wv.read(tmp_path / "hs.bin").predict("apple")
    assert info.value.path == "dictionary.entries.counts"
    assert wv.validate(trained / "sup-hs.bin").ok  # the peer's own counts build


# -- args outside fastText's (issue 27 item 8) ---------------------------------------------------------------------

def _peer_error(model: Path, **queries) -> str:
    """The peer's error (its stderr's last line) on ``queries`` about ``model``, which it must refuse."""
    with tempfile.TemporaryDirectory() as tmp:
        q = Path(tmp) / "q.json"
        q.write_text(json.dumps(queries))
        out = subprocess.run([sys.executable, str(PEER), "ask", str(model), str(q), str(Path(tmp) / "a.json")],
                             capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    return out.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("field,value,named", [
    ("model", -2147483645, "args.model is -2147483645; fastText defines 1 cbow, 2 skipgram, 3 supervised"),
    ("model", 0, "args.model is 0;"),
    ("loss", 5, "args.loss is 5; fastText defines 1 hs, 2 ns, 3 softmax, 4 ova, and refuses"),
    ("loss", -1, "args.loss is -1;"),
    ("dim", -8, "args.dim is -8: fastText makes its vectors of args.dim entries"),
    ("bucket", -1, "args.bucket is -1"),
    ("bucket", 0, "args.bucket is 0 with args.maxn 3"),
    ("minn", -1, "args.minn is -1"),
    ("maxn", -1, "args.maxn is -1"),
])
def test_args_outside_fasttexts_are_named_by_check(trained, tmp_path, field, value, named):
    p = wv.parse_file(trained / "sup-softmax.bin")
    p.args[field] = value
    with open(tmp_path / "bad.bin", "wb") as f:
        codec.build(p, f)
    report = wv.validate(tmp_path / "bad.bin")
    assert not report.ok and any(named in problem for problem in report.problems), report.problems
    if field == "bucket" and value == 0:
        assert any("args.bucket is 0 with args.wordNgrams 2" in problem for problem in report.problems)


def test_predict_says_what_is_wrong_with_the_args(trained, tmp_path):
    """A supervised model (5 labels) whose args.model or args.loss is outside fastText's: predict raises a
    FormatError naming the field, its value and its offset, as the peer refuses (predict: "Model needs to be
    supervised"; load: "Unknown loss"); a known model that is not supervised is a ValueError (a use, not a file,
    fastText cannot predict with)."""
    p = wv.parse_file(trained / "sup-softmax.bin")
    p.args.model = -2147483645
    with open(tmp_path / "model.bin", "wb") as f:
        codec.build(p, f)
    assert "Model needs to be supervised" in _peer_error(tmp_path / "model.bin", lines=["apple"])
    m = wv.read(tmp_path / "model.bin")
    assert len(m.labels) == 5
    with pytest.raises(FormatError, match=r"args\.model is -2147483645, which fastText does not define") as info:
        m.predict("apple")
    assert "no labels" not in str(info.value)
    assert (info.value.path, info.value.offset) == ("args.model", 36)
    p.args.model, p.args.loss = 3, 9
    with open(tmp_path / "loss.bin", "wb") as f:
        codec.build(p, f)
    assert "Unknown loss" in _peer_error(tmp_path / "loss.bin", words=["apple"])
    with pytest.raises(FormatError, match=r"args\.loss is 9, which fastText does not define") as info:
        wv.read(tmp_path / "loss.bin").predict("apple")
    assert (info.value.path, info.value.offset) == ("args.loss", 32)
    p.args.loss, p.args.model = 3, 2
    with open(tmp_path / "sg.bin", "wb") as f:
        codec.build(p, f)
    with pytest.raises(ValueError, match="predict needs a supervised model: args.model is skipgram"):
        wv.read(tmp_path / "sg.bin").predict("apple")


# -- conversion ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["skipgram.bin", "cbow.bin", "sup-softmax.ftz", "sup-ngrams.ftz"])
def test_to_finalfusion_lookups_equal_the_fasttext_model(trained, tmp_path, name):
    """finalfusion with fastText's subword vocabulary and the bucket rows (quantized input with character
    n-grams reconstructed, with a warning saying why): in-vocabulary words give fastText's vectors exactly
    (normalize=False: the rows as they are), unknown words the unit vector of fastText's (the finalfusion
    convention), read by wvformats and by finalfusion-python. A pruned model (sup-softmax.ftz) has all its
    buckets written, the pruned ones as zero rows, with a warning line of the size."""
    ff = pytest.importorskip("finalfusion")
    m = wv.read(trained / name)
    out = tmp_path / "m.fifu"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        wv.convert(trained / name, out, normalize=False)
    said = [str(w.message) for w in seen]
    assert any("written dense: its words' vectors are means" in x for x in said) == m.input.quantized
    assert any("pruned ones as zero rows" in x for x in said) == m.buckets.pruned
    assert len(said) == m.input.quantized + m.buckets.pruned
    peer = ff.load_finalfusion(str(out))
    oov = ["zzqx", "héllo", "runnin"]
    back = wv.read(out)
    assert back.subwords.kind == "fasttext_subword_vocab"
    assert back.norms is None  # normalize=False: no norms
    assert np.asarray(back.vectors).tobytes() == np.asarray(m.vectors).tobytes()
    assert np.array([peer.embedding(w) for w in m.words]).tobytes() == np.asarray(m.vectors).tobytes()
    want = m.embedding_batch(oov)[0]
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    np.testing.assert_allclose(back.embedding_batch(oov)[0], want, rtol=0, atol=3e-7)
    np.testing.assert_allclose(np.array([peer.embedding(w) for w in oov]), want, rtol=0, atol=3e-7)


@MODES
@pytest.mark.parametrize("name,subquantizers", [("sup-plain.ftz", 4), ("many-ova.ftz", 4), ("sup-dsub3.ftz", 8)])
def test_quantized_input_converts_to_finalfusion_quantized_storage(trained, tmp_path, name, subquantizers,
                                                                   compiled):
    """A quantized model without character n-grams (each word's vector is its own input row): its codes,
    centroids and quantized norms become finalfusion's quantized array, no row reconstructed, and
    finalfusion-python reading the file gives fastText's get_word_vector to the bit (after fastText's
    ``0 + norm * centroid``, which turns a -0.0 into 0.0). Sub-quantizers of dsub 2 map one to one; dsub 3
    with a last one of 2 columns (dim 8) as 8 one-column finalfusion sub-quantizers."""
    ff = pytest.importorskip("finalfusion")
    m = wv.read(trained / name)
    out = tmp_path / "m.fifu"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # mapped (and the rows as they are): nothing to warn about
        wv.convert(trained / name, out, normalize=False)
    parsed = bytes_roundtrip(wv.registry.get("finalfusion").schema, out.read_bytes(), format="finalfusion",
                             compiled=compiled)
    assert [c.name for c in parsed.chunks] == ["metadata", "simple_vocab", "quantized_array"]
    q = parsed.chunks[2].body
    assert (q.quantized_len, q.n_centroids, q.n_embeddings) == (subquantizers, 256, len(m.words))
    assert q.use_norms == m.parsed.input.qnorm and not q.use_projection
    assert wv.validate(out).ok
    a = ask(trained / name, words=m.words + ["zzqx"])
    fasttext_vectors = np.array([f32(x) for x in a["words"]])
    peer = ff.load_finalfusion(str(out))
    assert (np.array([peer.embedding(w) for w in m.words]) + np.float32(0)).tobytes() == \
        fasttext_vectors[:-1].tobytes()
    back = wv.read(out)
    assert back.storage.quantized_array() is not None
    assert (np.asarray(back.vectors) + np.float32(0)).tobytes() == fasttext_vectors[:-1].tobytes()
    # no n-grams: fastText gives an unknown word zeros, finalfusion no vector
    assert not fasttext_vectors[-1].any() and peer.embedding("zzqx") is None and back.embedding("zzqx") is None


def test_convert_command_says_when_quantized_input_is_written_dense(trained, tmp_path, capsys):
    """On the command line: a quantized model with character n-grams converts (exit 0) with one warning
    line saying the storage is written dense and why; one that maps converts without one, to a quantized
    array (as inspect shows)."""
    from wvformats import cli

    assert cli.main(["convert", str(trained / "sup-ngrams.ftz"), str(tmp_path / "n.fifu"), "--no-normalize"]) == 0
    err = capsys.readouterr().err
    assert err.count("wvformats: warning: fastText quantized input to finalfusion: written dense") == 1
    assert err.count("warning") == 1
    assert cli.main(["convert", str(trained / "sup-dsub3.ftz"), str(tmp_path / "q.fifu"), "--no-normalize"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert cli.main(["inspect", str(tmp_path / "q.fifu"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["quantized"] == {"subquantizers": 8, "centroids": 256,
                                                                "projection": False, "norms": True}


def test_quantized_finalfusion_storage_differs_from_fasttext_only_in_the_sign_of_zero(trained, tmp_path):
    """The one place the mapped storage and fastText part: a centroid value of -0.0. fastText adds
    ``norm * centroid`` to a zero vector (+0.0 + -0.0 is +0.0); finalfusion returns ``centroid * norm``
    (-0.0). Equal as numbers, every other bit the same."""
    ff = pytest.importorskip("finalfusion")
    p = wv.parse_file(trained / "sup-plain.ftz")
    code = int(p.input.codes[0])  # word 0's code in sub-quantizer 0 (dsub 2): its centroid's column 0
    p.input.pq.centroids = p.input.pq.centroids.copy()
    p.input.pq.centroids[code * 2] = -0.0
    with open(tmp_path / "z.ftz", "wb") as f:
        codec.build(p, f)
    m = wv.read(tmp_path / "z.ftz")
    wv.write(m, tmp_path / "z.fifu", normalize=False)
    word = m.words[0]
    fasttext_vector = f32(ask(tmp_path / "z.ftz", words=[word])["words"][0])
    finalfusion_vector = ff.load_finalfusion(str(tmp_path / "z.fifu")).embedding(word)
    assert fasttext_vector.view(np.uint32)[0] == 0 and finalfusion_vector.view(np.uint32)[0] == 0x80000000
    assert np.array_equal(finalfusion_vector, fasttext_vector)
    assert finalfusion_vector[1:].tobytes() == fasttext_vector[1:].tobytes()
    # our fastText lookups sum from +0.0 as fastText does: the same bits, the zero's sign included
    assert m.embedding(word).tobytes() == fasttext_vector.tobytes()
    assert m.embedding_batch([word, "unseen"])[0][0].tobytes() == fasttext_vector.tobytes()


@pytest.mark.parametrize("fmt", ["word2vec-binary", "word2vec-text", "glove", "leader"])
def test_to_word_vector_formats_writes_the_composed_vectors(trained, tmp_path, fmt):
    m = wv.read(trained / "cbow.bin")
    wv.convert(trained / "cbow.bin", tmp_path / "out", fmt)
    back = wv.read(tmp_path / "out", fmt)
    assert back.words == m.words
    np.testing.assert_allclose(back.vectors, m.vectors, rtol=1e-5, atol=1e-6)


def test_embeddings_write_as_a_fasttext_model_the_peer_reads(tmp_path):
    """Any Embeddings to .ftz/.bin (format named): a model without n-grams whose get_word_vector gives
    each word its row back."""
    emb = wv.Embeddings(["a", "bé", "日本"], np.arange(6, dtype=np.float32).reshape(3, 2))
    wv.write(emb, tmp_path / "e.bin", "fasttext")
    assert wv.validate(tmp_path / "e.bin").ok
    a = ask(tmp_path / "e.bin", words=emb.words)
    assert np.array([f32(x) for x in a["words"]]).tobytes() == emb.vectors.tobytes()


def test_matrices_too_small_for_the_dictionary_are_refused(tmp_path):
    """A file that parses but whose input matrix lacks the bucket rows its args address: a FormatError at
    open (before this, a lookup indexed past the matrix: IndexError)."""
    p = wv.parse_file(DATA / "toy-model.bin")
    short = p.dictionary.nwords + 10
    p.input = cs.Container(m=short, n=p.input.n, data=p.input.data[:short])
    with open(tmp_path / "short.bin", "wb") as f:
        codec.build(p, f)
    assert wv.validate(tmp_path / "short.bin").ok  # the layout is fine; what it says is not
    with pytest.raises(FormatError) as info:
        wv.read(tmp_path / "short.bin")
    assert info.value.path == "input.m" and "address" in str(info.value)


def test_gensim_agrees_but_for_eos(trained):
    """gensim's load_facebook_model, the second peer: the same vectors (within 1e-6) for every word and
    unknown word, but for ``</s>``, to which gensim adds n-grams and fastText does not (we follow fastText)."""
    fasttext_models = pytest.importorskip("gensim.models.fasttext")
    for path in [trained / "skipgram.bin", DATA / "cp852_fasttext.bin", DATA / "toy-model.bin"]:
        g = fasttext_models.load_facebook_model(str(path))
        m = wv.read(path, unicode_errors="replace")
        words = [w for w in m.words if "\ufffd" not in w and w != "</s>"] + QUERY_WORDS[:4]
        ours = m.embedding_batch(words)[0]
        np.testing.assert_allclose(ours, np.array([g.wv[w] for w in words]), rtol=0, atol=1e-6)
        if "</s>" in m.words:
            assert np.abs(g.wv["</s>"] - m["</s>"]).max() > 1e-3


@MODES
def test_entry_table_finds_words_whatever_their_type_byte(compiled):
    """The record walk's fast path takes zeros followed by a type of 0 or 1 for word ends, and checks it: an
    entry of another type (not fastText's, but bytes the schema keeps) is still found, by the full path."""
    words = ["ab", "", "c\udcff", "dé", "e" * 70000]
    types = np.array([0, 7, 1, -1, 0], "i1")
    counts = np.array([0, 2**40, -1, 256, 3], "<i8")
    d = cs.Container(size=5, nwords=5, nlabels=0, ntokens=0, pruneidx_size=-1,
                     entries=cs.Container(words=words, counts=counts, types=types), pruneidx=np.zeros((0, 2), "<i4"))
    s = cs.Struct("new_format" / cs.Computed(True), "dictionary" / schema.dictionary)
    roundtrip(s, cs.Container(new_format=True, dictionary=d), format=F, compiled=compiled)


@given(st.lists(st.sampled_from(["a", "b", "", "é", "w1", "w10", "\udcff", "ab" * 40]), max_size=30),
       st.sampled_from(["a", "", "é", "zz", "w1", 5, None, b"a"]), st.sampled_from(["first", "last"]))
def test_word_index_finds_the_row_lookups_use_as_a_dict_does(words, probe, occurrence):
    """The compact index a lookup of one word uses (2 slots of int32 a word, not a dict and its ints) gives
    what ``vocab`` gives: a repeated word's first row (its last with occurrence "last", as fastText's
    ``Dictionary::load`` finds it), None for anything else."""
    from wvformats.embeddings import WordIndex, word_rows

    index = WordIndex(words, occurrence)
    if occurrence == "first":
        expected = dict(zip(reversed(words), range(len(words) - 1, -1, -1), strict=True))
    else:
        expected = {w: i for i, w in enumerate(words)}  # (a later row overwrites)
    assert word_rows(words, occurrence) == expected
    assert [index.get(w) for w in words] == [expected[w] for w in words]
    assert index.get(probe) == expected.get(probe)


def test_one_word_lookups_make_no_vocab_dict():
    """embedding, [], get, in and get_word_vector of one word (known, unknown) leave ``vocab`` and the entries'
    index unmade: on the 200k-word model of the memory test below a dict and its ints are 16 MB, the compact
    index 2 MB."""
    m = wv.read(lee(), mmap=True)
    known, unknown = m.words[3], "zzqxv"
    for call in (m.embedding, m.__getitem__, m.get, m.__contains__, m.get_word_vector):
        call(known), call(unknown)
    assert m._index is None and m._raw_index is None
    assert np.array_equal(m[known], m.vectors[3]) and np.array_equal(m.get_word_vector(known), m.vectors[3])
    assert np.array_equal(m[unknown], m.word_vectors([unknown])[0])
    assert m.vocab[known] == 3 and np.array_equal(m[known], m.vectors[3])  # vocab made on demand, then used


# -- memory of the mmap open -----------------------------------------------------------------------------------

_OPEN_MEMORY = r"""
import re, sys
import wvformats as wv
wv.formats()
# the code a lookup runs, imported before the measure: its modules are not the vocabulary's memory
import wvformats.families.fasttext.composed, wvformats.families.fasttext.predict, wvformats.fasttext

def hwm():  # the process's peak resident memory (anonymous and file-backed), MB
    return int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024

before = hwm()
m = wv.read(sys.argv[1], mmap=True)
m.embedding("w12")
grown = hwm() - before
words = m.words
own = (sum(map(sys.getsizeof, words)) + sys.getsizeof(words) + sys.getsizeof(m.vocab)
       + sum(map(sys.getsizeof, range(257, len(words)))))  # the str, their list, the index and its ints
print(grown, own / 2**20)
"""


def unsupervised_model(path, n=500, dim=8, bucket=2_000_000, seed=0):
    """An unsupervised model of ``n`` words (every 17th one not ASCII), n-grams 3-6 in ``bucket`` buckets, random
    rows, written to ``path`` as the writer writes it (the defaults: a 64 MB matrix over 31 regions of 2 MB)."""
    words = [f"w{i}{'é' if i % 17 == 0 else ''}" for i in range(n - 1)] + ["</s>"]
    args = cs.Container(dim=dim, ws=5, epoch=5, minCount=1, neg=5, wordNgrams=1, loss=2, model=2,
                        bucket=bucket, minn=3, maxn=6, lrUpdateRate=100, t=0)
    entries = cs.Container(words=words, counts=np.arange(n, 0, -1, dtype="<i8"), types=np.zeros(n, "i1"))
    d = cs.Container(size=n, nwords=n, nlabels=0, ntokens=10 * n, pruneidx_size=-1, entries=entries,
                     pruneidx=np.zeros((0, 2), "<i4"))
    rows = np.random.default_rng(seed).standard_normal((n + bucket, dim), np.float32)
    obj = cs.Container(head=schema.MAGIC, new_format=True, magic=schema.MAGIC, version=12, args=args,
                       dictionary=d, quant_input=0, input=cs.Container(m=n + bucket, n=dim, data=rows), qout=0,
                       output=cs.Container(m=n, n=dim, data=np.zeros((n, dim), "<f4")))
    with open(path, "wb") as f:
        codec.build(obj, f)
    return path


def test_mmap_open_memory_is_the_vocabulary_not_the_matrix(tmp_path):
    """A fresh process opening a model of 200k words (the benchmark's vocabulary, a small matrix) with
    mmap=True and looking a word up grows its peak memory (VmHWM) by at most 30 MB (issue 39 item 6's target for
    the 200k x 100 model with 2M buckets) and by at most 1.5x what the vocabulary must take as Python objects (its
    str, their list, the word -> index dict and its ints: 25.1 MB), issue 30's. Measured: 23.0-23.2 MB (main
    before the lookup read its rows with pread: 23.3-23.4 MB here, 34.1-36.0 MB on the 200k x 100 model whose
    pages were cached in 2 MB folios, which the kernel maps whole at a fault: test_file_rows.py); 34.4 MB before
    the word index, 49.5 MB before the dictionary parse's temporaries were cut and its word lists shared."""
    path = unsupervised_model(tmp_path / "big.bin", n=200_000, dim=10, bucket=20_000)
    out = subprocess.run([sys.executable, "-c", _OPEN_MEMORY, str(path)], capture_output=True, text=True,
                         check=True, timeout=120)
    grown, own = map(float, out.stdout.split())
    assert grown <= min(30, 1.5 * own), f"the open grew the peak by {grown:.1f} MB; the vocabulary is {own:.1f} MB"

