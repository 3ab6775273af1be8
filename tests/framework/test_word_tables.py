"""The word tables' engines (wvformats.framework.wordtables and texttable): the vectorised record walks and
writers against the per-record loops, the text fast paths against the line loop, the number spellings."""

import errno
import gc
import os
import struct

import construct as cs
import numpy as np
import pytest
from families.wordvec.test_wordvec import any_word, embeddings, f32, spaced_word
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from roundtrip import equal
from wvformats.schemas import wordvec as schema

import wvformats as wv
from wvformats import framework
from wvformats.errors import BuildError, FormatError
from wvformats.families.wordvec import codec
from wvformats.framework import texttable as text
from wvformats.framework import wordtables as binary
from wvformats.words import DuplicateWordsWarning, count_duplicates

# the word-vector tests' strategies (words for the space-separated formats, float32 values, whole tables)


def _w2v_table(records: list) -> tuple[bytes, list[tuple[int, int]]]:
    """word2vec binary records ``(word, vector bytes, newlines before the word)`` (no newlines before the
    first) and their (word start, space) offsets."""
    data, offsets = bytearray(), []
    for k, (word, vec, nl) in enumerate(records):
        data += b"\n" * (nl if k else 0)
        offsets.append((len(data), len(data) + len(word.encode())))
        data += word.encode() + b" " + vec
    return bytes(data), offsets


@settings(max_examples=60, deadline=None)
@given(records=st.lists(st.tuples(st.text(st.characters(blacklist_characters=" \n", blacklist_categories=("Cs",)),
                                          min_size=1, max_size=5),
                                  st.binary(min_size=8, max_size=8), st.integers(0, 2)), min_size=1, max_size=40),
       window=st.integers(1, 400))
def test_word2vec_binary_record_runs_equal_the_record_loop(records, window):
    """The vectorised run finder, window by window (spaces and newlines inside vectors, 0 to 2 newlines
    before a word), finds exactly the records the file holds; what it does not take the loop takes."""
    data, expected = _w2v_table(records)
    u8 = np.frombuffer(data, np.uint8)
    pos, got = 0, []
    while len(got) < len(records):
        ws, sps, after = binary._w2v_run(u8, pos, len(u8), len(records) - len(got), 8, window=window)
        if not len(ws):  # the loop's step: skip newlines, take one record
            while u8[pos] == 10:
                pos += 1
            sp = data.find(b" ", pos)
            got.append((pos, sp))
            pos = sp + 1 + 8
            continue
        got += list(zip(ws.tolist(), sps.tolist(), strict=True))
        pos = after
    assert got == expected and pos == len(data)


# bytes that look like parts of a word2vec record (space, newline) beside plain ones, for hostile vectors
_RECORD_BYTES = st.sampled_from([0x20, 0x20, 0x0A, 0x00, 0x41, 0xC3, 0xFF])
_W2V_RECORDS = st.lists(
    st.tuples(st.one_of(st.text(st.characters(blacklist_characters=" \n", blacklist_categories=("Cs",)),
                                min_size=1, max_size=40),
                        st.just("L" * 1100)),  # longer than the lockstep walk takes
              st.one_of(st.binary(min_size=64, max_size=64),
                        st.lists(_RECORD_BYTES, min_size=64, max_size=64).map(bytes)),
              st.integers(0, 2)),
    min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(records=_W2V_RECORDS, region=st.integers(64, 6000), per_segment=st.integers(1, 4))
def test_word2vec_lockstep_walk_finds_only_records_of_the_chain(records, region, per_segment):
    """The lockstep walk (many segments walked at once from guessed starts, spaces and newlines in the
    vectors, words past its window and past its longest) gives a prefix of the records the file holds,
    whatever its segments; a whole parse that uses it equals the parse by the exact method alone."""
    data, offsets = _w2v_table(records)
    header = f"{len(records)} 16\n".encode()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(framework.records, "WALK_REGION", region)
        mp.setattr(framework.records, "WALK_RECORDS", per_segment)
        ws, sps, after = binary._w2v_walk(np.frombuffer(data, np.uint8), 0, len(data), len(records), 64)
        walked = framework.parse(schema.word2vec_binary, header + data, format="word2vec-binary")
        mp.setattr(binary, "_WALK_MIN_ROW", 1 << 30)
        exact = framework.parse(schema.word2vec_binary, header + data, format="word2vec-binary")
    got = list(zip(ws.tolist(), sps.tolist(), strict=True))
    assert got == offsets[: len(got)]
    assert after == (got[-1][1] + 1 + 64 if got else 0)
    if len(data) < region and all(len(w.encode()) < 1024 and nl < 2 for w, _, nl in records):
        assert len(got) == len(records) or offsets[len(got)][0] + 32 > len(data)  # only the end stops it
    assert equal(walked, exact)
    assert walked.records.words == [w for w, _, _ in records]


def test_word2vec_lockstep_walk_on_vectors_of_spaces(monkeypatch):
    """Vectors made of spaces and newlines (every guess is wrong, every walk from one meets nothing): many
    regions, each walk ending early and the exact method taking over, read the file as it is."""
    monkeypatch.setattr(framework.records, "WALK_REGION", 4096)
    rng = np.random.default_rng(7)
    records = [(f"w{i}", bytes(rng.choice([32, 32, 32, 10], 64).astype(np.uint8)), int(rng.integers(0, 2)))
               for i in range(3000)]
    data, _ = _w2v_table(records)
    header = f"{len(records)} 16\n".encode()
    parsed = framework.parse(schema.word2vec_binary, header + data, format="word2vec-binary")
    assert parsed.records.words == [w for w, _, _ in records]
    assert parsed.records.vectors.tobytes() == b"".join(v for _, v, _ in records)
    assert framework.build(schema.word2vec_binary, parsed, format="word2vec-binary") == header + data


_numbers = ["1", "-0", "2.5", "1e-05", "+.5", "5.", "inf", "-inf", "nan", "-nan", "NaN", "3.4028236e38", "1e400",
            "1.00000005960464477539062500000001", "0.1000000000000000055511151231257827", "4.9e-324"]
_tokens = st.sampled_from([*_numbers, "0x10", "1_0", "", "x", "\t1", "1\t", "1,5"])
_words = st.sampled_from(["a", "é", "b\tc", "d\re", '"q"', "\x00", "", "日本", "\xa0", "\xff"])
_ends = st.sampled_from(["\n", "\r\n", " \n", " \r\n", "  \n"])


@pytest.mark.parametrize("parser", ["kernel", "arrow"])
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(_words, st.lists(_tokens, min_size=1, max_size=3), _ends), min_size=1, max_size=8),
       regular=st.sampled_from(["numbers", "shape", "free"]), final=st.booleans(), piece=st.integers(1, 64),
       errors=st.sampled_from(["strict", "replace"]))
