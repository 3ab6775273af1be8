"""A small format written as a plugin outside the package would be: a schema of the framework's public
blocks, and a registration. ``test_toy_plugin.py`` is its whole property-test file."""

import enum

import numpy as np
from construct import Const, Float32l, Int8ul, Int32ul, Struct, this

from wvformats import framework, registry
from wvformats.framework import CheckedString, EnumField, JSONField, NumpyArray, Table, Valid


class Kind(enum.IntEnum):
    NORMAL = 1
    CONTROL = 2


piece = Struct(
    "kind" / EnumField(Int8ul, Kind) * "1 normal, 2 control",
    "text" / CheckedString("u8") * "u8 length, UTF-8",
    "score" / Float32l * "log probability",
)

toy = Struct(
    "magic" / Const(b"TOY1") * 'b"TOY1"',
    "meta" / JSONField("u32") * "u32 length, then a JSON object",
    "dim" / Int32ul * "vector size",
    Valid("dim", this.dim <= 64) * "dim <= 64",
    "vector" / NumpyArray("<f4", this.dim) * "f32 values",
    "pieces" / Table(piece, min_size=6) * "pieces to the end of the file",
)


def fmt() -> registry.Format:
    """The plugin's registry entry (a plugin module would pass it to ``registry.register`` when imported)."""
    parse, build = registry.schema_io("toy", toy)
    return registry.Format(name="toy", extensions=(".toy",), description="a toy plugin format", schema=toy,
                           sniff=lambda head: head[:4] == b"TOY1", parse=parse, build=build,
                           to_model=lambda obj, **_: obj, from_model=lambda model, **_: model)


SAMPLE = framework.build(toy, dict(meta={"name": "toy", "n": 2}, dim=3, vector=np.array([1, 2, 3], "<f4"),
                                   pieces=[dict(kind=Kind.CONTROL, text="<s>", score=0.0),
                                           dict(kind=Kind.NORMAL, text="é", score=-1.5)]), format="toy")
