"""Word-vector files whose words are not UTF-8 (``encoding=``, ``--encoding``), with gensim's
``KeyedVectors.load_word2vec_format(..., encoding=)`` as the oracle: the words read, the words written back
in the encoding read (byte for byte), or in another (``to_encoding=``, ``--to-encoding``)."""

import gzip

import numpy as np
import pytest

import wvformats as wv
from wvformats import cli
from wvformats.errors import BuildError, FormatError, OptionError

WORDS = ["ji", "který", "už", "být", "více", "zde", "žluťoučký", "kůň"]
FORMATS = ["word2vec-binary", "word2vec-text", "glove", "leader"]


def embeddings(n: int = len(WORDS)) -> wv.Embeddings:
    words = (WORDS + [f"{w}{i}" for i in range(n) for w in WORDS])[:n]
    rng = np.random.default_rng(3)
    return wv.Embeddings(words, rng.standard_normal((n, 5)).astype(np.float32))


def gensim_read(path, fmt: str, encoding: str):
    from gensim.models import KeyedVectors

    return KeyedVectors.load_word2vec_format(str(path), binary=fmt == "word2vec-binary", encoding=encoding,
                                             no_header=fmt == "glove")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("n", [len(WORDS), 5000])  # (5000: the vectorised readers and writers)
def test_words_in_another_encoding_are_read_as_gensim_reads_them(tmp_path, fmt, n):
    emb = embeddings(n)
    wv.write(emb, tmp_path / "cp", fmt, to_encoding="cp852")
    data = (tmp_path / "cp").read_bytes()
    assert "který".encode("cp852") in data and "který".encode() not in data
    with pytest.raises(FormatError, match="encoding='cp852' \\(--encoding\\)"):  # (the error says what reads it)
        wv.read(tmp_path / "cp", fmt)
    m = wv.read(tmp_path / "cp", fmt, encoding="cp852")
    assert m.words == emb.words and m.encoding == "cp852"
    assert m.vectors.tobytes() == emb.vectors.tobytes()
    if fmt != "leader":
        g = gensim_read(tmp_path / "cp", fmt, "cp852")
        assert g.index_to_key == m.words
        assert np.array_equal(g.vectors, m.vectors)
    assert wv.read(tmp_path / "cp", fmt, encoding="cp852", limit=3).words == emb.words[:3]
    assert wv.read(tmp_path / "cp", fmt, encoding="cp852", vocab={"už", "kůň", "日本"}).words == ["už", "kůň"]
    assert wv.validate(tmp_path / "cp", fmt, encoding="cp852").ok
    assert wv.inspect(tmp_path / "cp", fmt, encoding="cp852")["first_words"][:3] == emb.words[:3]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_encoding_read_is_the_one_written_back(tmp_path, fmt):
    """Read with encoding X, written again (to the same format or another): X, so a round trip gives the file
    back byte for byte; ``--to-encoding utf-8`` transcodes, which gensim then reads as UTF-8."""
    wv.write(embeddings(), tmp_path / "cp", fmt, to_encoding="cp852")
    assert cli.main(["convert", str(tmp_path / "cp"), str(tmp_path / "again"), "--from", fmt, "--to", fmt,
                     "--encoding", "cp852"]) == 0
    assert (tmp_path / "again").read_bytes() == (tmp_path / "cp").read_bytes()
    wv.convert(tmp_path / "cp", tmp_path / "b.bin", "word2vec-binary", from_format=fmt, encoding="cp852")
    assert gensim_read(tmp_path / "b.bin", "word2vec-binary", "cp852").index_to_key == WORDS
    assert cli.main(["convert", str(tmp_path / "cp"), str(tmp_path / "u.txt"), "--from", fmt, "--to",
                     "word2vec-text", "--encoding", "cp852", "--to-encoding", "utf-8"]) == 0
    assert gensim_read(tmp_path / "u.txt", "word2vec-text", "utf-8").index_to_key == WORDS


def test_a_compressed_text_file_is_read_in_its_encoding(tmp_path):
    wv.write(embeddings(), tmp_path / "cp.txt", "word2vec-text", to_encoding="cp852")
    with gzip.open(tmp_path / "cp.txt.gz", "wb") as f:
        f.write((tmp_path / "cp.txt").read_bytes())
    assert wv.read(tmp_path / "cp.txt.gz", encoding="cp852").words == WORDS


def test_words_the_encoding_lacks_are_named(tmp_path):
    """Reading: a byte the encoding does not decode (strict), as gensim's UnicodeDecodeError, but naming the
    word; writing: a word the encoding cannot spell; an encoding that is not ASCII's superset is refused."""
    wv.write(embeddings(), tmp_path / "cp.txt", "word2vec-text", to_encoding="cp852")
    with pytest.raises(FormatError) as info:
        wv.read(tmp_path / "cp.txt", encoding="ascii")
    assert info.value.path == "records[1].word"
    assert wv.read(tmp_path / "cp.txt", encoding="ascii", unicode_errors="replace").words[1] == "kter\ufffd"
    with pytest.raises(BuildError) as info:
        wv.write(wv.Embeddings(["a", "日本"], np.zeros((2, 2), np.float32)), tmp_path / "x.txt", "word2vec-text",
                 to_encoding="cp852")
    assert info.value.path == "records[1]"
    with pytest.raises(OptionError, match="ASCII"):
        wv.read(tmp_path / "cp.txt", encoding="utf-16")
    with pytest.raises(OptionError, match="unknown encoding"):
        wv.read(tmp_path / "cp.txt", encoding="no-such-codec")
