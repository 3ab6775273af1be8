"""Leader, word2vec binary/text and GloVe: schemas, quirks of real files, options, bad input."""

import struct
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from roundtrip import MODES, assert_truncations_fail, equal
from wvformats.schemas import wordvec as schema

import wvformats as wv
from wvformats import cli, framework
from wvformats.errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from wvformats.families.wordvec import codec

# words for the space-separated formats: no ASCII space, no newline, not empty; NBSP, tabs, astral allowed
spaced_word = st.text(st.characters(blacklist_characters=" \n\r", blacklist_categories=("Cs",)),
                      min_size=1, max_size=12).filter(lambda w: w.strip(" \t\r\x0b\x0c") == w or "\t" in w)
any_word = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
f32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


@st.composite
def embeddings(draw, word=spaced_word, finite=False, min_words=0):
    n = draw(st.integers(min_words, 6))
    dim = draw(st.integers(0, 5))
    words = draw(st.lists(word, min_size=n, max_size=n))
    values = st.floats(width=32, allow_nan=False, allow_infinity=False) if finite else f32
    flat = draw(st.lists(values, min_size=n * dim, max_size=n * dim))
    return words, np.array(flat, dtype="<f4").reshape(n, dim)


@MODES
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(embeddings(finite=False, min_words=1), st.sampled_from(["repr"]), st.booleans(), st.booleans())
def test_text_formats_roundtrip_bit_exact(text_parser, compiled, emb, style, trailing, header):
    parser, accepted = text_parser
    words, vectors = emb
    # text carries "nan", not a NaN's sign or payload: every other value, -0.0 and inf included, is exact
    vectors = np.where(np.isnan(vectors), np.float32(np.nan), vectors).astype("<f4")
    emb_obj = wv.Embeddings(words, vectors)
    if header:
        s, obj, name = schema.word2vec_text, codec._w2v_text_from(emb_obj, trailing_space=trailing), "word2vec-text"
        obj.header.raw = f"{len(words)} {vectors.shape[1]}\n".encode()
    else:
        s, obj, name = schema.glove, codec._glove_from(emb_obj, trailing_space=trailing), "glove"
    data = framework.build(s, obj, format=name, compile=compiled)
    back = framework.parse(s, data, format=name, compile=compiled)
    assert back.records.words == words
    assert back.records.vectors.tobytes() == vectors.tobytes()  # NaN, inf, -0.0 bit-exact via repr
    assert framework.build(s, back, format=name, compile=compiled) == data
    if parser != "lines" and vectors.shape[1]:  # every file in a writer's canonical form takes the fast path
        assert accepted and accepted[-1] == len(words)  # (but lines of words alone, dimension 0)


def test_text_numbers_parse_at_the_dtype_asked_for(text_parser, tmp_path):
    """dtype=float64 keeps what a float32 parse would round (17-digit numbers, as gensim's datatype keeps
    them); the default is float32, rounded from the decimal as numpy rounds it; both parsers agree."""
    parser, accepted = text_parser
    rng = np.random.default_rng(3)
    values = rng.normal(0, 1, (40, 3))
    text = "".join(f"w{i} " + " ".join(repr(float(v)) for v in row) + "\n" for i, row in enumerate(values))
    p = tmp_path / "x.glove"
    p.write_text(text)
    wide = wv.read(p, "glove", dtype=np.float64).vectors
    assert wide.dtype == np.float64 and wide.tobytes() == values.tobytes()
    narrow = wv.read(p, "glove").vectors
    assert narrow.dtype == np.float32 and narrow.tobytes() == values.astype(np.float32).tobytes()
    if parser != "lines":
        assert accepted == [40, 40]


