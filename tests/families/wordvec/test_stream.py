"""Compressed text files (word2vec text, fastText .vec, GloVe) read as a stream of line blocks.

Oracles: gensim's load_word2vec_format on the same compressed file (it decompresses through smart_open), and
our reading of the plain file, whose errors name the line and the byte offset; the memory bound is measured
in a subprocess (ru_maxrss).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats import compression
from wvformats.errors import FormatError, NoFinalNewlineWarning, TruncatedError

KeyedVectors = pytest.importorskip("gensim.models").KeyedVectors


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of about 4 KB: the test files below span dozens of them."""
    monkeypatch.setattr(compression, "LINE_BLOCK", 4096)


def _text(n: int, dim: int, *, header: bool, seed: int = 0, digits: str = "%.6g") -> bytes:
    rng = np.random.default_rng(seed)
    rows = rng.normal(0, 1, (n, dim))
    lines = [f"w{i}é " + " ".join(digits % v for v in row) for i, row in enumerate(rows)]
    return ((f"{n} {dim}\n" if header else "") + "\n".join(lines) + "\n").encode()


def _gz(tmp_path: Path, name: str, data: bytes) -> tuple[Path, Path]:
    plain = tmp_path / name
    plain.write_bytes(data)
    subprocess.run(["gzip", "-k", "-f", str(plain)], check=True)
    return plain, tmp_path / (name + ".gz")


@pytest.mark.parametrize("header", [True, False], ids=["word2vec-text", "glove"])
def test_streamed_read_matches_gensim(tmp_path, small_blocks, text_parser, header):
    plain, packed = _gz(tmp_path, "e.vec" if header else "e.txt", _text(3000, 7, header=header))
    assert packed.stat().st_size > 4 * 4096  # many blocks
    kv = KeyedVectors.load_word2vec_format(str(packed), binary=False, no_header=not header)
    emb = wv.read(packed)
    assert emb.words == list(kv.index_to_key)
    np.testing.assert_array_equal(emb.vectors, kv.vectors)
    assert emb.vectors.dtype == np.float32
    if text_parser[0] != "lines":
        assert len(text_parser[1]) > 10  # every block went through the fast parser


OPTIONS = [dict(limit=1234), dict(limit=0), dict(limit=99999), dict(vocab=["w5é", "w2999é", "w1500é", "nope"]),
           dict(dtype=np.float64), dict(dtype=np.float16), dict(limit=700, vocab=["w600é", "w800é"])]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(map(str, o)))
@pytest.mark.parametrize("header", [True, False], ids=["word2vec-text", "glove"])
def test_options_as_for_the_plain_file(tmp_path, small_blocks, header, options):
    plain, packed = _gz(tmp_path, "e.txt", _text(3000, 5, header=header, digits="%.17g"))
    fmt = "word2vec-text" if header else "glove"
    want, got = wv.read(plain, fmt, **options), wv.read(packed, fmt, **options)
    assert got.words == want.words
    assert got.vectors.dtype == want.vectors.dtype
    np.testing.assert_array_equal(got.vectors, want.vectors)


