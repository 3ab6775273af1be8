"""Codec of rwkv.cpp model files (ggml container, versions 100 and 101)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import construct as cs
import numpy as np

from ... import framework
from ...errors import BuildError, OptionError
from ...registry import Format, register, schema_io
from ...schemas import ggml as schema
from ...schemas import gguf as gguf_schema
from ...schemas.constructs.gguf import StringArray, StringHead
from ...schemas.ggml import GGUF_TYPES, LAYOUTS
from ..safetensors import SafeTensors
from ..sentencepiece import SentencePieceModel, to_gguf
from . import sniff
from .gguf import TYPE_IDS, GGUFModel, GGUFTensor, Metadata
from .rwkv import RwkvModel, Tensor
from .sniff import RWKV

NAME = RWKV.name


parse, build = schema_io(NAME, schema.rwkv)


def to_model(parsed: Any, **_: Any) -> RwkvModel:
    version = parsed["header"]["version"]
    types = schema.BLOCKS[version]
    tensors: OrderedDict[str, Tensor] = OrderedDict()
    duplicates = []
    for rec in parsed["records"]:
        if rec["key"] in tensors:
            duplicates.append(rec["key"])
            continue
        tensors[rec["key"]] = Tensor(rec["key"], types[rec["data_type"]][0], tuple(reversed(rec["shape"])),
                                     rec["data"], rec.get("offset"), version)
    model = RwkvModel(dict(parsed["header"]), tensors)
    model.duplicate_keys = duplicates
    return model


def from_model(model: Any, **_: Any) -> cs.Container:
    if not isinstance(model, RwkvModel):
        raise BuildError(f"expected RwkvModel, got {type(model).__name__}", format=NAME)
    ids = {name: i for i, (name, _, _) in schema.BLOCKS[model.version].items()}
    records = [cs.Container(key=t.name, data_type=ids[t.dtype], shape=list(reversed(t.shape)), data=t.blocks)
               for t in model.tensors.values()]
    header = cs.Container(magic=schema.MAGIC, version=model.version, n_vocab=model.n_vocab,
                          n_embed=model.n_embed, n_layer=model.n_layer, data_type=model.data_type)
    return cs.Container(header=header, records=records)


def inspect(parsed: Any) -> dict[str, Any]:
    model = to_model(parsed)
    return {"version": model.version, "architecture": model.architecture, "n_vocab": model.n_vocab,
            "n_embed": model.n_embed, "n_layer": model.n_layer, "tensors": len(model.tensors),
            "tensor_table": [{"name": t.name, "dtype": t.dtype, "shape": list(t.shape), "offset": t.offset,
                              "bytes": int(t.blocks.nbytes)} for t in model.tensors.values()]}


def inspect_head(buf: Any, **_: Any) -> dict[str, Any]:
    """The header and the tensor table: the records are walked by the sizes their headers give, and their
    data stay unread views of the mapped file."""
    return inspect(parse(buf))


def check(parsed: Any) -> list[str]:
    return to_model(parsed).check()


register(Format(
    **RWKV._asdict(), description="rwkv.cpp model file: ggml 'ggmf' header (version 100 or "
    "101), then parameter records with FP32, FP16 or quantized blocks", schema=schema.rwkv,
    parse=parse, build=build, to_model=to_model, from_model=from_model, model=RwkvModel, inspect=inspect,
    inspect_head=inspect_head, check=check, schemas={"header": schema.header},
))


# ---------------------------------------------------------------------------------------------------------
# GGUF

GGUF = sniff.GGUF.name
parse_gguf, build_gguf = schema_io(GGUF, gguf_schema.gguf)
_TYPE_TO_END = framework.fixed_size(gguf_schema.tensor_info, "type")  # a tensor info's type, from its end


def gguf_to_model(parsed: Any, **_: Any) -> GGUFModel:
    model = GGUFModel(Metadata(parsed["metadata"]), version=int(parsed["header"]["version"]))
    model.parsed = parsed
    data = parsed.get("data")
    for i, info in enumerate(parsed["tensor_infos"]):
        name, dims, type_id = info["name"], tuple(int(d) for d in info["dims"]), int(info["type"])
        at_type = info["_end"] - _TYPE_TO_END
        where = f"tensor_infos[{i}]"
        if name in model.tensors:
            model.problems.append((f"{where}.name", info["_offset"], f"duplicate tensor name {name}"))
            continue
        type_name = GGUF_TYPES.get(type_id)
        if type_name is None:
            model.problems.append((f"{where}.type", at_type, f"unknown ggml type {type_id}"))
            continue
        tensor = GGUFTensor(name, type_name, dims, np.zeros(0, LAYOUTS[type_name][1]), int(info["offset"]),
                            (where, info["_offset"]))
        block, dtype = LAYOUTS[type_name]
        n = 1
        for d in dims:
            n *= d
        count = n // block
        fits = data is not None and dims and dims[0] % block == 0 and tensor.offset + count * dtype.itemsize <= len(data)
        if fits:
            tensor.blocks = tensor._read = np.frombuffer(data, dtype, count, tensor.offset)
        model.tensors[name] = tensor  # (blocks left empty where the data do not fit: check() names it)
    return model


def gguf_from_model(model: Any, *, type: str | None = None) -> cs.Container:
    """A GGUFModel's layout; a SentencePiece model as the vocabulary-only GGUF llama.cpp's converter writes
    (:func:`wvformats.sentencepiece.to_gguf`); safetensors tensors quantized to the write option ``type``
    where they fit (:func:`wvformats.families.safetensors.convert.to_gguf`), which nothing else takes."""
    if type is not None and not isinstance(model, SafeTensors):
        raise OptionError(f"type={type!r} (--type) quantizes the tensors of safetensors input; a "
                          f"{model.__class__.__name__}'s are written as they are")
    if isinstance(model, SentencePieceModel):
        model = to_gguf(model)
    if isinstance(model, SafeTensors):
        from ..safetensors import to_gguf as tensors_to_gguf

        model = tensors_to_gguf(model, type)
    if not isinstance(model, GGUFModel):
        raise BuildError(f"expected GGUFModel, got {type(model).__name__}", format=GGUF)
    entries = model.metadata.entries()
    parsed, alignment = model.parsed, model.alignment  # (the schema's rule: the build finds it again)
    tensors = list(model.tensors.values())
    # read and unchanged tensors: the infos and the data section as they were (one bulk copy)
    same = parsed is not None and parsed.get("data") is not None and parsed["alignment"] == alignment and \
        len(tensors) == len(parsed["tensor_infos"]) and all(
            t.name == info["name"] and t.offset == info["offset"] and t.blocks is t._read is not None
            for t, info in zip(tensors, parsed["tensor_infos"], strict=True))
    if same:
        infos, data, has_data = parsed["tensor_infos"], parsed["data"], True
    else:
        infos, data, at = [], [], 0
        for t in tensors:  # (counts, widths and the alignment are the schema's)
            infos.append(cs.Container(name=t.name, dims=t.ggml_shape, type=TYPE_IDS[t.type], offset=at))
            data.append((at, t.blocks))
            at = gguf_schema.tensor_end(at, t.blocks.nbytes, alignment)
        if data:  # the last tensor padded too, as llama.cpp and gguf-py write it
            data.append((at, np.zeros(0, np.uint8)))
        has_data = bool(data) or (parsed is not None and bool(parsed.get("has_data")) and not tensors)
    return cs.Container(header=cs.Container(magic=gguf_schema.MAGIC, version=model.version), metadata=entries,
                        tensor_infos=infos, has_data=has_data, data=data if has_data else None)


FIRST_VALUES = 5  # of an array, shown by inspect


def _short_value(model: GGUFModel, key: str, most: int = FIRST_VALUES) -> Any:
    value = model.metadata[key]
    if isinstance(value, (StringArray, StringHead)):
        return {"count": len(value), "head": value.head(most)}
    if isinstance(value, np.ndarray):
        return {"count": int(value.size), "head": value[:most].tolist()}
    if isinstance(value, list):
        return {"count": len(value), "nested": True}
    return value.item() if isinstance(value, np.generic) else value


def gguf_inspect(parsed: Any) -> dict[str, Any]:
    model = gguf_to_model(parsed)
    return {"version": model.version, "architecture": model.architecture, "alignment": model.alignment,
            "n_kv": len(parsed["metadata"]), "tensors": len(parsed["tensor_infos"]),
            "tokens": len(model.metadata.get("tokenizer.ggml.tokens", ())),
            "metadata": [{"key": k, "type": model.metadata.type(k), "value": _short_value(model, k)}
                         for k in model.metadata],
            "tensor_table": [{"name": t.name, "type": t.type, "shape": list(t.shape),
                              "ggml_shape": list(t.ggml_shape), "offset": t.offset, "bytes": int(t.blocks.nbytes)}
                             for t in model.tensors.values()]}


def gguf_inspect_head(buf: Any, *, complete: bool = True, **_: Any) -> dict[str, Any]:
    """The header, every key/value (arrays by type, count and first values) and the tensor table, as ``inspect``
    gives them: string arrays are walked to their end but only their first strings decoded, tensors stay
    unread views. (A head of a compressed file: the tensors' bytes as their type and shape give them.)"""
    info = gguf_inspect(framework.parse(gguf_schema.gguf, buf, format=GGUF, string_head=FIRST_VALUES))
    if not complete:
        for row in info["tensor_table"]:
            block, dtype = LAYOUTS[row["type"]]
            row["bytes"] = int(np.prod(row["ggml_shape"], dtype=object)) // block * dtype.itemsize
    return info


def gguf_check(parsed: Any) -> list[str]:
    return gguf_to_model(parsed).check()


register(Format(
    **sniff.GGUF._asdict(), description="GGUF (ggml, llama.cpp): header, metadata key/values, tensor "
    "infos, aligned tensor data of any ggml type", schema=gguf_schema.gguf, parse=parse_gguf, build=build_gguf,
    to_model=gguf_to_model, from_model=gguf_from_model, model=GGUFModel, writes=(SentencePieceModel, SafeTensors),
    inspect=gguf_inspect, inspect_head=gguf_inspect_head, check=gguf_check,
    schemas={"header": gguf_schema.header, "metadata_kv": gguf_schema.metadata_kv,
             "tensor_info": gguf_schema.tensor_info},
))
