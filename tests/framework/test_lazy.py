"""Positional members parsed when asked for (``At``, Kaitai's ``instances`` with ``pos:``) and schemas parsed
lazily (``parse(..., lazy=True)``): the values, the bytes built, and every error located by field path (with
array index) and absolute byte offset whenever it is found; dump and the docs show the members."""

import tracemalloc

import construct as cs
import pytest
from construct import this

from wvformats import framework
from wvformats.errors import TruncatedError, ValueMismatchError
from wvformats.framework import At, Chunks, Deferred, LazyFields, StringTable, Valid

item = cs.Struct("x" / cs.Int8ul * "a byte", "y" / cs.Const(b"Y") * "a constant")
body = cs.Struct("n" / cs.Int16ul * "entries that follow", "entries" / cs.Array(this.n, item) * "the entries")
toy = cs.Struct(
    "magic" / cs.Const(b"TOY1") * "magic",
    "body_at" / cs.Int32ul * "where the body is",
    "n_words" / cs.Int32ul * "words that follow",
    Valid("n_words", this.n_words < 10**6) * "fewer than a million words",
    "words" / StringTable(this.n_words) * "u32 length + UTF-8",
    "body" / At(this.body_at, body) * "the body, at body_at",
)
VALUE = {"magic": b"TOY1", "body_at": 40, "n_words": 3, "words": ["a", "bb", "ccc"],
         "body": {"n": 2, "entries": [{"x": 1, "y": b"Y"}, {"x": 2, "y": b"Y"}]}}
# the header (12 bytes), the words (18 bytes), ten bytes of nothing, the body at 40
DATA = bytes.fromhex("544f5931 28000000 03000000 01000000 61 02000000 6262 03000000 636363") + bytes(10) + \
    bytes.fromhex("0200 0159 0259")


@pytest.mark.parametrize("compile", [False, True])
def test_a_member_at_an_offset_is_parsed_when_called_and_built_where_it_lies(compile):
    assert framework.build(toy, VALUE, format="toy", compile=compile) == DATA
    parsed = framework.parse(toy, DATA, format="toy", compile=compile)
    assert isinstance(parsed.body, Deferred) and parsed.body.offset == 40
    assert parsed.body().entries[1].x == 2 and parsed.body() is parsed.body()  # parsed once
    assert framework.build(toy, parsed, format="toy", compile=compile) == DATA  # (built from the Deferred)


def _bad(at: int, byte: bytes) -> bytes:
    data = bytearray(DATA)
    data[at : at + 1] = byte
    return bytes(data)


def test_an_error_in_a_member_names_its_element_and_absolute_offset_whenever_it_is_parsed():
    """The second item's constant broken (byte 45): the member called after the parse, asked for in a lazy
    parse and walked by dump all name ``body.entries[1].y`` at byte 45, as walk.locate names it."""
    data = _bad(45, b"Z")
    parsed = framework.parse(toy, data, format="toy")  # (the member is not parsed yet: no error)
    errors = []
    for ask in (lambda: parsed.body(), lambda: framework.parse(toy, data, format="toy", lazy=True).body,
                lambda: framework.walk(toy, data, format="toy")):
        with pytest.raises(ValueMismatchError) as e:
            ask()
        errors.append((e.value.format, e.value.path, e.value.offset, e.value.found))
    assert errors == [("toy", "body.entries[1].y", 45, b"Z")] * 3


def test_dump_and_docs_show_a_member_where_it_lies():
    _, spans = framework.walk(toy, DATA, format="toy")
    assert [(s.path, s.start, s.end) for s in framework.leaves(spans) if s.path.startswith("body.")] == [
        ("body.n", 40, 42), ("body.entries[0].x", 42, 43), ("body.entries[0].y", 43, 44), ("body.entries[1].x", 44, 45),
        ("body.entries[1].y", 45, 46)]
    rows = framework.schema_table(toy)
    assert "| `body` | at byte body_at, parsed when asked for: Struct | 0 here | the body, at body_at |" in \
        next(r for r in rows if "`body`" in r)
    assert any("`body.entries[i].y`" in r for r in rows)