def test_limit_stops_decompressing(tmp_path, small_blocks):
    """A stream cut off far after the rows asked for: those rows read, the rest never decompressed."""
    _, packed = _gz(tmp_path, "e.vec", _text(20000, 5, header=True))
    data = packed.read_bytes()
    packed.write_bytes(data[: len(data) // 2])
    emb = wv.read(packed, limit=100)
    assert emb.words[-1] == "w99é" and emb.vectors.shape == (100, 5)
    with pytest.raises(FormatError) as e:
        wv.read(packed)
    assert e.value.format == "gzip" and "end-of-stream" in str(e.value)


def _error(path: Path, fmt: str, **options) -> FormatError:
    with pytest.raises(FormatError) as e:
        wv.read(path, fmt, **options)
    return e.value


@pytest.mark.parametrize("header", [True, False], ids=["word2vec-text", "glove"])
@pytest.mark.parametrize("bad", [b"w2500\xc3\xa9 1 2 zz 4 5\n", b"w2500\xc3\xa9 1 2 4 5\n", b"\xff\xfe 1 2 3 4 5\n",
                                 b"\n"], ids=["number", "width", "utf8", "empty"])
def test_errors_name_the_line_and_offset_as_for_the_plain_file(tmp_path, small_blocks, header, bad):
    lines = _text(3000, 5, header=header).splitlines(keepends=True)
    at = 2500 + header
    data = b"".join(lines[:at]) + bad + b"".join(lines[at + 1 :])
    plain, packed = _gz(tmp_path, "e.txt", data)
    fmt = "word2vec-text" if header else "glove"
    want, got = _error(plain, fmt), _error(packed, fmt)
    assert (type(got), got.format, got.path, got.offset) == (type(want), want.format, want.path, want.offset)
    assert got.path.startswith("records[2500]") and str(got) == str(want)
    if bad.startswith(b"\xff"):
        replaced = wv.read(packed, fmt, unicode_errors="replace")
        assert replaced.words[2500] == "\ufffd\ufffd" and replaced.words == wv.read(plain, fmt, unicode_errors="replace").words


def test_fewer_lines_than_declared_and_no_final_newline(tmp_path, small_blocks):
    data = _text(3000, 5, header=True)
    plain, packed = _gz(tmp_path, "short.vec", b"4000" + data[4:])  # "3000 5" declared as "4000 5"
    want, got = _error(plain, "word2vec-text"), _error(packed, "word2vec-text")
    assert type(got) is TruncatedError and (got.path, got.offset, got.expected, got.found) == (
        want.path, want.offset, 4000, 3000)
    plain, packed = _gz(tmp_path, "cut.vec", data[:-1])
    for path in (plain, packed):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert len(wv.read(path).words) == 3000
        [w] = [str(c.message) for c in caught if c.category is NoFinalNewlineWarning]
        assert "records[2999]" in w and f"at byte {len(data) - 1 - len(data.splitlines()[-1])}" in w


def test_empty_and_header_only(tmp_path):
    _, packed = _gz(tmp_path, "h.vec", b"0 5\n")
    assert wv.read(packed, "word2vec-text").vectors.shape == (0, 5)
    _, packed = _gz(tmp_path, "e.txt", b"")
    assert wv.read(packed, "glove").vectors.shape[0] == 0


# the peak resident size of this process (VmHWM): ru_maxrss would also count the pytest process this one was
# forked from, whose high-water mark Linux carries across the exec
_PEAK = """
import json, re, sys
import numpy as np, pyarrow, pyarrow.compute, pyarrow.csv  # (the plain read's peers: loaded before)
import wvformats as wv
pyarrow.compute.cast(pyarrow.array(np.zeros(3)), pyarrow.string())
def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) * 1024
before = peak()
emb = wv.read(sys.argv[1], "glove")
print(json.dumps({"before": before, "after": peak(), "rows": len(emb.words), "bytes": emb.vectors.nbytes}))
"""


def test_peak_memory_is_the_vectors_not_the_decompressed_text(tmp_path):
    """200k x 50 GloVe with 17 digits per number: ~190 MB of text for 40 MB of vectors."""
    n, dim = 200_000, 50
    rng = np.random.default_rng(1)
    rows = [" ".join("%.17f" % v for v in row) for row in rng.normal(0, 1, (1000, dim))]
    text = "".join(f"w{i} {rows[i % 1000]}\n" for i in range(n)).encode()
    packed = tmp_path / "big.txt.gz"
    with open(packed, "wb") as f:
        subprocess.run(["gzip", "-1", "-c"], input=text, stdout=f, check=True)
    size = len(text)
    del text, rows
    out = subprocess.run([sys.executable, "-c", _PEAK, str(packed)], capture_output=True, check=True, text=True)
    got = json.loads(out.stdout)
    assert got["rows"] == n and got["bytes"] == n * dim * 4
    grown = got["after"] - got["before"]
    print(f"decompressed {size / 1e6:.0f} MB, vectors {got['bytes'] / 1e6:.0f} MB, peak grew {grown / 1e6:.0f} MB")
    # the vectors (a GloVe file has no count: grown geometrically, up to twice their size), the words and a
    # fixed working set of a few blocks; not the decompressed text (measured: 185 MB; before streaming: 556 MB)
    assert grown < 2 * got["bytes"] + 150e6 < size + got["bytes"]
