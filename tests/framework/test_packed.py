"""PackedStruct (runs of fixed-size fields read with one unpack, written with one pack) against construct's
Struct with the same fields: the same Container, the same bytes, the same errors (type, field path, offset,
message), in interpreted and compiled mode (against the interpreted Struct: construct's compiled one builds a
wrong Const without a word); plain-number tables read with one unpack; ``this`` expressions
evaluated as one function each."""

import enum
import io
import operator

import construct as cs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from roundtrip import MODES

from wvformats import framework
from wvformats.errors import FormatError
from wvformats.framework import CheckedBytes, EnumField, PackedStruct, Table, Valid, evaluate, field_docs
from wvformats.framework.packed import _Run
from wvformats.framework.walk import leaves, walk

this = cs.this


class Kind(enum.IntEnum):
    a = 1
    b = 7


FIELDS = (
    "magic" / cs.Const(b"PK\x03") * "three bytes",
    "version" / cs.Int8ul * "one byte",
    Valid("version", this.version < 200, "a check inside a run") * "below 200",
    "kind" / EnumField(cs.Int16ul, Kind) * "an enum inside a run",
    "count" / cs.Int32ul * "a count",
    "tag" / cs.Const(10, cs.Int16ul) * "a numeric constant",
    "name_length" / cs.Int8ul * "bytes of the name",
    "name" / CheckedBytes(this.name_length) * "a variable field ends the run",
    "wide" / cs.Int64ul * "a run of one field",
    "big" / cs.Int32ub * "another byte order: a run of its own",
    "also_big" / cs.Int16ub * "with this one",
    "kept" / EnumField(cs.Int8ul, Kind, unknown="keep") * "an enum that keeps unknown values",
    "scale" / cs.Float32l * "a float",
    "last" / cs.Int16sl * "a signed one",
    Valid("last", this.last != -1) * "a check after the last field",
)
plain = cs.Struct(*FIELDS)
packed = PackedStruct(*FIELDS)

SAMPLE = cs.Container(magic=b"PK\x03", version=3, kind=Kind.b, count=5, tag=10, name_length=3, name=b"abc",
                      wide=2**40, big=9, also_big=1, kept=2, scale=1.5, last=4)


def outcome(schema, data, compiled):
    try:
        got = framework.parse(schema, data, format="t", compile=compiled)
        return "ok", [(k, repr(v), type(v)) for k, v in got.items() if not k.startswith("_")]  # (in order; NaN too)
    except FormatError as e:
        return type(e).__name__, e.path, e.offset, str(e)


def built(schema, obj, compiled):
    try:
        return "ok", framework.build(schema, obj, format="t", compile=compiled)
    except FormatError as e:
        return type(e).__name__, e.path, e.offset, str(e)


def test_the_runs_are_found():
    runs = [step for step in packed.steps if isinstance(step, _Run)]
    # (a byte goes with either order; a single float is read alone, bit for bit, and "last" is then a run of one)
    assert [r.names for r in runs] == [("magic", "version", "kind", "count", "tag", "name_length"),
                                       ("big", "also_big", "kept")]
    assert [r.fmt.format for r in runs] == ["<3sBHLHB", ">LHB"]


@MODES
def test_a_sample_parses_and_builds_as_struct_does(compiled):
    data = framework.build(plain, SAMPLE, format="t")
    assert built(packed, SAMPLE, compiled) == ("ok", data)
    assert outcome(packed, data, compiled) == outcome(plain, data, False)
    assert ("kind", repr(Kind.b), Kind) in outcome(packed, data, compiled)[1]


@MODES
def test_every_cut_and_every_flipped_byte_fails_as_struct_does(compiled):
    data = framework.build(plain, SAMPLE, format="t")
    for n in range(len(data)):
        assert outcome(packed, data[:n], compiled) == outcome(plain, data[:n], False), n
    for i in range(len(data)):
        for value in (0, 0xFF, 2):
            bad = data[:i] + bytes([value]) + data[i + 1 :]
            assert outcome(packed, bad, compiled) == outcome(plain, bad, False), (i, value)


@MODES
@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=40))
def test_any_bytes_parse_as_struct_parses_them(compiled, data):
    assert outcome(packed, data, compiled) == outcome(plain, data, False)


@MODES
@settings(max_examples=150, deadline=None)
@given(changes=st.dictionaries(st.sampled_from(sorted(SAMPLE)), st.one_of(
    st.integers(-3, 2**33), st.none(), st.sampled_from(["a", "b", "z", b"PK\x03", b"xx", 1.5]))))
def test_any_values_build_as_struct_builds_them(compiled, changes):
    obj = cs.Container({**SAMPLE, **changes})
    assert built(packed, obj, compiled) == built(plain, obj, False)


