"""ProtoMessage(columns=...): a repeated field's leading run read as columns gives the fields, the values and the
bytes of the generic field-by-field parse (its twin), for any wire data."""

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from roundtrip import MODES

from wvformats import framework
from wvformats.errors import FormatError
from wvformats.framework import SchemaError
from wvformats.framework.protobuf import F, MessageType, ProtoEnum, ProtoMessage, View
from wvformats.framework.protowire import LazyMessage, encode_varint, parse_fields


class Kind(ProtoEnum):
    A = 1
    B = 2
    C = 5


Entry = MessageType("Entry", [
    F(1, "name", "string", default="?"),
    F(2, "weight", "float", default=0.5),
    F(3, "kind", "enum", default=1, enum=Kind),
    F(4, "flag", "bool", default=True),
    F(5, "big", "double", default=0.0),
    F(6, "delta", "sint32", default=0),
    F(7, "blob", "bytes", default=b""),
])
Outer = MessageType("Outer", [
    F(1, "entries", Entry, "repeated"),
    F(2, "title", "string"),
])
COLUMNS = ProtoMessage(Outer, columns="entries")
PLAIN = ProtoMessage(Outer)
TAGS = {1: 0x0A, 2: 0x15, 3: 0x18, 4: 0x20, 5: 0x29, 6: 0x30, 7: 0x3A}


def value_bytes(number, draw):
    """A field's encoded value: mostly what the run takes (one-byte lengths and varints), sometimes not."""
    if number in (1, 7):
        body = draw(st.binary(max_size=6) | st.binary(min_size=126, max_size=130) | st.just("\u2581a\x00".encode()))
        return encode_varint(len(body)) + body
    if number == 2:
        return draw(st.binary(min_size=4, max_size=4))
    if number == 5:
        return draw(st.binary(min_size=8, max_size=8))
    return encode_varint(draw(st.integers(0, 127) | st.integers(-(2**31), 2**31 - 1)) & (2**64 - 1))


@st.composite
def record(draw):
    numbers = sorted(draw(st.sets(st.sampled_from(sorted(TAGS)))))
    fields = [(TAGS[n], value_bytes(n, draw)) for n in numbers]
    odd = draw(st.integers(0, 9))
    if odd == 0 and len(fields) > 1:  # out of number order
        fields.reverse()
    elif odd == 1 and fields:  # a field twice (the last one wins)
        fields.append(fields[0])
    elif odd == 2:  # an unknown field
        fields.append((0x48, b"\x01"))
    body = b"".join(bytes([t]) + v for t, v in fields)
    return b"\x0a" + encode_varint(len(body)) + body


@st.composite
def outer(draw):
    data = b"".join(draw(st.lists(record(), max_size=8)))
    if draw(st.booleans()):
        data += b"\x12\x03abc"  # title
        data += b"".join(draw(st.lists(record(), max_size=2)))  # entries after it
    return data


def expected(body):
    """An entry's values as the generic view reads them (floats as their raw bits)."""
    fields = parse_fields(body, 0, len(body), "entry", 0)[0]
    view = View(Entry, fields)

    def raw(name, fmt):
        found = [f for f in fields if f["number"] == {"weight": 2, "big": 5}[name]
                 and f["wire_type"] == (5 if fmt == "<f" else 1)]
        return found[-1]["value"] if found else struct.pack(fmt, getattr(view, name))

    return (view.name, raw("weight", "<f"), raw("big", "<d"), int(view.kind), int(view.flag), view.delta)