@pytest.mark.parametrize("fmt", ["glove", "word2vec-text"])
def test_words_without_numbers_read_back(tmp_path, fmt):
    """Dimension 0: each line is the word and one space (as gensim writes it), words ending or made of tabs
    included; a line of spaces alone or an empty line is still an error naming it."""
    p = tmp_path / f"d0.{fmt}"
    words = ["\t", "a\t", "\ta", "x\u00a0y"]
    wv.write(wv.Embeddings(words, np.zeros((4, 0), np.float32)), p, fmt)
    back = wv.read(p, fmt)
    assert back.words == words and back.vectors.shape == (4, 0) and wv.validate(p, fmt).ok
    for bad, says in ((b"a \n  \n", "a line needs a word"), (b"a \n\n", "empty line")):
        p.write_bytes((b"2 0\n" if fmt == "word2vec-text" else b"") + bad)
        with pytest.raises(ValueMismatchError, match=says) as e:
            wv.read(p, fmt)
        assert e.value.path == "records[1]"


def test_a_number_only_python_would_take_is_named_on_its_line(tmp_path):
    """'1_000' parses with float() but not with the numpy parser that reads the lines: the error names the
    line and the token, not the chunk of lines it was parsed with."""
    lines = [f"w{i} 1 2 3\n" for i in range(10)]
    lines[5] = "w5 1_000 2 3\n"
    p = tmp_path / "u.glove"
    p.write_text("".join(lines))
    with pytest.raises(ValueMismatchError, match="1_000") as e:
        wv.read(p, "glove")
    assert e.value.path == "records[5]" and e.value.offset == len("".join(lines[:5])) + 2


@pytest.mark.parametrize("style", ["fixed6", "g5"])
def test_lossy_text_styles_rebuild_byte_exact(text_parser, style):
    rng = np.random.default_rng(1)
    vectors = np.round(rng.normal(0, 1, (5, 4)), 4).astype("<f4")
    obj = codec._w2v_text_from(wv.Embeddings(list("abcde"), vectors), style=style, trailing_space=True)
    data = framework.build(schema.word2vec_text, obj, format="w")
    back = framework.parse(schema.word2vec_text, data, format="w")
    assert back.records.layout.trailing_space
    assert back.records.layout.style in ("repr", style)  # short values can read as both
    assert framework.build(schema.word2vec_text, back, format="w") == data


def test_leader_bytes_match_the_reference_layout():
    data = framework.build(schema.leader, codec._leader_from((["a", "é"], np.array([[1.0], [2.0]]))),
                           format="leader")
    expected = (struct.pack("<QQQ", 38941, 2, 1) + struct.pack("<I", 1) + b"a" + struct.pack("<f", 1.0)
                + struct.pack("<I", 2) + "é".encode() + struct.pack("<f", 2.0))
    assert data == expected


def test_word2vec_gensim_example_bytes():
    # the note's example: gensim writes exactly these bytes for a -> [0.1, 1e-07, 3.4028235e+38, -0.0]
    v = np.array([[0.1, 1e-07, 3.4028235e38, -0.0]], dtype="<f4")
    data = framework.build(schema.word2vec_binary, codec._w2v_bin_from((["a"], v)), format="w")
    assert data == b"1 4\na \xcd\xcc\xcc=\x95\xbf\xd63\xff\xff\x7f\x7f\x00\x00\x00\x80"
    text = framework.build(schema.word2vec_text, codec._w2v_text_from((["a"], v)), format="w")
    assert text == b"1 4\na 0.1 1e-07 3.4028235e+38 -0.0\n"


@pytest.fixture
def emb():
    words = ["the", "naïve", "日本", "a\u00a0b", "x\ty"]
    return wv.Embeddings(words, np.arange(15, dtype="<f4").reshape(5, 3) / 7)


@pytest.mark.parametrize("fmt,ext", [("leader", "leader"), ("word2vec-binary", "bin"),
                                     ("word2vec-text", "txt"), ("glove", "glove")])
