"""The tree as docs/extending.md describes it: every module imports on its own (no import cycles, whatever
the order), and every family package registers its formats from its ``codec`` module."""

import pkgutil
import subprocess
import sys

import pytest

import wvformats
from wvformats import families, registry


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(wvformats.__path__, "wvformats."))


@pytest.mark.parametrize("module", _modules())
def test_every_module_imports_first(module):
    """Imported first in a fresh interpreter, each module loads: a cycle fails whichever module starts it."""
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_family_registers_from_its_codec():
    """Each package under wvformats/families/ is a family whose codec module registered a format."""
    loaded = registry.load()
    assert not registry.LOAD_ERRORS
    for info in pkgutil.iter_modules(families.__path__):
        assert info.ispkg, f"{info.name}: a family is a package"
        codec = f"wvformats.families.{info.name}.codec"
        assert any(f.to_model.__module__ == codec for f in loaded.values()), f"{codec} registers no format"