def test_a_lazy_parse_reads_the_fields_asked_for_and_no_further():
    """A broken word after the header: the header's fields read; the words up to the broken one read; the
    broken one an error naming it (``words[2]``) at its first bad byte, as the whole parse names it."""
    data = _bad(27, b"\xff")  # the first byte of "ccc"
    lazy = framework.parse(toy, data, format="toy", lazy=True)
    assert isinstance(lazy, LazyFields) and lazy.n_words == 3 and lazy.offset_of("n_words") == 8
    assert lazy.leading() == {"magic": b"TOY1", "body_at": 40, "n_words": 3}  # (and n_words < 10**6 checked)
    assert len(lazy.words) == 3 and lazy.words[:2] == ["a", "bb"]
    with pytest.raises(ValueMismatchError) as e:
        lazy.words[2]
    with pytest.raises(ValueMismatchError) as whole:
        framework.parse(toy, data, format="toy")
    assert (e.value.path, e.value.offset) == (whole.value.path, whole.value.offset) == ("words[2]", 27)


def test_a_lazy_parse_runs_the_checks_of_the_fields_it_reads():
    data = bytearray(DATA)
    data[8:12] = (10**6).to_bytes(4, "little")
    lazy = framework.parse(toy, bytes(data), format="toy", lazy=True)
    assert lazy.body_at == 40
    with pytest.raises(ValueMismatchError) as e:
        lazy.leading()
    assert (e.value.path, e.value.offset, e.value.found) == ("n_words", 8, 10**6)


def test_a_lazy_string_table_reads_only_the_strings_asked_for():
    words = [f"word{i}" for i in range(300_000)]
    after = 12 + sum(4 + len(w) for w in words)  # (the body after the words)
    data = framework.build(toy, {**VALUE, "n_words": len(words), "words": words, "body_at": after}, format="toy")
    tracemalloc.start()
    lazy = framework.parse(toy, data, format="toy", lazy=True)
    first = lazy.words[:10]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert first == words[:10] and peak < 100_000, peak
    assert lazy.words[-1] == words[-1]  # (a later string: the ones before it walked)


CHUNK_TYPES = {1: ("names", cs.Struct("n" / cs.Int32ul * "names", "labels" / StringTable(this.n) * "labels")),
               2: ("pair", cs.Struct("a" / cs.Int32ul * "a", "b" / cs.Const(7, cs.Int32ul) * "7"))}
chunked = cs.Struct("n_chunks" / cs.Int32ul * "chunks", "chunks" / Chunks(CHUNK_TYPES, listed=this.n_chunks) * "chunks")


def test_lazy_chunks_are_walked_by_their_lengths_and_their_bodies_parsed_as_asked():
    value = {"n_chunks": 3, "chunks": [{"chunk_id": 2, "body": {"a": 5, "b": 7}},
                                        {"chunk_id": 9, "body": b"raw"},
                                        {"chunk_id": 1, "body": {"n": 2, "labels": ["x", "yz"]}}]}
    data = framework.build(chunked, value, format="chunky")
    lazy = framework.parse(chunked, data, format="chunky", lazy=True)
    chunks = list(lazy.chunks)
    assert [(c.chunk_id, c.name, c._offset, c.end) for c in chunks] == [
        (2, "pair", 4, 24), (9, "unknown", 24, 39), (1, "names", 39, 66)]
    assert bytes(chunks[1].body) == b"raw" and chunks[2].body.labels[1] == "yz" and chunks[0].body.leading() == \
        {"a": 5, "b": 7}
    broken = bytearray(data)
    broken[20] = 8  # pair's constant
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(chunked, bytes(broken), format="chunky", lazy=True).chunks[0].body["b"]
    assert (e.value.format, e.value.path, e.value.offset) == ("chunky", "chunks[0].pair.b", 20)
    with pytest.raises(TruncatedError) as e:  # the file ends inside the last chunk
        list(framework.parse(chunked, data[:-1], format="chunky", lazy=True).chunks)
    assert (e.value.path, e.value.offset) == ("chunks[2]", 39)
    with pytest.raises(TruncatedError) as e:  # the header lists a fourth chunk
        len(framework.parse(chunked, b"\x04" + data[1:], format="chunky", lazy=True).chunks)
    assert (e.value.path, e.value.offset) == ("chunks[3]", 66)


