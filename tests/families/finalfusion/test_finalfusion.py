"""finalfusion: chunk schemas, exact padding, finalfusion-python 0.7.1 as the oracle, bad input."""

import json
import re

import construct as cs
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from roundtrip import MODES, assert_truncations_fail, equal, roundtrip
from wvformats.schemas import finalfusion as schema

import wvformats as wv
from wvformats import cli, framework
from wvformats.errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from wvformats.families.finalfusion import codec, lookups

ff = pytest.importorskip("finalfusion")  # the 'peers' extra, installed by CI

words_st = st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), max_size=6, unique=True)


@MODES
@given(words=words_st, prefix=st.integers(0, 3), dim=st.integers(0, 4))
def test_file_roundtrip_hits_every_padding(compiled, words, prefix, dim):
    """Vocabularies of every byte length put the NdArray chunk at every offset mod 4: pad 1..4, never 0."""
    assume("x" * prefix not in words)  # a vocabulary holds each word once
    words = words + ["x" * prefix]  # shifts the array chunk by 0..3 bytes
    vectors = np.arange(len(words) * dim, dtype="<f4").reshape(len(words), dim)
    obj = codec.from_model(wv.Embeddings(words, vectors), normalize=False)
    data = roundtrip(schema.finalfusion, obj, format="finalfusion", compiled=compiled)
    back = framework.parse(schema.finalfusion, data, format="finalfusion")
    array = back.chunks[1].body
    assert 1 <= array.padding <= 4
    start = len(data) - 4 * len(words) * dim
    assert start % 4 == 0 and np.array_equal(np.frombuffer(data[start:], "<f4").reshape(len(words), dim), vectors)


def test_padding_follows_finalfusion_python_at_each_offset(tmp_path):
    """finalfusion-python writes the NdArray chunk after vocabularies of each length: same bytes as ours."""
    for extra in range(4):
        words = ["a" * (extra + 1), "bc"]
        vectors = np.arange(6, dtype="<f4").reshape(2, 3)
        theirs = tmp_path / f"p{extra}.fifu"
        ff.Embeddings(ff.storage.NdArray(vectors), ff.vocab.SimpleVocab(words)).write(str(theirs))
        ours = tmp_path / f"o{extra}.fifu"
        wv.write(wv.Embeddings(words, vectors), ours, normalize=False)
        assert ours.read_bytes() == theirs.read_bytes()
        assert wv.validate(theirs).ok


def _peer_files(tmp_path):
    rng = np.random.default_rng(5)
    words = ["Daniël", "überspringen", "hallo", "日本", "a"]
    m = rng.normal(size=(len(words), 4)).astype(np.float32)
    out = {}
    simple = ff.Embeddings(ff.storage.NdArray(m), ff.vocab.SimpleVocab(words),
                           norms=ff.norms.Norms(np.linalg.norm(m, axis=1).astype(np.float32)),
                           metadata=ff.metadata.Metadata({"model": "test", "dims": 4}))
    out["simple"] = simple
    bucket_vocab = ff.vocab.FinalfusionBucketVocab(words, ff.subword.FinalfusionHashIndexer(bucket_exp=3))
    out["bucket"] = ff.Embeddings(ff.storage.NdArray(rng.normal(size=(len(words) + 8, 4)).astype(np.float32)),
                                  bucket_vocab)
    ft_vocab = ff.vocab.FastTextVocab(words, ff.subword.FastTextIndexer(n_buckets=7))
    out["fasttext"] = ff.Embeddings(ff.storage.NdArray(rng.normal(size=(len(words) + 7, 4)).astype(np.float32)),
                                    ft_vocab)
    paths = {}
    for name, e in out.items():
        p = tmp_path / f"{name}.fifu"
        e.write(str(p))
        paths[name] = p
    return out, paths


def test_files_written_by_finalfusion_python(tmp_path):
    embs, paths = _peer_files(tmp_path)
    for name, p in paths.items():
        assert wv.sniff(p) == "finalfusion"
        report = wv.validate(p)
        assert report.ok, (name, report)
        ours = wv.read(p)
        theirs = embs[name]
        assert ours.words == list(theirs.vocab.words)
        assert np.array_equal(ours.vectors, theirs.storage[: len(ours.words)])
    simple = wv.read(paths["simple"])
    assert simple.metadata == {"model": "test", "dims": 4}
    assert np.array_equal(simple.norms, embs["simple"].norms)
    bucket = wv.read(paths["bucket"])
    assert bucket.subwords.settings["bucket_exp"] == 3 and bucket.subwords.settings["min_n"] == 3
    assert wv.read(paths["fasttext"]).subwords.settings["buckets"] == 7


def test_our_files_load_in_finalfusion_python(tmp_path):
    rng = np.random.default_rng(1)
    words = ["the", "naïve", "東京"]
    m = rng.normal(size=(3, 5)).astype(np.float32)
    p = tmp_path / "ours.fifu"
    with pytest.warns(wv.ValuesChangedWarning):
        wv.write(wv.Embeddings(words, m, metadata={"source": "wvformats", "n": 3}), p, normalize=True)
    e = ff.load_finalfusion(str(p))
    assert list(e.vocab.words) == words and e.metadata == {"source": "wvformats", "n": 3}
    norms = np.linalg.norm(m, axis=1)
    assert np.allclose(e.norms, norms) and np.allclose(e.storage[:3] * norms[:, None], m, atol=1e-6)
    for i, w in enumerate(words):
        assert np.allclose(e.embedding(w), m[i] / norms[i], atol=1e-6)


def test_convert_word2vec_to_finalfusion_normalises_and_keeps_norms_when_asked(tmp_path):
    src = tmp_path / "v.bin"
    m = np.array([[3, 4], [0, 0]], np.float32)
    wv.write(wv.Embeddings(["a", "b"], m), src)
    dst = tmp_path / "v.fifu"
    with pytest.warns(wv.ValuesChangedWarning, match="up to 3.2"):
        wv.convert(src, dst, normalize=True)
    e = wv.read(dst)
    assert np.allclose(e.vectors, [[0.6, 0.8], [0, 0]]) and np.allclose(e.norms, [5, 0])
    assert ff.load_finalfusion(str(dst)).vocab.words == ["a", "b"]


def test_unknown_chunks_are_kept_byte_exact(tmp_path):
    p = tmp_path / "x.fifu"
    wv.write(wv.Embeddings(["a"], np.ones((1, 2))), p, normalize=False)
    data = p.read_bytes()
    unknown = (42).to_bytes(4, "little") + (3).to_bytes(8, "little") + b"xyz"
    q = tmp_path / "y.fifu"
    q.write_bytes(data + unknown)
    assert wv.validate(q).ok is False  # not listed in the header: reported
    assert wv.validate(q).first_difference is None
    parsed = wv.parse_file(q)
    assert parsed.chunks[-1].name == "unknown" and parsed.chunks[-1].body == b"xyz"
    assert wv.read(q).words == ["a"]


def test_user_chunk_type_registered_without_editing_the_library(tmp_path):
    freq = cs.Struct("n" / cs.Int64ul, "padding" / framework.AlignTo(4, never_zero=True),
                     "counts" / framework.NumpyArray("<u4", cs.this.n))
    codec.register_chunk(100, "frequencies", freq)
    try:
        obj = codec.from_model(wv.Embeddings(["a", "b"], np.ones((2, 2))), normalize=False)
        obj.chunks.append(cs.Container(chunk_id=100, name="frequencies",
                                       body=cs.Container(n=2, padding=None, counts=np.array([7, 9], "<u4"))))
        obj.n_chunks, obj.chunk_ids = 3, np.array([1, 2, 100], "<u4")
        p = tmp_path / "f.fifu"
        with open(p, "wb") as f:
            codec.build(obj, f)
        assert wv.validate(p).ok
        back = wv.parse_file(p)
        assert back.chunks[2].name == "frequencies" and back.chunks[2].body.counts.tolist() == [7, 9]
        assert equal(back.chunks[2].body.counts, np.array([7, 9], "<u4"))
    finally:
        del schema.CHUNK_TYPES[100]
        codec._FORMAT.schemas.pop("chunk 100: frequencies")


def test_truncations_and_hostile_lengths(tmp_path):
    p = tmp_path / "x.fifu"
    wv.write(wv.Embeddings(["ab", "c"], np.ones((2, 3)), metadata={"k": "v"}), p, normalize=False)
    data = p.read_bytes()
    assert_truncations_fail(schema.finalfusion, data, format="finalfusion", compiled=False)
    with pytest.raises(TruncatedError):
        bad = bytearray(data)
        bad[8:12] = (2**31).to_bytes(4, "little")  # n_chunks
        framework.parse(schema.finalfusion, bytes(bad), format="finalfusion")
    for row_count in (2**63, 2**64 - 1):
        parsed = framework.parse(schema.finalfusion, data, format="finalfusion")
        start = data.index(b"FiFu") + 12 + 4 * parsed.n_chunks
        arr_at = data.index((2).to_bytes(4, "little") + b"", start)
        bad = bytearray(data)
        rows_at = [i for i in range(start, len(data) - 8) if data[i:i + 4] == b"\x02\0\0\0"][0] + 12
        bad[rows_at:rows_at + 8] = row_count.to_bytes(8, "little")
        with pytest.raises(FormatError) as e:
            framework.parse(schema.finalfusion, bytes(bad), format="finalfusion")
        assert e.value.format == "finalfusion" and "chunks[" in (e.value.path or "")
        assert arr_at >= 0
    bad = bytearray(data)
    bad[-1] ^= 0  # unchanged control
    assert framework.parse(schema.finalfusion, bytes(bad), format="finalfusion")
    with pytest.raises(ValueMismatchError):
        framework.parse(schema.finalfusion, b"FiFu\x01\0\0\0\0\0\0\0", format="finalfusion")


