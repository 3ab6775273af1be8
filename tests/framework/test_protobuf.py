"""The lossless protobuf wire layer: byte-exact round trips of arbitrary wire data, hostile input."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from roundtrip import MODES
from wvformats.schemas.protobuf import message

from wvformats import framework
from wvformats.errors import FormatError, TruncatedError, ValueMismatchError
from wvformats.framework.protobuf import decode_scalar
from wvformats.framework.protowire import encode_varint, zigzag_decode, zigzag_encode


def varint_bytes(value, extra):
    """A varint of ``value`` padded with ``extra`` redundant continuation bytes (an over-long form)."""
    raw = bytearray(encode_varint(value))
    if extra and len(raw) + extra <= 10:
        raw[-1] |= 0x80
        raw += b"\x80" * (extra - 1) + b"\x00"
    return bytes(raw)


@st.composite
def wire(draw, depth=0):
    out = b""
    for _ in range(draw(st.integers(0, 4))):
        number = draw(st.integers(1, 2**29 - 1))
        kind = draw(st.sampled_from([0, 1, 2, 5] + ([3] if depth < 3 else [])))
        out += varint_bytes(number << 3 | kind, draw(st.integers(0, 1)))
        if kind == 0:
            out += varint_bytes(draw(st.integers(0, 2**64 - 1)), draw(st.integers(0, 2)))
        elif kind in (1, 5):
            out += draw(st.binary(min_size=8 if kind == 1 else 4, max_size=8 if kind == 1 else 4))
        elif kind == 2:
            body = draw(st.binary(max_size=12))
            out += varint_bytes(len(body), draw(st.integers(0, 1))) + body
        else:
            out += draw(wire(depth + 1)) + encode_varint(number << 3 | 4)
    return out


@MODES
@given(data=wire())
def test_arbitrary_wire_data_round_trips_byte_exact(compiled, data):
    fields = framework.parse(message, data, format="protobuf", compile=compiled)
    assert framework.build(message, fields, format="protobuf", compile=compiled) == data
    for n in range(len(data)):  # every strict prefix either fails cleanly or ends between fields
        try:
            framework.parse(message, data[:n], format="protobuf", compile=compiled)
        except FormatError as e:
            assert e.format == "protobuf"


def test_negative_enum_is_a_ten_byte_varint():
    data = bytes.fromhex("d802ffffffffffffffffff01")  # pad_id = -1
    (f,) = framework.parse(message, data, format="protobuf")
    assert f.number == 43 and decode_scalar("int32", f) == -1 and f.raw is None
    assert framework.build(message, [f], format="protobuf") == data


@given(st.integers(-(2**63), 2**63 - 1))
def test_zigzag(n):
    assert zigzag_decode(zigzag_encode(n) & (2**64 - 1)) == n


def test_hostile_input_fails_cleanly():
    cases = {
        "11-byte varint": b"\x08" + b"\xff" * 10 + b"\x01",
        "length past the end": b"\x0a\x05abc",
        "huge length": b"\x0a" + encode_varint(2**62) + b"x",
        "field number 0": b"\x00\x01",
        "wire type 7": b"\x0f",
        "unclosed group": b"\x0b\x08\x01",
        "stray end group": b"\x0c",
        "deep groups": b"\x0b" * 10000,
    }
    for what, data in cases.items():
        with pytest.raises(FormatError) as e:
            framework.parse(message, data, format="protobuf")
        assert isinstance(e.value, (TruncatedError, ValueMismatchError)), what
        assert e.value.offset is not None, what


def test_canonical_messages_equal_protobuf_serialisation():
    pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")
    m = pb2.ModelProto()
    p = m.pieces.add()
    p.piece, p.score, p.type = "▁hello", -1.5, 1
    m.trainer_spec.pad_id = -1
    m.trainer_spec.model_type = 2
    m.normalizer_spec.add_dummy_prefix = True
    data = m.SerializeToString()
    fields = framework.parse(message, data, format="protobuf")
    assert [f.number for f in fields] == [1, 2, 3]
    # rebuild from values alone (raw encodings dropped): the canonical encoding is protobuf's
    def strip(fs):
        return [dict(number=f.number, wire_type=f.wire_type, value=f.value) for f in fs]
    assert framework.build(message, strip(fields), format="protobuf") == data


_SAMPLES = {"string": "x\u2581", "bytes": b"\0\xff", "bool": True, "int32": -1, "uint64": 2**40, "float": 0.5,
            "enum": 2}


@pytest.mark.parametrize("mtype_name", ["TrainerSpec", "NormalizerSpec", "SentencePiece"])
def test_a_field_written_from_the_declarations_is_protobufs_own(mtype_name):
    """Each field of the sentencepiece messages, written by ``wire_field`` (tag from its declared number and
    type), is the bytes protobuf serializes for that field alone; ``occurrences`` finds it again."""
    from sentencepiece import sentencepiece_model_pb2 as pb2
    from wvformats.schemas import sentencepiece as schema

    from wvformats.framework.protobuf import occurrences, wire_field
    from wvformats.framework.protowire import build_fields

    mtype = getattr(schema, mtype_name)
    checked = 0
    for spec in mtype.fields:
        value = _SAMPLES[spec.type]
        if spec.type == "string" and spec.label == "repeated":
            value = [value]
        peer = (pb2.ModelProto.SentencePiece if mtype_name == "SentencePiece" else getattr(pb2, mtype_name))()
        if isinstance(value, list):
            getattr(peer, spec.name).extend(value)
        else:
            setattr(peer, spec.name, value)
        fields = [wire_field(mtype, spec.name, v) for v in (value if isinstance(value, list) else [value])]
        out = bytearray()
        build_fields(fields, out)
        assert bytes(out) == peer.SerializeToString(), spec.name
        assert occurrences([{"number": spec.number, "wire_type": 3 - fields[0]["wire_type"] % 2, "value": 0},
                            *fields], spec) == [1], spec.name  # (the same number on another wire type is not it)
        checked += 1
    assert checked == len(mtype.fields)


def test_a_submessage_field_from_its_values_or_its_bytes():
    from sentencepiece import sentencepiece_model_pb2 as pb2
    from wvformats.schemas.sentencepiece import ModelProto

    from wvformats.framework.protobuf import encode_message, wire_field
    from wvformats.framework.protowire import build_fields

    peer = pb2.ModelProto()
    p = peer.pieces.add()
    p.piece, p.score, p.type = "<city>", -2.0, 4
    values = {"piece": "<city>", "score": -2.0, "type": 4}
    for field in (wire_field(ModelProto, "pieces", values),
                  wire_field(ModelProto, "pieces", encode_message(ModelProto.named("pieces").type, values))):
        out = bytearray()
        build_fields([field], out)
        assert bytes(out) == peer.SerializeToString() == encode_message(ModelProto, {"pieces": [values]})
    with pytest.raises(ValueError, match="ModelProto has no field 'piece'"):
        wire_field(ModelProto, "piece", values)