def test_text_fast_path_agrees_with_the_line_loop(monkeypatch, parser, lines, regular, final, piece, errors):
    """Whenever a fast path (the compiled kernel, pyarrow's reader) accepts a text body (in pieces or blocks
    of any size), the line loop reads the same words, bit-identical values and layout; on everything else
    the fast path declines."""
    if regular != "free":  # mostly well-formed bodies, so that the fast path is exercised, not only refusals
        dim = len(lines[0][1])
        lines = [(w or "w", (t + ["1"] * dim)[:dim], lines[0][2]) for w, t, _ in lines]
    if regular == "numbers":  # and words that the fast path takes
        lines = [(w.replace("\r", "") or "w", [x if x in _numbers else "1" for x in t], e) for w, t, e in lines]
        final = True
    body = "".join(w + " " + " ".join(t) + e for w, t, e in lines).encode("utf-8", "surrogateescape")
    body = body.replace(b"\xc3\xbf", b"\xff")  # "\xff" stands for a byte that is not UTF-8
    if not final:
        body = body[:-1]
    monkeypatch.setattr(text, "_ARROW_PIECE", piece)
    monkeypatch.setattr(text, "_KERNEL_BLOCK", piece)
    fast_text = text._kernel_text if parser == "kernel" else text._arrow_text
    fast = fast_text(body, 0, len(body), None, None, errors, "records")
    if fast is None:
        return
    with text.text_parser("lines"):
        slow = framework.parse(schema.glove, body, format="glove", unicode_errors=errors).records
    words, vectors, layout, repeats = fast
    assert words == slow.words
    # the words' repeats, counted over their bytes by the word kernel, are the model's count of the words
    assert repeats == (count_duplicates(slow.words) if parser == "kernel" and errors == "strict" else None)
    assert vectors.tobytes() == slow.vectors.tobytes()
    assert dict(layout) == dict(slow.layout)
    counted = fast_text(body, 0, len(body), len(words) + 1, None, errors, "records")
    assert counted is None  # a header count that disagrees with the body is left to the line loop


def _build_both_ways(monkeypatch, s, obj, name, chunk):
    """(result of the vectorised record writer, result of the per-record loop): bytes, or the error."""
    def run():
        try:
            return framework.build(s, obj, format=name)
        except BuildError as e:  # the loop's offset is where it last flushed; the record is what must match
            return (type(e), e.path, e.found)

    monkeypatch.setattr(framework.records, "_PACK_CHUNK", chunk)
    fast = run()
    with monkeypatch.context() as m:
        for module in (binary, framework.strings):  # the binary record tables, and StringTable
            m.setattr(module, "pack_records", lambda words, rows, stream, start=0, **kw: start)
        slow = run()
    return fast, slow


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(emb=embeddings(word=st.one_of(any_word, st.sampled_from(["", " ", "a b", "\n", "x\x00y", "\ud800"]))),
       chunk=st.integers(1, 4), newline=st.booleans(), gap=st.integers(0, 2))