def test_published_hash_vectors():
    from wvformats.families.fasttext.hashing import fasttext_hash
    from wvformats.families.finalfusion.lookups import finalfusion_hash, ngrams

    assert ngrams("hallo", 3, 6)[:5] == ["<hallo", "<hall", "<hal", "<ha", "hallo>"]
    assert sorted(finalfusion_hash(g) & (2**21 - 1) for g in ngrams("hallo", 3, 6)) == [
        75867, 104120, 136555, 456131, 599360, 722393, 938007, 985859, 1006102, 1163391, 1218704, 1321513,
        1505861, 1892376]
    assert sorted(finalfusion_hash(g) & 3 for g in ngrams("hallo", 3, 6)) == [0, 0, 0, 0, 1, 1, 1, 2, 3, 3, 3, 3,
                                                                             3, 3]
    assert sorted(fasttext_hash(g) % 2_000_000 for g in ngrams("Daniël", 3, 6)) == [
        69886, 84537, 338340, 441697, 448390, 468430, 504093, 573175, 749365, 804851, 811506, 991985, 1022467,
        1105725, 1249224, 1418443, 1493412, 1880616]
    assert sorted(fasttext_hash(g) % 2_000_000 for g in ngrams("überspringen", 5, 5)) == [
        79599, 352266, 385524, 629649, 716781, 978563, 991164, 1230973, 1350653, 1992797]


@pytest.mark.parametrize("kind", ["bucket", "fasttext"])
def test_oov_lookups_match_finalfusion_python(tmp_path, kind, kernels):
    embs, paths = _peer_files(tmp_path)
    ours = wv.read(paths[kind])
    theirs = ff.load_finalfusion(str(paths[kind]))
    for word in ["hallo", "Daniel", "überspringt", "日本語", "zz"]:
        expected = theirs.embedding(word)
        got = ours.embedding(word)
        assert (got is None) == (expected is None)
        if got is not None:
            assert np.allclose(got, expected, atol=1e-6), word
        assert ours.subword_indices(word) == list(theirs.vocab.subword_indices(word))
    assert ours.embedding("hallo") is not None and np.array_equal(ours.embedding("日本"), ours["日本"])
    assert len(ours.subword_indices("hallo")) == 14
    from wvformats.families.finalfusion import lookups

    kernel = lookups._K if kernels == "compiled" else None
    assert kernels == "python" or kernel is not None
    assert getattr(ours.subwords.indices, "func", None) is (kernel and kernel.ngram_rows)  # the path tested


LONE_SURROGATES = ["caf\udce9", "\udce9", "\ud83d", "a\ud800b\udfffc", "\ud83d\ude00x"]


def test_lone_surrogates_hash_as_finalfusion_python_hashes_them(tmp_path, kernels):
    """A str holding lone surrogates (surrogateescape decoding gives them) on a bucket vocabulary:
    finalfusion-python hashes each code point, so do embedding, embedding_batch and subword_indices
    (they raised UnicodeEncodeError)."""
    words = ["hallo", "café"]
    p = tmp_path / "b.fifu"
    ff.Embeddings(ff.storage.NdArray(np.random.default_rng(1).normal(size=(2 + 2**16, 4)).astype(np.float32)),
                  ff.vocab.FinalfusionBucketVocab(words, ff.subword.FinalfusionHashIndexer(16))).write(str(p))
    theirs, ours = ff.load_finalfusion(str(p)), wv.read(p)
    batch, found = ours.embedding_batch(LONE_SURROGATES)
    assert found.all()
    for i, word in enumerate(LONE_SURROGATES):
        assert ours.subword_indices(word) == list(theirs.vocab.subword_indices(word))
        assert np.allclose(ours.embedding(word), theirs.embedding(word), atol=1e-6)
        assert np.array_equal(batch[i], ours.embedding(word))


def test_lone_surrogates_hash_as_fasttext_reads_them_in_fasttext_vocabs(tmp_path, kernels):
    """finalfusion-python raises UnicodeEncodeError for them; we hash a surrogate escape (U+DC80..U+DCFF) as the
    byte it came from, as fastText and the fastText model hash the word, and any other lone surrogate as its
    3-byte UTF-8 form (surrogatepass), so every str has a vector: the n-grams without one get the peer's rows,
    the others their bytes' FNV-1a-32 (sign-extended) rows."""
    def as_read(g):  # (an escape: the byte; the rest: surrogatepass)
        return b"".join(bytes([ord(c) - 0xDC00]) if 0xDC80 <= ord(c) <= 0xDCFF
                        else c.encode("utf-8", "surrogatepass") for c in g)

    def fasttext_hash(data):
        h = 2166136261
        for b in data:
            h = ((h ^ (b | 0xFFFFFF00 if b >= 0x80 else b)) * 16777619) % 2**32
        return h

    words, buckets = ["hallo", "café"], 100_003
    p = tmp_path / "f.fifu"
    ff.Embeddings(ff.storage.NdArray(np.random.default_rng(1).normal(size=(2 + buckets, 4)).astype(np.float32)),
                  ff.vocab.FastTextVocab(words, ff.subword.FastTextIndexer(buckets))).write(str(p))
    theirs, ours = ff.load_finalfusion(str(p)), wv.read(p)
    batch, found = ours.embedding_batch(LONE_SURROGATES)
    assert found.all()
    for i, word in enumerate(LONE_SURROGATES):
        with pytest.raises(UnicodeEncodeError):
            theirs.embedding(word)
        grams = ff.subword.ngrams(word, 3, 6)  # the peer's n-grams, surrogates and all
        odd = [any(0xD800 <= ord(c) < 0xE000 for c in g) for g in grams]
        assert any(odd) and len(ours.subword_indices(word)) == len(grams)
        for g, row, has in zip(grams, ours.subword_indices(word), odd, strict=True):
            want = fasttext_hash(as_read(g)) if has else theirs.vocab.subword_indexer(g)
            assert row == 2 + want % buckets
        v = np.asarray(theirs.storage)[ours.subword_indices(word)].sum(axis=0)
        assert np.allclose(ours.embedding(word), v / np.linalg.norm(v), atol=1e-6)
        assert np.array_equal(batch[i], ours.embedding(word))


def test_explicit_vocab_written_by_finalfusion_python(tmp_path, kernels):
    """Its explicit vocab chunks carry a length 8 bytes short per n-gram: read by content, rebuilt as is."""
    embs, paths = _peer_files(tmp_path)
    bucket = embs["bucket"]
    explicit = bucket.bucket_to_explicit() if hasattr(bucket, "bucket_to_explicit") else None
    assert explicit is not None
    p = tmp_path / "explicit.fifu"
    explicit.write(str(p))
    report = wv.validate(p)
    assert report.ok, report
    info = wv.inspect(p)
    assert any("short" in q for q in info.get("quirks", []))
    ours = wv.read(p)
    theirs = ff.load_finalfusion(str(p))
    assert ours.words == list(theirs.vocab.words)
    for word in ["hallo", "Daniel", "zz", "日本語"]:
        expected, got = theirs.embedding(word), ours.embedding(word)
        assert (got is None) == (expected is None)
        if got is not None:
            assert np.allclose(got, expected, atol=1e-6)
            assert ours.subword_indices(word) == list(theirs.vocab.subword_indices(word))


@MODES
@given(ngrams=st.lists(st.tuples(st.text(max_size=4), st.integers(0, 2**64 - 1)), max_size=5))
def test_indexed_string_table_roundtrip(compiled, ngrams):
    s = cs.Struct("n" / cs.Int64ul, "t" / framework.StringTable(cs.this.n, index="u64"))
    obj = cs.Container(n=len(ngrams), t=cs.Container(strings=[g for g, _ in ngrams],
                                                     indices=np.array([i for _, i in ngrams], np.uint64)))
    data = roundtrip(s, obj, format="t", compiled=compiled)
    assert_truncations_fail(s, data, format="t", compiled=compiled)


def _quantized(rng, rows, q, c, sub, proj=False, norms=False):
    """A quantized_array chunk of ``rows`` random codes over q subquantizers of c centroids of sub dims."""
    r = q * sub
    return cs.Container(chunk_id=4, name="quantized_array", body=cs.Container(
        use_projection=int(proj), use_norms=int(norms), quantized_len=q, reconstructed_len=r, n_centroids=c,
        n_embeddings=rows, quantized_type=1, reconstructed_type=10, padding=None,
        projection=rng.normal(size=(r, r)).astype("<f4") if proj else None,
        subquantizers=rng.normal(size=(q, c, sub)).astype("<f4"),
        norms=rng.random(rows).astype("<f4") + 0.5 if norms else None,
        codes=rng.integers(0, c, (rows, q)).astype(np.uint8)))


