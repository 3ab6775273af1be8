"""wvformats.testing: strategies for a registered format, the fuzz check's teeth, and hypothesis kept a test
dependency."""

import os
import subprocess
import sys
import textwrap

import construct as cs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from wvformats import framework, testing
from wvformats.framework import Checked, check_length


@settings(suppress_health_check=[HealthCheck.too_slow])  # drawing whole files: slow on a loaded machine
@given(value=testing.strategy("finalfusion"))
def test_strategies_of_a_registered_format(value):
    """Drawn from finalfusion's registered schema (header, chunks of every registered type): the schema
    round-trips in both modes and the codec writes the same bytes back."""
    data = testing.check_roundtrip("finalfusion", value)
    assert data[:4] == b"FiFu" and len(value.chunks) >= value.n_chunks


class Unchecked(Checked):
    """A record table with the bugs the fuzz check is there to catch, as ``mode`` says."""

    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def _parse(self, stream, context, path):
        n = stream.read(1)[0] if self.mode != "short" else 0
        if self.mode == "unchecked":
            return stream.read(n)[n - 1]  # IndexError on a short file: no check of the length
        if self.mode == "allocates":
            return np.ones(n << 20, np.uint8)  # allocated before the length is checked
        if self.mode == "pathless":
            check_length(stream, n, None, "bytes")
        return stream.read(n)

    def _build(self, obj, stream, context, path):
        stream.write(bytes([len(obj)]) + bytes(obj))
        return obj

    def _sizeof(self, context, path):
        raise cs.SizeofError


def _schema(mode):
    return cs.Struct("magic" / cs.Const(b"U"), "body" / Unchecked(mode))


@pytest.mark.parametrize(("mode", "complaint"), [("unchecked", "not ours"), ("allocates", "at its peak"),
                                                 ("pathless", "names no field")])
def test_the_fuzz_check_fails_on_a_missing_check(mode, complaint):
    with pytest.raises(AssertionError, match=complaint):
        testing.fuzz(_schema(mode), [b"U\x05hello"], format="u", cases=40)


def test_the_fuzz_check_passes_a_checked_schema():
    assert testing.fuzz(_schema("checked"), [b"U\x05hello"], format="u", cases=40) >= 40


def test_testing_imports_hypothesis_only_when_asked(tmp_path):
    """Without hypothesis and pytest, the round-trip and fuzz checks work and a strategy says what to
    install."""
    code = textwrap.dedent("""
        import sys
        sys.modules["hypothesis"] = sys.modules["pytest"] = None  # as if not installed
        import construct as cs
        from wvformats import testing
        schema = cs.Struct("n" / cs.Int8ul)
        assert testing.check_roundtrip(schema, {"n": 3}, format="t") == b"\\x03"
        assert testing.fuzz(schema, [b"\\x03"], format="t", cases=3) == 3
        try:
            testing.strategy(schema)
        except ImportError as e:
            print(e)
        try:
            testing.MODES
        except ImportError as e:
            print(e)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and "needs hypothesis" in lines[0] and "needs pytest" in lines[1]
    assert all("pip install 'wvformats[test]'" in line for line in lines)


def test_testing_is_installed_with_the_package():
    import wvformats

    assert testing.__file__.startswith(os.path.dirname(wvformats.__file__))
    assert framework.UNCHECKED in testing.FOREIGN
