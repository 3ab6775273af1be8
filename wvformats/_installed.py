"""What ``import wvformats`` raises from a source folder that was never installed: an ImportError saying how
to install it, not the bare ``No module named 'wvformats.schemas'`` (pip installs schemas/ as
wvformats.schemas). Imported only then (as a test, a ``find_spec`` before every import, it cost each process
~0.15 ms)."""

import os

_PACKAGE = __name__.rpartition(".")[0]


def not_installed() -> ModuleNotFoundError:
    """The error that says how to install the source folder this package was imported from."""
    folder = os.path.dirname(os.path.abspath(__file__))
    return ModuleNotFoundError(
        f"No module named '{_PACKAGE}.schemas': {folder} is a source folder that is not installed (pip "
        "installs its schemas/ as wvformats.schemas and builds the compiled kernels): install it in place "
        "with "
        f"`python3 -m pip install -e {os.path.dirname(folder)}` (`pip install -e .` in that folder)",
        name=f"{_PACKAGE}.schemas")
