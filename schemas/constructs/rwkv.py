"""The parameter-record table of rwkv.cpp files: one checked loop, every payload a numpy view.

Each record's lengths (dim_count, key_length, the shape product times the block size) are checked against
the bytes that remain before anything is allocated; errors name ``records[i].field`` and the offset.
"""

from __future__ import annotations

import struct
from typing import Any

import construct as cs
import numpy as np

from ...errors import BuildError, TruncatedError, ValueMismatchError
from ...framework.fields import Checked, evaluate
from ...framework.located import fail, tell
from ...framework.streams import byte_view, window

_HEAD = struct.Struct("<III")


def data_size(block: int, dtype: np.dtype, shape: tuple[int, ...]) -> tuple[int, int]:
    """(number of blocks, bytes) of a tensor with ggml-order ``shape``; the rows must fill whole blocks."""
    n = 1
    for d in shape:
        n *= d
    if block > 1 and (not shape or shape[0] % block):
        raise ValueError(f"row length {shape[0] if shape else 0} is not a multiple of the block size {block}")
    count = n // block
    return count, count * dtype.itemsize


class ParameterRecords(Checked):
    """Records to the end of the stream; parsed as a list of ``Container(key, data_type, shape, data)``."""

    def __init__(self, blocks: dict[int, dict[int, tuple[str, int, np.dtype]]], version: Any) -> None:
        super().__init__()
        self.blocks = blocks
        self.version = version

    def _types(self, context: Any, path: str, stream: Any) -> dict[int, tuple[str, int, np.dtype]]:
        version = int(evaluate(self.version, context))
        if version not in self.blocks:
            raise fail(path, tell(stream), f"unsupported file version {version} (100 or 101)", ValueMismatchError)
        return self.blocks[version]

    def _parse(self, stream: Any, context: Any, path: str) -> cs.ListContainer:
        types = self._types(context, path, stream)
        buf, base = window(stream)
        pos = stream.tell() - base
        end = len(buf)
        out = cs.ListContainer()
        i = 0
        while pos < end:
            where = f"{path}[{i}]"
            if pos + 12 > end:
                raise fail(where, base + pos, "record header is cut off", TruncatedError)
            dim_count, key_length, data_type = _HEAD.unpack_from(buf, pos)
            if not 1 <= dim_count <= 3:
                raise fail(f"{where}.dim_count", base + pos, "dim_count must be 1, 2 or 3", ValueMismatchError,
                           found=dim_count)
            if data_type not in types:
                raise fail(f"{where}.data_type", base + pos + 8, "unknown data type for this version",
                           ValueMismatchError, found=data_type)
            pos += 12
            if pos + 4 * dim_count > end:
                raise fail(f"{where}.shape", base + pos, "shape is cut off", TruncatedError)
            shape = struct.unpack_from(f"<{dim_count}I", buf, pos)
            pos += 4 * dim_count
            if key_length == 0 or pos + key_length > end:
                raise fail(f"{where}.key", base + pos, f"key of {key_length} bytes does not fit", TruncatedError
                           if key_length else ValueMismatchError, found=key_length)
            try:
                key = bytes(buf[pos : pos + key_length]).decode("utf-8")
            except UnicodeDecodeError as e:
                raise fail(f"{where}.key", base + pos + e.start, "key is not UTF-8", ValueMismatchError) from None
            pos += key_length
            name, block, dtype = types[data_type]
            try:
                count, nbytes = data_size(block, dtype, shape)
            except ValueError as e:
                raise fail(f"{where}.shape", base + pos - key_length - 4 * dim_count, str(e),
                           ValueMismatchError) from None
            if nbytes > end - pos:
                raise fail(f"{where}.data", base + pos, f"{name} tensor {shape} needs {nbytes} bytes, "
                           f"only {end - pos} remain", TruncatedError)
            data = np.frombuffer(buf, dtype=dtype, count=count, offset=pos)
            out.append(cs.Container(key=key, data_type=data_type, shape=list(shape), data=data, offset=base + pos))
            pos += nbytes
            i += 1
        stream.seek(base + pos)
        return out

    def parts(self, records: Any) -> list[tuple[str, int, int, Any, str]]:
        """Each record's fields as (sub-path, start, end, value, doc), for annotated dumps."""
        out = []
        for i, rec in enumerate(records):
            key, dims = rec["key"].encode("utf-8"), len(rec["shape"])
            at = rec["offset"] - len(key) - 4 * dims - 12
            out += [(f"[{i}].dim_count", at, at + 4, dims, "number of dimensions (1 to 3)"),
                    (f"[{i}].key_length", at + 4, at + 8, len(key), "bytes of the UTF-8 key"),
                    (f"[{i}].data_type", at + 8, at + 12, rec["data_type"], "tensor type id (FP32 0, FP16 1, ...)"),
                    (f"[{i}].shape", at + 12, at + 12 + 4 * dims, rec["shape"], "u32 per dimension, ne0 first"),
                    (f"[{i}].key", rec["offset"] - len(key), rec["offset"], rec["key"], "tensor name"),
                    (f"[{i}].data", rec["offset"], rec["offset"] + rec["data"].nbytes, rec["data"],
                     "the tensor's elements or quantized blocks")]
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        types = self._types(context, path, stream)
        for i, rec in enumerate(obj):
            where = f"{path}[{i}]"
            shape = tuple(int(x) for x in rec["shape"])
            data_type = int(rec["data_type"])
            if data_type not in types or not 1 <= len(shape) <= 3:
                raise fail(where, tell(stream), "unknown data type or bad dim_count", BuildError)
            name, block, dtype = types[data_type]
            key = rec["key"].encode("utf-8")
            try:
                count, _ = data_size(block, dtype, shape)
            except ValueError as e:
                raise fail(f"{where}.shape", tell(stream), str(e), BuildError) from None
            data = np.ascontiguousarray(rec["data"]).reshape(-1)
            if data.dtype != dtype or data.size != count:
                raise fail(f"{where}.data", tell(stream), f"data must be {count} {name} blocks", BuildError,
                           expected=(count, str(dtype)), found=(data.size, str(data.dtype)))
            stream.write(_HEAD.pack(len(shape), len(key), data_type) + struct.pack(f"<{len(shape)}I", *shape) + key)
            stream.write(byte_view(data))
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any) -> Any:
        """Up to three records of the version's types: a non-empty UTF-8 key, 1-3 dimensions whose rows fill
        whole blocks, and blocks of any bytes (``offset`` None: where the parse finds them)."""
        from hypothesis import strategies as st

        types = self.blocks[int(evaluate(self.version, context))]

        @st.composite
        def record(draw: Any) -> cs.Container:
            data_type = draw(st.sampled_from(sorted(types)))
            _, block, dtype = types[data_type]
            shape = [block * draw(st.integers(0, 2))] + draw(st.lists(st.integers(0, 2), max_size=2))
            count, nbytes = data_size(block, dtype, tuple(shape))
            raw = draw(st.binary(min_size=nbytes, max_size=nbytes))
            key = draw(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6))
            return cs.Container(key=key, data_type=data_type, shape=shape, data=np.frombuffer(raw, dtype, count),
                                offset=None)

        return st.lists(record(), max_size=3).map(cs.ListContainer)
