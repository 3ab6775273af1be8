"""The property-test kit on the library's own formats: each custom construct declares its strategy, so
``wvformats.testing`` draws valid files of every format from its registered schema (issue 38, item 4). Each
family's round trip, cuts and mutants of its real files are the kit's, in the family's tests
(``tests/families/<family>/test_<family>_kit.py``, npy's and safetensors' in their test files); here: .npz's,
that the draws reach every version and type code the schemas declare and what the families' hand strategies
drew, and chained checks."""

import construct as cs
import numpy as np
import pytest
from construct import this
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis.errors import NoSuchExample

from wvformats import framework, testing
from wvformats.framework import Valid
from wvformats.testing.strategies import property_tests

# the formats whose family tests do not hold the kit's tests yet: numpy's .npz (its tests left to that family)
KIT_FORMATS = ["npz", "npz-embeddings"]

_TESTS = {name: property_tests(name, cases=8) for name in KIT_FORMATS}


@pytest.mark.parametrize("name", KIT_FORMATS)
def test_roundtrip_of_drawn_files(name):
    _TESTS[name]["test_roundtrip"]()


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
@pytest.mark.parametrize("name", KIT_FORMATS)
def test_every_cut_of_a_drawn_file_fails(name, compiled):
    _TESTS[name]["test_truncations"](compiled=compiled)


def reaches(name, condition):
    """Whether the kit draws a value of the format that meets the condition (the first one found, not shrunk)."""
    try:
        find(testing.strategy(name), condition,
             settings=settings(max_examples=2000, database=None, derandomize=True, phases=[Phase.generate]))
    except NoSuchExample:
        return False
    return True


def test_the_kit_draws_every_version_and_type_code_the_checks_allow():
    """A field that expressions read and whose checks allow a few values is drawn across them, not small: rwkv's
    versions 100 and 101 (drawn as 100 only), GGUF's 13 value types (0 to 3 only), fastText's current layout
    (its head, a peek, was drawn as None: only older files) and its versions past 3."""
    assert reaches("rwkv", lambda v: v.header.version == 101)
    for code in range(13):
        assert reaches("gguf", lambda v, code=code: any(kv.value_type == code for kv in v.metadata)), code
    assert reaches("fasttext", lambda v: (v.version or 0) >= 10)


CHAINED = cs.Struct(
    "version" / cs.Int32ul * "a version",
    *(Valid("version", this.version >= 100 + i) * f"at least {100 + i}" for i in range(5)),
    *(Valid("version", this.version <= 110 - i) * f"at most {110 - i}" for i in range(5)),
    "n" / cs.Int16sl * "a signed number",
    Valid("n", (this.n > -3) & (this.n < 3)) * "small",
)


@settings(max_examples=50)  # (the health check is on: filtering ten checks would fail it)
@given(value=testing.strategy(CHAINED))
def test_chained_checks_are_drawn_within_not_filtered(value):
    assert 104 <= value.version <= 106 and -2 <= value.n <= 2
    assert framework.parse(CHAINED, framework.build(CHAINED, value, format="t"), format="t") == value


def test_the_health_check_is_on():
    assert HealthCheck.filter_too_much not in (settings().suppress_health_check or ())


def test_the_kit_draws_what_the_families_hand_strategies_drew():
    """What the families' hand-written round trips drew, which their kit tests now cover: word2vec.c's
    newlines between records, NaN and infinite vectors in the binary tables, fastText words that are no UTF-8
    (surrogate escapes) and prune indexes."""
    assert reaches("word2vec-binary", lambda v: v.records.newlines is not None and v.records.newlines.any())
    for name in ("leader", "word2vec-binary"):
        assert reaches(name, lambda v: np.isnan(v.records.vectors).any())
        assert reaches(name, lambda v: np.isinf(v.records.vectors).any())
    assert reaches("fasttext", lambda v: any(not w.isascii() and any("\udc80" <= c <= "\udcff" for c in w)
                                             for w in v.dictionary.entries.words))
    assert reaches("fasttext", lambda v: v.dictionary.pruneidx is not None and len(v.dictionary.pruneidx))


PAIRED = cs.Struct(
    "n" / cs.Int8ul * "a count",
    "a" / framework.Table(cs.Int16ul, this.n) * "n numbers",
    "total" / framework.Derived(cs.Int16ul, lambda ctx: sum(ctx.a) & 0xFFFF) * "their sum: derived from them",
    Valid("total", lambda ctx: ctx.total == sum(ctx.a) & 0xFFFF) * "their sum",
    "size" / framework.Derived(cs.Int8ul, cs.len_(this.b)) * "bytes of b",
    "b" / framework.Table(cs.Int8ul, length=this.size) * "size bytes",
    Valid("b", cs.len_(this.b) == cs.len_(this.a)) * "one per number of a",
    "rest" / cs.GreedyBytes * "nothing",
    Valid("rest", cs.len_(this.rest) == 0) * "empty",
)


@settings(max_examples=50)  # (the health check is on: filtering these checks would fail it)
@given(value=testing.strategy(PAIRED))
def test_length_checks_and_derived_values_are_drawn_within_not_filtered(value):
    # a derived sum evaluated from what is drawn before it (its check holds), a table as long as a check says,
    # bytes as short
    assert len(value.b) == len(value.a) and value.rest == b"" and value.total is None
    assert framework.parse(PAIRED, framework.build(PAIRED, value, format="t"), format="t").total == sum(value.a) & 0xFFFF
