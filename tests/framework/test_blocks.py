"""The declarative blocks a new format needs (issue 28, item 3): JSON header fields, tensor tables, 0-d arrays,
tables to the end of their input, enums, and checks bound to their fields. Each: a hypothesis round trip in
interpreted and compiled mode (values drawn by wvformats.testing), and located errors."""

import enum
import json

import construct as cs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from roundtrip import MODES, assert_truncations_fail, roundtrip

from wvformats import framework, testing
from wvformats.errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from wvformats.framework import EnumField, JSONField, NumpyArray, SchemaError, Table, Tensors, Valid
from wvformats.framework.walk import leaves, walk
from wvformats.testing.strategies import tensor_table

this = cs.this

# ---------------------------------------------------------------------------------------------------------
# 0-d arrays, and a shape read from another field

scalars = cs.Struct(
    "scale" / NumpyArray("<f4", ()) * "one f32: a 0-d array",
    "ndim" / cs.Int8ul,
    "shape" / NumpyArray("<u2", this.ndim),
    "data" / NumpyArray("<i2", this.shape) * "the shape is the array read before",
)


@MODES
@given(value=testing.strategy(scalars, format="t"))
def test_0d_arrays_and_shapes_from_a_field_roundtrip(compiled, value):
    data = roundtrip(scalars, value, format="t", compiled=compiled)
    back = framework.parse(scalars, data, format="t", compile=compiled)
    assert back.scale.shape == () and back.data.shape == tuple(value.shape)
    assert_truncations_fail(scalars, data, format="t", compiled=compiled)


def test_0d_array_builds_from_a_scalar():
    """A 0-d array writes one value (the build compared its shape after np.ascontiguousarray, which makes any
    0-d array 1-d: 'array shape does not match its header (expected (), found (1,))')."""
    schema = cs.Struct("x" / NumpyArray("<f4", ()))
    data = framework.build(schema, {"x": np.float32(2.5)}, format="t")
    assert data == np.float32(2.5).tobytes()
    assert framework.parse(schema, data, format="t").x[()] == 2.5
    with pytest.raises(BuildError) as e:
        framework.build(schema, {"x": np.zeros(1, "<f4")}, format="t")
    assert (e.value.path, e.value.expected, e.value.found) == ("x", (), (1,))


# ---------------------------------------------------------------------------------------------------------
# JSON header fields

header = cs.Struct(
    "magic" / cs.Const(b"JS"),
    "header" / JSONField("u32", align=8) * "u32 length, then a JSON object padded with spaces to 8 bytes",
    "tail" / cs.Int8ul,
)


@MODES
@given(value=testing.strategy(header, format="t"))
def test_json_field_roundtrip(compiled, value):
    data = roundtrip(header, value, format="t", compiled=compiled)
    assert (2 + 4 + int.from_bytes(data[2:6], "little")) % 8 == 0  # padded to an absolute multiple of 8
    assert_truncations_fail(header, data, format="t", compiled=compiled, step=3)


NOT_CANONICAL = ['{ "b" : 1.0,\n  "a": "\\u00e9", "c": [1e2, -0.0] }  ', '{"z":{},"a":[]}', '{"x":"\\/"}']


@MODES
@pytest.mark.parametrize("text", NOT_CANONICAL)
def test_json_field_keeps_its_bytes_until_changed(compiled, text):
    raw = text.encode()
    data = b"JS" + len(raw).to_bytes(4, "little") + raw + b"\x07"
    back = framework.parse(header, data, format="t", compile=compiled)
    assert back.header == json.loads(text) and back.header.raw == raw
    assert framework.build(header, back, format="t", compile=compiled) == data  # byte-exact
    back.header["new"] = 1  # changed: written canonically, padded
    again = framework.build(header, back, format="t", compile=compiled)
    n = int.from_bytes(again[2:6], "little")
    assert again[6 : 6 + n].rstrip(b" ") == framework.compact(back.header).encode()
    assert framework.parse(header, again, format="t").header == back.header


