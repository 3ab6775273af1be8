"""The property-test kit on the library's own formats: each custom construct declares its strategy, so
``wvformats.testing`` draws valid files of every format from its registered schema (issue 38, item 4). Each
family's round trip, cuts and mutants of its real files are the kit's, in the family's tests
(``tests/families/<family>/test_<family>_kit.py``, npy's and safetensors' in their test files); here: that the
draws reach every version and type code the schemas declare, and chained checks."""

import collections

import construct as cs
from construct import this
from hypothesis import HealthCheck, given, settings

from wvformats import framework, testing
from wvformats.framework import Valid


def drawn(name, n=150):
    out = []

    @settings(max_examples=n, database=None)
    @given(value=testing.strategy(name))
    def collect(value):
        out.append(value)

    collect()
    return out


def test_the_kit_draws_every_version_and_type_code_the_checks_allow():
    """A field that expressions read and whose checks allow a few values is drawn across them, not small: rwkv's
    versions 100 and 101 (drawn as 100 only), GGUF's 13 value types (0 to 3 only), fastText's current layout
    (its head, a peek, was drawn as None: only older files) and versions 1 to 12."""
    rwkv = drawn("rwkv")
    assert {v.header.version for v in rwkv} == {100, 101}
    types = collections.Counter(kv.value_type for v in drawn("gguf") for kv in v.metadata)
    assert set(types) == set(range(13)), types
    fasttext = drawn("fasttext")
    assert {v.new_format for v in fasttext} == {False, True}
    assert max(v.version or 0 for v in fasttext) > 4


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
