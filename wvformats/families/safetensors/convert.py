"""GGUF <-> safetensors: GGUF tensors dequantized to F32 (F16, BF16, F64 and integers kept) with the GGUF
metadata as ``__metadata__`` strings, and safetensors tensors as GGUF tensors, quantized to a ggml type with
ggml's own (bit-exact) quantizers where asked."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ...errors import BuildError
from ..ggml.gguf import GGUFModel, GGUFTensor
from ..ggml.quants import quantize
from ..ggml.sniff import GGUF
from .model import SafeTensors

KEPT = {"F32": "F32", "F16": "F16", "BF16": "BF16", "F64": "F64", "I8": "I8", "I16": "I16", "I32": "I32",
        "I64": "I64"}  # ggml type -> safetensors code of the types both hold as they are


def _metadata_string(value: Any) -> str:
    """A GGUF metadata value as a ``__metadata__`` string: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    if hasattr(value, "tolist"):
        value = value.tolist()
    elif not isinstance(value, (bool, int, float)):
        value = list(value)
    return json.dumps(value, ensure_ascii=False)


def from_gguf(model: GGUFModel, progress: Any = None) -> SafeTensors:
    """The tensors of a GGUF model in PyTorch shape: F32, F16, BF16, F64 and integer tensors as they are,
    quantized ones dequantized to F32; the metadata as strings."""
    arrays, codes = {}, {}
    for name, t in model.tensors.items():
        code = KEPT.get(t.type)
        if code == "BF16":
            arrays[name] = np.ascontiguousarray(t.blocks).view("<u2").reshape(t.shape)
        elif code is not None:
            arrays[name] = np.asarray(t.blocks).reshape(t.shape)
        else:
            code, arrays[name] = "F32", t.to_numpy()
        codes[name] = code
        if progress is not None:
            progress(arrays[name].nbytes)
    metadata = {key: _metadata_string(model.metadata[key]) for key in model.metadata}
    return SafeTensors(arrays, metadata, codes)


def to_gguf(st: SafeTensors, type: str | None = None) -> GGUFModel:
    """A GGUF model of the tensors (PyTorch shape kept) and the metadata (as strings). ``type``: the ggml type
    that float tensors of two or more dimensions whose rows fill its blocks become (``Q8_0``, ``F16``, ...,
    by ggml's own quantizers); the rest keep F32, F16, BF16, F64 or their integer type, float8 and float4
    become F32. Unsigned, bool and complex tensors have no GGUF type: refused."""
    from ...schemas.ggml import LAYOUTS

    if type is not None and type not in LAYOUTS:
        raise BuildError(f"unknown ggml type {type}; one of {', '.join(LAYOUTS)}", format=GGUF.name)
    native = {code: ggml for ggml, code in KEPT.items()}
    tensors = {}
    for name in st:
        code, shape = st.dtypes[name], tuple(st.shapes[name])
        is_float = code.startswith(("F", "BF"))
        if not is_float and code not in native:
            raise BuildError(f"tensor {name!r} is {code}: GGUF has no such type (make it a signed or float type "
                             "first)", format=GGUF.name, path=f"tensors[{name}]")
        target = native.get(code, "F32")
        if type is not None and is_float and len(shape) >= 2 and shape[-1] % LAYOUTS[type][0] == 0:
            target = type
        if target == native.get(code):  # stored as they are
            blocks = np.ascontiguousarray(st[name]).reshape(-1).view(LAYOUTS[target][1])
        else:
            blocks = quantize(st.to_numpy(name).reshape(-1), target)
        tensors[name] = GGUFTensor(name, target, tuple(reversed(shape)) or (1,), blocks)
    model = GGUFModel({}, tensors)
    for key, value in (st.metadata or {}).items():
        model.metadata.set(key, value, type="STRING")
    return model
