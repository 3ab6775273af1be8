"""Codec of safetensors files: the schema's parse as a :class:`SafeTensors` model and back, the checks the
safetensors library makes that the parse leaves, and the header-only summary."""

from __future__ import annotations

from typing import Any

import construct as cs
import numpy as np

from ... import framework
from ...errors import BuildError, FormatError
from ...registry import Format, register, schema_io
from ...schemas import safetensors as schema
from . import shards
from .model import SafeTensors, from_parsed, problems
from .sniff import SAFETENSORS, SHARDED

NAME = SAFETENSORS.name
GGUF_MODEL = "wvformats.families.ggml.gguf:GGUFModel"  # (written too; named, so that reading imports no GGUF code)
parse, build = schema_io(NAME, schema.safetensors)
header_only = cs.Struct("header" / schema.safetensors.header.subcon, "data_start" / cs.Tell)  # (without docs)
_DATA = schema.safetensors.data.subcon  # (the Tensors, without its doc): their layout checked, unread


def to_model(parsed: Any, **_: Any) -> SafeTensors:
    return from_parsed(parsed)


def _unchanged(model: SafeTensors) -> bool:
    header = model.header
    if header is None or header.get(schema.METADATA) != model.metadata:
        return False
    names = [n for n in header if n != schema.METADATA]
    return names == list(model.arrays) and all(
        header[n]["dtype"] == model.dtypes[n] and list(header[n]["shape"]) == list(model.shapes[n])
        and header[n]["data_offsets"][1] - header[n]["data_offsets"][0] == np.asarray(model.arrays[n]).nbytes
        for n in names)


def from_model(model: Any, **_: Any) -> cs.Container:
    from ..ggml import GGUFModel

    if isinstance(model, GGUFModel):  # (convert: dequantized, F16/BF16 kept, the metadata as strings)
        from .convert import from_gguf

        model = from_gguf(model)
    if not isinstance(model, SafeTensors):
        raise BuildError(f"expected SafeTensors or GGUFModel, got {type(model).__name__}", format=NAME)
    header = model.header if _unchanged(model) else model.header_dict()
    return cs.Container(header=header, data=dict(model.arrays))


def _summary(header: Any, size: int | None) -> dict[str, Any]:
    tensors = [(n, e) for n, e in header.items() if n != schema.METADATA and isinstance(e, dict)]
    dtypes: dict[str, int] = {}
    for _, e in tensors:
        dtypes[str(e.get("dtype"))] = dtypes.get(str(e.get("dtype")), 0) + 1
    out = {"header_bytes": len(header.raw) if getattr(header, "raw", None) is not None else None,
           "tensors": len(tensors), "dtypes": dtypes, "metadata": header.get(schema.METADATA),
           "tensor_table": [{"name": n, "dtype": e.get("dtype"), "shape": e.get("shape"),
                             "data_offsets": e.get("data_offsets")} for n, e in tensors]}
    if size is not None:
        out["data_bytes"] = size
    return out


def inspect(parsed: Any) -> dict[str, Any]:
    return _summary(parsed["header"], sum(a.nbytes for a in parsed["data"].values()))


def inspect_head(buf: Any, **_: Any) -> dict[str, Any]:
    """The header, and the tensors' places held to the bytes after it (a tensor past the end of the file is a
    TruncatedError, as in the full parse): the tensor data are not read."""
    parsed = framework.parse(header_only, buf, format=NAME)
    start = parsed["data_start"]
    try:
        layout = _DATA.layout(parsed, "data", start, len(buf) - start)
    except FormatError as e:
        e.format = NAME
        raise
    return _summary(parsed["header"], sum(end - begin for *_, begin, end in layout))


def check(parsed: Any) -> list[str]:
    return problems(parsed["header"])


register(Format(
    **SAFETENSORS._asdict(), description="safetensors (Hugging Face): u64 header length, JSON header of "
    "tensor dtypes, shapes and offsets (and __metadata__ strings), then the tensors' bytes",
    schema=schema.safetensors, parse=parse, build=build, to_model=to_model, from_model=from_model,
    model=SafeTensors, writes=(GGUF_MODEL,), inspect=inspect, inspect_head=inspect_head, check=check, array_views=True,
    read_options=(),
))


register(Format(
    **SHARDED._asdict(), description="a sharded safetensors checkpoint: {prefix}.safetensors.index.json (its "
    "metadata and weight_map of tensor -> shard) and the shards it names, {prefix}-00001-of-0000N.safetensors",
    schema=schema.index, parse=shards.parse, build=shards.build, to_model=lambda model, **_: model,
    from_model=shards.from_model, model=shards.ShardedSafeTensors, writes=(SafeTensors, GGUF_MODEL),
    inspect=shards.inspect, check=shards.check, read_options=(),
))
