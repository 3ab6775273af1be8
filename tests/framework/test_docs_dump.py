"""Generated docs and annotated dumps of protobuf-based formats (SentencePiece), checked against protobuf.

Oracles: the ``sentencepiece_model_pb2`` descriptors shipped with sentencepiece (numbers, labels, types,
defaults of every field) and protobuf's own encoding of each field alone (a field's bytes in the file are
exactly that encoding, so a dump's offsets are where protobuf's parser reads the field).
"""

from __future__ import annotations

import re

import numpy as np
from google.protobuf.descriptor import FieldDescriptor as FD
from sentencepiece import sentencepiece_model_pb2 as pb

from wvformats import registry
from wvformats.framework.docs import page

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
