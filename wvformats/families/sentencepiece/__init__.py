"""SentencePiece ``tokenizer.model``: the ModelProto model on the protobuf wire layer, exports, edits.

Its public names, the only ones another family uses (tests/test_import_graph.py holds the families to
them), each imported when first asked for (importing the package, as ``sniff`` does, imports none):
``SentencePieceModel`` (the model), ``to_gguf`` (its vocabulary as a GGUF model) and
``to_hf_tokenizer`` (its Hugging Face ``tokenizer.json``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SentencePieceModel", "to_gguf", "to_hf_tokenizer"]


def __getattr__(name: str) -> Any:
    if name == "SentencePieceModel":
        from . import model as module
    elif name == "to_gguf":
        from . import gguf as module
    elif name == "to_hf_tokenizer":
        from . import exports as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(module, name)
    return value