def test_docs_and_dumps_see_every_field():
    assert [(n, d) for n, _, d in field_docs(packed)] == [(n, d) for n, _, d in field_docs(plain)]
    data = framework.build(plain, SAMPLE, format="t")
    spans = [(s.path, s.start, s.end) for s in leaves(walk(packed, data, format="t")[1])]
    assert spans == [(s.path, s.start, s.end) for s in leaves(walk(plain, data, format="t")[1])]
    assert [p for p, _, _ in spans][:3] == ["magic", "version", "kind"]


# ---------------------------------------------------------------------------------------------------------
# a table of plain numbers: one unpack, the loop's errors where they do not fill it

@MODES
@pytest.mark.parametrize("table", [
    cs.Struct("n" / cs.Int8ul, "values" / Table(cs.Int64ul, length=this.n, min_size=8)),
    cs.Struct("n" / cs.Int8ul, "values" / Table(cs.Int16ub, count=this.n)),
], ids=["length", "count"])
def test_number_tables_read_at_once_as_the_loop_reads_them(compiled, table):
    inner = table.subcons[1].subcon
    loop = Table(inner.subcon, count=inner.count, length=inner.length, min_size=inner.min_size)
    loop._scalar = None  # (the record-by-record loop, as before)
    slow = cs.Struct(table.subcons[0], "values" / loop)
    assert inner._scalar is not None
    for n in (0, 1, 2, 3, 8, 12, 16):
        for extra in range(0, 18, 3):
            data = bytes([n]) + bytes(range(1, 1 + extra))
            assert outcome(table, data, compiled) == outcome(slow, data, compiled), (n, extra)
            got = outcome(table, data, compiled)
            if got[0] == "ok":
                fast = framework.parse(table, data, format="t", compile=compiled)["values"]
                assert fast.offsets == framework.parse(slow, data, format="t")["values"].offsets


# ---------------------------------------------------------------------------------------------------------
# ``this`` expressions evaluated as one function


@given(a=st.integers(-5, 300), b=st.integers(-5, 300))
def test_expressions_evaluate_as_construct_evaluates_them(a, b):
    ctx = cs.Container(a=a, b=b, _=cs.Container(c=a + 1))
    for expr in (this.a, this.a + this.b * 2, (this.a >= 1) & (this.b <= 3), this.a & 8, -this.a,
                 this._.c - this.b, this.a == 200, ~this.b, this.a // 7 % 3 if True else None):
        assert evaluate(expr, ctx) == expr(ctx)
    with pytest.raises(KeyError):
        evaluate(this.missing, ctx)
    assert evaluate(lambda c: c.a * 3, ctx) == 3 * a and evaluate(5, ctx) == 5
    assert operator.eq(evaluate(cs.len_(this._), ctx), 1)  # (an expression it does not compile: called as it is)


@MODES
def test_a_stream_that_is_not_a_buffer_reads_the_same(compiled):
    data = framework.build(plain, SAMPLE, format="t")
    for n in range(len(data) + 1):
        assert outcome(packed, io.BytesIO(data[:n]), compiled) == outcome(plain, data[:n], False), n


DERIVED_ENUM = PackedStruct(
    "kind" / EnumField(cs.Int16ul, Kind) * "an enum given",
    "again" / framework.Derived(EnumField(cs.Int16ul, Kind), this.kind) * "the same enum, derived from it",
    "count" / cs.Int32ul * "a count",
)


@MODES
def test_a_derived_enum_is_read_in_its_run_and_built_from_its_value(compiled):
    # a zip directory entry's compression is its member's: a derived enum, read with the fields beside it
    runs = [step for step in DERIVED_ENUM.steps if isinstance(step, _Run)]
    assert [r.names for r in runs] == [("kind", "again", "count")]
    data = framework.build(DERIVED_ENUM, cs.Container(kind=Kind.b, count=3), format="t", compile=compiled)
    assert data == b"\x07\x00\x07\x00\x03\x00\x00\x00"
    parsed = framework.parse(DERIVED_ENUM, data, format="t", compile=compiled)
    assert parsed.again is Kind.b and parsed.count == 3
    with pytest.raises(FormatError) as e:  # (an unknown value: read field by field, the enum's own error)
        framework.parse(DERIVED_ENUM, b"\x07\x00\x05\x00\x03\x00\x00\x00", format="t", compile=compiled)
    assert (e.value.path, e.value.offset) == ("again", 2)


@MODES
@pytest.mark.parametrize("value", ["a", 5, None])
def test_a_byte_field_given_no_bytes_is_refused_by_name(compiled, value):
    """A str, int or None for a byte field: the framework's BuildError naming the field, in both modes (it was an
    "unchecked input" TypeError whose words depended on the stream: hypothesis found them differing)."""
    obj = cs.Container({**SAMPLE, "name_length": 1, "name": value})
    for schema in (packed, plain):
        got = built(schema, obj, compiled if schema is packed else False)
        assert got[:3] == ("BuildError", "name", 13) and "expected bytes" in got[3], got

