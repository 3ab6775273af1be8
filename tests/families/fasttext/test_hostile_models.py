"""fastText models that fuzzing and users found (issue 37): header values that asked for tables out of
proportion to the file, a loss fastText does not define, lines fastText cannot be given as bytes and
thresholds below zero. Each answer is the fasttext module's (run in a subprocess) or a located FormatError,
in bounded memory."""

import math
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats.errors import FormatError
from wvformats.families.fasttext import codec

pytest.importorskip("fasttext")  # the peer (fasttext-numpy2-wheel), in the 'peers' extra
from families.fasttext.test_fasttext import ask, f32  # noqa: E402 - the peer's answers, one home
from families.fasttext.test_predict import SENTENCES, assert_same, mixed_lines  # noqa: E402

TRAINED = Path(__file__).parents[2] / "data" / "fasttext" / "trained"
WORDS = ["hello", "zzqx", "Bonjour", "été", "日本語", "</s>", "a"]


def _built(parsed, path: Path) -> Path:
    with open(path, "wb") as f:
        codec.build(parsed, f)
    return path


def _peak(work) -> tuple[object, int]:
    """``work()`` and the most memory Python and numpy held at once while it ran (bytes)."""
    tracemalloc.start()
    try:
        got = work()
        return got, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _answers(m, lines: list[str], k: int = 2) -> tuple:
    """Everything a user asks a supervised model: predictions one line at a time and batched, word vectors
    and sentence vectors."""
    return ([m.predict(line, k=k) for line in lines], m.predict(lines, k=k),
            [m.get_word_vector(w) for w in WORDS], m.sentence_vectors(lines))


def _assert_peers(m, path: Path, lines: list[str], got: tuple, k: int = 2) -> None:
    one, batch, vectors, sentences = got
    a = ask(path, lines=lines, k=k, words=WORDS, sentences=lines)
    for i, line in enumerate(lines):
        assert_same(one[i], a["predictions"][i], line)
        assert_same((batch[0][i], batch[1][i]), a["predictions"][i], line)
    assert np.array(vectors).tobytes() == f32(a["words"]).tobytes()
    assert sentences.tobytes() == f32(a["sentences"]).tobytes()


# -- tables sized from header values -------------------------------------------------------------------------

def test_a_bucket_count_out_of_proportion_makes_no_table_of_its_size(lid, tmp_path, kernels):
    """lid.176.ftz with one u32 changed (938014 at byte 43: bucket 505,316,480, minn 3664): the first lookup made
    a bucket -> row table of 1.88 GiB for a 917 kB file. The table is bounded by the prune index (keys past
    its largest key are never kept); the answers are the peer's, and the run holds a few MB."""
    b = bytearray(lid.read_bytes())
    struct.pack_into("<I", b, 43, 938014)  # (../shared/repro/make_repros.py's lid176-bucket-table.ftz)
    path = tmp_path / "lid176-bucket-table.ftz"
    path.write_bytes(bytes(b))
    m = wv.read(path)
    assert int(m.args.bucket) == 505_316_480
    lines = SENTENCES + mixed_lines(m, 40)
    got, peak = _peak(lambda: _answers(m, lines))
    assert peak < 48 << 20, f"{peak / 2**20:.0f} MiB"
    _assert_peers(m, path, lines, got)


def test_prune_keys_far_apart_are_looked_up_without_a_table_of_their_span(lid, tmp_path, kernels):
    """A pruned model of 2^31 - 1 buckets whose prune keys spread over them would make a table of 8 GiB: the
    buckets are looked up in the prune index itself, with the peer's answers, in a few MB. The keys of the
    n-grams of WORDS' words replace the first ones (each keeps its row), so that lookups do hit kept buckets."""
    from wvformats.families.fasttext import subwords

    p = wv.parse_file(lid)
    bucket = p.args.bucket = 2**31 - 1
    blob, starts, lengths, owner = subwords.char_ngrams(WORDS, int(p.args.minn), int(p.args.maxn))
    hit = np.unique(subwords.fasttext_hash_many(blob, starts, lengths) % np.uint32(bucket)).astype(np.int32)
    pruneidx = np.array(p.dictionary.pruneidx)
    pruneidx[: len(hit), 0] = hit
    pruneidx[-1, 0] = bucket - 1
    p.dictionary.pruneidx = pruneidx
    path = _built(p, tmp_path / "far-keys.ftz")
    m = wv.read(path)
    lines = SENTENCES + mixed_lines(m, 40) + [" ".join(WORDS)]
    got, peak = _peak(lambda: _answers(m, lines))
    assert peak < 48 << 20, f"{peak / 2**20:.0f} MiB"
    assert len(m.subword_rows("zzqx")) == int((owner == WORDS.index("zzqx")).sum()) > 3  # every n-gram kept
    _assert_peers(m, path, lines, got)