def test_vectorised_record_writers_equal_the_record_loops(monkeypatch, emb, chunk, newline, gap):
    """Leader and word2vec binary records and u32-prefixed string tables packed a chunk at a time with numpy
    give the loop's bytes, and a word that only the loop can judge (NUL, a space, an empty or unencodable
    word) gets the loop's error at the same record, wherever it falls in a chunk."""
    words, vectors = emb
    leader = cs.Container(magic=38941, vocab_size=len(words), dim=vectors.shape[1],
                          records=cs.Container(words=words, vectors=vectors), trailer=b"")
    fast, slow = _build_both_ways(monkeypatch, schema.leader, leader, "leader", chunk)
    assert fast == slow
    # (the record table as the writer hands it over: its own check of the words comes before, see test_hostile)
    gaps = [gap * (i % 2) for i in range(len(words))] if gap and words else None
    w2v = cs.Container(header=cs.Container(count=len(words), dim=vectors.shape[1],
                                           raw=f"{len(words)} {vectors.shape[1]}\n".encode()),
                       records=cs.Container(words=words, vectors=vectors, newlines=gaps),
                       trailer=b"\n" if newline and words else b"")
    fast, slow = _build_both_ways(monkeypatch, schema.word2vec_binary, w2v, "word2vec-binary", chunk)
    assert fast == slow
    table = framework.StringTable(len(words))
    fast, slow = _build_both_ways(monkeypatch, table, words, "strings", chunk)
    assert fast == slow


@pytest.mark.parametrize("style", ["repr", "g5", "fixed6", "repr16"])
@pytest.mark.parametrize("few", [0, 10**9])
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(f32 | st.sampled_from([0.0, -0.0, 1.0, -3.0, 1e-4, 1e-5, 999999.94, 1e6, 2.5e7, 99999.5,
                                              99999.49, 0.099999997, 0.000123455, 12345.678, 5e-7, -2.5e-6,
                                              -1e-7, 999999999.0, 1e9, 9.5]), max_size=300))
def test_text_numbers_through_pyarrow_are_spelled_as_the_style_spells_them(monkeypatch, style, few, values):
    """The vectorised spellings (pyarrow's float -> string casts for numpy's str() and %.5g, numpy digit rows
    for %f), mended where they cannot follow the style (whole numbers and scientific notation of str(),
    scientific notation and a round up to 1e5 of %.5g, magnitudes from 1e9 of %f, NaN and inf), give the
    style's own spelling of every value: mended by splicing (few) or by one masked pass (many)."""
    pa, _, pc = text._pyarrow()
    monkeypatch.setattr(text, "_FEW", few)
    flat = np.array(values, dtype="<f4")
    assert text._ARROW_STYLES[style](pa, pc, flat).to_pylist() == text.TEXT_STYLES[style](flat)


@pytest.mark.parametrize("style", ["repr", "g5", "fixed6", "repr16"])
def test_text_numbers_through_pyarrow_over_random_bit_patterns(style):
    """300,000 float32 of random bits (every exponent, subnormals, NaN payloads) and 100,000 of an
    embedding's range: spelled as the style's own formatter spells them."""
    pa, _, pc = text._pyarrow()
    rng = np.random.default_rng(7)
    flat = np.concatenate([rng.integers(0, 1 << 32, 300_000, dtype=np.uint64).astype(np.uint32).view("<f4"),
                           rng.normal(0, 0.5, 100_000).astype("<f4")])
    assert text._ARROW_STYLES[style](pa, pc, flat).to_pylist() == text.TEXT_STYLES[style](flat)


def test_repr16_is_numpys_str_before_2_3():
    """numpy 2.3 (gh-28679) writes a float32 from 1e6 up in scientific notation, 1234567.0 as 1.234567e+06;
    files written before (gensim, word-vectors under numpy 1.x, 2.0-2.2) have the positional spelling up to
    1e16. "repr16" is numpy's own str under ``legacy='2.2'``, over every magnitude."""
    rng = np.random.default_rng(11)
    flat = np.concatenate([rng.integers(0, 1 << 32, 100_000, dtype=np.uint64).astype(np.uint32).view("<f4"),
                           (10.0 ** rng.uniform(5, 17, 20_000)).astype("<f4"),
                           np.array([1e6, 999999.94, 1e16, 9.999999e15, -1234567.0, 0.0, -0.0], "<f4")])
    with np.printoptions(legacy="2.2"):
        assert text.TEXT_STYLES["repr16"](flat) == [str(v) for v in flat]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(emb=embeddings(word=st.one_of(spaced_word, st.sampled_from(["", " ", "a b", "\n", "x\ry", "\ud800"])),
                      min_words=1),
       style=st.sampled_from(["repr", "g5", "fixed6", "repr16"]), per_job=st.integers(1, 12), trailing=st.booleans(),
       crlf=st.booleans(), final=st.booleans())
