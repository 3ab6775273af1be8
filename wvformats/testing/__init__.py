"""Property tests for any schema or registered format: the kit the built-in families' tests use, and a
plugin's.

* :func:`roundtrip`, :func:`bytes_roundtrip`, :func:`assert_truncations_fail`, :func:`equal`: the round-trip
  checks (parse of build equals the value, build of parse equals the bytes), in interpreted or compiled mode.
* :func:`check_roundtrip`: both checks in both modes, for a schema or a registered format (whose codec's
  ``parse`` and ``build`` must give the same bytes too).
* :func:`strategy`: hypothesis strategies for valid instances of a schema or format.
* :func:`mutants`, :func:`check_mutant`, :func:`fuzz`: mutation fuzzing that allows only the library's own
  errors, naming the format, the field path and the byte offset, within bounded time and memory.
* :func:`property_tests`: all of it as pytest tests, so that a plugin's property-test file is a few lines::

      from wvformats.testing import property_tests
      import my_plugin

      globals().update(property_tests("my-format", samples=[my_plugin.SAMPLE]))

hypothesis (and pytest) are test dependencies, not wvformats' own: they are imported only by the functions
that need them, which say what to install when they are missing (``pip install 'wvformats[test]'``).
"""

from __future__ import annotations

from typing import Any

from .dependencies import INSTALL, require
from .fuzz import FOREIGN, HOSTILE, Limits, check_mutant, fuzz, mutants, mutate, run_bounded
from .roundtrip import (
    Target,
    assert_truncations_fail,
    bytes_roundtrip,
    check_roundtrip,
    equal,
    roundtrip,
    target,
)

__all__ = [
    "FOREIGN",
    "INSTALL",
    "HOSTILE",
    "MODES",
    "Limits",
    "Target",
    "assert_truncations_fail",
    "bytes_roundtrip",
    "check_mutant",
    "check_roundtrip",
    "equal",
    "fuzz",
    "mutants",
    "mutate",
    "property_tests",
    "require",
    "roundtrip",
    "run_bounded",
    "strategy",
    "target",
]

def strategy(what: Any, **kwargs: Any) -> Any:
    """A hypothesis strategy of valid instances of a schema or registered format (see :mod:`.strategies`)."""
    from .strategies import strategy as make

    return make(what, **kwargs)


def property_tests(what: Any, **kwargs: Any) -> dict[str, Any]:
    """pytest test functions for a schema or format (see :func:`.strategies.property_tests`)."""
    from .strategies import property_tests as make

    return make(what, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "MODES":  # a pytest mark: pytest is imported only by a test that asks for it
        pytest = require("pytest")
        return pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
    raise AttributeError(name)
