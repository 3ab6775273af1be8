"""finalfusion (``.fifu``): the chunked format, its vocabularies, storages and subword lookups.

Its public names, the only ones another family uses (tests/test_import_graph.py holds the families to
them), each imported when first asked for (importing the package, as ``sniff`` does, imports none):
``as_row_items``, ``composed_batch`` and ``sum_rows`` (unknown words composed from their n-gram rows,
as fastText does too).
"""

from __future__ import annotations

from typing import Any

__all__ = ["as_row_items", "composed_batch", "sum_rows"]


def __getattr__(name: str) -> Any:
    if name in ("as_row_items", "composed_batch", "sum_rows"):
        from . import lookups as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(module, name)
    return value