def test_read_write_sniff_validate(tmp_path, emb, fmt, ext):
    p = tmp_path / f"e.{ext}"
    wv.write(emb, p)
    assert wv.sniff(p) == fmt
    got = wv.read(p)
    assert got.words == emb.words and got.vectors.dtype == np.float32
    assert np.array_equal(got.vectors, emb.vectors)
    assert got["日本"].tolist() == emb.vectors[2].tolist() and "a\u00a0b" in got and got.index("x\ty") == 4
    report = wv.validate(p)
    assert report.ok and report.size == p.stat().st_size
    # every strict prefix fails cleanly or warns, except that GloVe (no header) cut right after a line
    # break is a shorter GloVe file; a text file cut inside its last number reads with a warning
    data = p.read_bytes()
    for n in range(len(data)):
        q = tmp_path / "cut"
        q.write_bytes(data[:n])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                got = wv.read(q, fmt)
            except FormatError:
                assert not caught, n  # no warning for a file that fails
                continue
        if any(issubclass(w.category, wv.NoFinalNewlineWarning) for w in caught):
            assert fmt in ("glove", "word2vec-text") and data[n - 1] != 10, n
            assert len(got) == len(emb) if fmt == "word2vec-text" else len(got) <= len(emb), n
        else:
            assert fmt == "glove" and (n == 0 or data[n - 1] == 10) and len(got) < len(emb), n


@pytest.mark.parametrize("fmt,ext", [("word2vec-text", "txt"), ("glove", "glove")])
def test_text_without_final_newline_reads_like_the_peers_and_rebuilds(tmp_path, fmt, ext):
    """A last line without its newline (scripts joining lines write them): read as complete, as gensim and
    word-vectors read it, with a warning naming the line; validate rebuilds it byte-exact."""
    body = b"a 1 2.5 3\nb\xc2\xa0c -4 5e-05 6"
    p = tmp_path / f"e.{ext}"
    p.write_bytes((b"2 3\n" if fmt == "word2vec-text" else b"") + body)
    with pytest.warns(wv.NoFinalNewlineWarning, match=r"records\[1\] at byte"):
        got = wv.read(p)
    assert got.words == ["a", "b\u00a0c"]
    assert got.vectors.tolist() == np.array([[1, 2.5, 3], [-4, 5e-05, 6]], np.float32).tolist()
    with pytest.warns(wv.NoFinalNewlineWarning):
        assert wv.validate(p).ok
    out = tmp_path / f"copy.{ext}"
    wv.write(got, out)
    assert out.read_bytes().endswith(b" 6.0\n")  # written in the canonical form (numpy's spelling)
    with pytest.warns(wv.NoFinalNewlineWarning):
        assert wv.read(p, limit=5).words == got.words  # GloVe: a limit past the end is at most