def _json_error(raw: bytes, compiled: bool) -> FormatError:
    data = b"JS" + len(raw).to_bytes(4, "little") + raw + b"\x07"
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(header, data, format="t", compile=compiled)
    assert e.value.path == "header" and e.value.format == "t"
    return e.value


@MODES
def test_json_field_errors_name_the_field_and_offset(compiled):
    assert _json_error(b'{"a": 1,, }', compiled).offset == 6 + 8  # the second comma
    e = _json_error(b'{"a": "\xc3("}', compiled)
    assert "UTF-8" in str(e) and e.offset == 6 + 7
    assert "twice" in str(_json_error(b'{"a": 1, "a": 2}', compiled))
    assert _json_error(b'{"a": NaN}', compiled).offset == 6 + 6
    e = _json_error(b'{"a": [1, -' + b"9" * 5000 + b"]}", compiled)  # (int() refuses it: found by the fuzz)
    assert "a number of 5000 digits" in str(e) and e.offset == 6 + 10 and framework.UNCHECKED not in str(e)
    assert "not a dict" in str(_json_error(b"[1, 2]", compiled))
    with pytest.raises(TruncatedError) as t:
        framework.parse(header, b"JS\xff\xff\x00\x00{}", format="t", compile=compiled)
    assert (t.value.path, t.value.offset) == ("header", 6)
    with pytest.raises(ValueMismatchError, match="longer than the 10 allowed"):
        framework.parse(cs.Struct("h" / JSONField("u8", limit=10)), b"\x0b{}         ", format="t")
    with pytest.raises(BuildError) as b:
        framework.build(header, {"header": {"x": float("nan")}, "tail": 0}, format="t")
    assert b.value.path == "header"


# ---------------------------------------------------------------------------------------------------------
# tensor tables: arrays whose dtype, shape and byte range another field lists (safetensors' layout)

DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "U8": "u1", "BF16": "<u2", "BOOL": "?"}
tensors = cs.Struct(
    "header" / JSONField("u64", align=8) * "tensor name -> dtype, shape, data_offsets; __metadata__",
    "data" / Tensors(this.header, DTYPES, skip=("__metadata__",)) * "the tensors' bytes, to the end",
)


def _tensors_field() -> Tensors:
    con = tensors.subcons[1]
    while isinstance(con, cs.Renamed):
        con = con.subcon
    return con


@MODES
@given(value=testing.strategy(tensors, format="t",
                              fields={"header": tensor_table(_tensors_field(), metadata=st.dictionaries(
                                  st.text(max_size=3), st.text(max_size=3), max_size=2))}))
def test_tensor_table_roundtrip(compiled, value):
    data = roundtrip(tensors, value, format="t", compiled=compiled)
    back = framework.parse(tensors, data, format="t", compile=compiled)
    for name, arr in back.data.items():
        entry = back.header[name]
        assert arr.shape == tuple(entry["shape"]) and arr.dtype == np.dtype(DTYPES[entry["dtype"]])
    assert_truncations_fail(tensors, data, format="t", compiled=compiled, step=5)


def _tensor_file(table: dict, body: bytes) -> bytes:
    raw = json.dumps(table).encode()
    raw += b" " * (-(8 + len(raw)) % 8)
    return len(raw).to_bytes(8, "little") + raw + body


