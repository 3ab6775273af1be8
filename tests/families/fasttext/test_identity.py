"""The fastText sniffer reads the head through the schema's identity (``schemas/identity.py``, standard library
only), which must say what the schema says: the fields' names, order and sizes, the enums' values."""

import struct

import pytest
from wvformats.schemas import fasttext as schema
from wvformats.schemas.identity import FASTTEXT_HEAD, FASTTEXT_LOSSES, FASTTEXT_MODELS, FASTTEXT_OLD_HEAD

from wvformats import framework
from wvformats.families.fasttext.sniff import sniff


def test_the_old_head_is_the_schemas_args_then_the_dictionarys_counts():
    args = [name for name, _, _ in framework.field_docs(schema.args)]
    counts = [name for name, _, _ in framework.field_docs(schema.dictionary) if name][:3]
    assert list(FASTTEXT_OLD_HEAD.names) == args + counts
    assert FASTTEXT_OLD_HEAD.layout.size == schema.args.sizeof() + 3 * 4
    values = dict(zip(FASTTEXT_OLD_HEAD.names, range(1, 17), strict=True))
    raw = FASTTEXT_OLD_HEAD.layout.pack(*values.values())
    parsed = framework.parse(schema.args, raw, format="fasttext")  # the schema reads the same values there
    assert {k: int(parsed[k]) for k in args} == {k: values[k] for k in args}


def test_the_enums_and_the_magic_are_the_schemas():
    assert set(FASTTEXT_LOSSES) == {int(m) for m in schema.Loss}
    assert set(FASTTEXT_MODELS) == {int(m) for m in schema.Model}
    assert FASTTEXT_HEAD.layout.size == 8 and FASTTEXT_HEAD.names == ("magic", "version")


def _old(**changes):
    v = {"dim": 100, "ws": 5, "epoch": 5, "minCount": 1, "neg": 5, "wordNgrams": 1, "loss": 2, "model": 2,
         "bucket": 2000000, "minn": 3, "maxn": 6, "lrUpdateRate": 100, "t": 0, "size": 3, "nwords": 3, "nlabels": 0}
    v.update(changes)
    return FASTTEXT_OLD_HEAD.layout.pack(*(v[n] for n in FASTTEXT_OLD_HEAD.names)) + bytes(64)


@pytest.mark.parametrize(("changes", "plausible"), [
    ({}, True), ({"loss": 5}, False), ({"model": 0}, False), ({"minn": 7}, False), ({"nlabels": 1}, False),
    ({"dim": 0}, False), ({"wordNgrams": 101}, False), ({"size": 4, "nlabels": 1}, True)])
def test_an_old_release_is_told_by_its_declared_plausibility(changes, plausible):
    assert sniff(_old(**changes)) is plausible


def test_a_current_release_by_its_magic_and_version():
    assert sniff(struct.pack("<2i", 793712314, 12) + bytes(100))
    assert not sniff(struct.pack("<2i", 793712314, 13) + bytes(100))