@MODES
@given(data=outer())
def test_columns_equal_the_generic_parse(compiled, data):
    ours = framework.parse(COLUMNS, data, format="toy", compile=compiled)
    theirs = framework.parse(PLAIN, data, format="toy", compile=compiled)
    assert list(ours) == list(theirs)
    assert framework.build(COLUMNS, ours, format="toy") == data
    cols = getattr(ours, "columns", None)
    if cols is None:
        return
    names, weights, bigs = cols.strings("name"), cols.floats("weight"), cols.floats("big")
    kinds, flags, deltas = cols.ints("kind"), cols.ints("flag"), cols.ints("delta")
    for i, f in enumerate(list(ours)[: len(cols)]):
        assert (names[i], weights[i].tobytes(), bigs[i].tobytes(), kinds[i], flags[i], deltas[i]) == expected(
            f["value"]), i


@given(n=st.integers(1, 3000))
def test_a_vocabulary_as_protobuf_writes_it_is_one_run(n):
    """Records with every field at most once, in number order, with one-byte sizes: all in the run."""
    rows = [(f"w{i}".encode(), struct.pack("<f", -i / 3), i % 3) for i in range(n)]
    data = b"".join(b"\x0a" + bytes([len(body)]) + body for body in (
        b"\x0a" + bytes([len(w)]) + w + b"\x15" + s + (b"\x18" + bytes([k]) if k else b"") for w, s, k in rows))
    msg = framework.parse(COLUMNS, data + b"\x12\x01t", format="toy")
    assert isinstance(msg, LazyMessage) and len(msg.columns) == n and msg.run_end == len(data)
    assert msg.columns.strings("name") == [w.decode() for w, _, _ in rows]
    assert msg.columns.floats("weight").tobytes() == b"".join(s for _, s, _ in rows)
    assert msg.columns.ints("kind").tolist() == [k if k else 1 for _, _, k in rows]  # 0: no value of Kind
    assert np.array_equal(msg.columns.present("kind"), [k != 0 for _, _, k in rows])
    assert View(Outer, msg).title == "t"


def test_the_run_ends_at_the_first_record_it_cannot_read():
    """A record whose string takes a two-byte length ends the run; the records after it are generic fields."""
    short, long = b"\x0a\x03\x0a\x01a", b"\x0a\x83\x01\x0a\x80\x01" + b"b" * 128
    msg = framework.parse(COLUMNS, short * 2 + long + short, format="toy")
    assert len(msg.columns) == 2 and [f["number"] for f in msg.rest] == [1, 1]
    assert [len(f["value"]) for f in msg.fields] == [3, 3, 131, 3]
    # kind as a two-byte varint, then big; read a byte at a time as kind, flag, delta and blob it would fill
    # the record exactly, but kind's first byte says that its varint goes on
    body = bytes.fromhex("18 84 20 29 30 05 3a 04") + b"abcd"
    msg = framework.parse(COLUMNS, short + b"\x0a\x0c" + body, format="toy")
    assert len(msg.columns) == 1 and View(Entry, parse_fields(body, 0, 12, "", 0)[0]).big == struct.unpack(
        "<d", body[4:])[0]


def test_errors_after_the_run_name_the_field_and_its_offset():
    data = b"\x0a\x03\x0a\x01a" * 2 + b"\x12\x05ab"  # title: 5 bytes of 2
    with pytest.raises(FormatError) as e:
        framework.parse(COLUMNS, data, format="toy")
    assert e.value.format == "toy" and e.value.path == "fields[2]" and e.value.offset == 12


def test_a_field_that_cannot_be_a_column_is_refused_when_declared():
    Nested = MessageType("Nested", [F(1, "entry", Entry)])
    Wide = MessageType("Wide", [F(16, "far", "int32")])
    for mtype, name, why in [
        (Outer, "title", "no repeated message field"),
        (MessageType("X", [F(1, "items", Nested, "repeated")]), "items", "Nested.entry is not a singular scalar"),
        (MessageType("X", [F(1, "items", Wide, "repeated")]), "items", "Wide.far is not a singular scalar"),
        (MessageType("X", [F(16, "items", Entry, "repeated")]), "items", "more than one byte"),
    ]:
        with pytest.raises(SchemaError, match=why):
            ProtoMessage(mtype, columns=name)