def test_text_writer_through_pyarrow_equals_the_line_loop(monkeypatch, emb, style, per_job, trailing, crlf,
                                                          final):
    """word2vec text written a block of rows per pyarrow job (blocks of any size, every layout and number
    style) gives the line loop's bytes; a word only the loop can judge gets the loop's error at the same
    line."""
    words, vectors = emb
    obj = codec._w2v_text_from(wv.Embeddings(["w"] * len(words), vectors), style=style, trailing_space=trailing)
    obj.records.words = list(words)  # (the record table as handed over: the writer's own check comes before it)
    obj.records.layout.crlf, obj.records.layout.final_newline = crlf, final
    formatted = []
    lines = text._text_lines

    def run():
        try:
            return framework.build(schema.word2vec_text, obj, format="word2vec-text")
        except BuildError as e:
            return (e.path, e.found)

    with monkeypatch.context() as m:  # undone after each example
        m.setattr(text, "_WRITE_VALUES", per_job)
        m.setattr(text, "_text_lines", lambda *a: formatted.append(lines(*a)) or formatted[-1])
        fast = run()
        m.setattr(text, "_pyarrow", lambda: None)
        slow = run()
    assert fast == slow
    if all(w and " " not in w and "\n" not in w and w != "\ud800" for w in words):
        assert formatted and all(text is not None for text in formatted)  # the fast path wrote every line


def test_text_writer_lets_go_of_each_block_once_written(monkeypatch):
    """The writer keeps at most the blocks being formatted and the one being written, not every block of
    the file (it once held them all: 340 MB more for a 400k x 100 GloVe file)."""
    import threading

    lock, live, most = threading.Lock(), [0], [0]

    class Block(bytearray):
        def __init__(self, data):
            super().__init__(data)
            with lock:
                live[0] += 1
                most[0] = max(most[0], live[0])

        def __del__(self):
            with lock:
                live[0] -= 1

    lines = text._text_lines
    monkeypatch.setattr(text, "_text_lines", lambda *a: Block(memoryview(lines(*a))))
    monkeypatch.setattr(text, "_WRITE_VALUES", 4)
    vectors = np.arange(100, dtype="<f4").reshape(50, 2) / 8
    data = framework.build(schema.glove, codec._glove_from(wv.Embeddings([f"w{i}" for i in range(50)], vectors)),
                           format="glove")
    assert data.count(b"\n") == 50 and data.startswith(b"w0 0.0 0.125\n")
    assert 1 <= most[0] <= 3  # 25 blocks, never more than three alive at once


def _both(monkeypatch, s, data, name, **options):
    """(the parse by the compiled kernels, the parse by their pure-Python twins): a Container, or the error's
    (type, path, offset)."""
    def run():
        try:
            return framework.parse(s, data, format=name, **options)
        except FormatError as e:
            return (type(e), e.path, e.offset)

    fast = run()
    with monkeypatch.context() as m:
        m.setenv("WVFORMATS_PURE_PYTHON", "1")
        slow = run()
    return fast, slow


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=_W2V_RECORDS, cut=st.integers(0, 80), errors=st.sampled_from(["strict", "replace"]),
       extra=st.integers(0, 2), block=st.sampled_from([1, 150, 1 << 20]), apart=st.booleans())
def test_binary_kernel_agrees_with_the_twin(monkeypatch, records, cut, errors, extra, block, apart):
    """Leader and word2vec binary tables (words of any bytes, spaces and newlines in the vectors, newlines
    before words, cut anywhere, a header count past the records), walked in blocks of one record, a few or
    all, on a worker thread or this one: the compiled walk gives the numpy path's words, rows, newlines and
    end, or declines and the twin names the fault."""
    k = binary.compiled_module("_wordtables")
    assert k is not None, "wvformats.framework._wordtables is not built"
    monkeypatch.setattr(binary, "_WALK_BLOCK_BYTES", block)
    monkeypatch.setattr(binary, "_WALK_APART_BYTES", 0 if apart else 1 << 40)
    data, _ = _w2v_table(records)
    head = f"{len(records) + extra} 16\n".encode()
    body = (head + data)[: len(head + data) - cut]
    fast, slow = _both(monkeypatch, schema.word2vec_binary, body, "word2vec-binary", unicode_errors=errors)
    assert equal(fast, slow) if not isinstance(fast, tuple) else fast == slow
    leader = b"".join(struct.pack("<I", len(w.encode())) + w.encode() + v for w, v, _ in records)
    leader = struct.pack("<QQQ", 38941, len(records) + extra, 16) + leader
    leader = leader[: len(leader) - cut]
    fast, slow = _both(monkeypatch, schema.leader, leader, "leader", unicode_errors=errors)
    assert equal(fast, slow) if not isinstance(fast, tuple) else fast == slow


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=_W2V_RECORDS, cut=st.integers(0, 80), extra=st.integers(0, 2), block=st.sampled_from([1, 700, 1 << 20]),
       trailing=st.sampled_from([b"", b"\n", b"tail bytes"]))
