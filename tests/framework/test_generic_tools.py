"""The generic tools see every field of a user's schema: ``dump`` and the docs go inside ``If``,
``IfThenElse``, ``Switch`` and arrays of structs with element paths; errors name array elements and
fields without a name; half and single floats are rebuilt bit for bit (issue 38, item 5)."""

from __future__ import annotations

import struct

import construct as cs
import hypothesis.strategies as st
import pytest
from construct import this
from hypothesis import given

from wvformats import framework
from wvformats.errors import FormatError, TruncatedError, ValueMismatchError
from wvformats.framework import PackedStruct
from wvformats.framework.docs import schema_table
from wvformats.framework.walk import hexdump, leaves, walk

modes = pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])

point = cs.Struct("x" / cs.Int8ul * "x coordinate", "y" / cs.Int16ul * "y coordinate")
SCHEMA = cs.Struct(
    "kind" / cs.Int8ul * "1 or 2: which body follows",
    "n" / cs.Int8ul * "number of points",
    "points" / cs.Array(this.n, point) * "the points",
    "extra" / cs.If(this.kind == 1, cs.Struct("a" / cs.Int32ul * "only in kind 1")) * "kind 1's extra",
    "body" / cs.Switch(this.kind, {1: cs.Struct("p" / cs.Float32l * "a float"),
                                   2: cs.Struct("q" / cs.Int16ul * "a number")}) * "by kind",
    "tail" / cs.IfThenElse(this.kind == 1, cs.Struct("t" / cs.Int8ul * "then"), cs.Struct("e" / cs.Int16ul * "else")),
    cs.Terminated,
)
KIND1 = bytes([1, 2, 5, 6, 0, 7, 8, 0]) + struct.pack("<I", 9) + bytes.fromhex("0100807f") + b"\x03"
KIND2 = bytes([2, 1, 5, 6, 0]) + struct.pack("<H", 4) + struct.pack("<H", 300)


def test_dump_shows_the_fields_inside_arrays_conditions_and_switches():
    _, spans = walk(SCHEMA, KIND1, format="demo")
    shown = [(s.path, s.start, s.end) for s in leaves(spans)]
    assert shown == [("kind", 0, 1), ("n", 1, 2), ("points[0].x", 2, 3), ("points[0].y", 3, 5),
                     ("points[1].x", 5, 6), ("points[1].y", 6, 8), ("extra.a", 8, 12), ("body.p", 12, 16),
                     ("tail.t", 16, 17), ("<Terminated>", 17, 17)]
    _, spans = walk(SCHEMA, KIND2, format="demo")
    assert [s.path for s in leaves(spans)] == ["kind", "n", "points[0].x", "points[0].y", "extra", "body.q",
                                                "tail.e", "<Terminated>"]
    text = "\n".join(hexdump(spans, KIND2))
    assert "body.q = 4    # a number" in text and "tail.e = 300    # else" in text


def test_dump_of_greedy_and_repeat_until_arrays_and_pointers():
    schema = cs.Struct(
        "at" / cs.Int8ul * "where the pointed record lies",
        "pointed" / cs.Pointer(this.at, point) * "a record at an offset",
        "until" / cs.RepeatUntil(lambda obj, lst, ctx: obj.x == 0, point) * "records to one with x == 0",
        "rest" / cs.GreedyRange(point) * "records to the end",
    )
    data = bytes([4, 1, 2, 0, 0, 9, 0, 3, 4, 0]) + bytes([5, 6, 0])
    value, spans = walk(schema, data, format="demo")
    assert value == framework.parse(schema, data, format="demo")
    paths = [s.path for s in leaves(spans)]
    assert [(s.start, s.end) for s in spans if s.path == "pointed.y"] == [(5, 7)]  # where the pointer says
    assert paths[:3] == ["at", "until[0].x", "until[0].y"] and "until[1].y" in paths and "rest[1].x" in paths
    assert "rest[2].x" not in paths  # (a GreedyRange keeps no span of the element that does not parse)


