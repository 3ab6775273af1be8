"""The safetensors family: Hugging Face's tensor files (``.safetensors``).

Its public names, the only ones another family uses (tests/test_import_graph.py holds the families to
them), each imported when first asked for (importing the package, as ``sniff`` does, imports none):
``SafeTensors`` (the model) and ``to_gguf`` (its tensors as a GGUF model, quantized where asked).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SafeTensors", "to_gguf"]


def __getattr__(name: str) -> Any:
    if name == "SafeTensors":
        from . import model as module
    elif name == "to_gguf":
        from . import convert as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(module, name)
    return value