def test_a_table_read_from_its_file_is_the_twins(tmp_path_factory, monkeypatch, records, cut, extra, block, trailing):
    """Leader and word2vec binary files read from the file a block at a time (``pread`` into the matrix, each
    block settled in place: records cut by a block's end read again with the next, a block of one record's
    size, a last block past the rows): the twin's words, rows, newlines and end; a cut file or a header count
    past the records: the twin's located error."""
    k = binary.compiled_module("_wordtables")
    assert k is not None, "wvformats.framework._wordtables is not built"
    monkeypatch.setattr(binary, "_WALK_BLOCK_BYTES", block)  # (a block is at least 4 rows: 256 bytes here)
    monkeypatch.setattr(binary, "_WALK_APART_BYTES", 0)
    taken = []
    fill = binary._file_blocks.fill
    monkeypatch.setattr(binary._file_blocks, "fill", lambda self, *a: (taken.append(1), fill(self, *a))[1])
    folder = tmp_path_factory.mktemp("tables")
    data, _ = _w2v_table(records)
    head = f"{len(records) + extra} 16\n".encode()
    w2v = (head + data)[: len(head + data) - cut] + (trailing if not cut else b"")
    leader = b"".join(struct.pack("<I", len(w.encode())) + w.encode() + v for w, v, _ in records)
    leader = struct.pack("<QQQ", 38941, len(records) + extra, 16) + leader
    leader = leader[: len(leader) - cut]
    for fmt, s, body in (("word2vec-binary", schema.word2vec_binary, w2v), ("leader", schema.leader, leader)):
        path = folder / f"t.{fmt}"
        path.write_bytes(body)
        taken.clear()
        try:
            fast = framework.parse(s, wv.fileio.open_buffer(path), format=fmt)
        except FormatError as e:
            fast = (type(e), e.path, e.offset)
        with monkeypatch.context() as m:
            m.setenv("WVFORMATS_PURE_PYTHON", "1")
            try:
                slow = framework.parse(s, body, format=fmt)
            except FormatError as e:
                slow = (type(e), e.path, e.offset)
        assert equal(fast, slow) if not isinstance(fast, tuple) else fast == slow
        assert taken or isinstance(fast, tuple), "a whole table was not read from its file"


def test_a_table_read_from_its_file(tmp_path, monkeypatch):
    """A model read from a file takes the file path (no map walked), whose matrix is a C-contiguous float32
    array of its own rows (its memory: the rows and room for one block after them); a record longer than a block (the map is walked instead) and a file replaced at its path since
    it was mapped (the map is walked) give what the twin gives."""
    monkeypatch.setattr(binary, "_WALK_APART_BYTES", 0)
    walked = []
    walk = binary._map_blocks.run
    monkeypatch.setattr(binary._map_blocks, "run", lambda self, *a: (walked.append(1), walk(self, *a))[1])
    words = [f"w{i}" for i in range(5000)] + ["ок", "日本"]  # (over 64 KB: a small file is read whole, not mapped)
    emb = wv.Embeddings(words, np.arange(4 * len(words), dtype="<f4").reshape(-1, 4) / 8)
    for fmt in ("leader", "word2vec-binary"):
        path = tmp_path / f"e.{fmt}"
        wv.write(emb, path, fmt)
        walked.clear()  # (the writer's check of what it wrote)
        got = wv.read(path, fmt)
        assert not walked and got.words == words and got.vectors.tobytes() == emb.vectors.tobytes()
        assert got.vectors.flags.c_contiguous and got.vectors.dtype == np.float32
        assert got.vectors.base.nbytes == got.vectors.nbytes + binary._WALK_BLOCK_BYTES
    long_word = wv.Embeddings(["short", "L" * (3 << 20)], np.ones((2, 4), "<f4"))
    wv.write(long_word, tmp_path / "long.leader", "leader")
    walked.clear()
    assert wv.read(tmp_path / "long.leader").words == long_word.words and walked  # (3 MB word: the map's walk)
    walked.clear()
    buf = wv.fileio.open_buffer(tmp_path / "e.leader")
    (tmp_path / "e.leader").rename(tmp_path / "moved.leader")
    (tmp_path / "e.leader").write_bytes(b"another file")
    got = framework.parse(schema.leader, buf, format="leader")
    assert walked and list(got.records.words) == words


