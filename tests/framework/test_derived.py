"""Derived fields (issue 38, item 1): a count, length or size declared once in the schema (``Derived``, or
construct's ``Rebuild``), computed by the builder from the data it describes in interpreted and compiled
mode, in a Struct and in a PackedStruct's one-pack run; read and checked by the same declaration; shown as
derived in the docs; drawn by the testing kit for the fields after it and left to the builder."""

import construct as cs
import pytest
from construct import len_, this
from roundtrip import MODES

from wvformats import framework, testing
from wvformats.errors import FormatError
from wvformats.framework import CheckedBytes, Derived, PackedStruct, Table, size_of

EXTRA = PackedStruct(
    "id" / cs.Int16ul * "what the data are",
    "size" / Derived(cs.Int16ul, len_(this.data)) * "bytes of data",
    "data" / CheckedBytes(this.size) * "the data",
)


def record(kind):
    return kind(
        "tag" / cs.Int32ul * "a number",
        "name_length" / Derived(cs.Int16ul, len_(this.name)) * "bytes of the name",
        "extra_length" / Derived(cs.Int16ul, size_of(Table(EXTRA), this.extra)) * "bytes of the extra fields",
        "n_words" / cs.Rebuild(cs.Int8ul, len_(this.words)) * "construct's own Rebuild",
        "twice" / Derived(cs.Int8ul, lambda ctx: 2 * len(ctx.words)) * "a function of the context",
        "name" / CheckedBytes(this.name_length) * "the name",
        "extra" / Table(EXTRA, length=this.extra_length, min_size=4) * "extra fields",
        "words" / Table(cs.Int32ul, this.n_words) * "numbers",
    )


VALUE = {"tag": 7, "name": b"abc", "extra": [{"id": 1, "data": b"xy"}, {"id": 2, "data": b""}],
         "words": [5, 6]}
BYTES = (b"\x07\x00\x00\x00" b"\x03\x00" b"\x0a\x00" b"\x02" b"\x04" b"abc"
         b"\x01\x00\x02\x00xy" b"\x02\x00\x00\x00" b"\x05\x00\x00\x00\x06\x00\x00\x00")


@MODES
@pytest.mark.parametrize("kind", [cs.Struct, PackedStruct])
def test_the_builder_computes_derived_fields(kind, compiled):
    schema = record(kind)
    given = dict(VALUE, name_length=None, extra_length=999, n_words=None)  # (what is given is ignored)
    assert framework.build(schema, given, format="t", compile=compiled) == BYTES
    back = framework.parse(schema, BYTES, format="t", compile=compiled)
    assert (back.name_length, back.extra_length, back.n_words, back.twice) == (3, 10, 2, 4)
    assert framework.build(schema, back, format="t", compile=compiled) == BYTES


@MODES
def test_a_stored_count_that_disagrees_with_the_data_is_a_located_error(compiled):
    bad = BYTES[:6] + b"\x0b\x00" + BYTES[8:]  # extra_length 11: the records do not fill it
    with pytest.raises(FormatError) as e:
        framework.parse(record(PackedStruct), bad, format="t", compile=compiled)
    assert (e.value.format, e.value.path, e.value.offset) == ("t", "extra[2]", 23)  # (the third: past it)


def test_the_docs_say_what_a_field_is_derived_from():
    rows = "\n".join(framework.schema_table(record(PackedStruct)))
    assert "u16 le, derived: len(name)" in rows and "u16 le, derived: size_of(extra)" in rows
    assert "u8, derived: len(words)" in rows and "u8, derived: computed" in rows


def test_the_kit_draws_around_derived_fields():
    tests = testing.property_tests(record(PackedStruct), format="t")
    tests["test_roundtrip"]()
    tests["test_truncations"](compiled=True)
