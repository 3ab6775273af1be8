"""The quick summary of text files (standard library only, what ``inspect`` gives without numpy) against
the codec's ``inspect_head``: the same answer wherever it gives one, None where the codec must read the
sample; and its float32 spelling test against numpy's own ``str``."""

import io
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from wvformats.schemas import wordvec as schema

import wvformats as wv
from wvformats import framework, registry
from wvformats.errors import FormatError, NoFinalNewlineWarning
from wvformats.families.wordvec import codec, quick

# words for the text formats: no ASCII space, newline or \r, not empty, not ending in a tab
word = st.text(st.characters(blacklist_characters=" \n\r", blacklist_categories=("Cs",)), min_size=1,
               max_size=8).filter(lambda w: w.rstrip("\t\x0b\x0c") == w)


def _spellings(x: np.float32) -> set[str]:
    """numpy's str of ``x`` and the spellings a writer might use instead."""
    v = float(x)
    s = str(x)
    return {s, "%f" % v, "%.5g" % v, "%.9g" % v, repr(v), "%.6g" % v, s + "0", "0" + s.lstrip("-"), s.lstrip("-"),
            "-" + s.lstrip("-"), s.replace("e-0", "e-"), "%e" % v}


def _check_repr(values: np.ndarray) -> int:
    checked = 0
    for x in values:
        for t in _spellings(x):
            try:
                v = quick.f32(float(t))
            except ValueError:  # ("nan0")
                continue
            found = quick.is_repr32(t, v)
            if found is None:  # (only from 1e6 up, where numpy versions spell differently)
                assert abs(v) >= 1e6 and not math.isinf(v), t
                continue
            assert found == (t == str(np.float32(v))), (t, v, str(np.float32(v)))
            checked += 1
    return checked


def test_is_repr32_is_numpys_float32_str():
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, 30000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    powers = np.array([2.0**k for k in range(-149, 128)], np.float32)  # where a float32's lower gap is half
    values = [bits, rng.standard_normal(30000).astype(np.float32),
              (rng.standard_normal(10000) * 1e-3).astype(np.float32), powers,
              np.nextafter(powers, np.float32(0)), np.nextafter(powers, np.float32(np.inf)),
              np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-4, -1e-4, 999999.94, 1e6], np.float32)]
    assert sum(_check_repr(v) for v in values) > 300000


@given(st.floats(width=32))
def test_is_repr32_agrees_with_numpy_on_any_float32(x):
    _check_repr(np.array([x], np.float32))


def _codec_summary(name: str, data: bytes) -> dict:
    return registry.get(name).inspect_head(data, complete=True)


def _quick_summary(name: str, data: bytes) -> dict | None:
    return registry.sniffer(name).quick_inspect(data)


def _text(name: str, words: list[str], vectors: np.ndarray, style: str, trailing: bool, crlf: bool) -> bytes:
    emb = wv.Embeddings(words, vectors)
    if name == "glove":
        obj, s = codec._glove_from(emb, style=style, trailing_space=trailing), schema.glove
    else:
        obj, s = codec._w2v_text_from(emb, style=style, trailing_space=trailing), schema.word2vec_text
    out = io.BytesIO()
    framework.build(s, obj, out, format=name)
    data = out.getvalue()
    return data.replace(b"\n", b"\r\n") if crlf else data


@given(name=st.sampled_from(["word2vec-text", "glove"]), n=st.integers(1, 12), dim=st.integers(1, 5),
       data=st.data(), style=st.sampled_from(["repr", "fixed6", "g5"]), trailing=st.booleans(),
       crlf=st.booleans())
def test_quick_summary_is_the_codecs(name, n, dim, data, style, trailing, crlf):
    words = data.draw(st.lists(word, min_size=n, max_size=n))
    small = (st.floats(-1e5, 1e5) | st.floats(-1e-3, 1e-3)).map(lambda x: float(np.float32(x))) | st.just(-0.0)
    vectors = np.array(data.draw(st.lists(small, min_size=n * dim, max_size=n * dim)), np.float32).reshape(n, dim)
    text = _text(name, words, vectors, style, trailing, crlf)
    got = _quick_summary(name, text)
    assert got is not None  # a clean file, numbers below 1e6: the quick summary answers
    assert got == _codec_summary(name, text)


@given(name=st.sampled_from(["word2vec-text", "glove"]), lines=st.lists(
    st.tuples(word, st.lists(st.floats(width=32) | st.sampled_from([1e6, -3e7, 1e20]), min_size=1,
                             max_size=3), st.sampled_from(["%r", "%.3f", "%g", "%.2e", "np"])),
    min_size=1, max_size=8))
