"""fastText: binary models (``.bin``) and quantized ones (``.ftz``), their lookups and prediction.

Its public names, the only ones another family uses (tests/test_import_graph.py holds the families to
them), each imported when first asked for (importing the package, as ``sniff`` does, imports none):
``fasttext_hash`` (fastText's hash of a word or n-gram, which finalfusion's fastText vocabularies use).
"""

from __future__ import annotations

from typing import Any

__all__ = ["fasttext_hash"]


def __getattr__(name: str) -> Any:
    if name == "fasttext_hash":
        from . import hashing as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(module, name)
    return value
