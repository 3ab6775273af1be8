"""Chunked files: ``u32 id``, ``u64 length``, body, to the end of the stream, with a table of chunk types
that users extend."""

from __future__ import annotations

import struct
from typing import Any

import construct as cs

from ..errors import TruncatedError, ValueMismatchError
from .fields import Checked, evaluate
from .located import check_length, fail
from .streams import remaining


class Chunks(Checked):
    """Chunks to the end of the stream: ``u32 id``, ``u64 length`` (bytes after the length field), body.

    ``types`` maps an id to ``(name, body schema)``; it is read at parse time, so registering a new chunk
    type is adding an entry. An unknown id is kept as raw bytes (skipped by its length) and written back
    byte-exact. The body must fill exactly ``length`` bytes. Building back-patches the length field. Each
    parsed chunk keeps the absolute offset of its id as ``_offset``, for errors found after parsing.
    """

    def __init__(self, types: dict[int, tuple[str, cs.Construct]], listed: Any = 0,
                 quirks: dict[int, Any] | None = None) -> None:
        super().__init__()
        self.types = types
        # id -> body -> how many bytes a known writer's length field falls short by (kept when rebuilding)
        self.quirks = quirks or {}
        self.listed = listed  # the header's chunk count: a file that ends before that many is cut off
        self._head = struct.Struct("<IQ")

    def _parse(self, stream: Any, context: Any, path: str) -> cs.ListContainer:
        out = cs.ListContainer()
        i = 0
        while True:
            left = remaining(stream)
            if left == 0:
                listed = int(evaluate(self.listed, context))
                if len(out) < listed:
                    raise fail(f"{path}[{len(out)}]", stream.tell(),
                               f"the header lists {listed} chunks, the file ends after {len(out)}", TruncatedError)
                return out
            start = stream.tell()
            where = f"{path}[{i}]"
            check_length(stream, 12, where, "chunk id and length")
            chunk_id, length = self._head.unpack(stream.read(12))
            entry = self.types.get(chunk_id)
            if entry is None or chunk_id not in self.quirks:  # a short length field may undercount
                check_length(stream, length, where, f"chunk {chunk_id} body")
            if entry is None:
                out.append(cs.Container(chunk_id=chunk_id, name="unknown", body=stream.read(length),
                                        _offset=start))
            else:
                name, schema = entry
                body = schema._parsereport(stream, self.body_context(context, length), f"{where} -> {name}")
                used = stream.tell() - start - 12
                quirk = self.quirks.get(chunk_id)
                short = used - length
                if used != length and not (quirk and short == quirk(body)):
                    raise fail(where, start + 4, f"{name} chunk length field does not match the bytes "
                               "its body takes", ValueMismatchError, expected=used, found=length)
                chunk = cs.Container(chunk_id=chunk_id, name=name, body=body, _offset=start)
                if short:
                    chunk.length_short_by = short
                out.append(chunk)
            i += 1

    @staticmethod
    def body_context(context: Any, length: int) -> cs.Container:
        """The context a chunk body is parsed in: its ``chunk_len`` is the length field."""
        return cs.Container(_=context, _params=context._params, _root=context.get("_root"), _parsing=True,
                            _building=False, _sizing=False, chunk_len=length)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        for i, chunk in enumerate(obj):
            chunk_id = int(chunk["chunk_id"])
            start = stream.tell()
            stream.write(self._head.pack(chunk_id, 0))
            entry = self.types.get(chunk_id)
            if entry is None:
                stream.write(bytes(chunk["body"]))
            else:
                name, schema = entry
                ctx = cs.Container(_=context, _params=context._params, _root=context.get("_root"),
                                   _parsing=False, _building=True, _sizing=False, chunk_len=None)
                schema._build(chunk["body"], stream, ctx, f"{path}[{i}] -> {name}")
            end = stream.tell()
            stream.seek(start)
            stream.write(self._head.pack(chunk_id, end - start - 12 - int(chunk.get("length_short_by", 0))))
            stream.seek(end)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)


