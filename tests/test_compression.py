"""Compressed files read and written transparently (gzip, bzip2, xz, zip, zstd).

Oracles: the plain word-vector files shipped with gensim's tests, compressed by the real command-line tools
(gzip, bzip2, xz, zstd, zip), read back by gensim's KeyedVectors.load_word2vec_format; gensim's own writer
(which compresses through smart_open) for a file we did not write; the tools' decompressors for ours.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats import cli
from wvformats.errors import FormatError, OptionError

gensim = pytest.importorskip("gensim")
from gensim.models import KeyedVectors  # noqa: E402

DATA = Path(gensim.__file__).parent / "test" / "test_data"
# (file, gensim's reading of it: binary, no_header)
REAL = {"lee_fasttext.vec": (False, False), "euclidean_vectors.bin": (True, False),
        "test_glove.txt": (False, True)}
TOOLS = {"gzip": (".gz", ["gzip", "-k"]), "bzip2": (".bz2", ["bzip2", "-k"]), "xz": (".xz", ["xz", "-k"]),
         "zstd": (".zst", ["zstd", "-q"])}
UNPACK = {"gzip": ["gzip", "-dc"], "bzip2": ["bzip2", "-dc"], "xz": ["xz", "-dc"], "zstd": ["zstd", "-dcq"]}


def _gensim(name: str) -> KeyedVectors:
    binary, no_header = REAL[name]
    return KeyedVectors.load_word2vec_format(str(DATA / name), binary=binary, no_header=no_header)


def _compressed(tmp_path: Path, name: str, tool: str) -> Path:
    """``name`` from gensim's test data, compressed by the real ``tool``."""
    plain = tmp_path / name
    shutil.copy(DATA / name, plain)
    suffix, command = TOOLS[tool]
    subprocess.run([*command, str(plain)], check=True)
    return tmp_path / (name + suffix)


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize("name", sorted(REAL))
def test_reads_files_compressed_by_the_tools(tmp_path: Path, name: str, tool: str) -> None:
    path = _compressed(tmp_path, name, tool)
    assert wv.sniff(path) == wv.sniff(DATA / name)
    emb = wv.read(path)
    kv = _gensim(name)
    assert emb.words == list(kv.index_to_key)
    np.testing.assert_array_equal(emb.vectors, kv.vectors)
    report = wv.validate(path)  # the decompressed bytes, rebuilt byte-identical
    assert report.ok and report.size == (DATA / name).stat().st_size, report


def test_reads_what_gensim_writes_compressed(tmp_path: Path) -> None:
    kv = _gensim("lee_fasttext.vec")
    for name in ("g.vec.gz", "g.bin.bz2"):
        kv.save_word2vec_format(str(tmp_path / name), binary=name.endswith(".bz2"))  # smart_open compresses
        emb = wv.read(tmp_path / name)
        assert emb.words == list(kv.index_to_key)
        np.testing.assert_array_equal(emb.vectors, kv.vectors)


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_writes_compressed_when_the_name_asks(tmp_path: Path, tool: str) -> None:
    emb = wv.read(DATA / "lee_fasttext.vec")
    suffix = TOOLS[tool][0]
    wv.write(emb, tmp_path / "plain.bin")
    wv.write(emb, tmp_path / f"out.bin{suffix}")  # the inner format from the extension before the suffix
    inner = subprocess.run([*UNPACK[tool], str(tmp_path / f"out.bin{suffix}")], capture_output=True, check=True)
    assert inner.stdout == (tmp_path / "plain.bin").read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left
    if tool in ("gzip", "bzip2"):  # (smart_open reads these without extras)
        kv = KeyedVectors.load_word2vec_format(str(tmp_path / f"out.bin{suffix}"), binary=True)
        np.testing.assert_array_equal(kv.vectors, emb.vectors)


def test_writer_that_seeks_back_is_compressed_after_building(tmp_path: Path) -> None:
    """finalfusion's chunk lengths are patched after the chunk is written: no forward-only stream."""
    emb = wv.read(DATA / "lee_fasttext.vec")
    wv.write(emb, tmp_path / "plain.fifu", normalize=False)
    wv.write(emb, tmp_path / "out.fifu.gz", normalize=False)
    inner = subprocess.run(["gzip", "-dc", str(tmp_path / "out.fifu.gz")], capture_output=True, check=True)
    assert inner.stdout == (tmp_path / "plain.fifu").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fifu.gz", "plain.fifu"]


def test_convert_and_cli_through_compression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _compressed(tmp_path, "test_glove.txt", "gzip")
    assert cli.main(["convert", str(src), str(tmp_path / "g.vec.xz")]) == 0
    kv = _gensim("test_glove.txt")
    np.testing.assert_array_equal(wv.read(tmp_path / "g.vec.xz").vectors, kv.vectors)
    assert cli.main(["inspect", str(src), "--json"]) == 0
    assert '"compression": "gzip"' in capsys.readouterr().out


def test_zip_one_member_many_members_and_a_named_member(tmp_path: Path) -> None:
    for name in ("test_glove.txt", "lee_fasttext.vec"):
        shutil.copy(DATA / name, tmp_path / name)
    subprocess.run(["zip", "-q", "one.zip", "test_glove.txt"], cwd=tmp_path, check=True)
    subprocess.run(["zip", "-q", "two.zip", "test_glove.txt", "lee_fasttext.vec"], cwd=tmp_path, check=True)
    np.testing.assert_array_equal(wv.read(tmp_path / "one.zip").vectors, _gensim("test_glove.txt").vectors)
    named = wv.read(f"{tmp_path / 'two.zip'}::lee_fasttext.vec")
    np.testing.assert_array_equal(named.vectors, _gensim("lee_fasttext.vec").vectors)
    assert wv.validate(f"{tmp_path / 'two.zip'}::lee_fasttext.vec").ok
    with pytest.raises(FormatError) as e:
        wv.read(tmp_path / "two.zip")
    assert e.value.format == "zip" and "\n" not in str(e.value)
    assert "test_glove.txt, lee_fasttext.vec" in str(e.value) and "::MEMBER" in str(e.value)
    with pytest.raises(FormatError, match="no member 'nope'.*members: test_glove.txt, lee_fasttext.vec"):
        wv.read(f"{tmp_path / 'two.zip'}::nope")
    assert cli.main(["sniff", str(tmp_path / "two.zip")]) == 2


