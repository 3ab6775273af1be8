"""The word-vector sniffers read the head through the plausibility ``schemas/identity.py`` declares (standard
library only), which must say what the schemas say: Leader's magic, the header line, the text and binary
records as the schemas write them. The quick summary reads the header through the same declaration."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from roundtrip import MODES
from wvformats.schemas import wordvec as schema
from wvformats.schemas.identity import (
    GLOVE_HEAD,
    HEAD_BYTES,
    LEADER_HEAD,
    WORD2VEC_BINARY_HEAD,
    WORD2VEC_TEXT_HEAD,
    WORDVEC_BYTES,
    WORDVEC_HEADER,
    WORDVEC_HEADER_MOST,
    WORDVEC_LINES,
)

import wvformats as wv
from wvformats import fileio, framework
from wvformats.errors import FormatError
from wvformats.families.wordvec import codec, quick

EMB = wv.Embeddings(["the", "naïve", "日本", "a\u00a0b", "x\ty"],
                    np.array([[0.5, -1.25, 3e-5], [1e6, -0.0, 7], [1, 2, 3], [-4e-8, 0.1, 0.2], [9, 8, 7]], "<f4"))


def test_the_head_is_what_the_sniffers_are_given():
    assert HEAD_BYTES == fileio.HEAD


@MODES
def test_the_leader_head_is_the_schemas_magic(compiled):
    data = framework.build(schema.leader, codec._leader_from(EMB), format="leader")
    parsed = framework.parse(framework.compiled(schema.leader) if compiled else schema.leader, data, format="leader")
    assert LEADER_HEAD.layout.size == schema.leader.subcons[0].sizeof() == 8
    assert LEADER_HEAD.read(data) == {"magic": parsed.magic} and LEADER_HEAD.plausible(data)
    assert not LEADER_HEAD.plausible(data[:7]) and not LEADER_HEAD.plausible(b"\0" + data[1:])


_SPACE = st.text(" \t", max_size=3).map(str.encode)


@given(count=st.integers(0, 10**12), dim=st.integers(0, 10**6), lead=_SPACE, mid=_SPACE, tail=_SPACE,
       cr=st.booleans(), more=st.sampled_from([b"", b"\t", b"\x0b", b"x", b"1", b"\r"]))
def test_the_declared_header_line_reads_as_the_schemas_header_line(count, dim, lead, mid, tail, cr, more):
    """Wherever the declaration reads a header line, the schema's HeaderLine reads the same count and dim,
    and ends at the same byte."""
    line = lead + str(count).encode() + (mid or b" ") + more + str(dim).encode() + tail + (b"\r" if cr else b"")
    data = line + b"\n"
    found = WORDVEC_HEADER.read(data + b"rest")
    if found is None:  # (stricter than the schema is fine: a file the sniffer passes over, the codec may read)
        assert more, line
        return
    values, end = found
    parsed = framework.parse(schema.word2vec_text.subcons[0], data, format="word2vec-text")  # the header alone
    assert (values["count"], values["dim"]) == (parsed.count, parsed.dim) and end == len(data)


def test_the_header_line_is_read_within_the_bytes_the_schema_looks_at():
    for length, read in ((WORDVEC_HEADER_MOST, True), (WORDVEC_HEADER_MOST + 1, False)):
        line = b" " * (length - 4) + b"1 2\n"
        data = line + b"a 0.5 0.25\n"
        assert len(line) == length
        if read:
            assert framework.parse(schema.word2vec_text, data, format="word2vec-text").header.dim == 2
            assert quick.summary(data, header=True)["dim"] == 2
        else:
            with pytest.raises(FormatError, match="no header line"):
                framework.parse(schema.word2vec_text, data, format="word2vec-text")
            assert quick.summary(data, header=True) is None  # (left to the codec, which reports it)


@pytest.mark.parametrize("style", ["repr", "fixed6", "g5", "repr16"])
@pytest.mark.parametrize("trailing_space", [False, True])
def test_text_records_the_schema_writes_walk_as_the_declared_records(style, trailing_space):
    text = framework.build(schema.word2vec_text, codec._w2v_text_from(EMB, style=style, trailing_space=trailing_space),
                           format="word2vec-text")
    glove = framework.build(schema.glove, codec._glove_from(EMB, style=style, trailing_space=trailing_space),
                            format="glove")
    values, pos = WORDVEC_HEADER.read(text)
    assert (values["count"], values["dim"]) == EMB.vectors.shape and text[pos:] == glove
    lines = WORDVEC_LINES.walk(glove, 0, len(EMB), None)
    assert [line.split(b" ", 1)[0].decode() for line in lines] == EMB.words
    assert {WORDVEC_LINES.width(line) for line in lines} == {EMB.vectors.shape[1]}
    assert WORD2VEC_TEXT_HEAD.plausible(text) and WORD2VEC_TEXT_HEAD.resembles(text)
    assert GLOVE_HEAD.plausible(glove) and GLOVE_HEAD.resembles(glove) and not GLOVE_HEAD.resembles(text)
    assert not WORD2VEC_BINARY_HEAD.plausible(text)


@pytest.mark.parametrize("newline", [False, True])
def test_binary_records_the_schema_writes_walk_as_the_declared_records(newline):
    data = framework.build(schema.word2vec_binary, codec._w2v_bin_from(EMB, newline=newline),
                           format="word2vec-binary")
    parsed = framework.parse(schema.word2vec_binary, data, format="word2vec-binary")
    _, pos = WORDVEC_HEADER.read(data)
    spans = WORDVEC_BYTES.walk(data, pos, len(EMB), EMB.vectors.shape[1])
    assert [data[a:b] for a, b in spans] == [w.encode() + b" " + v.tobytes()
                                             for w, v in zip(parsed.records.words, parsed.records.vectors, strict=True)]
    assert WORD2VEC_BINARY_HEAD.plausible(data) and not WORD2VEC_TEXT_HEAD.plausible(data)
    assert not GLOVE_HEAD.plausible(data)


def test_a_header_of_no_records_leaves_what_each_format_allows_after_it():
    for data, text, binary in ((b"0 3\n", True, True), (b"0 3\n\n \n", True, False), (b"0 3\nx", False, False)):
        assert WORD2VEC_TEXT_HEAD.plausible(data) is text and WORD2VEC_BINARY_HEAD.plausible(data) is binary


def test_the_quick_summary_rounds_to_float32_as_numpy_casts():
    rng = np.random.default_rng(5)
    big = float(np.finfo(np.float32).max)
    values = [*rng.standard_normal(2000) * 10.0 ** rng.integers(-45, 39, 2000), big, np.nextafter(big, np.inf),
              big * (1 + 2**-25), big * (1 + 2**-24), -big * 2, 1e-46, -1e-46, 0.0, -0.0, np.inf, -np.inf]
    with np.errstate(over="ignore"):
        expected = [float(np.float32(v)) for v in values]
    got = [quick.f32(float(v)) for v in values]
    assert [np.float64(x).tobytes() for x in got] == [np.float64(x).tobytes() for x in expected]