@pytest.mark.parametrize("compile", [False, True])
def test_a_constant_inside_an_array_element_is_located_where_it_starts(compile):
    """The walk names the element (``entries[1].y``); the offset is the constant's first byte, 5, where it
    was the byte after it (the constant's size was not found below an array)."""
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(body, bytes.fromhex("0200 0159 025a"), format="toy", compile=compile)
    assert (e.value.path, e.value.offset, e.value.found) == ("entries[1].y", 5, b"Z")


def _touch(value):
    """Every field and element of a lazy value asked for, as a caller would, in file order."""
    if isinstance(value, LazyFields):
        for name in value.keys():
            _touch(value[name])
    elif isinstance(value, (framework.LazyChunks, list, cs.ListContainer)):
        for element in value:
            _touch(element)
    elif isinstance(value, framework.LazyStrings):
        value[:]
    elif isinstance(value, cs.Container):
        for v in value.values():
            _touch(v)


@pytest.mark.parametrize("schema,data", [(toy, DATA), (chunked, framework.build(chunked, {
    "n_chunks": 2, "chunks": [{"chunk_id": 1, "body": {"n": 2, "labels": ["x", "yz"]}},
                              {"chunk_id": 2, "body": {"a": 5, "b": 7}}]}, format="chunky"))])
def test_mutants_parsed_lazily_give_the_values_or_located_errors(schema, data):
    """Seeded mutants, every field asked for: what the whole parse reads, or the format's error with a path and
    an offset (never construct's, numpy's or Python's)."""
    from wvformats.errors import FormatError
    from wvformats.testing.fuzz import mutants

    for mutant, what in mutants(data, seed=1, cases=300):
        try:
            _touch(framework.parse(schema, mutant, format="m", lazy=True))
        except FormatError as e:
            assert e.format == "m" and e.offset is not None and "unchecked" not in str(e), (what, e)


def test_a_hostile_string_count_is_refused_before_a_string_is_read():
    """A names chunk counting 2**32 - 1 strings in 8 bytes: refused as the whole parse refuses it (each
    string needs its length field), naming the table; ``names[:]`` took minutes counting through the range."""
    data = framework.build(chunked, {"n_chunks": 1, "chunks": [{"chunk_id": 1, "body": {"n": 2, "labels": ["x", "yz"]}}]},
                           format="chunky")
    data = data[:16] + (2**32 - 1).to_bytes(4, "little") + data[20:]
    with pytest.raises(TruncatedError) as whole:
        framework.parse(chunked, data, format="chunky")
    with pytest.raises(TruncatedError) as e:
        framework.parse(chunked, data, format="chunky", lazy=True).chunks[0].body["labels"][:]
    assert (e.value.path, e.value.offset) == (whole.value.path, whole.value.offset) == ("chunks[0].names.labels", 20)


def test_a_struct_inside_a_lazy_struct_is_parsed_as_far_as_asked_and_the_fields_after_it_found():
    outer = cs.Struct("head" / cs.Struct("n" / cs.Int8ul * "n", "words" / StringTable(this.n) * "words") * "head",
                      "tail" / cs.Int16ul * "after the head's words")
    data = bytes.fromhex("02 01000000 61 02000000 6263 0700")
    lazy = framework.parse(outer, data, format="nested", lazy=True)
    assert lazy.head.words[0] == "a" and lazy.tail == 7 and lazy.offset_of("tail") == 12
    with pytest.raises(TruncatedError) as e:  # the second word runs past the input
        framework.parse(outer, data[:11], format="nested", lazy=True).head.words[1]
    assert (e.value.path, e.value.offset) == ("head.words[1]", 10)