def test_docs_list_the_fields_of_every_branch_and_array_element():
    rows = "\n".join(schema_table(SCHEMA))
    for path in ("points[i].x", "points[i].y", "extra.a", "body.p", "body.q", "tail.t", "tail.e", "<Terminated>"):
        assert f"`{path}`" in rows, path
    assert "| | (case 2) | Struct | 2 | `body` when kind == 2 |" in rows
    assert "switch on kind: 1: Struct, 2: Struct" in rows


@modes
def test_errors_name_the_array_element_and_the_unnamed_field(compiled):
    with pytest.raises(TruncatedError) as e:
        framework.parse(SCHEMA, KIND1[:6], format="demo", compile=compiled)
    assert (e.value.path, e.value.offset) == ("points[1].y", 6)
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(SCHEMA, KIND1 + b"!", format="demo", compile=compiled)
    assert (e.value.path, e.value.offset) == ("<Terminated>", 17)
    assert str(e.value).startswith("demo <Terminated> at byte 17: the data ends here")


FLOATS = cs.Struct("h" / cs.Float16b * "a half", "s" / cs.Float32l * "a single", "d" / cs.Float64b * "a double")
PACKED = PackedStruct("n" / cs.Int16ul * "a number", "s" / cs.Float32l * "a single", "m" / cs.Int16ul * "another")


@modes
@given(half=st.binary(min_size=2, max_size=2), single=st.binary(min_size=4, max_size=4),
       double=st.binary(min_size=8, max_size=8))
def test_every_float_bit_pattern_is_rebuilt_byte_exact(compiled, half, single, double):
    """Signalling NaNs, NaN payloads and -0.0 included: a single float went through a double and lost its
    signalling bit before."""
    data = half + single + double
    value = framework.parse(FLOATS, data, format="demo", compile=compiled)
    assert framework.build(FLOATS, value, format="demo", compile=compiled) == data
    packed = b"\x01\x00" + single + b"\x02\x00"
    value = framework.parse(PACKED, packed, format="demo", compile=compiled)
    assert framework.build(PACKED, value, format="demo", compile=compiled) == packed


@modes
def test_a_signalling_nan_and_negative_zero_are_kept(compiled):
    snan, neg = bytes.fromhex("0100807f"), bytes.fromhex("00000080")
    assert struct.pack("<f", struct.unpack("<f", snan)[0]) != snan  # (what a float in between does to it)
    schema = cs.Struct("a" / cs.Float32l, "b" / cs.Float32l)
    value = framework.parse(schema, snan + neg, format="demo", compile=compiled)
    assert framework.build(schema, value, format="demo", compile=compiled) == snan + neg
    assert value.a != value.a and str(value.b) == "-0.0"  # (still floats to the user)
    # a float given by the user, or a numpy float32 holding the bits, is written as such
    import numpy as np
    given_value = cs.Container(a=np.frombuffer(snan, "<f4")[0], b=1.5)
    assert framework.build(schema, given_value, format="demo", compile=compiled) == snan + struct.pack("<f", 1.5)


def test_a_float_read_in_one_byte_order_is_written_in_the_other_by_value():
    little = cs.Struct("v" / cs.Float32l)
    big = cs.Struct("v" / cs.Float32b)
    value = framework.parse(little, struct.pack("<f", 2.5), format="demo")
    assert framework.build(big, value, format="demo") == struct.pack(">f", 2.5)


def test_a_bad_float_value_is_a_located_build_error():
    with pytest.raises(FormatError) as e:
        framework.build(cs.Struct("v" / cs.Float32l), {"v": "x"}, format="demo")
    assert e.value.path == "v"


@modes
def test_a_number_its_field_cannot_hold_is_a_located_build_error(compiled):
    """-1 into a u32, 256 into a u8: the value and the field's type, where construct's struct.error came out as
    'unchecked input' (found by the mutation fuzz: fastText's minn -1 written as finalfusion's min_n)."""
    schema = cs.Struct("a" / cs.Int8ul, "b" / cs.Int32ul)
    for value, field, text in (({"a": 1, "b": -1}, "b", "-1 does not fit the field (u32)"),
                               ({"a": 256, "b": 0}, "a", "256 does not fit the field (u8)")):
        with pytest.raises(FormatError) as e:
            framework.build(schema, value, format="demo", compile=compiled)
        assert (e.value.path, e.value.message) == (field, text), str(e.value)
        assert framework.UNCHECKED not in str(e.value)