@MODES
def test_tensor_table_is_zero_copy_and_errors_name_the_tensor(compiled):
    good = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "s": {"dtype": "I64", "shape": [], "data_offsets": [8, 16]}}
    data = _tensor_file(good, np.arange(2, dtype="<f4").tobytes() + np.int64(7).tobytes())
    base = len(data) - 16
    got = framework.parse(tensors, data, format="st", compile=compiled)
    assert got.data["s"].shape == () and int(got.data["s"]) == 7
    assert np.shares_memory(got.data["a"], np.frombuffer(data, np.uint8))
    spans = {s.path: (s.start, s.end) for s in walk(tensors, data, format="st")[1]}
    assert spans["data.a"] == (base, base + 8) and spans["data.s"] == (base + 8, base + 16)  # dump shows each

    def error(table, body=bytes(16)):
        with pytest.raises(FormatError) as e:
            framework.parse(tensors, _tensor_file(table, body), format="st", compile=compiled)
        return e.value

    e = error({**good, "s": {"dtype": "I64", "shape": [], "data_offsets": [4, 12]}})
    assert (e.path, e.offset, type(e)) == ("data.s", base + 4, ValueMismatchError) and "overlaps" in str(e)
    e = error({**good, "s": {"dtype": "I64", "shape": [], "data_offsets": [9, 17]}}, bytes(17))
    assert e.path == "data.s" and "gap of 1 bytes" in str(e)
    e = error({**good, "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})
    assert e.path == "data.a" and "needs 12" in str(e)
    e = error({**good, "a": {"dtype": "Q9", "shape": [2], "data_offsets": [0, 8]}})
    assert e.path == "data.a" and "'Q9'" in str(e) and e.found == "Q9"
    e = error(good, bytes(12))
    assert (e.path, type(e)) == ("data.s", TruncatedError)
    e = error(good, bytes(20))
    assert (e.path, e.offset) == ("data", base + 16) and "4 bytes after the last tensor" in str(e)
    e = error({"a": {"dtype": "F32", "shape": [2]}})
    assert e.path == "data.a" and "lacks" in str(e)


def test_tensor_table_build_refuses_arrays_the_table_does_not_list():
    table = {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}
    with pytest.raises(BuildError) as e:
        framework.build(tensors, {"header": table, "data": {"a": np.zeros(1, "u1"), "b": np.zeros(1, "u1")}},
                        format="st")
    assert e.value.path == "data" and "'b'" in str(e.value)
    with pytest.raises(BuildError) as e:
        framework.build(tensors, {"header": table, "data": {"a": np.zeros(2, "u1")}}, format="st")
    assert e.value.path == "data.a"


# ---------------------------------------------------------------------------------------------------------
# tables of records to the end of their input


class Kind(enum.IntEnum):
    WORD = 1
    LABEL = 2


record = cs.Struct(
    "kind" / EnumField(cs.Int8ul, Kind) * "1 word, 2 label",
    "key" / framework.CheckedString("u8") * "u8 length, UTF-8",
    "count" / cs.Int32ul,
    Valid("count", this.count < 1000) * "count < 1000",
)
to_end = cs.Struct("magic" / cs.Const(b"T"), "records" / Table(record, min_size=6) * "to the end of the file")


@MODES
@given(value=testing.strategy(to_end, format="t"))
def test_table_to_the_end_roundtrip(compiled, value):
    data = roundtrip(to_end, value, format="t", compiled=compiled)
    offsets = framework.parse(to_end, data, format="t", compile=compiled).records.offsets
    for n in range(1, len(data)):  # a cut between records is a shorter table; inside one, an error naming it
        if n in offsets:
            got = framework.parse(to_end, data[:n], format="t", compile=compiled).records
            assert testing.equal(got, value.records[: offsets.index(n)])
        else:
            with pytest.raises(FormatError) as e:
                framework.parse(to_end, data[:n], format="t", compile=compiled)
            k = sum(1 for o in offsets if o < n) - 1
            assert e.value.path.startswith(f"records[{k}].")


def _records(*recs):
    return b"T" + b"".join(bytes([k, len(w)]) + w + c.to_bytes(4, "little") for k, w, c in recs)


@MODES
def test_table_names_the_damaged_record_where_greedy_range_stops_silently(compiled):
    data = _records((1, b"ab", 5), (2, b"c", 6), (1, b"de", 7))
    cut = data[:-2]
    greedy = cs.Struct("magic" / cs.Const(b"T"), "records" / cs.GreedyRange(
        cs.Struct("kind" / cs.Int8ul, "key" / cs.PascalString(cs.Int8ul, "utf8"), "count" / cs.Int32ul)))
    assert len(greedy.parse(cut).records) == 2  # construct: the damaged third record is dropped unseen
    with pytest.raises(TruncatedError) as e:
        framework.parse(to_end, cut, format="t", compile=compiled)
    assert (e.value.path, e.value.offset) == ("records[2].count", 1 + 8 + 7 + 4)
    bad = bytearray(data)
    bad[1 + 8 + 7 + 1] = 0xFF  # the third record's key length: past the end
    with pytest.raises(TruncatedError) as e:
        framework.parse(to_end, bytes(bad), format="t", compile=compiled)
    assert e.value.path == "records[2].key"
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(to_end, _records((1, b"ab", 5), (1, b"c", 5000)), format="t", compile=compiled)
    assert (e.value.path, e.value.offset, e.value.found) == ("records[1].count", 1 + 8 + 3, 5000)
    counted = cs.Struct("n" / cs.Int8ul, "records" / Table(record, this.n, min_size=6))
    with pytest.raises(TruncatedError) as e:
        framework.parse(counted, b"\xff" + data[1:], format="t", compile=compiled)
    assert "255 records needs 1530 bytes" in str(e.value)


def test_table_records_show_in_dumps():
    data = _records((1, b"ab", 5), (2, b"c", 6))
    spans = {s.path: (s.start, s.end, s.value) for s in leaves(walk(to_end, data, format="t")[1])}
    assert spans["records[1].key"] == (1 + 8 + 1, 1 + 8 + 3, "c")  # u8 length and the byte
    assert spans["records[0].kind"][2] is Kind.WORD


led = cs.Struct(
    "records" / Table(cs.Struct("tag" / cs.Const(b"R"), "n" / cs.Int8ul), lead=b"R", min_size=2)
    * "records, each opened by R",
    "end" / cs.Const(b"E") * "then E",
)


@MODES
def test_a_table_told_by_its_records_leading_bytes_ends_where_they_stop(compiled):
    # (a zip's headers: local entries while PK\3\4 follows, then the directory's, each opened by its signature)
    got = framework.parse(led, b"R\x01R\x02E", format="t", compile=compiled)
    assert [r.n for r in got.records] == [1, 2] and got.records.offsets == [0, 2, 4]
    assert framework.parse(led, b"E", format="t", compile=compiled).records == []
    assert framework.build(led, got, format="t", compile=compiled) == b"R\x01R\x02E"
    with pytest.raises(TruncatedError) as e:  # a record cut after its lead byte: that record's error
        framework.parse(led, b"R\x01R", format="t", compile=compiled)
    assert e.value.path == "records[1].n" and e.value.offset == 3
    with pytest.raises(FormatError) as e:  # what follows the records is the next field's to judge
        framework.parse(led, b"R\x01X", format="t", compile=compiled)
    assert e.value.path == "end" and e.value.offset == 2


def test_bounded_ends_a_stream_for_a_while_keeping_its_offsets():
    stream = framework.BufferStream(b"0123456789")
    stream.seek(2)
    with framework.bounded(stream, 3) as inner:
        assert inner.read() == b"234" and inner.tell() == 5 and framework.remaining(inner) == 0
        with pytest.raises(TruncatedError) as e:
            framework.check_length(inner, 1, "x", "a byte")
        assert e.value.offset == 5
    assert stream.read() == b"56789"  # the end is back


# ---------------------------------------------------------------------------------------------------------
# enums: unknown values refused with a located error, or kept, as the schema says

strict = cs.Struct("pad" / cs.Int8ul, "kind" / EnumField(cs.Int16ul, Kind))
lenient = cs.Struct("pad" / cs.Int8ul, "kind" / EnumField(cs.Int16ul, Kind, unknown="keep"))


@MODES
@given(value=testing.strategy(lenient, format="t"))
def test_enum_roundtrip(compiled, value):
    data = roundtrip(lenient, value, format="t", compiled=compiled)
    back = framework.parse(lenient, data, format="t", compile=compiled)
    assert isinstance(back.kind, Kind) == (back.kind in (1, 2))


@MODES
def test_enum_unknown_values_refused_or_kept(compiled):
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(strict, b"\0\x07\0", format="t", compile=compiled)
    assert (e.value.path, e.value.offset, e.value.found) == ("kind", 1, 7)
    assert "1 WORD, 2 LABEL" in str(e.value)
    kept = framework.parse(lenient, b"\0\x07\0", format="t", compile=compiled)
    assert kept.kind == 7 and framework.build(lenient, kept, format="t", compile=compiled) == b"\0\x07\0"
    assert framework.parse(strict, b"\0\x02\0", format="t").kind is Kind.LABEL
    assert framework.build(strict, {"pad": 0, "kind": "LABEL"}, format="t") == b"\0\x02\0"
    with pytest.raises(BuildError) as e:
        framework.build(strict, {"pad": 0, "kind": 9}, format="t", compile=compiled)
    assert e.value.path == "kind"
    with pytest.raises(BuildError):
        framework.build(strict, {"pad": 0, "kind": "NOUN"}, format="t")


# ---------------------------------------------------------------------------------------------------------
# a Valid is bound to the field it checks


def test_a_valid_after_another_field_is_refused():
    """Valid("a") placed after field "b" located its error at b's start, not a's, without a word: the schema
    is refused at its first parse or build, naming both."""
    misplaced = cs.Struct("a" / cs.Int8ul, "b" / cs.Int16ul, Valid("a", this.a < 5))
    for run in (lambda: framework.parse(misplaced, b"\x09\0\0", format="t"),
                lambda: framework.build(misplaced, {"a": 1, "b": 2}, format="t"),
                lambda: walk(misplaced, b"\x09\0\0")):
        with pytest.raises(SchemaError, match="Valid\\('a', ...\\) follows field 'b'"):
            run()
    nested = cs.Struct("h" / cs.Struct("a" / cs.Int8ul, cs.Padding(1), Valid("a", this.a < 5)))
    assert framework.bound_checks(nested) == ["h: Valid('a', ...) follows an unnamed field: a Valid goes right "
                                              "after the field it checks"]
    first = cs.Struct(Valid("a", this.a < 5), "a" / cs.Int8ul)
    assert "follows the start of the struct" in framework.bound_checks(first)[0]
    bound = cs.Struct("a" / cs.Int8ul, Valid("a", this.a < 5), Valid("a", this.a > 0), "b" / cs.Int8ul)
    assert framework.bound_checks(bound) == []


def test_every_registered_schema_binds_its_checks():
    from wvformats import registry

    for name, fmt in registry.load().items():
        for schema in [fmt.schema, *fmt.schemas.values()]:
            if schema is not None:
                assert framework.bound_checks(schema) == [], name


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
def test_a_failed_build_names_the_field_in_both_modes(compiled):
    """Compiled code carries no field paths (the error said 't at byte 1: expected a str'): the build is run
    again interpreted, into nothing, to name the field."""
    schema = cs.Struct("a" / cs.Int8ul, "s" / framework.CheckedString())
    with pytest.raises(BuildError) as e:
        framework.build(schema, {"a": 1, "s": 5}, format="t", compile=compiled)
    assert (e.value.path, e.value.offset, e.value.format) == ("s", 1, "t")


def test_docs_pages_describe_the_new_blocks():
    rows = framework.schema_table(to_end)
    assert "| 1 | `records` | Table to the end | variable | to the end of the file |" in rows
    assert "| 0 | `records[i].kind` | u8 enum Kind (1 WORD, 2 LABEL) | 1 | 1 word, 2 label |" in [
        r.replace("u8le", "u8") for r in rows]
    rows = framework.schema_table(tensors)
    assert any("`header` | u64le length, then JSON text of a JSON object" in r for r in rows)
    assert any("`data` | Tensors listed in header" in r for r in rows)