def test_a_file_read_stopped_by_a_word_that_does_not_decode(tmp_path, monkeypatch):
    """A word that is not UTF-8 far into a table read from its file (many blocks, on the worker thread): the words'
    thread stops, halts the read and waits for its end; the read is left to the twin, which names the word (the
    file read's result is never taken), and no descriptor is left open (the pipe, the file)."""
    monkeypatch.setattr(binary, "_WALK_APART_BYTES", 0)
    monkeypatch.setattr(binary, "_WALK_BLOCK_BYTES", 4096)
    taken = []
    fill = binary._file_blocks.fill
    monkeypatch.setattr(binary._file_blocks, "fill", lambda self, *a: (taken.append(1), fill(self, *a))[1])
    words = [f"w{i}".encode() for i in range(4000)]
    words[3000] = b"bad\xff"
    rows = np.arange(4 * len(words), dtype="<f4").reshape(-1, 4)
    body = b"".join(w + b" " + r.tobytes() for w, r in zip(words, rows, strict=True))
    path = tmp_path / "bad.word2vec-binary"
    path.write_bytes(f"{len(words)} 4\n".encode() + body)

    def descriptors():
        gc.collect()  # (an error's frames hold a file's map until collected)
        held = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                held[fd] = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                pass  # (the listing's own)
        return held

    before = descriptors()
    with pytest.raises(FormatError) as e:
        wv.read(path, "word2vec-binary")
    assert taken and e.value.path == "records[3000].word"
    del e
    assert {fd: what for fd, what in descriptors().items() if before.get(fd) != what} == {}  # (no pipe, no file)


def test_a_file_read_that_cannot_start_its_thread_leaves_nothing_open(tmp_path, monkeypatch):
    """No thread to be had for the file read (the system's limit): the error reaches the caller and neither the
    pipe nor the file is left open."""
    monkeypatch.setattr(binary, "_WALK_APART_BYTES", 0)

    def refused(*_):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(binary, "background", refused)
    path = tmp_path / "t.leader"
    wv.write(wv.Embeddings([f"w{i}" for i in range(5000)], np.ones((5000, 4), "<f4")), path, "leader")
    gc.collect()
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(RuntimeError, match="thread"):
        wv.read(path, "leader")
    gc.collect()
    assert set(os.listdir("/proc/self/fd")) <= before


@pytest.mark.parametrize("writer", ["word-vectors leader", "word-vectors word2vec-binary", "gensim word2vec-binary"])
def test_peers_binary_files_read_from_the_file_in_blocks(tmp_path, monkeypatch, writer):
    """Binary tables the peers wrote, large enough to be mapped (over 64 KB) and read from their files in many
    blocks by both threads (the file read path, records across blocks settled in place): the words and rows the
    peers wrote, bit for bit, and what gensim reads back from the same file."""
    word_vectors = pytest.importorskip("word_vectors")  # (the 'peers' extra, which CI installs)
    gensim_kv = pytest.importorskip("gensim.models").KeyedVectors
    monkeypatch.setattr(binary, "_WALK_APART_BYTES", 0)
    monkeypatch.setattr(binary, "_WALK_BLOCK_BYTES", 4096)
    taken = []
    fill = binary._file_blocks.fill
    monkeypatch.setattr(binary._file_blocks, "fill", lambda self, *a: (taken.append(1), fill(self, *a))[1])
    rng = np.random.default_rng(7)
    words = [f"w{i}" + "é" * (i % 3) + "x" * (i % 17) for i in range(3000)]
    vectors = rng.standard_normal((len(words), 12)).astype("<f4")
    tool, fmt = writer.split()
    path = tmp_path / f"peer.{fmt}"
    if tool == "gensim":
        kv = gensim_kv(vector_size=vectors.shape[1])
        kv.add_vectors(words, vectors)
        kv.save_word2vec_format(str(path), binary=True)
    else:
        {"leader": word_vectors.write_leader, "word2vec-binary": word_vectors.write_w2v}[fmt](str(path), words, vectors)
    assert path.stat().st_size > 1 << 16
    got = wv.read(path, fmt)
    assert taken, "the peer's file was not read from the file"
    assert got.words == words and got.vectors.tobytes() == vectors.tobytes()
    if fmt == "word2vec-binary":
        back = gensim_kv.load_word2vec_format(str(path), binary=True)
        assert got.words == list(back.index_to_key) and got.vectors.tobytes() == back.vectors.astype("<f4").tobytes()


def test_populate_makes_pages_present_and_changes_nothing():
    k = binary.compiled_module("_wordtables")
    room = np.arange(5 << 20, dtype=np.uint32).view(np.uint8)
    assert k.populate(room, 0, len(room)) in (True, False)  # (False: a system without MADV_POPULATE_WRITE)
    assert np.array_equal(room.view(np.uint32), np.arange(5 << 20, dtype=np.uint32))
    assert k.populate(room, 5, 5) is False  # no whole page inside
    with pytest.raises(ValueError, match="outside"):
        k.populate(room, 0, len(room) + 1)
    with pytest.raises(TypeError):
        k.populate(b"read-only", 0, 1)


