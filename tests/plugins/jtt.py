"""jtt: named tensors behind a JSON header, a wvformats plugin written from docs/extending.md and
docs/framework.md alone (the format issue 28 measured at 223 lines before the framework had JSON and
tensor-table fields). Standard layout: magic, u64 header length, the JSON header, the tensors' bytes."""

import numpy as np
from construct import Const, Struct, this

from wvformats import registry
from wvformats.framework import JSONField, Tensors

MAGIC = b"JTT1"
DTYPES = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "U8": "u1"}

jtt = Struct(
    "magic" / Const(MAGIC) * 'b"JTT1"',
    "header" / JSONField("u64") * "u64 length, then JSON: name -> {dtype, shape, data_offsets}, __metadata__",
    "data" / Tensors(this.header, DTYPES, skip=("__metadata__",)) * "the tensors, tiling the rest of the file",
)


def to_model(parsed, **_):
    """The tensors by name (zero-copy views) and the header's string metadata."""
    return {"tensors": dict(parsed["data"]), "metadata": dict(parsed["header"].get("__metadata__", {}))}


def from_model(model, **_):
    """A header listing each tensor after the one before, in the order given."""
    codes = {np.dtype(v): k for k, v in DTYPES.items()}
    header, at = {"__metadata__": model.get("metadata", {})}, 0
    for name, array in model["tensors"].items():
        header[name] = {"dtype": codes[array.dtype], "shape": list(array.shape),
                        "data_offsets": [at, at + array.nbytes]}
        at += array.nbytes
    return dict(header=header, data=model["tensors"])


parse, build = registry.schema_io("jtt", jtt)
FORMAT = registry.Format(
    name="jtt", extensions=(".jtt",), description="named tensors behind a JSON header", schema=jtt,
    sniff=lambda head: head[:4] == MAGIC, parse=parse, build=build, to_model=to_model, from_model=from_model,
    model=dict, priority=0)
