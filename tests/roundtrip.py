"""The round-trip helpers every schema test uses, in interpreted and compiled construct mode: those of
``wvformats.testing`` (installed with the package, for plugins too), under the names the tests import."""

from wvformats.testing import MODES, assert_truncations_fail, bytes_roundtrip, equal, roundtrip

__all__ = ["MODES", "assert_truncations_fail", "bytes_roundtrip", "equal", "roundtrip"]