def test_fill_reads_blocks_into_place_and_tells_each(tmp_path):
    """The kernel's ``fill``: a table read from its file a block at a time into the matrix's memory, each row moved
    into its place and each word set aside; every block told through the pipe as (records, offset), the end as
    (-1 - records, offset); a cut file, a word that does not fit aside, a record longer than a block, a halt, a
    bad descriptor and sizes that do not fit stop it short or are refused."""
    k = binary.compiled_module("_wordtables")
    rows = [b"ROW1", b"ROW2", b"ROW3"]
    body = b"".join(struct.pack("<I", len(w)) + w + r for w, r in zip([b"a", b"bcd", b"ef"], rows, strict=True))
    path = tmp_path / "t.leader"
    path.write_bytes(b"head" + body + b"tail")
    none = np.zeros(0, np.uint32)

    whole = 4 + len(body)

    def fill(block, end=whole, held=16, halt=0, fd=None, count=3, room=None):
        room = np.zeros(3 * 4 + block, np.uint8) if room is None else room
        spans, kept, progress = np.zeros(4, np.int64), np.zeros(held, np.uint8), np.zeros(4, np.int64)
        progress[3] = halt
        r, w = os.pipe()
        f = os.open(path, os.O_RDONLY)
        try:
            got = k.fill(f if fd is None else fd, 4, end, block, room, count, 4, True, kept, spans[:-1], spans[1:],
                         none, progress, w)
            told = np.frombuffer(os.read(r, 4096), np.int64).reshape(-1, 2).tolist()
        finally:
            for x in (r, w, f):
                os.close(x)
        return got, told, room, kept, spans, progress

    # records of 9, 11 and 10 bytes
    assert fill(block=8)[:2] == ((0, 4, 0, 0), [[-1, 4]])  # no record whole in a block: stops (the map is walked)
    assert fill(block=9)[:2] == ((1, 13, 1, 0), [[1, 13], [-2, 13]])  # the second longer than a block
    got, told, room, kept, spans, progress = fill(block=20)
    assert got == (3, 4 + len(body), 6, 0) and room[:12].tobytes() == b"".join(rows)
    assert kept[:6].tobytes() == b"abcdef" and spans.tolist() == [0, 1, 4, 6]
    assert told == [[2, 4 + 9 + 11], [-4, 4 + len(body)]] and progress[2] == 1  # (ended)
    assert fill(block=20, end=4 + len(body) - 1)[0][0] == 2  # the file cut inside the last record
    assert fill(block=20, held=3)[0][0] == 1  # "bcd" does not fit after "a"
    assert fill(block=20, halt=1)[:2] == ((0, 4, 0, 0), [[-1, 4]])  # halted before the first block
    assert fill(block=20, fd=-1)[0] == (0, 4, 0, errno.EBADF)
    with pytest.raises(ValueError, match="smaller than count rows"):
        fill(block=20, room=np.zeros(3 * 4 + 19, np.uint8))
    with pytest.raises(ValueError, match="outside"):
        fill(block=40, room=np.zeros(39, np.uint8))  # a block larger than the buffer
    with pytest.raises(ValueError, match="offset buffers"):
        fill(block=20, count=4)  # spans for 3 records only
    with pytest.raises(TypeError):
        fill(block=20, room=bytes(32))  # read-only


_REPEATED = ["a", "b", "a", "日本", "日本", "c", "a", "ab", "b", "é", "e\u0301", "\udcff", "\udcfe", "\udcff"]


@pytest.mark.parametrize("fmt", ["leader", "word2vec-binary", "word2vec-text", "glove"])
@pytest.mark.parametrize("options", [{}, {"unicode_errors": "replace"}, {"unicode_errors": "ignore"},
                                     {"encoding": "latin-1"}, {"limit": 6}])
def test_the_kernels_count_of_repeated_words_is_the_models(tmp_path, monkeypatch, fmt, options):
    """The word kernel hashes the words it makes and the table counts the repeated ones over their bytes:
    the model's ``duplicates`` (what the twins' models count from the words), also where bytes that differ
    decode to equal words (``replace``: both non-UTF-8 bytes are U+FFFD), where the words are read as bytes
    (surrogate escapes) and decoded from an ``encoding``, and under a ``limit``; NFC and NFD spellings stay
    two words."""
    strict = "unicode_errors" not in options and "encoding" not in options
    words = [w for w in _REPEATED if w.isprintable() or not strict]  # (strict: UTF-8 words only)
    words = words * 300  # (several blocks of the text kernel below)
    monkeypatch.setattr(text, "_KERNEL_BLOCK", 4096)
    path = tmp_path / f"t.{fmt}"
    wv.write(wv.Embeddings(words, np.arange(4 * len(words), dtype="<f4").reshape(-1, 4) / 4), path, fmt)
    # counted: strict, or surrogate escapes for an encoding (a limit of text lines is the line loop's, which
    # leaves the count to the model)
    counted = "unicode_errors" not in options and not ("limit" in options and fmt in ("word2vec-text", "glove"))
    parsed = wv.registry.get(fmt).parse(path.read_bytes(), **options)
    assert ("_duplicates" in parsed.records) == counted  # (else the model counts them)
    with pytest.warns(DuplicateWordsWarning):
        fast = wv.read(path, fmt, **options)
    monkeypatch.setenv("WVFORMATS_PURE_PYTHON", "1")
    with pytest.warns(DuplicateWordsWarning):
        slow = wv.read(path, fmt, **options)
    assert fast.words == slow.words and fast.vectors.tobytes() == slow.vectors.tobytes()
    assert fast.duplicates == slow.duplicates == count_duplicates(slow.words) > 0


