"""The compiled kernels, found and loaded in one place: the families' (``wvformats/families/<family>/_*.c``) and
the framework's (``wvformats/framework/_*.c``), built by ``pip install`` (setup.py finds each one), for the
paths whose Python per-operation cost would leave them slower than the peers' C.

Every kernel has a pure-Python twin that gives the same bits, used where the kernel is not built (a source
tree never installed, an interpreter with no C extensions), with one warning line the first time, or when
``WVFORMATS_PURE_PYTHON`` is set to a non-empty value (to compare the two, or to rule the kernel out; no
warning); the tests run both.

``WVFORMATS_KERNEL_DIR``, when set, is a directory laid out as the source tree (``wvformats/families/<family>/
_kernel.<ext>``, ``wvformats/framework/_texttable.<ext>``) whose builds are loaded instead of the installed ones: ``.ci/sanitize`` points it at kernels
built with AddressSanitizer and UBSan."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

PURE_PYTHON_ENV = "WVFORMATS_PURE_PYTHON"
KERNEL_DIR_ENV = "WVFORMATS_KERNEL_DIR"


def kernel(module: str) -> ModuleType | None:
    """The compiled module ``module`` (``"wvformats.families.fasttext._kernel"``), or None: not built, or
    ``WVFORMATS_PURE_PYTHON`` set. Loaded from ``WVFORMATS_KERNEL_DIR`` when that is set (and then the module
    every later import of that name gets)."""
    if os.environ.get(PURE_PYTHON_ENV):
        return None
    where = os.environ.get(KERNEL_DIR_ENV)
    if where and module not in sys.modules:
        return _load_from(Path(where), module)
    try:
        return importlib.import_module(module)
    except ImportError as e:
        _missing(module, e)
        return None


class KernelMissingWarning(RuntimeWarning):
    """A compiled kernel is not built (no C compiler at install): its pure-Python twin stands in."""


_WARNED: list[str] = []


def _missing(module: str, error: ImportError) -> None:
    """One warning line, the first time a kernel is missing in this process (the others are missing alike)."""
    if _WARNED:
        return
    _WARNED.append(module)
    import warnings

    why = " ".join(str(error).split())
    warnings.warn(f"{module} is not built ({why}; no C compiler when wvformats was installed?): its pure-Python "
                  f"twin gives the same results, slower; reinstall with a C compiler, or set {PURE_PYTHON_ENV}=1 "
                  "to choose the twins", KernelMissingWarning, stacklevel=3)


def _load_from(where: Path, module: str) -> ModuleType:
    """``module`` built into ``where`` (laid out as the source tree); ImportError when it is not there: a
    directory set on purpose that lacks the kernel is a mistake, not a reason to fall back."""
    stem = where.joinpath(*module.split("."))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = stem.with_name(stem.name + suffix)
        if path.is_file():
            spec = importlib.util.spec_from_file_location(module, path)
            assert spec is not None and spec.loader is not None
            loaded = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(loaded)
            sys.modules[module] = loaded
            return loaded
    raise ImportError(f"{KERNEL_DIR_ENV}={where}: no build of {module} there", name=module)


def sources() -> list[str]:
    """The module name of every kernel source in the installed tree, the families' and the framework's (a wheel
    ships the built modules only: then the names of the built ones)."""
    package = Path(__file__).parents[1]
    found = {".".join(p.relative_to(package).with_name(p.name.split(".")[0]).parts)
             for where in ("families/*", "framework") for ext in ("c", "so", "pyd")
             for p in package.glob(f"{where}/_*.{ext}")}
    return sorted(f"wvformats.{name}" for name in found)
