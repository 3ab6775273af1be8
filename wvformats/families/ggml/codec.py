"""Codec of rwkv.cpp model files (ggml container, versions 100 and 101)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import construct as cs

from ...errors import BuildError
from ...registry import Format, register, schema_io
from ...schemas import ggml as schema
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