def test_writing_zip_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    emb = wv.read(DATA / "lee_fasttext.vec")
    with pytest.raises(OptionError, match="zip archive is not supported"):
        wv.write(emb, tmp_path / "out.vec.zip")
    assert list(tmp_path.iterdir()) == []


def test_mmap_on_a_compressed_file_reads_into_memory(tmp_path: Path) -> None:
    emb = wv.read(DATA / "lee_fasttext.vec")
    wv.write(emb, tmp_path / "e.fifu", normalize=False)
    wv.write(emb, tmp_path / "e.fifu.gz", normalize=False)
    plain = wv.read(tmp_path / "e.fifu")
    for use_mmap in (True, False):  # finalfusion's arrays are views of the buffer: here, of memory
        got = wv.read(tmp_path / "e.fifu.gz", mmap=use_mmap)
        np.testing.assert_array_equal(got.vectors, plain.vectors)


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_truncated_stream_names_the_compression_and_the_offset(tmp_path: Path, tool: str) -> None:
    path = _compressed(tmp_path, "lee_fasttext.vec", tool)
    data = path.read_bytes()
    cut = tmp_path / f"cut{TOOLS[tool][0]}"
    cut.write_bytes(data[: len(data) * 3 // 4])
    with pytest.raises(FormatError) as e:
        wv.read(cut, "word2vec-text")
    assert type(e.value) is FormatError and e.value.format == tool
    assert e.value.offset is not None and 0 <= e.value.offset < (DATA / "lee_fasttext.vec").stat().st_size
    assert "decompressed" in str(e.value)
    report = wv.validate(cut)
    assert not report.ok and tool in report.error


def test_truncated_gzip_offset_is_where_the_decompressed_bytes_stop(tmp_path: Path) -> None:
    path = _compressed(tmp_path, "lee_fasttext.vec", "gzip")
    data = path.read_bytes()
    cut = tmp_path / "cut.gz"
    cut.write_bytes(data[: len(data) // 2])
    got = subprocess.run(["gzip", "-dc", str(cut)], capture_output=True).stdout  # what gzip itself recovers
    with pytest.raises(FormatError) as e:
        wv.read(cut, "word2vec-text")
    assert abs(e.value.offset - len(got)) <= 64 << 10, (e.value.offset, len(got))


def test_corrupt_zip_and_corrupt_gzip_body(tmp_path: Path) -> None:
    shutil.copy(DATA / "test_glove.txt", tmp_path / "test_glove.txt")
    subprocess.run(["zip", "-q", "one.zip", "test_glove.txt"], cwd=tmp_path, check=True)
    zipped = (tmp_path / "one.zip").read_bytes()
    (tmp_path / "cut.zip").write_bytes(zipped[:300])
    with pytest.raises(FormatError) as e:
        wv.read(tmp_path / "cut.zip")
    assert e.value.format == "zip"
    gz = bytearray(_compressed(tmp_path, "lee_fasttext.vec", "gzip").read_bytes())
    gz[len(gz) // 2] ^= 0xFF
    (tmp_path / "bad.gz").write_bytes(gz)
    with pytest.raises(FormatError) as e:
        wv.read(tmp_path / "bad.gz", "word2vec-text")
    assert e.value.format == "gzip"


def test_unknown_content_inside_a_compressed_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(b"\x00\x01 not a vector file\n")
    subprocess.run(["gzip", str(tmp_path / "notes.txt")], check=True)
    with pytest.raises(FormatError, match="gzip-compressed; decompressed, its first bytes 00 01"):
        wv.sniff(tmp_path / "notes.txt.gz")


def test_a_decompression_bomb_is_refused_before_memory_runs_out(tmp_path: Path, monkeypatch) -> None:
    """A binary format is parsed from one buffer of the decompressed bytes, a text format from blocks of
    whole lines: a stream that decompresses to more than can be held (a buffer, or one line) is a FormatError
    naming the compression and the size, not a MemoryError or an OOM kill."""
    import gzip
    import os

    from wvformats import compression

    monkeypatch.setattr(compression, "MAX_IN_MEMORY", 16 << 20)
    binary, text = tmp_path / "bomb.bin.gz", tmp_path / "bomb.txt.gz"
    with gzip.open(binary, "wb") as f:  # 64 MB of zeros in 64 KB
        f.write(b"1000000 100\n")
        for _ in range(64):
            f.write(bytes(1 << 20))
    with gzip.open(text, "wb") as f:  # a GloVe line of 24 MB, no newline
        f.write(b"w" + b" 0" * (12 << 20))
    for path, fmt in ((binary, "word2vec-binary"), (text, "glove")):
        with pytest.raises(FormatError) as e:
            wv.read(path, fmt)
        assert type(e.value) is FormatError and e.value.format == "gzip"
        assert f"more than {16 << 20} bytes" in str(e.value) and "MAX_IN_MEMORY" in str(e.value)
    assert "gzip" in wv.validate(binary).error
    monkeypatch.setattr(compression, "MAX_IN_MEMORY", None)  # the default: what the machine has available
    assert 0 < compression.memory_cap() <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