def test_binary_kernel_checks_its_spans_and_sizes():
    k = binary.compiled_module("_wordtables")
    ws, we, out = np.array([0], np.int64), np.array([2], np.int64), np.empty((1, 1), np.float32)
    no_gaps, none = np.zeros(0, np.uint32), np.zeros(0, np.float32)
    with pytest.raises(ValueError, match="smaller"):  # more records than offsets
        k.walk(b"ab 1234", 0, 7, 0, 2, 4, False, ws, we, np.zeros(2, np.uint32), none)
    with pytest.raises(ValueError, match="smaller"):  # offsets from lo on: lo + count past them
        k.walk(b"ab 1234", 0, 7, 1, 1, 4, False, np.zeros(2, np.int64), we, np.zeros(2, np.uint32), none)
    with pytest.raises(ValueError, match="smaller"):  # rows past the output
        k.walk(b"ab 1234", 0, 7, 0, 2, 4, False, np.zeros(2, np.int64), np.zeros(2, np.int64),
               np.zeros(2, np.uint32), out)
    with pytest.raises(ValueError, match="smaller"):  # lo + count overflows
        k.walk(b"ab 1234", 0, 7, 2**62, 2**62, 4, True, ws, we, no_gaps, none)
    with pytest.raises(ValueError, match="outside"):
        k.walk(b"ab 1234", 0, 8, 0, 1, 4, False, ws, we, np.zeros(1, np.uint32), out)  # end past the buffer
    odd = np.zeros(17, np.uint8)[1:]  # (offsets at an odd address: read as int64, undefined; the sanitizer's find)
    with pytest.raises(ValueError, match="not aligned"):
        k.walk(b"ab 1234", 0, 7, 0, 1, 4, False, odd, we, np.zeros(1, np.uint32), out)
    with pytest.raises(ValueError, match="not aligned"):
        k.words(b"ab 1234", ws, odd, 0, 1, False, np.empty(1, np.uint64), [None])
    assert k.walk(b"ab 1234", 0, 7, 0, 1, 4, False, ws, we, np.zeros(1, np.uint32), out) == (1, 7)
    assert out.tobytes() == b"1234" and (ws[0], we[0]) == (0, 2)
    assert k.walk(b"ab 12", 0, 5, 0, 1, 4, False, ws, we, np.zeros(1, np.uint32), out) == (0, 0)  # row cut
    rows = np.zeros((2, 1), np.float32)  # a block from lo on: its spans and rows at lo
    starts, ends = np.zeros(2, np.int64), np.zeros(2, np.int64)
    assert k.walk(b"\x02\x00\x00\x00ab5678", 0, 10, 1, 1, 4, True, starts, ends, no_gaps, rows) == (1, 10)
    assert rows.tobytes() == bytes(4) + b"5678" and starts.tolist() == [0, 4] and ends.tolist() == [0, 6]
    hashes, one, two, into = np.empty(1, np.uint64), np.array([0], np.int64), np.array([1], np.int64), [None]
    with pytest.raises(ValueError, match="outside the buffer"):
        k.words(b"ab", ws, np.array([5], np.int64), 0, 1, False, hashes, into)  # the word runs past the end
    with pytest.raises(ValueError, match="outside"):
        k.words(b"ab 1234", np.zeros(2, np.int64), np.ones(2, np.int64), 0, 2, False, hashes, [None] * 2)
    with pytest.raises(IndexError):  # a list shorter than the words
        k.words(b"ab 1234", ws, we, 0, 1, False, hashes, [])
    assert k.words(b"ab 1234", ws, we, 0, 1, False, hashes, into) is True and into == ["ab"]
    assert k.words(b"\xff", one, two, 0, 1, False, hashes, into) is False  # not UTF-8: the twin names it
    assert k.words(b"\xff", one, two, 0, 1, True, hashes, into) is True and into == ["\udcff"]
    assert k.walk(b"\nab 1234", 0, 8, 0, 1, 4, False, ws, we, np.zeros(1, np.uint32), none) == (1, 8)