def test_huge_word_ngrams_cost_what_the_lines_hold(lid, tmp_path, kernels):
    """lid.176.ftz with wordNgrams 8,388,607 (../shared/repro/make_repros.py's lid176-word-ngrams.ftz: 2147483647
    written at byte 27, four bytes changed): a batch's word n-grams looped 8 million times (a MemoryError, or 3 GB
    and 30 s). fastText takes it (every pair of tokens of a line is an n-gram): the peer's answers, in a few MB."""
    b = bytearray(lid.read_bytes())
    struct.pack_into("<I", b, 27, 2147483647)
    for at, v in ((478971, 0x26), (555210, 0xFF), (82, 0xFF), (868250, 0x3F)):
        b[at] = v
    path = tmp_path / "lid176-word-ngrams.ftz"
    path.write_bytes(bytes(b))
    m = wv.read(path)
    assert int(m.args.wordNgrams) == 8_388_607
    lines = SENTENCES + mixed_lines(m, 40)
    got, peak = _peak(lambda: _answers(m, lines))
    assert peak < 48 << 20, f"{peak / 2**20:.0f} MiB"
    _assert_peers(m, path, lines, got)


# -- a loss fastText does not define -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sup-softmax.bin", "sup-hs.bin"])
def test_an_undefined_loss_is_a_located_format_error_at_predict(tmp_path, name):
    """fastText refuses to load a model whose args.loss it does not define ("Unknown loss", from createLoss).
    Only predict uses the loss: it raises FormatError naming args.loss and its byte offset (was a bare
    ValueError); the file is well-formed, so it opens, its word vectors are the input matrix's as for any
    model, and inspect shows the value while validate names it."""
    p = wv.parse_file(TRAINED / name)
    p.args.loss = 9
    path = _built(p, tmp_path / "loss.bin")
    m = wv.read(path)
    with pytest.raises(FormatError) as e:
        m.predict("apple")
    assert e.value.path == "args.loss" and e.value.offset == 32 and e.value.format == "fasttext"
    assert "args.loss is 9" in str(e.value) and "Unknown loss" in str(e.value)
    with pytest.raises(FormatError):
        m.predict(["apple", "day"])
    assert struct.unpack_from("<i", path.read_bytes(), e.value.offset)[0] == 9
    assert m.get_word_vector("apple").tobytes() == wv.read(TRAINED / name).get_word_vector("apple").tobytes()
    assert wv.inspect(path)["loss"] == 9
    report = wv.validate(path)
    assert not report.ok and any("args.loss is 9" in problem for problem in report.problems)


# -- lines and words with a lone surrogate ---------------------------------------------------------------------

LONE = ["a\ud800b", "\ud800", "x\udfff\ud83dy", "caf\ud800\udce9"]


def _as_bytes(s: str) -> bytes:
    """The bytes the library gives a str: surrogate escapes their byte, other surrogates their 3-byte form."""
    return b"".join(bytes([ord(c) - 0xDC00]) if 0xDC80 <= ord(c) <= 0xDCFF else c.encode("utf-8", "surrogatepass")
                    for c in s)


def _escaped(s: str) -> str:
    """The same bytes read from a file: every byte that is not UTF-8 a surrogate escape."""
    return _as_bytes(s).decode("utf-8", "surrogateescape")


@pytest.mark.parametrize("name", ["lid", "sup-hs.bin", "sup-softmax.ftz", "skipgram.bin"])
def test_a_lone_surrogate_is_its_surrogatepass_bytes_everywhere(lid, name, kernels):
    """A lone surrogate that is not an escape of a byte (U+D800) has no UTF-8; predict and get_sentence_vector
    raised UnicodeEncodeError, and so did m[w] and m.embedding(w). The library's fastText vocabularies in
    finalfusion hash such a surrogate by its 3-byte form (surrogatepass), so every str has n-grams there; the
    model does the same, so a .fifu converted from it agrees: a word or line holding one is the word or line
    of those bytes (what reading them from a file gives, surrogate escapes and all), in every lookup."""
    path = lid if name == "lid" else TRAINED / name
    m = wv.read(path)
    for s in LONE:
        e = _escaped(s)
        assert m[s].tobytes() == m[e].tobytes() == m.embedding(s).tobytes() == m.get_word_vector(e).tobytes()
        assert m.get_word_vector(s).tobytes() == m[e].tobytes() and s in m
        assert m.subword_indices(s) == m.subword_indices(e)
        assert m.get_sentence_vector(f"x {s} y").tobytes() == m.get_sentence_vector(f"x {e} y").tobytes()
        assert m.word_vectors([s, "x"]).tobytes() == m.word_vectors([e, "x"]).tobytes()
        if m.labels:
            one, batch = m.predict(f"{s} hello", k=3), m.predict([f"{s} hello", "hello"], k=3)
            same = m.predict(f"{e} hello", k=3)
            assert one[0] == batch[0][0] == same[0]
            assert one[1].tobytes() == batch[1][0].tobytes() == same[1].tobytes()
    # the peer takes bytes for a word: the vectors of those bytes are fastText's
    raw = ask(path, raw_words=[_as_bytes(s).hex() for s in LONE])["raw_words"]
    assert np.array([m[s] for s in LONE]).tobytes() == f32(raw).tobytes()