def _fifu(path, *chunks):
    """Build a finalfusion file of these chunks with our codec; its path."""
    obj = cs.Container(magic=b"FiFu", version=0, n_chunks=len(chunks),
                       chunk_ids=np.array([c.chunk_id for c in chunks], "<u4"), chunks=list(chunks))
    with open(path, "wb") as f:
        codec.build(obj, f)
    return path


@pytest.mark.parametrize("compiled", [False, True])
def test_quantized_lengths_that_do_not_split_into_parts_are_refused(tmp_path, compiled):
    """reconstructed_len 5 over quantized_len 2 (found by fuzzing: accepted, then lookups raised a matmul
    ValueError, or rows came out 4 wide while dim said 5) and quantized_len 0 ('integer division or modulo by
    zero' naming no field): refused where the field is, reading and writing."""
    vocab = cs.Container(chunk_id=1, name="simple_vocab", body=cs.Container(n_words=2, words=["a", "b"]))
    good = _fifu(tmp_path / "q.fifu", vocab, _quantized(np.random.default_rng(3), 2, 2, 4, 2, proj=True))
    q_at = 20 + 30 + 12 + 8  # header of 2 ids, the vocab chunk, the quantized chunk's id and length, 2 flags
    data = good.read_bytes()
    assert data[q_at:q_at + 8] == (2).to_bytes(4, "little") + (4).to_bytes(4, "little")  # q = 2, r = 4
    for field, at, value, test in [("quantized_len", q_at, 0, "quantized_len > 0"),
                                   ("reconstructed_len", q_at + 4, 5, "(reconstructed_len % quantized_len) == 0")]:
        bad = bytearray(data)
        bad[at:at + 4] = value.to_bytes(4, "little")
        (tmp_path / "bad.fifu").write_bytes(bytes(bad))
        with pytest.raises(ValueMismatchError) as parsing:
            framework.parse(schema.finalfusion, bytes(bad), format="finalfusion", compile=compiled)
        with pytest.raises(ValueMismatchError) as reading:
            wv.read(tmp_path / "bad.fifu")
        for e in (parsing.value, reading.value):
            assert (e.path, e.offset, e.found) == (f"chunks[1].quantized_array.{field}", at, value)
            assert f"does not satisfy {test}" in str(e)
        body = _quantized(np.random.default_rng(3), 2, 2, 4, 2).body
        body[field] = value
        with pytest.raises(BuildError, match=re.escape(f"does not satisfy {test}")):
            _fifu(tmp_path / "out.fifu", vocab, cs.Container(chunk_id=4, name="quantized_array", body=body))


@pytest.mark.parametrize("proj,norms", [(False, False), (True, True), (False, True)])
def test_quantized_storage_reconstructs_like_finalfusion_python(tmp_path, proj, norms):
    rng = np.random.default_rng(11)
    words = ["a", "b", "c", "d", "e"]
    n = len(words)
    p = _fifu(tmp_path / "q.fifu",
              cs.Container(chunk_id=1, name="simple_vocab", body=cs.Container(n_words=n, words=words)),
              _quantized(rng, n, 2, 4, 3, proj, norms))
    theirs = ff.load_finalfusion(str(p))
    ours = wv.read(p)
    for i, w in enumerate(words):
        assert np.allclose(ours[w], theirs.storage[i], atol=1e-5)
    assert wv.validate(p).ok


def test_mmap_read_is_a_zero_copy_view(tmp_path):
    p = tmp_path / "m.fifu"
    wv.write(wv.Embeddings(["a", "b"], np.arange(8, dtype="<f4").reshape(2, 4)), p, normalize=False)
    e = wv.read(p, mmap=True)
    assert not e.vectors.flags.owndata and not e.vectors.flags.writeable
    assert e.vectors.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_legacy_trailing_norms_not_listed_in_header(tmp_path):
    p = tmp_path / "x.fifu"
    wv.write(wv.Embeddings(["a", "b"], np.ones((2, 2)), norms=np.ones(2, "<f4")), p, normalize=False)
    parsed = wv.parse_file(p)
    legacy = tmp_path / "legacy.fifu"
    # old writers listed [1, 2] in the header and appended an NdNorms chunk anyway
    parsed.n_chunks, parsed.chunk_ids = 2, np.array([1, 2], "<u4")
    with open(legacy, "wb") as f:
        codec.build(parsed, f)
    assert wv.read(legacy).norms is not None
    report = wv.validate(legacy)
    assert report.ok and report.first_difference is None
    again = tmp_path / "again.fifu"  # read then write gives the file back, header included
    wv.write(wv.read(legacy), again)
    assert again.read_bytes() == legacy.read_bytes()
    emb = wv.read(legacy)
    emb.norms = None  # other chunks: the header lists them all
    wv.write(emb, again)
    assert wv.parse_file(again).chunk_ids.tolist() == [1, 2]


def test_similarity_and_analogy_match_finalfusion_python(tmp_path):
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(50)]
    m = rng.normal(size=(50, 8)).astype(np.float32)
    p = tmp_path / "s.fifu"
    with pytest.warns(wv.ValuesChangedWarning):  # finalfusion-python's queries take the rows as unit vectors
        wv.write(wv.Embeddings(words, m), p, normalize=True)
    ours, theirs = wv.read(p), ff.load_finalfusion(str(p))
    got = ours.most_similar("w3", limit=5)
    expected = theirs.word_similarity("w3", k=5)
    assert [w for w, _ in got] == [r.word for r in expected]
    assert np.allclose([s for _, s in got], [r.similarity for r in expected], atol=1e-5)
    got = ours.analogy("w1", "w2", "w3", limit=5)
    expected = theirs.analogy("w1", "w2", "w3", k=5)
    assert [w for w, _ in got] == [r.word for r in expected]


@MODES
def test_floret_vocab_chunk_roundtrip(compiled):
    body = cs.Container(min_n=4, max_n=5, n_buckets=50000, n_hashes=2, seed=2166136261, bow="<", eow=">")
    s = schema.CHUNK_TYPES[9][1]
    data = roundtrip(s, body, format="finalfusion", compiled=compiled)
    assert len(data) == 4 + 4 + 8 + 4 + 4 + 5 + 5
    assert_truncations_fail(s, data, format="finalfusion", compiled=compiled)


@MODES
@given(kind=st.sampled_from([3, 7, 9]), words=words_st, lo=st.integers(0, 2**32 - 1), hi=st.integers(0, 2**32 - 1),
       exp=st.integers(0, 63), buckets=st.integers(1, 2**32 - 1), n_buckets=st.integers(1, 2**64 - 1),
       n_hashes=st.integers(1, 4), seed=st.integers(0, 2**32 - 1), marks=st.tuples(st.text(max_size=2), st.text(max_size=2)))