def test_quick_summary_answers_as_the_codec_or_leaves_it_the_file(name, lines):
    """Lines of any numbers in any spelling, of any widths: where the quick summary answers, the codec's
    summary is the same; where the codec refuses the sample, the quick summary leaves it to the codec."""
    body = b"".join((w + " " + " ".join(str(np.float32(v)) if f == "np" else f % v for v in vs) + "\n").encode()
                    for w, vs, f in lines)
    text = body if name == "glove" else f"{len(lines)} {len(lines[0][1])}\n".encode() + body
    got = _quick_summary(name, text)
    try:
        expected = _codec_summary(name, text)
    except FormatError:
        assert got is None
        return
    if got is not None:
        assert got == expected


@pytest.mark.parametrize("name", ["word2vec-text", "glove"])
def test_quick_summary_of_a_file_longer_than_the_sample(name):
    rng = np.random.default_rng(3)
    n = quick.SAMPLE_ROWS * 2 + 37
    words = [f"w{i}" + "x" * int(rng.integers(0, 9)) for i in range(n)]
    text = _text(name, words, rng.standard_normal((n, 7)).astype(np.float32), "repr", False, False)
    got = _quick_summary(name, text)
    assert got is not None and got == _codec_summary(name, text)
    assert got.get("words", got.get("words_estimate")) != quick.SAMPLE_ROWS
    if name == "glove":
        assert abs(got["words_estimate"] - n) < n * 0.05


@pytest.mark.parametrize("name", ["word2vec-text", "glove"])
@pytest.mark.parametrize("fault", [
    (b"a 1.0 2.0\n", b"a 1.0\n"),  # a short line
    (b"a 1.0 2.0\n", b"a 1.0 2..0\n"),  # not a number
    (b"a 1.0 2.0\n", b"\xff 1.0 2.0\n"),  # a word that is not UTF-8
    (b"a 1.0 2.0\n", b"\n"),  # an empty line
    (b"b 3.0 4.0\n", b"b 3.0 4.0"),  # no final newline (the codec warns)
])
def test_quick_summary_leaves_faults_to_the_codec(tmp_path, name, fault):
    good = b"a 1.0 2.0\nb 3.0 4.0\n"
    text = good.replace(*fault)
    if name == "word2vec-text":
        text = b"2 2\n" + text
    assert _quick_summary(name, text) is None
    p = tmp_path / "f.txt"
    p.write_bytes(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            info = wv.inspect(p, name)
        except FormatError as e:  # the codec's error, naming the field and the byte
            assert e.format == name and e.path.startswith("records[") and e.offset is not None
        else:
            assert info["format"] == name and "number_style" in info
    # the codec's warning of a last line without its newline reaches the user
    assert any(issubclass(w.category, NoFinalNewlineWarning) for w in caught) == (not text.endswith(b"\n"))


def test_inspect_takes_the_quick_summary_and_unicode_errors(tmp_path):
    p = tmp_path / "latin.vec"
    p.write_bytes(b"2 2\nna\xefve 1.0 2.0\nb 3.0 4.0\n")
    with pytest.raises(FormatError):
        wv.inspect(p)
    info = wv.inspect(p, unicode_errors="replace")
    assert info["first_words"] == ["na\ufffdve", "b"] and info["size"] == p.stat().st_size
    assert registry.sniffer("word2vec-text").quick_inspect(p.read_bytes(), unicode_errors="replace") is not None


@pytest.mark.parametrize("text", [
    b"0 16777217\n",  # a dimension over 2^24: the codec refuses it
    b"1 16777217\nw 1.0\n",
    b"0 3\n", b"0 0\n", b"2 0\na \nb \n",  # no words; dimension 0
    b" 2  2 \na 1.0 2.0\nb 3.0 4.0\n", b"02 2\na 1.0 2.0\nb 3.0 4.0\n", b"2\t2\r\na 1.0 2.0\r\nb 3.0 4.0\r\n",
    b"2 2\na 1.0 2.0\nb 3.0 4.0\n", b"3 2\na 1.0 2.0\nb 3.0 4.0\n", b"1 2\na 1.0 2.0\nb 3.0 4.0\n",
    b"2 2 2\na 1.0 2.0\n", b"2 " + b"9" * 300 + b"\n",
])
def test_quick_summary_of_odd_headers_is_the_codecs_or_none(text):
    """Headers the generated files never have: where the codec refuses one, the quick summary leaves it to the
    codec; where it answers, it gives the codec's answer."""
    got = _quick_summary("word2vec-text", text)
    try:
        expected = _codec_summary("word2vec-text", text)
    except FormatError as e:
        assert got is None, (got, e)
        assert e.path.startswith(("header", "records"))
        return
    assert got is None or got == expected
