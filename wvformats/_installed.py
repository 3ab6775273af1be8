"""Imported first by ``wvformats``: a source folder that was never installed raises an ImportError saying how to
install it, not the bare ``No module named 'wvformats.schemas'`` (pip installs schemas/ as wvformats.schemas)."""

import importlib.util
import os

_PACKAGE = __name__.rpartition(".")[0]

if importlib.util.find_spec(f"{_PACKAGE}.schemas") is None:
    _folder = os.path.dirname(os.path.abspath(__file__))
    raise ModuleNotFoundError(
        f"No module named '{_PACKAGE}.schemas': {_folder} is a source folder that is not installed (pip installs "
        "its schemas/ as wvformats.schemas and builds the compiled kernels): install it in place with "
        f"`python3 -m pip install -e {os.path.dirname(_folder)}` (`pip install -e .` in that folder)",
        name=f"{_PACKAGE}.schemas")