def test_subword_vocab_chunks_roundtrip(compiled, kind, words, lo, hi, exp, buckets, n_hashes, n_buckets, seed, marks):
    """The bucket, fastText and floret vocabulary bodies with every value their checks let through (bucket_exp
    up to 63, buckets and n_buckets from 1, 1 to 4 hashes): parse(build(x)) == x, the same bytes back, and
    every truncation a FormatError."""
    body = {3: cs.Container(n_words=len(words), min_n=lo, max_n=hi, bucket_exp=exp, words=words),
            7: cs.Container(n_words=len(words), min_n=lo, max_n=hi, buckets=buckets, words=words),
            9: cs.Container(min_n=lo, max_n=hi, n_buckets=n_buckets, n_hashes=n_hashes, seed=seed, bow=marks[0],
                            eow=marks[1])}[kind]
    s = schema.CHUNK_TYPES[kind][1]
    data = roundtrip(s, body, format="finalfusion", compiled=compiled)
    assert_truncations_fail(s, data, format="finalfusion", compiled=compiled, step=max(1, len(data) // 40))


@pytest.mark.parametrize("field,value", [("n_buckets", 0), ("n_hashes", 0), ("n_hashes", 5)])
def test_floret_vocab_without_lookups_fails_cleanly(field, value):
    """finalfusion-rust's FloretIndexer asserts 1 <= n_hashes <= 4 and n_buckets != 0 (a panic at load): refused
    when reading and writing, naming the field and where it starts."""
    body = cs.Container(min_n=4, max_n=5, n_buckets=50000, n_hashes=2, seed=7, bow="<", eow=">")
    s = schema.CHUNK_TYPES[9][1]
    good = framework.build(s, body, format="finalfusion")
    at = {"n_buckets": 8, "n_hashes": 16}[field]
    raw = good[:at] + value.to_bytes(8 if field == "n_buckets" else 4, "little") + good[at + (8 if field == "n_buckets" else 4):]
    for compiled in (False, True):
        with pytest.raises(ValueMismatchError) as e:
            framework.parse(s, raw, format="finalfusion", compile=compiled)
        assert (e.value.path, e.value.offset, e.value.found) == (field, at, value)
    body[field] = value
    with pytest.raises(BuildError, match=field):
        framework.build(s, body, format="finalfusion")


def test_bucket_exponent_of_64_or_more_fails_cleanly():
    body = cs.Container(n_words=0, min_n=3, max_n=6, bucket_exp=64, words=[])
    s = schema.CHUNK_TYPES[3][1]
    raw = (0).to_bytes(8, "little") + (3).to_bytes(4, "little") + (6).to_bytes(4, "little") + (64).to_bytes(4, "little")
    for compiled in (False, True):
        with pytest.raises(ValueMismatchError) as e:
            framework.parse(s, raw, format="finalfusion", compile=compiled)
        assert (e.value.format, e.value.path, e.value.offset, e.value.found) == ("finalfusion", "bucket_exp", 16, 64)
        assert str(e.value).endswith("does not satisfy bucket_exp < 64 (found 64)")
    with pytest.raises(BuildError, match="bucket_exp < 64"):
        framework.build(s, body, format="finalfusion")
    body.bucket_exp = 63
    assert framework.parse(s, framework.build(s, body, format="finalfusion"), format="finalfusion").bucket_exp == 63


def test_fasttext_vocab_without_buckets_is_refused_as_finalfusion_python_refuses_it(tmp_path):
    """buckets = 0 (found by fuzzing: read and validated, then every unknown-word lookup divided by zero):
    finalfusion-python refuses the file when loading it (finalfusion-rust reads it and panics at the
    first lookup); so do we, naming the field."""
    vocab = cs.Container(n_words=2, min_n=3, max_n=6, buckets=3, words=["a", "b"])
    p = _fifu(tmp_path / "ft.fifu", cs.Container(chunk_id=7, name="fasttext_subword_vocab", body=vocab),
              cs.Container(chunk_id=2, name="ndarray", body=cs.Container(
                  rows=5, cols=2, type_id=10, padding=None, data=np.ones((5, 2), "<f4"))))
    data = bytearray(p.read_bytes())
    at = 20 + 12 + 16  # header of 2 ids, chunk id and length, n_words, min_n, max_n
    assert data[at:at + 4] == (3).to_bytes(4, "little")
    data[at:at + 4] = bytes(4)
    p.write_bytes(bytes(data))
    with pytest.raises(AssertionError, match="n_buckets"):
        ff.load_finalfusion(str(p))
    with pytest.raises(ValueMismatchError, match="does not satisfy buckets > 0") as e:
        wv.read(p)
    assert (e.value.path, e.value.offset, e.value.found) == ("chunks[0].fasttext_subword_vocab.buckets", at, 0)
    vocab.buckets = 0
    with pytest.raises(BuildError, match="does not satisfy buckets > 0"):
        _fifu(tmp_path / "out.fifu", cs.Container(chunk_id=7, name="fasttext_subword_vocab", body=vocab))


def test_convert_round_trip_with_unnormalize(tmp_path):
    """Out of finalfusion the rows are multiplied by their norms by default, as --unnormalize asks (which
    refuses a file without norms); normalize=False (--no-normalize) writes the unit rows as stored."""
    src = tmp_path / "v.txt"
    m = np.array([[3, 4], [1, 0], [0, 0]], np.float32)
    wv.write(wv.Embeddings(["a", "b", "c"], m), src)
    fifu = tmp_path / "v.fifu"
    with pytest.warns(wv.ValuesChangedWarning, match="normalize"):
        wv.convert(src, fifu)
    for options in ({"unnormalize": True}, {}):
        back = tmp_path / f"back{len(options)}.txt"
        with pytest.warns(wv.ValuesChangedWarning, match="unnormalize"):
            wv.convert(fifu, back, **options)
        assert np.array_equal(wv.read(back).vectors, m)
    plain = tmp_path / "plain.txt"
    wv.convert(fifu, plain, normalize=False)
    assert np.allclose(wv.read(plain).vectors, [[0.6, 0.8], [1, 0], [0, 0]], atol=1e-6)
    with pytest.raises(wv.OptionError, match="give one of them"):
        wv.convert(fifu, tmp_path / "both.txt", normalize=False, unnormalize=True)
    raw = tmp_path / "raw.fifu"
    wv.convert(src, raw, normalize=False)
    with pytest.raises(BuildError, match="unnormalize needs norms"):
        wv.convert(raw, tmp_path / "none.txt", unnormalize=True)


def test_murmur3_x64_128_smhasher_verification_value():
    """SMHasher's verification test: hash keys 0..255 bytes long (key[i] = i) with seed 256 - len, hash the
    concatenated results with seed 0; the first four bytes read little-endian are 0x6384BA69."""
    from wvformats.families.finalfusion.lookups import murmur3_x64_128

    out = b""
    for n in range(256):
        h1, h2 = murmur3_x64_128(bytes(range(n)), 256 - n)
        out += h1.to_bytes(8, "little") + h2.to_bytes(8, "little")
    h1, _ = murmur3_x64_128(out, 0)
    assert h1 & 0xFFFFFFFF == 0x6384BA69


@given(data=st.binary(max_size=70), seed=st.integers(0, 2**32 - 1))
def test_murmur3_x64_128_equals_mmh3(data, seed):
    mmh3 = pytest.importorskip("mmh3")
    from wvformats.families.finalfusion.lookups import murmur3_x64_128

    h1, h2 = murmur3_x64_128(data, seed)
    assert mmh3.hash_bytes(data, seed) == h1.to_bytes(8, "little") + h2.to_bytes(8, "little")


def test_floret_lookups(tmp_path, kernels):
    """A floret vocabulary (no word list, n_hashes words of MurmurHash3 per n-gram and for the whole
    bracketed word): the rows and the normalised sum, recomputed independently from mmh3's raw bytes."""
    mmh3 = pytest.importorskip("mmh3")
    buckets, k, seed, lo, hi = 1000, 3, 2166136261, 3, 5
    rng = np.random.default_rng(3)
    data = rng.normal(size=(buckets, 8)).astype("<f4")
    obj = cs.Container(magic=b"FiFu", version=0, n_chunks=2, chunk_ids=np.array([9, 2], "<u4"), chunks=[
        cs.Container(chunk_id=9, name="floret_subword_vocab", body=cs.Container(
            min_n=lo, max_n=hi, n_buckets=buckets, n_hashes=k, seed=seed, bow="[", eow="]")),
        cs.Container(chunk_id=2, name="ndarray", body=cs.Container(rows=buckets, cols=8, type_id=10, padding=None,
                                                                   data=data))])
    p = tmp_path / "floret.fifu"
    with open(p, "wb") as f:
        codec.build(obj, f)
    assert wv.validate(p).ok
    emb = wv.read(p)
    assert len(emb) == 0
    for word in ["Daniël", "x", "東京タワー", ""]:
        w = f"[{word}]"
        grams = [w] + [w[i:i + n] for i in range(len(w)) for n in range(min(hi, len(w) - i), lo - 1, -1)]
        rows = [int(x) % buckets for g in grams
                for x in np.frombuffer(mmh3.hash_bytes(g.encode("utf-8"), seed), "<u4")[:k]]
        assert emb.subword_indices(word) == rows
        v = np.zeros(8, np.float32)
        for r in rows:  # row after row in float32, as finalfusion-rust adds them
            v += data[r]
        assert np.allclose(emb.embedding(word), v / np.linalg.norm(v), rtol=1e-6, atol=1e-7)


def test_read_then_write_gives_the_peer_file_back(tmp_path):
    """Files finalfusion-python writes (simple with norms and metadata, bucket and fastText vocabs with their
    subword rows) come back byte for byte after wv.read + wv.write; its explicit vocab comes back with the
    correct chunk length (the only bytes that differ) and loads in finalfusion-python with the same lookups."""
    embs, paths = _peer_files(tmp_path)
    for name, p in paths.items():
        out = tmp_path / f"again-{name}.fifu"
        wv.write(wv.read(p), out)
        assert out.read_bytes() == p.read_bytes(), name
    explicit = tmp_path / "explicit.fifu"
    embs["bucket"].bucket_to_explicit().write(str(explicit))
    again = tmp_path / "again-explicit.fifu"
    wv.write(wv.read(explicit), again)
    a, b = explicit.read_bytes(), again.read_bytes()
    assert len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) <= 2  # the u64 length field
    assert "quirks" not in wv.inspect(again)
    theirs, ours = ff.load_finalfusion(str(explicit)), ff.load_finalfusion(str(again))
    for word in ["hallo", "Daniel", "日本語"]:
        assert np.array_equal(theirs.embedding(word), ours.embedding(word))


def test_quantized_storage_is_kept_until_the_word_rows_change(tmp_path):
    rng = np.random.default_rng(12)
    words = ["a", "b", "c"]
    n, buckets = 3, 8
    vocab = cs.Container(n_words=n, min_n=3, max_n=6, bucket_exp=3, words=words)
    p = _fifu(tmp_path / "q.fifu", cs.Container(chunk_id=3, name="bucket_subword_vocab", body=vocab),
              _quantized(rng, n + buckets, 2, 4, 3))
    emb = wv.read(p)
    same = tmp_path / "same.fifu"
    wv.write(emb, same)
    assert same.read_bytes() == p.read_bytes()
    emb.vectors = emb.vectors.copy()
    emb.vectors[1] += 1
    dense = tmp_path / "dense.fifu"
    wv.write(emb, dense)
    back = wv.read(dense)
    assert back.storage.matrix is not None and back.subwords.kind == "bucket_subword_vocab"
    assert np.array_equal(back.vectors, emb.vectors)
    assert np.array_equal(back.embedding("zzz"), emb.embedding("zzz"))  # subword rows kept (reconstructed)
    theirs = ff.load_finalfusion(str(dense))
    assert np.allclose(theirs.embedding("zzz"), emb.embedding("zzz"), atol=1e-6)


def test_batch_lookups_equal_one_by_one(tmp_path, monkeypatch, kernels):
    """embedding_batch (vectorised FNV per character position, rows gathered a position at a time, a block of
    words at a time, longest words first) gives the bits of embedding() for known, unknown, empty and non-ASCII words, on a bucket
    vocab from the peer."""
    from wvformats.families.finalfusion import lookups as finalfusion

    monkeypatch.setattr(finalfusion, "_SUM_BLOCK_BYTES", 48)  # blocks of 3 words (dim 4)
    embs, paths = _peer_files(tmp_path)
    for name in ("bucket", "fasttext", "simple"):
        emb = wv.read(paths[name])
        words = ["hallo", "Daniël", "", "x", "東京タワー", "überspringen", "a", "zz" * 30, "日本", "Straße",
                 "naïveté", "ab"]
        m, found = emb.embedding_batch(words)
        for i, w in enumerate(words):
            v = emb.embedding(w)
            assert found[i] == (v is not None)
            want = v if v is not None else np.zeros(4, np.float32)
            assert np.array_equal(m[i].view(np.uint32), want.view(np.uint32)), (name, w)  # the same bits
    assert wv.read(paths["bucket"]).subwords.lookup_batch is not None  # the vectorised path was the one compared


@given(counts=st.lists(st.integers(0, 7) | st.integers(8, 40), max_size=12), offset=st.integers(0, 3),
       mean=st.booleans(), dim=st.sampled_from([1, 5, 100]))
def test_composed_batch_sums_rows_of_an_unaligned_matrix_in_order(counts, offset, mean, dim):
    """composed_batch gathers rows as opaque items (np.take, mode='clip' after one bounds check), or for a few
    words each word's rows at once: from a matrix that starts at any byte, as a fastText file's does, it gives
    the bits of a row-by-row float32 sum of each word's rows in their order, onto +0.0 (8 rows and more of one
    column too, where numpy's own sums go pairwise), and a row outside the matrix is an IndexError, not a
    clipped row."""
    from wvformats.families.finalfusion.lookups import composed, composed_batch

    rng = np.random.default_rng(len(counts))
    values = rng.standard_normal((9, dim)).astype(np.float32)
    values[:, -1] = -0.0 if dim > 1 else values[:, -1]  # the peers sum onto +0.0: a column of -0.0 comes out +0.0
    values[rng.random((9, dim)) < 0.2] = -0.0
    buf = np.zeros(values.nbytes + offset, np.uint8)
    buf[offset:] = values.view(np.uint8).reshape(-1)
    data = buf[offset:].view("<f4").reshape(9, dim)  # unaligned when offset is not 0
    owner = np.repeat(np.arange(len(counts)), counts)
    rows = rng.integers(0, 9, len(owner))
    got, found = composed_batch(rows, owner, len(counts), data, mean=mean)
    assert found.tolist() == [c > 0 for c in counts]
    for i, c in enumerate(counts):
        want = np.zeros(dim, np.float32)
        for r in rows[owner == i]:
            want += values[r]
        if c and mean:
            want *= np.float32(1.0 / c)
        elif c and (norm := np.sqrt((want * want).sum())) > 0:
            want /= norm
        assert got[i].tobytes() == want.tobytes()
        if c and not mean:  # one word at a time, the same bits
            own = rows[owner == i].tolist()
            assert composed(lambda _, own=own: own, lambda at: data[at], "w").tobytes() == want.tobytes()
    if len(owner):
        with pytest.raises(IndexError, match="outside the 9 rows"):
            composed_batch(np.where(rows == rows[-1], 9, rows), owner, len(counts), data)


# text() drops the surrogates of an alphabet that mixes them with other characters: words are built from lists
surrogates_too = st.lists(st.characters() | st.integers(0xD800, 0xDFFF).map(chr), max_size=9).map("".join)


@given(words=st.lists(surrogates_too, max_size=8), min_n=st.integers(1, 4), extra=st.integers(0, 3),
       exp=st.integers(1, 40))
def test_vectorised_bucket_rows_equal_the_per_word_indexer(words, min_n, extra, exp):
    """Lone surrogates included: both hash their code points (the per-word indexer in the kernel and in Python)."""
    from wvformats.families.finalfusion import _kernel, lookups

    rows, owner = lookups.bucket_rows_batch(words, min_n, min_n + extra, exp, 7)
    for kernel in (_kernel, None):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(lookups, "_K", kernel)
            rows_of = lookups.indexer("bucket_subword_vocab", {"bucket_exp": exp, "min_n": min_n,
                                                               "max_n": min_n + extra}, 7)
        assert [rows[owner == i].tolist() for i in range(len(words))] == [rows_of(w) for w in words]


@pytest.mark.parametrize("proj,norms", [(False, False), (True, True)])
def test_quantized_files_open_lazily_and_look_up_like_finalfusion_python(tmp_path, proj, norms, kernels):
    """A quantized storage is not reconstructed when the file is opened: lookups (known words, batches,
    n-gram composition) reconstruct only their rows, give what the whole matrix gives and what the peer
    gives, and writing the embeddings back gives the same file without reconstructing anything."""
    rng = np.random.default_rng(13)
    words = ["hallo", "Daniël", "東京", "x", "überspringen"]
    n, exp, r = len(words), 4, 6
    vocab = cs.Container(n_words=n, min_n=3, max_n=6, bucket_exp=exp, words=words)
    p = _fifu(tmp_path / "q.fifu", cs.Container(chunk_id=3, name="bucket_subword_vocab", body=vocab),
              _quantized(rng, n + 2**exp, 3, 8, r // 3, proj, norms))
    emb = wv.read(p)
    assert emb.lazy and "lazy" in repr(emb) and emb.dim == r
    theirs = ff.load_finalfusion(str(p))
    unknown = ["hallöchen", "Tokyo", "xyz", "überspringend", "a"]
    batch, found = emb.embedding_batch(words + unknown)
    for i, w in enumerate(words + unknown):
        one = emb.embedding(w)
        assert found[i] == (one is not None)
        assert np.allclose(batch[i], one, rtol=1e-6, atol=1e-6)
        if not proj:  # without a projection the rows are the same bits however many are reconstructed
            assert np.array_equal(batch[i], one)
        assert np.allclose(one, theirs.embedding(w), rtol=1e-5, atol=1e-5), w
    assert emb.lazy  # nothing above made the whole matrix
    same = tmp_path / "same.fifu"
    wv.write(emb, same)
    assert same.read_bytes() == p.read_bytes() and emb.lazy
    whole = emb.vectors  # made now, once
    assert not emb.lazy and whole is emb.vectors and whole.shape == (n, r)
    for i, w in enumerate(words):
        assert np.allclose(emb[w], whole[i], rtol=1e-6, atol=1e-6) and np.allclose(whole[i], theirs.storage[i], atol=1e-5)
    wv.write(emb, same)  # the matrix made from the codes is still theirs: the quantized array is kept
    assert same.read_bytes() == p.read_bytes()


@pytest.mark.parametrize("storage", ["ndarray", "quantized_array"])
def test_storage_shorter_than_the_subword_vocab_is_refused_on_read(tmp_path, storage):
    """A bucket vocab of 2^10 buckets over 3 storage rows: lookups would index past the storage, so reading
    fails with a FormatError naming the storage's row count and where it is, not an IndexError at the first
    unknown word."""
    vocab = cs.Container(n_words=2, min_n=3, max_n=6, bucket_exp=10, words=["a", "b"])
    if storage == "ndarray":
        chunk = cs.Container(chunk_id=2, name="ndarray", body=cs.Container(
            rows=3, cols=2, type_id=10, padding=None, data=np.ones((3, 2), "<f4")))
    else:
        chunk = cs.Container(chunk_id=4, name="quantized_array", body=cs.Container(
            use_projection=0, use_norms=0, quantized_len=1, reconstructed_len=2, n_centroids=2, n_embeddings=3,
            quantized_type=1, reconstructed_type=10, padding=None, projection=None,
            subquantizers=np.ones((1, 2, 2), "<f4"), norms=None, codes=np.zeros((3, 1), np.uint8)))
    p = _fifu(tmp_path / "short.fifu", cs.Container(chunk_id=3, name="bucket_subword_vocab", body=vocab), chunk)
    with pytest.raises(FormatError) as e:
        wv.read(p)
    field = "rows" if storage == "ndarray" else "n_embeddings"
    assert e.value.path == f"chunks[1].{storage}.{field}" and "2 + 1024" in str(e.value)
    assert int.from_bytes(p.read_bytes()[e.value.offset:][:8], "little") == 3  # the row count itself


def _metadata(toml):
    return cs.Container(chunk_id=5, name="metadata", body=cs.Container(toml=toml))


def test_errors_found_after_parsing_name_the_chunk_field_and_its_offset(tmp_path):
    """Bad metadata and a storage with fewer rows than words are found when the chunks are put together:
    the error names the field as a parse error would (chunks[i].name.field) and where it is in the file, on
    every read path (read(limit=...) of a quantized file raised IndexError), and validate reports it."""
    vocab = cs.Container(chunk_id=1, name="simple_vocab", body=cs.Container(n_words=3, words=["a", "b", "c"]))
    two_rows = cs.Container(chunk_id=2, name="ndarray", body=cs.Container(
        rows=2, cols=2, type_id=10, padding=None, data=np.ones((2, 2), "<f4")))
    three_rows = cs.Container(chunk_id=2, name="ndarray", body=cs.Container(
        rows=3, cols=2, type_id=10, padding=None, data=np.ones((3, 2), "<f4")))
    two_codes = _quantized(np.random.default_rng(2), 2, 1, 2, 2)
    for toml, storage, path, at, message in [
            (b"a = [", three_rows, "chunks[0].metadata.toml", b"a = [", "metadata is not valid TOML"),
            (b"k = '\xff'", three_rows, "chunks[0].metadata.toml", b"\xff", "invalid UTF-8 in the metadata"),
            (b"k = 1", two_rows, "chunks[2].ndarray.rows", (2).to_bytes(8, "little") + (2).to_bytes(4, "little"),
             "storage has 2 rows for 3 words"),
            (b"k = 1", two_codes, "chunks[2].quantized_array.n_embeddings", (2).to_bytes(8, "little") + b"\1\0",
             "storage has 2 rows for 3 words")]:
        p = _fifu(tmp_path / "bad.fifu", _metadata(toml), vocab, storage)
        data = p.read_bytes()
        for options in ({}, {"limit": 3}, {"vocab": {"c"}}):
            with pytest.raises(FormatError) as e:
                wv.read(p, **options)
            assert (e.value.path, e.value.offset) == (path, data.index(at)) and message in str(e.value)
        report = wv.validate(p)
        assert not report.ok and report.problems == [str(e.value).removeprefix("finalfusion ")]


def test_metadata_nested_too_deeply_is_a_format_error(tmp_path):
    """TOML arrays 5000 deep (found by fuzzing): tomllib recurses past Python's limit. Reading names the
    metadata (it raised RecursionError); writing metadata TOML cannot hold is a BuildError."""
    deep = b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n"
    vocab = cs.Container(chunk_id=1, name="simple_vocab", body=cs.Container(n_words=1, words=["a"]))
    storage = cs.Container(chunk_id=2, name="ndarray", body=cs.Container(
        rows=1, cols=2, type_id=10, padding=None, data=np.ones((1, 2), "<f4")))
    p = _fifu(tmp_path / "deep.fifu", _metadata(deep), vocab, storage)
    with pytest.raises(FormatError, match="metadata TOML nests too deeply to read") as e:
        wv.read(p)
    assert (e.value.path, e.value.offset) == ("chunks[0].metadata.toml", p.read_bytes().index(deep))
    assert [x.endswith("metadata TOML nests too deeply to read") for x in wv.validate(p).problems] == [True]
    nested: list = []
    for _ in range(5000):
        nested = [nested]
    for metadata in ({"a": nested}, {"a": None}):
        with pytest.raises(BuildError, match="metadata cannot be written as TOML") as e:
            wv.write(wv.Embeddings(["a"], np.ones((1, 2)), metadata=metadata), tmp_path / "out.fifu")
        assert e.value.path == "chunks.metadata"


@pytest.mark.parametrize("quantized", [False, True])
def test_norms_that_are_not_one_per_word_are_refused(tmp_path, quantized):
    """2 norms for 5 words (found by fuzzing: accepted, then read(limit=...) and read(vocab=...) raised
    IndexError, convert(unnormalize=True) a broadcast ValueError): both references assert n_norms == n_words."""
    words = ["a", "b", "c", "d", "e"]
    rng = np.random.default_rng(5)
    dense = cs.Container(chunk_id=2, name="ndarray", body=cs.Container(
        rows=5, cols=4, type_id=10, padding=None, data=np.ones((5, 4), "<f4")))
    storage = _quantized(rng, 5, 2, 4, 2) if quantized else dense
    norms = cs.Container(chunk_id=6, name="nd_norms", body=cs.Container(
        n_norms=2, type_id=10, padding=None, norms=np.ones(2, "<f4")))
    p = _fifu(tmp_path / "norms.fifu", cs.Container(chunk_id=1, name="simple_vocab", body=cs.Container(
        n_words=5, words=words)), storage, norms)
    data = p.read_bytes()
    for call in (lambda: wv.read(p), lambda: wv.read(p, limit=3), lambda: wv.read(p, vocab={"a", "c"}),
                 lambda: wv.convert(p, tmp_path / "out.txt", unnormalize=True)):
        with pytest.raises(FormatError, match="2 norms for 5 words") as e:
            call()
        assert e.value.path == "chunks[2].nd_norms.n_norms"
        assert int.from_bytes(data[e.value.offset:][:8], "little") == 2  # n_norms itself
    report = wv.validate(p)  # the bytes rebuild, but the file is not what both references read
    at = e.value.offset
    assert not report.ok and report.problems == [f"chunks[2].nd_norms.n_norms at byte {at}: 2 norms for 5 words"]


@pytest.mark.parametrize("kind", ["simple", "bucket"])
@pytest.mark.parametrize("quantized", [False, True])
def test_limit_and_vocab_keep_word_rows_and_write_files_the_peer_reads(tmp_path, kind, quantized):
    """``limit``/``vocab`` on a finalfusion file keep the chosen word rows (with their norms); unknown words
    are still composed from the file's subword rows, and a file written from the result is the kept words
    with the same subword rows, read alike by finalfusion-python."""
    rng = np.random.default_rng(3)
    words = [f"w{i}é" for i in range(40)]
    if kind == "simple":
        vocab, rows = ff.vocab.SimpleVocab(words), len(words)
    else:
        vocab = ff.vocab.FinalfusionBucketVocab(words, ff.subword.FinalfusionHashIndexer(bucket_exp=5))
        rows = len(words) + 32
    if quantized:
        pq = ff.storage.quantized.PQ(rng.normal(size=(2, 256, 4)).astype(np.float32), None)
        storage = ff.storage.QuantizedArray(pq, rng.integers(0, 256, (rows, 2), dtype=np.uint8),
                                            (rng.random(rows) + 0.5).astype(np.float32))
    else:
        storage = ff.storage.NdArray(rng.normal(size=(rows, 8)).astype(np.float32))
    p = tmp_path / "e.fifu"
    ff.Embeddings(storage, vocab, norms=ff.norms.Norms((rng.random(len(words)) + 1).astype(np.float32))).write(str(p))
    full = wv.read(p)
    info = wv.inspect(p)
    assert (info["words"], info["dim"], info["rows"]) == (len(words), 8, rows)
    assert info.get("quantized") == ({"subquantizers": 2, "centroids": 256, "projection": False, "norms": True}
                                     if quantized else None)
    for options, expect in [({"limit": 7}, words[:7]), ({"vocab": ["w3é", "w1é", "nope", "w3é"]}, ["w1é", "w3é"]),
                            ({"limit": 3, "vocab": ["w1é", "w9é"]}, ["w1é"]), ({"limit": 0}, [])]:
        got = wv.read(p, **options)
        keep = [full.index(w) for w in expect]
        assert got.words == expect
        assert np.array_equal(got.vectors, full.vectors[keep]) and np.array_equal(got.norms, full.norms[keep])
        if kind == "bucket":  # a dropped word is now unknown: composed from the same n-gram rows
            assert np.array_equal(got.embedding("w9é"), full.embedding("w9é") if got.has_index_for("w9é") else
                                  lookups.composed(full.subwords.indices, full.storage.rows,
                                                         "w9é"))
        out = tmp_path / "kept.fifu"
        wv.write(got, out)
        assert wv.validate(out).ok
        peer = ff.load_finalfusion(str(out))
        assert list(peer.vocab.words) == expect
        for w in expect:
            assert np.array_equal(peer[w], got[w])
        if kind == "bucket":
            assert np.allclose(peer.embedding("unseen"), full.embedding("unseen"), atol=1e-6)


def test_repeated_words_are_refused_or_kept_first_for_the_peer(tmp_path, capsys):
    """finalfusion-python refuses a vocabulary that repeats a word: writing one is a BuildError naming the
    word, and deduplicate=True (--dedupe) keeps the first row of each, as lookups see them."""
    src = tmp_path / "dup.txt"
    src.write_bytes(b"3 2\na 1 2\nb 3 4\na 5 6\n")
    with pytest.warns(wv.DuplicateWordsWarning):
        emb = wv.read(src)
    with pytest.raises(wv.BuildError, match="1 row\\(s\\) repeat an earlier word \\(first 'a'\\)"):
        wv.write(emb, tmp_path / "dup.fifu")
    assert not (tmp_path / "dup.fifu").exists()
    assert cli.main(["convert", str(src), str(tmp_path / "dup.fifu")]) == 2
    assert "--dedupe" in capsys.readouterr().err
    assert cli.main(["convert", str(src), str(tmp_path / "dup.fifu"), "--dedupe", "--normalize"]) == 0
    peer = ff.load_finalfusion(str(tmp_path / "dup.fifu"))
    assert list(peer.vocab.words) == ["a", "b"]
    assert np.allclose(peer["a"], np.array([1, 2]) / np.sqrt(5)) and np.allclose(peer.norms, [np.sqrt(5), 5])


def _python_blocks(page):
    import re

    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


@pytest.mark.parametrize("how", ["entry point", "WVFORMATS_PLUGINS"])
def test_extending_page_runs_as_written_and_reaches_the_cli(tmp_path, how):
    """docs/extending.md's chunk example, its code blocks as they are written: the module installed as a
    plugin (a package with a wvformats.plugins entry point, or named in WVFORMATS_PLUGINS), the usage
    script run, and inspect, dump and docs of the wvformats command see the new chunk's fields."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    module, usage = _python_blocks(Path(__file__).resolve().parents[3] / "docs" / "extending.md")[:2]
    site = tmp_path / "site"
    site.mkdir()
    (site / "wvfreq.py").write_text(module, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env.pop("WVFORMATS_PLUGINS", None)
    if how == "entry point":  # what pip install of a package with that [project.entry-points] table leaves
        info = site / "wvfreq-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wvfreq\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text("[wvformats.plugins]\nwvfreq = wvfreq\n")
    else:
        env["WVFORMATS_PLUGINS"] = "wvfreq"

    def run(*args):
        out = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout

    run("-c", usage)
    info = json.loads(run("-m", "wvformats.cli", "inspect", "f.fifu", "--json"))
    assert {"id": 100, "type": "frequencies"} in [{k: c[k] for k in ("id", "type")} for c in info["chunk_types"]]
    dump = run("-m", "wvformats.cli", "dump", "f.fifu")
    assert "chunks[2].body.counts = ndarray <u4 (2,)    # u32 count of each word" in dump
    assert "chunks[2].chunk_id = 100    # chunk type: frequencies" in dump
    run("-m", "wvformats.cli", "docs", "out")
    page = (tmp_path / "out" / "finalfusion.md").read_text(encoding="utf-8")
    assert "frequencies" in page and "u32 count of each word" in page


@pytest.mark.parametrize("storage", ["dense", "quantized"])
def test_an_in_memory_read_of_a_large_file_holds_nothing_of_the_file(tmp_path, storage):
    """mmap=False on a large file: the mapped file is parsed while a worker thread reads it into memory,
    and the arrays come from that copy. Rewriting the file afterwards changes nothing read,
    and the arrays are writable."""
    import mmap

    import finalfusion as ff

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(3000)]
    p = tmp_path / "big.fifu"
    if storage == "dense":
        wv.write(wv.Embeddings(words, rng.normal(size=(3000, 120)).astype(np.float32)), p, normalize=False)
    else:
        pq = ff.storage.quantized.PQ(rng.normal(size=(4, 256, 30)).astype(np.float32), None)
        codes = rng.integers(0, 256, (400_000, 4), dtype=np.uint8)
        ff.Embeddings(ff.storage.QuantizedArray(pq, codes, None), ff.vocab.SimpleVocab(
            [f"w{i}" for i in range(400_000)])).write(str(p))
    assert p.stat().st_size > 1 << 20  # the read ends well after the words are decoded
    a, b = wv.read(p, mmap=True), wv.read(p, mmap=False)
    assert a.words == b.words
    want = np.array(a.vectors[:50])
    got = b.vectors[:50]
    assert got.tobytes() == want.tobytes()
    if storage == "quantized":
        codes = b.storage.quantized_array()["codes"]
        assert codes.flags.writeable and not isinstance(codes.base, mmap.mmap)
    else:
        assert b.vectors.flags.writeable
    del a
    p.write_bytes(p.read_bytes()[:64] + bytes(p.stat().st_size - 64))  # the same size, zeroed after 64 bytes
    assert np.array(b.vectors[:50]).tobytes() == want.tobytes()


def _assert_rewritten_byte_identical(p, tmp_path):
    """``p`` read and written back, and converted to finalfusion, gives its own bytes."""
    again, converted = tmp_path / "rewritten.fifu", tmp_path / "converted.fifu"
    wv.write(wv.read(p), again)
    assert again.read_bytes() == p.read_bytes()
    wv.convert(p, converted)
    assert converted.read_bytes() == p.read_bytes()


def test_metadata_keeps_the_bytes_it_was_read_with_until_it_is_edited(tmp_path):
    """finalfusion-python writes its metadata TOML with the toml package (``tags = [ "x", "y",]``), a hand-made
    file may carry comments: read then write gives the same bytes (the chunks after it do not shift); only
    metadata that was changed is written anew, and finalfusion-python reads the change."""
    rng = np.random.default_rng(3)
    words = ["a", "bb", "ccc"]
    m = rng.normal(size=(3, 4)).astype(np.float32)
    p = tmp_path / "m.fifu"
    meta = {"tags": ["x", "y"], "model": "m", "nested": {"lr": 0.05, "sizes": [1, 2]}}
    ff.Embeddings(ff.storage.NdArray(m), ff.vocab.SimpleVocab(words), metadata=ff.metadata.Metadata(meta),
                  norms=ff.norms.Norms(np.linalg.norm(m, axis=1).astype(np.float32))).write(str(p))
    assert b'tags = [ "x", "y",]' in p.read_bytes()
    _assert_rewritten_byte_identical(p, tmp_path)
    again = tmp_path / "again.fifu"
    toml = b"# written by hand\nname = 'x'  # a comment\n"
    hand = _fifu(tmp_path / "hand.fifu", cs.Container(chunk_id=5, name="metadata", body=cs.Container(toml=toml)),
                 *codec.from_model(wv.Embeddings(words, m), normalize=False).chunks)
    wv.write(wv.read(hand), again)
    assert again.read_bytes() == hand.read_bytes()
    emb = wv.read(p)
    emb.metadata["tags"].append("z")  # edited in place
    edited = tmp_path / "edited.fifu"
    wv.write(emb, edited)
    assert b'tags = [ "x", "y",]' not in edited.read_bytes()
    assert ff.load_finalfusion(str(edited)).metadata == {**meta, "tags": ["x", "y", "z"]}
    emb.metadata = None
    wv.write(emb, edited)
    assert ff.load_finalfusion(str(edited)).metadata is None


def _ff_chunks(data):
    """The chunks of a finalfusion file as (id, bytes) in file order."""
    n = int.from_bytes(data[8:12], "little")
    at, out = 12 + 4 * n, []
    while at < len(data):
        end = at + 12 + int.from_bytes(data[at + 4 : at + 12], "little")
        out.append((int.from_bytes(data[at : at + 4], "little"), data[at:end]))
        at = end
    return out


def _splice(data, at, chunk_id, body):
    """``data`` (a finalfusion file) with a chunk inserted before its chunk ``at``, listed in the header. The
    body is a multiple of 4 bytes, so the chunks after it keep their padding as finalfusion-python wrote it."""
    assert len(body) % 4 == 0
    chunks = _ff_chunks(data)
    chunks.insert(at, (chunk_id, chunk_id.to_bytes(4, "little") + len(body).to_bytes(8, "little") + body))
    head = b"FiFu" + bytes(4) + len(chunks).to_bytes(4, "little")
    return head + b"".join(i.to_bytes(4, "little") for i, _ in chunks) + b"".join(c for _, c in chunks)


@pytest.fixture
def counts_chunk():
    """Chunk type 101, registered for the test: a u32 count and that many u32 values."""
    body = cs.Struct("n" / cs.Int32ul * "number of values", "values" / framework.NumpyArray("<u4", cs.this.n))
    codec.register_chunk(101, "counts", body)
    yield
    del schema.CHUNK_TYPES[101]
    codec._FORMAT.schemas.pop("chunk 101: counts")


@pytest.mark.parametrize("case", ["registered type after the norms", "unknown id before the norms",
                                  "unknown id before the vocabulary"])
def test_chunks_the_model_does_not_use_are_written_back_in_their_place(tmp_path, counts_chunk, case):
    """A chunk of a user-registered type or of an unknown id, spliced into a file finalfusion-python wrote
    (metadata, vocab, storage, norms), comes back in its place after read + write and after convert; a file
    whose rows were edited keeps it too."""
    rng = np.random.default_rng(8)
    m = rng.normal(size=(3, 4)).astype(np.float32)
    base = tmp_path / "base.fifu"
    ff.Embeddings(ff.storage.NdArray(m), ff.vocab.SimpleVocab(["a", "b", "c"]),
                  norms=ff.norms.Norms(np.ones(3, np.float32)),
                  metadata=ff.metadata.Metadata({"k": 1})).write(str(base))
    at, chunk_id, body = {"registered type after the norms": (4, 101, b"\2\0\0\0\7\0\0\0\x09\0\0\0"),
                          "unknown id before the norms": (3, 42, b"xyz!"),
                          "unknown id before the vocabulary": (1, 42, b"abcdefgh")}[case]
    p = tmp_path / "spliced.fifu"
    p.write_bytes(_splice(base.read_bytes(), at, chunk_id, body))
    assert wv.validate(p).ok
    _assert_rewritten_byte_identical(p, tmp_path)
    out = tmp_path / "out.fifu"
    emb = wv.read(p)
    emb.vectors = emb.vectors + 1
    wv.write(emb, out)
    ids = [i for i, _ in _ff_chunks(out.read_bytes())]
    assert ids == [i for i, _ in _ff_chunks(p.read_bytes())]
    assert _ff_chunks(out.read_bytes())[at][1][12:] == body
    assert np.array_equal(wv.read(out).vectors, m + 1)
    emb.norms, emb.metadata = None, None  # chunks the model no longer has are left out, the others stay
    wv.write(emb, out)
    kept = [i for i, _ in _ff_chunks(p.read_bytes()) if i not in (5, 6)]
    assert [i for i, _ in _ff_chunks(out.read_bytes())] == kept
    again = tmp_path / "again.fifu"
    with pytest.warns(wv.ValuesChangedWarning):  # norms new to the model: right after the storage
        wv.write(wv.read(out), again, normalize=True)
    ids = [i for i, _ in _ff_chunks(again.read_bytes())]
    assert ids == kept[: kept.index(2) + 1] + [6] + kept[kept.index(2) + 1 :]


def test_embeddings_whose_parts_disagree_are_refused_before_a_byte_is_written(tmp_path):
    """Words edited to 101 for 100 rows, 50 norms for 100 words, a word added to a lazily read quantized
    model: a BuildError naming what disagrees, and no file (not even a temporary one) is started."""
    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in range(100)]
    grown = wv.Embeddings(words, rng.normal(size=(100, 4)).astype(np.float32))
    grown.words.append("w100")
    half_norms = wv.Embeddings(words, rng.normal(size=(100, 4)).astype(np.float32), norms=np.ones(50, "<f4"))
    q = _fifu(tmp_path / "q.fifu", cs.Container(chunk_id=1, name="simple_vocab",
                                                body=cs.Container(n_words=3, words=["a", "b", "c"])),
              _quantized(rng, 3, 2, 4, 2))
    lazy = wv.read(q)
    lazy.words.append("d")
    out, grew = tmp_path / "out", []
    out.mkdir()
    for emb, what in [(grown, "words: 101 words but 100 vector rows"),
                      (half_norms, "norms: 50 norms for 100 words"),
                      (lazy, "words: 4 words but 3 vector rows")]:
        for options in [{}, {"normalize": True}]:
            with pytest.raises(BuildError, match=what) as e:
                wv.write(emb, out / "x.fifu", progress=grew.append, **options)
            assert e.value.format == "finalfusion"
            assert not grew and not list(out.iterdir())


def _gensim_bin(path, rng):
    """A word2vec binary file written by gensim (the peer), rows far from unit length; its vectors."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors(8)
    kv.add_vectors([f"w{i}" for i in range(50)], (rng.normal(size=(50, 8)) * 3).astype(np.float32))
    kv.save_word2vec_format(str(path), binary=True)
    return kv.vectors


def _ulps(a, b):
    """How many float32 steps apart each pair of values is."""
    return np.abs(np.asarray(a, np.float32).view(np.int32).astype(np.int64) - np.asarray(b, np.float32).view(np.int32))


def test_convert_normalises_by_default_and_keeps_the_numbers_with_no_normalize(tmp_path, capsys):
    """convert x.bin x.fifu writes what finalfusion's own converters write: unit rows and their norms in NdNorms
    (finalfusion-python reads both), with one warning line; convert x.fifu y.bin multiplies them back, with one
    line, each value within an ulp of gensim's (most bit for bit). --no-normalize (normalize=False) keeps every
    number both ways: the .fifu holds gensim's rows and no norms, and y.bin is gensim's file byte for byte,
    silently. (Before: the default was the raw rows, which finalfusion-python's similarities misread.)"""
    rng = np.random.default_rng(9)
    x = tmp_path / "x.bin"
    m = _gensim_bin(x, rng)
    bits = m.view(np.uint32)
    n = tmp_path / "n.fifu"
    assert cli.main(["convert", str(x), str(n)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("wvformats: warning: normalize") and "changed" in err[0]
    peer = ff.load_finalfusion(str(n))
    assert np.allclose(np.linalg.norm(peer.storage, axis=1), 1, atol=1e-6)
    assert np.allclose(peer.norms, np.linalg.norm(m, axis=1), rtol=1e-6)
    assert cli.main(["convert", str(n), str(tmp_path / "back.bin")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("wvformats: warning: unnormalize") and "changed" in err[0]
    back = wv.read(tmp_path / "back.bin").vectors
    assert _ulps(back, m).max() <= 1 and (_ulps(back, m) == 0).mean() > 0.9
    assert cli.main(["convert", str(n), str(tmp_path / "again.bin"), "--unnormalize"]) == 0  # the same, asked
    assert (tmp_path / "again.bin").read_bytes() == (tmp_path / "back.bin").read_bytes()
    capsys.readouterr()
    assert cli.main(["convert", str(n), str(tmp_path / "unit.bin"), "--no-normalize"]) == 0  # rows as stored
    assert "warning" not in capsys.readouterr().err
    assert np.array_equal(wv.read(tmp_path / "unit.bin").vectors, np.asarray(peer.storage))
    with pytest.warns(wv.ValuesChangedWarning, match="normalize"):
        wv.convert(x, tmp_path / "api.fifu")
    assert (tmp_path / "api.fifu").read_bytes() == n.read_bytes()

    raw = tmp_path / "raw.fifu"
    assert cli.main(["convert", str(x), str(raw), "--no-normalize"]) == 0
    assert cli.main(["convert", str(raw), str(tmp_path / "y.bin"), "--no-normalize"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert np.array_equal(wv.read(tmp_path / "y.bin").vectors.view(np.uint32), bits)
    assert (tmp_path / "y.bin").read_bytes() == x.read_bytes()
    peer = ff.load_finalfusion(str(raw))
    assert np.array_equal(np.asarray(peer.storage).view(np.uint32), bits) and peer.norms is None
    assert cli.main(["convert", str(raw), str(tmp_path / "z.bin")]) == 0  # no norms: nothing to multiply
    assert (tmp_path / "z.bin").read_bytes() == x.read_bytes()
    assert cli.main(["convert", str(raw), str(tmp_path / "both.bin"), "--no-normalize", "--unnormalize"]) == 2
    assert "give one of them" in capsys.readouterr().err


def _peer_files_of_every_kind(tmp_path):
    """finalfusion-python's files of each vocabulary (simple, bucket, fastText, explicit with its short length
    field) and storage (dense, quantized with norms), with metadata and norms."""
    rng = np.random.default_rng(5)
    words = ["hallo", "welt", "Daniël", "überspringen"]
    pq = ff.storage.quantized.PQ(rng.normal(size=(2, 4, 3)).astype(np.float32), None)
    vocabs = {"simple": (ff.vocab.SimpleVocab(words), 0),
              "bucket": (ff.vocab.FinalfusionBucketVocab(words, ff.subword.FinalfusionHashIndexer(bucket_exp=3)), 8),
              "fasttext": (ff.vocab.FastTextVocab(words, ff.subword.FastTextIndexer(n_buckets=5)), 5),
              "explicit": (ff.vocab.ExplicitVocab(words, ff.subword.ExplicitIndexer(["<ha", "hal", "llo"])), 3)}
    for name, (vocab, extra) in vocabs.items():
        rows = len(words) + extra
        for storage in (ff.storage.NdArray(rng.normal(size=(rows, 6)).astype(np.float32)),
                        ff.storage.QuantizedArray(pq, rng.integers(0, 4, (rows, 2), dtype=np.uint8),
                                                  (rng.random(rows) + 0.5).astype(np.float32))):
            p = tmp_path / f"{name}-{type(storage).__name__}.fifu"
            ff.Embeddings(storage, vocab, metadata=ff.metadata.Metadata({"name": name}),
                          norms=ff.norms.Norms(np.ones(len(words), np.float32))).write(str(p))
            yield p


def test_quick_inspect_is_the_schema_parsed_lazily_and_agrees_with_the_full_parse(tmp_path):
    """Over peers' files of every vocabulary and storage: the quick summary (the schema parsed lazily over the
    chunk headers and leading fields) says what the full parse says, and what finalfusion-python reads."""
    for p in _peer_files_of_every_kind(tmp_path):
        quick, full, peer = wv.inspect(p), wv.inspect(p, full=True), ff.load_finalfusion(str(p))
        assert "parts" not in quick and "parts" in full
        for key in ("chunks", "words", "dim", "rows", "quantized", "quirks"):
            assert quick.get(key) == full.get(key), (p.name, key)
        assert [c["type"] for c in quick["chunk_types"]] == [c["type"] for c in full["chunk_types"]]
        spans = {s["field"]: s for s in full["parts"]}
        assert quick["chunk_types"][0]["offset"] == spans["chunks"]["offset"]
        assert sum(c["bytes"] for c in quick["chunk_types"]) == spans["chunks"]["size"]
        assert quick["metadata"] == dict(peer.metadata) and quick["first_words"] == list(peer.vocab.words)
        assert (quick["rows"], quick["dim"]) == tuple(peer.storage.shape)


def test_no_finalfusion_module_reads_file_bytes_by_hand():
    """The schema is the one home of the layout: outside the hash functions of lookups.py, no module of the
    family unpacks bytes (struct, int.from_bytes, .to_bytes)."""
    import ast
    from pathlib import Path

    found = []
    for path in Path(codec.__file__).parent.glob("*.py"):
        if path.name == "lookups.py":  # (FNV-1a and MurmurHash3 of words: hashes, not the file's bytes)
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
            if name in ("struct", "from_bytes", "to_bytes", "unpack", "unpack_from"):
                found.append(f"{path.name}:{node.lineno} {name}")
    assert not found, found
