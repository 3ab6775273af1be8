"""What pyproject.toml cannot express: the package list (every package under wvformats/, so a new format family is
found without editing anything, and schemas/ installed as wvformats.schemas) and the compiled kernels (every
``wvformats/families/<family>/_*.c`` is the extension module ``wvformats.families.<family>._*``, and every
``wvformats/framework/_*.c`` the module ``wvformats.framework._*``: the paths that Python's per-operation cost
would make slower than the peers, each with a pure-Python twin). The rest is
pyproject.toml.

A kernel that cannot be compiled (no C compiler where no wheel fits) does not fail the install: the build says
so in one line and goes on, and ``wvformats.compiled`` warns once, in one line, at first use that the
pure-Python twin (the same results, slower) stands in."""

import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

# float arithmetic exactly as written: each float32 operation rounded on its own, as the peers' x86-64 builds do
# (no fused multiply-add, no reassociation), since the kernels reproduce their results to the bit
_FLAGS = ["/O2", "/fp:precise"] if sys.platform == "win32" else ["-O2", "-ffp-contract=off", "-fno-fast-math"]


def _kernels() -> list[Extension]:
    here = Path(__file__).parent
    return [Extension(".".join(c.relative_to(here).with_suffix("").parts), [c.relative_to(here).as_posix()],
                      extra_compile_args=_FLAGS, libraries=[] if sys.platform == "win32" else ["m"])
            for c in sorted([*(here / "wvformats" / "families").glob("*/_*.c"),
                             *(here / "wvformats" / "framework").glob("_*.c")])]


class optional_build_ext(build_ext):
    """build_ext whose compiler errors (no compiler, a failed compile or link) skip the kernel with one line."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - DistutilsPlatformError and the like: no compiler at all
            self._skipped("the compiled kernels", e)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001 - CompileError, LinkError, DistutilsExecError, OSError (no gcc)
            self._skipped(ext.name, e)

    @staticmethod
    def _skipped(what: str, e: Exception) -> None:
        why = " ".join(str(e).split()) or type(e).__name__
        print(f"wvformats: warning: {what} not built ({why}): the pure-Python twin is used (the same results, "
              "slower)", file=sys.stderr)


setup(
    packages=[*find_packages(include=["wvformats", "wvformats.*"]), "wvformats.schemas",
              *(f"wvformats.schemas.{p}" for p in find_packages("schemas"))],
    package_dir={"wvformats.schemas": "schemas"},
    ext_modules=_kernels(),
    cmdclass={"build_ext": optional_build_ext},
)
