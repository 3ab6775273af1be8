"""GGUF <-> safetensors: GGUF tensors dequantized to F32 (F16, BF16, F64 and integers kept) with the GGUF
metadata as ``__metadata__`` strings, and safetensors tensors as GGUF tensors, quantized to a ggml type with
ggml's own (bit-exact) quantizers where asked."""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np

from ...errors import BuildError, FormatError
from ..ggml import GGUF, WRITTEN, GGUFModel, GGUFTensor, quantize
from .model import SafeTensors

KEPT = {"F32": "F32", "F16": "F16", "BF16": "BF16", "F64": "F64", "I8": "I8", "I16": "I16", "I32": "I32",
        "I64": "I64"}  # ggml type -> safetensors code of the types both hold as they are


class TypeNotAppliedWarning(UserWarning):
    """A conversion to GGUF with ``type`` (``--type``) kept some float matrices in their own type: their rows do
    not fill the type's blocks (the line says how many tensors took the type, which kept theirs and why)."""


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
            arrays[name] = np.ascontiguousarray(t.checked_blocks()).view("<u2").reshape(t.shape)
        elif code is not None:
            arrays[name] = np.asarray(t.checked_blocks()).reshape(t.shape)
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
    become F32. Unsigned, bool and complex tensors have no GGUF type: refused.

    A float matrix whose rows do not fill ``type``'s blocks keeps its type, and one TypeNotAppliedWarning line
    says how many tensors took ``type`` and which kept theirs, and why; when no tensor can take it, a
    BuildError (nothing is written)."""
    from ...schemas.ggml import LAYOUTS

    if type is not None and type not in LAYOUTS:
        raise BuildError(f"unknown ggml type {type}; one of {', '.join(LAYOUTS)}", format=GGUF.name)
    if type is not None and type not in WRITTEN:
        raise BuildError(f"quantizing {type} is not implemented (read only); the types written: "
                         f"{', '.join(WRITTEN)}", format=GGUF.name)
    native = {code: ggml for ggml, code in KEPT.items()}
    tensors = {}
    kept: dict[str, list[str]] = {}  # why a tensor did not take ``type`` -> the tensors
    for name in st:
        code, shape = st.dtypes[name], tuple(st.shapes[name])
        is_float = code.startswith(("F", "BF"))
        if not is_float and code not in native:
            raise BuildError(f"tensor {name!r} is {code}: GGUF has no such type (make it a signed or float type "
                             "first)", format=GGUF.name, path=f"tensors[{name}]")
        target = native.get(code, "F32")
        if type is not None and type != target:
            if not is_float:
                kept.setdefault("integers", []).append(name)
            elif len(shape) < 2:
                kept.setdefault("of one dimension", []).append(name)
            elif shape[-1] % LAYOUTS[type][0]:
                kept.setdefault(f"rows of {shape[-1]} values do not fill {type}'s {LAYOUTS[type][0]}-value blocks",
                                []).append(name)
            else:
                target = type
        if target == native.get(code):  # stored as they are
            blocks = np.ascontiguousarray(st[name]).reshape(-1).view(LAYOUTS[target][1])
        else:
            blocks = quantize(st.to_numpy(name).reshape(-1), target)
        tensors[name] = GGUFTensor(name, target, tuple(reversed(shape)) or (1,), blocks)
    if type is not None and kept:
        _say_kept(type, kept, tensors)
    model = GGUFModel({}, tensors)
    for key, value in (st.metadata or {}).items():
        if not isinstance(value, str):  # (read as it is; safetensors itself refuses the file: check() says so)
            raise FormatError(f"the source's __metadata__ holds strings only (safetensors refuses the file); "
                              f"{key!r} is {json.dumps(value)}", path=f"header.__metadata__.{key}")
        model.metadata.set(key, value, type="STRING")
    return model


def _say_kept(type: str, kept: dict[str, list[str]], tensors: dict[str, GGUFTensor]) -> None:
    """One warning line when a float matrix could not take ``type`` (vectors and integers keep their types
    by the rule, as llama.cpp's converter keeps them); a BuildError when no tensor took it."""
    n_kept = sum(map(len, kept.values()))
    took = len(tensors) - n_kept
    types = sorted({tensors[name].type for names in kept.values() for name in names})
    why = "; ".join(f"{reason} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
                    for reason, names in sorted(kept.items(), key=lambda kv: not kv[0].startswith("rows")))
    text = f"type {type} (--type) applied to {took} of {len(tensors)} tensors; {n_kept} kept {', '.join(types)}: {why}"
    if not took:
        raise BuildError(f"{text}: nothing to write as {type} (a type whose blocks the rows fill, or no type, "
                         "writes it)", format=GGUF.name)
    if any(reason.startswith("rows") for reason in kept):
        warnings.warn(text, TypeNotAppliedWarning, stacklevel=4)
