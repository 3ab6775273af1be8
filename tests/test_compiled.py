"""The compiled kernels are built by the install the tests run on (the README's), and the switch to their
pure-Python twins works."""

import importlib
import subprocess
import sys

from wvformats import compiled


def test_every_kernel_source_is_built_and_imports():
    names = compiled.sources()
    assert "wvformats.families.fasttext._kernel" in names
    assert "wvformats.families.finalfusion._kernel" in names
    for name in names:
        assert importlib.import_module(name).__file__.endswith((".so", ".pyd")), name
        assert compiled.kernel(name) is not None, name


def test_the_environment_switch_gives_the_pure_python_twins():
    code = "from wvformats import compiled; print(compiled.kernel('wvformats.families.fasttext._kernel'))"
    env = {"WVFORMATS_PURE_PYTHON": "1", "PATH": ""}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"
