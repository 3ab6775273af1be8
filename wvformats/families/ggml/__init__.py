"""ggml: the block types and quantizers, the ggml parameter records, and rwkv.cpp model files.

Its public names, the only ones another family uses (tests/test_import_graph.py holds the families to
them), each imported when first asked for (importing the package, as ``sniff`` does, imports none):
``GGUFModel``, ``GGUFTensor`` and ``Metadata`` (the GGUF model), ``quantize`` and ``WRITTEN`` (ggml's
quantizers and the types they write) and ``GGUF`` (the format's identity).
"""

from __future__ import annotations

from typing import Any

__all__ = ["GGUF", "GGUFModel", "GGUFTensor", "Metadata", "WRITTEN", "quantize"]


def __getattr__(name: str) -> Any:
    if name in ("GGUFModel", "GGUFTensor", "Metadata"):
        from . import gguf as module
    elif name in ("WRITTEN", "quantize"):
        from . import quants as module
    elif name == "GGUF":
        from . import sniff as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(module, name)
    return value
