"""The kit's test dependencies (hypothesis, pytest): imported when a function needs them, or a message saying
what to install."""

from __future__ import annotations

import importlib
from typing import Any

INSTALL = "pip install 'wvformats[test]'  (or: pip install hypothesis pytest)"


def require(module: str) -> Any:
    """Import a test dependency, or say what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"wvformats.testing needs {module.split('.')[0]}, a test dependency that wvformats "
                          f"itself does not install: {INSTALL}") from e