# -- thresholds below zero -----------------------------------------------------------------------------------

@pytest.mark.parametrize("threshold", [-1.0, -2e-5, -1e-5, -math.inf, math.nan, 1e300])
@pytest.mark.parametrize("name", ["lid", "sup-hs.bin", "sup-softmax.bin", "sup-ova.bin", "many-ova.ftz"])
def test_any_threshold_predicts_what_fasttext_predicts(lid, name, threshold, kernels):
    """``predict(threshold=-1.0)`` raised "math domain error": fastText takes any threshold, log(t + 1e-5) of
    one below -1e-5 is NaN and every comparison with it is false (every label kept), as with a NaN one; one
    past float32's range is infinite (none kept). Labels and probabilities are the peer's to the bit."""
    path = lid if name == "lid" else TRAINED / name
    m = wv.read(path)
    lines = SENTENCES[:8] + ["apple banana day", "night sun über naïve"]
    for k in (2, -1):
        theirs = ask(path, lines=lines, k=k, threshold=threshold)["predictions"]
        batch = m.predict(lines, k=k, threshold=threshold)
        for i, line in enumerate(lines):
            assert_same(m.predict(line, k=k, threshold=threshold), theirs[i], line)
            assert_same((batch[0][i], batch[1][i]), theirs[i], line)


def test_a_model_pruned_to_no_ngram_has_only_its_words_rows(tmp_path, kernels):
    """A prune index of no pairs (pruneidx_size 0, which fastText reads as pruned: pushHash then drops every
    n-gram): vectors, lookups and predictions are the peer's. Found by the mutation fuzz: IndexError in
    Buckets.rows."""
    parsed = codec.parse((TRAINED / "sup-softmax.ftz").read_bytes())
    parsed.dictionary.pruneidx_size = 0
    parsed.dictionary.pruneidx = np.zeros((0, 2), "<i4")
    path = _built(parsed, tmp_path / "pruned-to-nothing.ftz")
    m = wv.read(path)
    assert m.vectors.shape == (m.nwords, m.input.shape[1])
    _assert_peers(m, path, SENTENCES[:6], _answers(m, SENTENCES[:6]))


def test_a_negative_minn_converted_to_finalfusion_is_refused_naming_the_field(tmp_path):
    """finalfusion's min_n is a u32: fastText's minn -1 cannot be written there (it was 'unchecked input')."""
    parsed = codec.parse((TRAINED / "skipgram.bin").read_bytes())
    parsed.args.minn = -1
    path = _built(parsed, tmp_path / "minn-1.bin")
    with pytest.warns(UserWarning), pytest.raises(FormatError) as e:
        wv.convert(path, tmp_path / "out.fifu")
    assert e.value.path.endswith("fasttext_subword_vocab.min_n") and "-1 does not fit the field (u32)" in str(e.value)
    assert not (tmp_path / "out.fifu").exists()


def test_a_pruned_bucket_count_out_of_proportion_is_refused_converting_to_finalfusion(tmp_path):
    """finalfusion has no prune index: a pruned model's buckets become zero rows, which a bucket count past
    fastText's default and far past the kept ones would make out of proportion to the file (64 GiB for
    2**31 - 1 buckets of 8 dimensions: MemoryError, found by the final fuzz campaign). Refused naming args.bucket
    and its byte; the model's own lookups are unaffected."""
    parsed = codec.parse((TRAINED / "sup-softmax.ftz").read_bytes())
    parsed.args.bucket = 2**31 - 1
    path = _built(parsed, tmp_path / "huge-bucket.ftz")
    m = wv.read(path)
    with pytest.warns(UserWarning), pytest.raises(FormatError) as e:
        wv.convert(path, tmp_path / "out.fifu")
    assert (e.value.path, e.value.offset) == ("args.bucket", 40) and "refused" in str(e.value)
    assert not (tmp_path / "out.fifu").exists()
    assert m.predict("hello world")[0]  # (reading and predicting need no such table)