def test_a_file_that_fails_is_not_also_warned_about(tmp_path, capsys):
    p = tmp_path / "bad.glove"
    p.write_bytes(b"a 1 2\nb 3 x")  # no final newline, and not a number
    assert cli.main(["inspect", "-f", "glove", str(p)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"wvformats: error: {p}: glove records[1]"), err


def test_cli_prints_a_warning_once_as_one_line(tmp_path, capsys):
    p = tmp_path / "e.glove"
    p.write_bytes(b"a 1 2\nb 3 4")
    assert cli.main(["validate", str(p)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["wvformats: warning: glove records[1] at byte 6: the last line has no newline; read as "
                   "complete (a file cut off inside its last number would look the same)"]
    for command in ("dump", "inspect"):  # the annotated walk names the format too
        assert cli.main([command, str(p)]) == 0
        assert capsys.readouterr().err.startswith("wvformats: warning: glove records[1] at byte 6:")


@pytest.mark.parametrize("fmt", ["leader", "word2vec-binary"])
def test_single_byte_corruptions_parse_or_fail_cleanly(tmp_path, emb, fmt):
    p = tmp_path / "e"
    wv.write(emb, p, fmt)
    data = p.read_bytes()
    rng = np.random.default_rng(7)
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] = (bad[i] + int(rng.integers(1, 256))) % 256
        try:
            framework.parse(wv.registry.get(fmt).schema, bytes(bad), format=fmt)
        except FormatError:
            pass


def test_float64_input_is_cast_never_corrupt(tmp_path):
    p = tmp_path / "e.leader"
    wv.write(wv.Embeddings(["a", "b"], np.array([[0.5, 1.5], [2.5, 3.5]], dtype=np.float64)), p)
    assert p.stat().st_size == 24 + 2 * (4 + 1 + 8)
    assert wv.read(p).vectors.dtype == np.float32


def test_word2vec_c_trailing_newline_and_google_news_style(tmp_path, emb):
    c_style = tmp_path / "c.bin"
    gn_style = tmp_path / "gn.bin"
    wv.write(emb, c_style, newline=True)
    wv.write(emb, gn_style)
    assert c_style.stat().st_size == gn_style.stat().st_size + len(emb)
    a, b = wv.read(c_style), wv.read(gn_style)
    assert a.words == b.words == emb.words and np.array_equal(a.vectors, b.vectors)
    assert wv.validate(c_style).ok and wv.validate(gn_style).ok


def test_text_with_trailing_spaces_crlf_and_odd_header(tmp_path, text_parser):
    p = tmp_path / "x.vec"
    p.write_bytes(b"2 3 \r\nfoo 1 2 3 \r\nbar 4 5e-05 -6 \r\n")
    assert wv.sniff(p) == "word2vec-text"
    e = wv.read(p)
    assert e.words == ["foo", "bar"] and e.vectors[1].tolist() == pytest.approx([4, 5e-05, -6])
    assert wv.validate(p).ok
    assert bool(text_parser[1]) == (text_parser[0] != "lines")


def test_glove_sniffs_with_exponents_integers_and_cjk(tmp_path, text_parser):
    p = tmp_path / "g"
    p.write_text("日本 1e-05 2\n東京 3 4.5\n", encoding="utf-8")
    assert wv.sniff(p) == "glove"
    assert wv.read(p).words == ["日本", "東京"]


def test_header_count_larger_than_records_is_a_clear_error(tmp_path, text_parser):
    for fmt, data in [("word2vec-binary", b"3 1\na \0\0\0\0"), ("word2vec-text", b"3 1\na 1\n"),
                      ("leader", struct.pack("<QQQIc", 38941, 3, 0, 1, b"a"))]:
        p = tmp_path / fmt
        p.write_bytes(data)
        with pytest.raises(TruncatedError) as e:
            wv.read(p, fmt)
        assert e.value.format == fmt and "records" in (e.value.path or "")


def test_header_count_smaller_than_records_is_reported_by_validate(tmp_path, text_parser):
    p = tmp_path / "x.txt"
    p.write_bytes(b"1 1\na 1\nb 2\n")
    assert wv.read(p).words == ["a"]
    report = wv.validate(p)
    assert report.problems and not report.ok


def test_unicode_errors_option(tmp_path):
    p = tmp_path / "cut.bin"
    p.write_bytes(b"2 1\n\xe3\x81\x82\xe3\x83 \0\0\x80?ok \0\0\0@")
    with pytest.raises(ValueMismatchError) as e:
        wv.read(p)
    assert e.value.path == "records[0].word" and e.value.offset == 4 + 3
    assert wv.read(p, unicode_errors="replace").words == ["あ\ufffd", "ok"]
    assert wv.read(p, unicode_errors="ignore").words == ["あ", "ok"]


def test_duplicates_first_wins_with_warning(tmp_path, text_parser):
    p = tmp_path / "d.txt"
    p.write_bytes(b"4 1\na 1\nb 2\na 3\nc 4\n")
    with pytest.warns(wv.DuplicateWordsWarning):
        e = wv.read(p)
    assert e.words == ["a", "b", "a", "c"] and e["a"][0] == 1 and e.duplicates == 1 and e.index("c") == 3


class _Colliding(str):
    """A str whose hash collides with every other one's: the duplicate count must compare the words."""

    def __hash__(self) -> int:
        return 7


@given(st.lists(st.sampled_from(["a", "b", "東", "a\u00a0", ""]) | st.text(max_size=3), max_size=40),
       st.booleans())
def test_duplicate_count_equals_what_the_index_shadows(words, collide):
    from wvformats.embeddings import count_duplicates

    if collide:
        words = [_Colliding(w) for w in words]
    assert count_duplicates(words) == len(words) - len(set(words))
    e = wv.Embeddings(words, np.zeros((len(words), 1), np.float32))
    assert e.duplicates == len(words) - len(e.vocab)


def test_limit_vocab_and_dtype_options(tmp_path, emb):
    for fmt in ["leader", "word2vec-binary", "word2vec-text", "glove"]:
        p = tmp_path / fmt
        wv.write(emb, p, fmt)
        assert wv.read(p, fmt, limit=2).words == emb.words[:2]
        sub = wv.read(p, fmt, vocab={"日本", "the", "missing"})
        assert sub.words == ["the", "日本"] and sub.vectors.shape == (2, 3)
        assert np.array_equal(sub["日本"], emb["日本"])
        assert wv.read(p, fmt, dtype=np.float64).vectors.dtype == np.float64


def test_unwritable_words_are_refused(tmp_path):
    for fmt in ["word2vec-binary", "word2vec-text", "glove"]:
        with pytest.raises(BuildError) as e:
            wv.write(wv.Embeddings(["ok", "a b"], np.zeros((2, 1))), tmp_path / "x", fmt)
        assert e.value.path == "records[1].word"
        assert not (tmp_path / "x").exists()  # atomic: nothing left behind
    assert list(tmp_path.iterdir()) == []


def test_convert_refuses_to_overwrite(tmp_path, emb):
    src = tmp_path / "a.leader"
    wv.write(emb, src)
    dst = tmp_path / "b.bin"
    wv.convert(src, dst)
    with pytest.raises(FileExistsError):
        wv.convert(src, dst)
    with pytest.raises(FormatError):
        wv.convert(src, src, "leader", overwrite=True)
    assert wv.validate(src).ok
    wv.convert(src, dst, overwrite=True)
    assert equal(wv.read(dst).vectors, emb.vectors)


def test_sniff_fails_clearly(tmp_path):
    p = tmp_path / "junk"
    p.write_bytes(b"\x80\x04pickle")
    with pytest.raises(wv.UnknownFormatError) as e:
        wv.sniff(p)
    assert "80 04" in str(e.value)


def test_validate_names_the_field_of_a_difference(tmp_path):
    p = tmp_path / "x.txt"
    p.write_bytes(b"1 2\na 0.10 2\n")  # "0.10" is not any writer's form: the rebuild writes "0.1"
    report = wv.validate(p)
    assert not report.ok and report.first_difference == 9 and report.field == "records"


@MODES
def test_word2vec_binary_truncations_fail_where_the_lockstep_walk_runs(compiled):
    rng = np.random.default_rng(3)
    words = ["a", "bb", "ccc", "é" * 20, "x" * 40, "y", "zz", "w"]
    vectors = rng.choice(np.array([32, 10, 0, 65], np.uint8), (len(words), 64)).view("<f4")
    for newline in (False, True):
        obj = codec._w2v_bin_from((words, vectors), newline=newline)
        data = framework.build(schema.word2vec_binary, obj, format="word2vec-binary")
        assert_truncations_fail(schema.word2vec_binary, data[: len(data) - newline], format="word2vec-binary",
                                compiled=compiled)


def test_text_files_larger_than_one_parse_chunk(tmp_path, text_parser):
    """More lines than one number-parsing chunk (16384): same rows, the vocab filter across chunks keeps
    first occurrences, and a bad number far into the file is named by its line."""
    rng = np.random.default_rng(4)
    n = 40000
    words = [f"w{i}" for i in range(n)]
    m = rng.normal(size=(n, 3)).astype(np.float32)
    p = tmp_path / "big.txt"
    wv.write(wv.Embeddings(words, m), p, "glove")
    e = wv.read(p, "glove")
    assert e.words == words and np.array_equal(e.vectors, m)
    sub = wv.read(p, "glove", vocab={"w5", "w20000", "w39999", "nope"})
    assert sub.words == ["w5", "w20000", "w39999"] and np.array_equal(sub.vectors, m[[5, 20000, 39999]])
    lines = p.read_bytes().split(b"\n")
    lines[35000] = lines[35000].replace(b" ", b" x", 1)
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueMismatchError) as err:
        wv.read(p, "glove")
    assert err.value.path.endswith("[35000]")


def test_a_wide_first_line_over_many_short_ones_allocates_nothing_big(tmp_path, monkeypatch, text_parser):
    """GloVe: a first line of 200,000 values, then 200,000 one-value lines. The fast path sizes its matrix
    from the newline count and the first line's width (40 billion values here); it must see that they cannot
    fit in the file and decline, and the line loop names the short line."""
    import tracemalloc

    p = tmp_path / "wide.txt"
    p.write_bytes(b"w" + b" 1" * 200_000 + b"\n" + b"a 1\n" * 200_000)
    tracemalloc.start()
    with pytest.raises(FormatError) as e:
        wv.read(p, "glove")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert e.value.path.startswith("records") and peak < 200 << 20


@pytest.mark.parametrize("name", ["word2vec-text", "glove"])
def test_files_written_under_numpy_before_2_3_rebuild_byte_exact(tmp_path, name):
    """A text file with numbers from 1e6 up spelt as numpy before 2.3 spelt them reads, reports the style
    and validates byte-exact (it failed at its first such number), and converts in that style."""
    rows = np.array([[0.1, 1234567.0, 1e-5], [2.5, -3e20, 9.999999e15], [1e6, 15000000.0, -0.0]], np.float32)
    with np.printoptions(legacy="2.2"):
        body = "".join(f"w{i} " + " ".join(str(v) for v in row) + "\n" for i, row in enumerate(rows))
    assert "1234567.0" in body and "3e+20" in body
    p = tmp_path / "old.txt"
    p.write_text(body if name == "glove" else f"3 3\n{body}")
    assert wv.validate(p, name).ok
    assert wv.inspect(p, name)["number_style"] == "repr16"
    assert wv.read(p, name).vectors.tobytes() == rows.tobytes()
    wv.write(wv.read(p, name), tmp_path / "again.txt", name, style="repr16")
    assert (tmp_path / "again.txt").read_bytes() == p.read_bytes()


@pytest.mark.parametrize("fmt", ["leader", "word2vec-binary", "word2vec-text", "glove"])
def test_embeddings_whose_parts_disagree_are_refused_before_a_byte_is_written(tmp_path, fmt):
    """Words edited to 101 for 100 rows, or norms that are not one per word for unnormalize: a BuildError
    naming what disagrees before the file is started (the norms were cut to the words before)."""
    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in range(100)]
    grown = wv.Embeddings(words, rng.normal(size=(100, 4)).astype(np.float32))
    grown.words.append("w100")
    more_norms = wv.Embeddings(words, rng.normal(size=(100, 4)).astype(np.float32), norms=np.ones(150, "<f4"))
    grew = []
    for emb, what, options in [(grown, "words: 101 words but 100 vector rows", {}),
                               (more_norms, "norms: 150 norms for 100 words", {"unnormalize": True})]:
        with pytest.raises(BuildError, match=what) as e:
            wv.write(emb, tmp_path / "x", fmt, progress=grew.append, **options)
        assert e.value.format == fmt
        assert not grew and not list(tmp_path.iterdir())
