"""Generated docs and annotated dumps of protobuf-based formats (SentencePiece), checked against protobuf.

Oracles: the ``sentencepiece_model_pb2`` descriptors shipped with sentencepiece (numbers, labels, types,
defaults of every field) and protobuf's own encoding of each field alone (a field's bytes in the file are
exactly that encoding, so a dump's offsets are where protobuf's parser reads the field).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from google.protobuf.descriptor import FieldDescriptor as FD
from sentencepiece import sentencepiece_model_pb2 as pb

from wvformats import cli, registry
from wvformats.errors import TruncatedError
from wvformats.framework.docs import page
from wvformats.framework.walk import hexdump, leaves, walk

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted((ROOT / "tests/data/sentencepiece").glob("*.model"))
FMT = registry.get("sentencepiece")

WIRE = {FD.TYPE_DOUBLE: 1, FD.TYPE_FIXED64: 1, FD.TYPE_FLOAT: 5, FD.TYPE_FIXED32: 5, FD.TYPE_STRING: 2,
        FD.TYPE_BYTES: 2, FD.TYPE_MESSAGE: 2}  # every other type: 0 VARINT
TYPES = {FD.TYPE_STRING: "string", FD.TYPE_BYTES: "bytes", FD.TYPE_FLOAT: "float", FD.TYPE_INT32: "int32",
         FD.TYPE_UINT64: "uint64", FD.TYPE_BOOL: "bool"}


def _tables(text: str) -> dict[str, dict[str, list[str]]]:
    """{message: {field: [number, label, type, wire type, default, meaning]}} from a docs page."""
    out: dict[str, dict[str, list[str]]] = {}
    table = None
    for line in text.splitlines():
        if m := re.match(r"## message (\w+)", line):
            table = out.setdefault(m.group(1), {})
        elif table is not None and (m := re.match(r"\| (\d+) \| `(\w+)` \|(.*)\|$", line)):
            table[m.group(2)] = [m.group(1), *(c.strip() for c in m.group(3).split(" | "))]
    return out


def _default(f: FD) -> str:
    """How the page spells a default: as the .proto does (enum by name, strings quoted)."""
    v = f.default_value
    if f.type == FD.TYPE_ENUM:
        return f"{f.enum_type.values_by_number[v].name} ({v})"
    if f.type == FD.TYPE_BOOL:
        return "true" if v else "false"
    if f.type == FD.TYPE_FLOAT:
        return str(np.float32(v))
    if f.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
        return '""' if not v else f'"{v}"'
    return str(v)


def test_docs_page_lists_every_message_and_field_as_protobuf_declares_it():
    tables = _tables(page(FMT))
    for desc in (pb.ModelProto.DESCRIPTOR, pb.ModelProto.SentencePiece.DESCRIPTOR, pb.TrainerSpec.DESCRIPTOR,
                 pb.NormalizerSpec.DESCRIPTOR):
        assert desc.name in tables, desc.name
        for f in desc.fields:
            number, label, kind, wire, default, meaning = tables[desc.name][f.name]
            assert number == str(f.number)
            assert label == ("repeated" if f.is_repeated else "optional")
            assert wire.startswith(f"{WIRE.get(f.type, 0)} "), (f.name, wire)
            if f.type == FD.TYPE_MESSAGE:
                assert kind == f.message_type.name
            elif f.type == FD.TYPE_ENUM:
                assert kind.startswith("enum") and all(f"{v.number} {v.name}" in kind for v in f.enum_type.values)
            else:
                assert kind == TYPES[f.type]
            if not f.is_repeated and f.type != FD.TYPE_MESSAGE:
                assert default == f"`{_default(f)}`", f.name
            assert len(meaning) > 10, f.name
    # the 0.2.0 self-test data (reserved 4 in the installed 0.2.3 schema) is documented too
    assert tables["ModelProto"]["self_test_data"][:4] == ["4", "optional", "SelfTestData", "2 LEN"]
    assert tables["SelfTestData"]["samples"][:3] == ["1", "repeated", "Sample"]
    assert set(tables["Sample"]) == {"input", "expected"}
    assert "200 to 536870911" in page(FMT)  # the extension range is named


def _protobuf_fields(msg, path: str = "") -> dict[str, tuple]:
    """{dump path: (the message holding the field, name, value)} of every scalar field protobuf read."""
    out = {}
    for f, value in msg.ListFields():
        values = value if f.is_repeated else [value]
        for i, v in enumerate(values):
            where = f"{path}{f.name}" + (f"[{i}]" if f.is_repeated else "")
            if f.type == FD.TYPE_MESSAGE:
                out.update(_protobuf_fields(v, where + "."))
            else:
                out[where] = (msg, f, v)
    return out


def _alone(msg, f: FD, value) -> bytes:
    """Protobuf's encoding of one field of ``msg``'s type holding ``value``, and nothing else."""
    single = type(msg)()
    if f.is_repeated:
        getattr(single, f.name).append(value)
    else:
        setattr(single, f.name, value)
    return single.SerializeToString()


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_dump_places_every_field_where_protobuf_reads_it(path):
    data = path.read_bytes()
    model = pb.ModelProto.FromString(data)
    _, spans = walk(FMT.schema, data, format=FMT.name)
    fields = [s for s in leaves(spans) if not s.path.endswith(".(tag, length)")]
    expected = _protobuf_fields(model)
    assert [s.path for s in fields] == list(expected)  # each field of each message, in file order
    for s in fields:
        msg, f, value = expected[s.path]
        assert data[s.start : s.end] == _alone(msg, f, value), s.path
        assert s.value == (np.float32(value) if f.type == FD.TYPE_FLOAT else value), s.path
        assert s.doc
    # each sub-message spans its tag, length and body, as protobuf writes that field alone
    by_path = {s.path: s for s in spans}
    for name in ("trainer_spec", "normalizer_spec"):
        s = by_path[name]
        assert data[s.start : s.end] == pb.ModelProto(**{name: getattr(model, name)}).SerializeToString()
    last = len(model.pieces) - 1
    for i in (0, 3, last):
        s = by_path[f"pieces[{i}]"]
        assert data[s.start : s.end] == pb.ModelProto(pieces=[model.pieces[i]]).SerializeToString()
    at = 0
    for s in leaves(spans):  # and the fields tile the file
        assert s.start == at, s.path
        at = s.end
    assert at == len(data)


def test_dump_command_annotates_fields_and_elides_the_middle_of_the_pieces(capsys):
    path = ROOT / "tests/data/sentencepiece/botchan_en_bpe_1000.model"
    model = pb.ModelProto.FromString(path.read_bytes())
    assert cli.main(["dump", str(path)]) == 0
    out = capsys.readouterr().out
    assert "(the whole file) = list of" not in out
    assert "trainer_spec.model_type = 2 BPE    # the segmentation algorithm" in out
    assert "trainer_spec.vocab_size = 1000" in out
    assert "normalizer_spec.name = 'nmt_nfkc'" in out
    assert "normalizer_spec.precompiled_charsmap = " in out
    assert f"pieces[3].piece = {model.pieces[3].piece!r}" in out
    last = len(model.pieces) - 1
    assert f"pieces[{last}].piece = {model.pieces[last].piece!r}" in out
    assert "pieces[500]" not in out
    assert f"pieces[4] to pieces[{last - 4}]: {last - 7} elements not shown" in out
    assert len(out.splitlines()) < 250
    assert cli.main(["dump", "--all", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"pieces[500].piece = {model.pieces[500].piece!r}" in out and "not shown" not in out


def _len_field(number: int, body: bytes) -> bytes:
    return bytes([number << 3 | 2, len(body)]) + body


def test_dump_names_unknown_fields_extensions_and_unknown_enum_values():
    piece = pb.ModelProto(pieces=[pb.ModelProto.SentencePiece(piece="a", score=-1.5)]).SerializeToString()
    trainer = b"\x18\x09" + b"\xc0\x0c\x07"  # model_type 9 (no such ModelType), extension 200 = 7
    data = piece + _len_field(2, trainer) + b"\xca\x0c\x03abc"  # field 201 LEN of ModelProto
    model = pb.ModelProto.FromString(data)  # protobuf keeps all three as unknown fields
    assert not model.trainer_spec.HasField("model_type") and model.SerializeToString() == data
    _, spans = walk(FMT.schema, data, format=FMT.name)
    got = {s.path: (s.start, s.end, s.value, s.doc) for s in leaves(spans)}
    at = len(piece)
    assert got["trainer_spec.(tag, length)"][:2] == (at, at + 2)
    start, end, value, doc = got["trainer_spec.model_type"]
    assert (start, end, value) == (at + 2, at + 4, 9) and "unknown" in doc
    assert got["trainer_spec.field_200"][:3] == (at + 4, at + 7, 7)
    assert "extension" in got["trainer_spec.field_200"][3]
    assert got["field_201"][:3] == (at + 7, len(data), b"abc")
    assert got["pieces[0].score"][2] == np.float32(-1.5)
    text = "\n".join(hexdump(spans, data))
    assert "trainer_spec.model_type = 9 " in text  # an unknown value has no name to show


def test_dump_of_a_broken_sub_message_names_the_field_and_offset(tmp_path, capsys):
    data = _len_field(2, b"\x20")  # trainer_spec holds a vocab_size tag whose varint is cut off
    with pytest.raises(TruncatedError) as e:
        walk(FMT.schema, data, format=FMT.name)
    assert (e.value.format, e.value.path, e.value.offset) == ("sentencepiece", "trainer_spec[0]", 3)
    bad = tmp_path / "bad.model"
    bad.write_bytes(data)
    assert cli.main(["dump", "--format", "sentencepiece", str(bad)]) == 2
    assert "trainer_spec[0] at byte 3" in capsys.readouterr().err


def test_top_level_parts_are_the_fields_of_the_model_proto():
    """The top-level spans (what ``inspect`` lists as parts) are pieces, trainer_spec, normalizer_spec."""
    data = MODELS[0].read_bytes()
    _, spans = walk(FMT.schema, data, format=FMT.name)
    parts = {s.path: (s.start, s.end - s.start) for s in spans if s.path and not set(".[") & set(s.path)}
    model = pb.ModelProto.FromString(data)
    tail = pb.ModelProto(trainer_spec=model.trainer_spec, normalizer_spec=model.normalizer_spec).ByteSize()
    assert list(parts) == ["pieces", "trainer_spec", "normalizer_spec"]  # in file order
    assert parts["pieces"] == (0, len(data) - tail)
    assert parts["trainer_spec"][0] == len(data) - tail
    assert sum(size for _, size in parts.values()) == len(data)
