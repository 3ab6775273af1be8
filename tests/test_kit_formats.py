"""The property-test kit on the library's own formats: each custom construct declares its strategy, so
``wvformats.testing`` draws valid files of every format below from its registered schema and round-trips them
(interpreted, compiled, through the codec) and cuts them (issue 38, item 4)."""

import construct as cs
import pytest
from construct import this
from hypothesis import HealthCheck, given, settings

from wvformats import framework, testing
from wvformats.framework import Valid
from wvformats.testing.strategies import property_tests

KIT_FORMATS = ["fasttext", "finalfusion", "gguf", "glove", "leader", "npy", "npz", "npz-embeddings", "rwkv",
               "safetensors", "sentencepiece", "word2vec-binary", "word2vec-text"]

# a text table cut inside its last number is a whole file of its own ("0.5" cut to "0."), which the reader
# warns of (NoFinalNewlineWarning) but cannot refuse: cuts are checked on the binary formats
CUT_FORMATS = [name for name in KIT_FORMATS if name not in ("glove", "word2vec-text")]

_TESTS = {name: property_tests(name, cases=8) for name in KIT_FORMATS}


@pytest.mark.parametrize("name", KIT_FORMATS)
def test_roundtrip_of_drawn_files(name):
    _TESTS[name]["test_roundtrip"]()


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
@pytest.mark.parametrize("name", CUT_FORMATS)
def test_every_cut_of_a_drawn_file_fails(name, compiled):
    _TESTS[name]["test_truncations"](compiled=compiled)


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
