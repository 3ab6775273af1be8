"""What pyproject.toml cannot express: the package list (every package under wvformats/, so a new format family is
found without editing anything, and schemas/ installed as wvformats.schemas) and the compiled kernels (every
``wvformats/families/<family>/_*.c`` is the extension module ``wvformats.families.<family>._*``: the per-call paths
that Python's per-operation cost would make slower than the peers, each with a pure-Python twin). The rest is
pyproject.toml."""

import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup

# float arithmetic exactly as written: each float32 operation rounded on its own, as the peers' x86-64 builds do
# (no fused multiply-add, no reassociation), since the kernels reproduce their results to the bit
_FLAGS = ["/O2", "/fp:precise"] if sys.platform == "win32" else ["-O2", "-ffp-contract=off", "-fno-fast-math"]


def _kernels() -> list[Extension]:
    here = Path(__file__).parent
    return [Extension(".".join(c.relative_to(here).with_suffix("").parts), [c.relative_to(here).as_posix()],
                      extra_compile_args=_FLAGS, libraries=[] if sys.platform == "win32" else ["m"])
            for c in sorted((here / "wvformats" / "families").glob("*/_*.c"))]


setup(
    packages=[*find_packages(include=["wvformats", "wvformats.*"]), "wvformats.schemas",
              *(f"wvformats.schemas.{p}" for p in find_packages("schemas"))],
    package_dir={"wvformats.schemas": "schemas"},
    ext_modules=_kernels(),
)
