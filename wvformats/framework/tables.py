"""Tables: records of a schema, counted or running to the end of their input, and tensor tables (arrays whose
dtype, shape and byte range another field lists)."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import construct as cs
import numpy as np

from ..errors import BuildError, TruncatedError, ValueMismatchError
from .fields import Checked, evaluate, unnamed, write_array
from .located import check_length, fail, tell
from .plain import Arrays, TensorLayout
from .plans import field_of
from .streams import BufferStream, remaining
from .walk import Part, walk_parts


class Records(cs.ListContainer):
    """The records of a :class:`Table`; ``offsets[i]`` is where record ``i`` starts, ``offsets[-1]`` where
    the table ends."""

    offsets: list[int]


class Table(Checked):
    """Records of ``subcon`` back to back: ``count`` of them (an int or ``this`` expression), or, with
    ``count=None``, records up to the end of the input (``length`` bytes from here, when given), or, with
    ``lead``, records as long as the input goes on with those bytes (a zip's headers, each opened by its
    signature: the table ends where another signature follows).

    construct's ``GreedyRange`` stops silently at a record that does not parse and leaves the rest unread;
    here every record up to the end must parse, and one that does not is an error naming it
    (``records[7].key``) and where it fails. ``min_size``: the fewest bytes a record takes (a count is
    checked against the bytes that remain before any record is read). Parsed as :class:`Records`, a list
    that keeps each record's offset; ``dump`` shows each record's fields (the ``parts`` protocol).
    """

    def __init__(self, subcon: cs.Construct, count: Any = None, *, length: Any = None, min_size: int = 1,
                 lead: bytes | None = None) -> None:
        super().__init__()
        self.subcon = subcon
        self.count = count
        self.length = length
        self.min_size = min_size
        self.lead = lead
        inner = unnamed(subcon)
        # a table of plain numbers (a FormatField such as Int64ul): read with one unpack
        self._scalar = struct.Struct(inner.fmtstr) if isinstance(inner, cs.FormatField) and len(
            inner.fmtstr) == 2 and inner.fmtstr[0] in "<>" else None

    def _parse(self, stream: Any, context: Any, path: str) -> Records:
        start = stream.tell()
        out = Records()
        out.offsets = []
        if self.count is not None:
            count = int(evaluate(self.count, context))
            if count < 0:
                raise fail(path, start, "negative record count", ValueMismatchError, found=count)
            check_length(stream, count * self.min_size, path, f"{count} records")
            end = None
        else:
            count = None
            if self.length is not None:
                n = int(evaluate(self.length, context))
                check_length(stream, n, path, "the table")
                end = start + n
            else:
                left = remaining(stream)
                if left is None:
                    raise fail(path, start, "a table to the end of its input needs a seekable input",
                               ValueMismatchError)
                end = start + left
        i = 0
        if self._scalar is not None and self.lead is None and (count is not None or self.length is not None):
            # plain numbers filling the count or the length (all there): one unpack; else the loop names the one
            # that does not fit
            size = self._scalar.size
            n = count if count is not None else (end - start) // size
            left = remaining(stream)
            if (n * size == end - start) if count is None else (left is not None and left >= n * size):
                fmt = self._scalar.format
                out.extend(struct.unpack(f"{fmt[0]}{n}{fmt[1:]}", stream.read(n * size)))
                out.offsets = list(range(start, start + (n + 1) * size, size))
                out._walked = (stream, context)
                return out
        tell, record, offsets = stream.tell, self.subcon._parsereport, out.offsets
        while (i < count) if count is not None else (tell() < end and self._leads(stream)):
            at = tell()
            offsets.append(at)
            out.append(record(stream, context, f"{path}[{i}]"))
            after = tell()
            if end is not None and after > end:
                raise fail(f"{path}[{i}]", at, f"the record runs {after - end} bytes past the end of the table",
                           TruncatedError)
            if count is None and after == at:
                raise fail(f"{path}[{i}]", at, "a record that takes no bytes would repeat forever",
                           ValueMismatchError)
            i += 1
        out.offsets.append(stream.tell())
        out._walked = (stream, context)  # for parts(): records are walked again only for dumps
        return out

    def _leads(self, stream: Any) -> bool:
        """Whether the next record is there: always, but where records are told by their leading bytes."""
        if self.lead is None:
            return True
        at = stream.tell()
        if type(stream) is BufferStream:  # (compared in place)
            return stream.buffer[at : min(at + len(self.lead), stream.size)] == self.lead
        head = stream.read(len(self.lead))
        stream.seek(at)
        return head == self.lead

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if self.count is not None:
            count = int(evaluate(self.count, context))
            if len(obj) != count:
                raise fail(path, tell(stream), "record count does not match its header", BuildError,
                           expected=count, found=len(obj))
        start = stream.tell()
        for i, item in enumerate(obj):
            self.subcon._build(item, stream, context, f"{path}[{i}]")
        if self.count is None and self.length is not None:
            n = evaluate(self.length, context)
            if n is not None and stream.tell() - start != int(n):
                raise fail(path, start, "the records do not fill the table's length", BuildError,
                           expected=int(n), found=stream.tell() - start)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def parts(self, records: Any) -> list[Any]:
        """Each record's fields, for dumps (see :mod:`.walk`)."""
        stream, context = getattr(records, "_walked", (None, None))
        if stream is None or not len(records) or isinstance(unnamed(self.subcon), cs.FormatField):
            return []  # (a table of plain numbers shows as one field, as an array of them does)
        out: list[Any] = []
        for i, at in enumerate(records.offsets[:-1]):
            stream.seek(at)
            out += walk_parts(self.subcon, stream, context, f"[{i}]")
        stream.seek(records.offsets[-1])
        return out


class Tensors(Checked):
    """The data of a tensor table: arrays at byte ranges that another field lists, each with its dtype and
    shape there (safetensors' JSON header; the tensor infos of other model formats).

    ``table``: an expression giving the entries, a mapping name -> entry or a list of entries with a
    ``name``. Of an entry, ``dtype``, ``shape`` and ``offsets`` name the keys holding its dtype code, its
    shape (a list; ``[]`` for a 0-d array) and its ``[begin, end)`` byte range, relative to the start of this
    field. ``dtypes`` maps a dtype code to a numpy dtype with its byte order spelt out (a type numpy lacks,
    bfloat16 or float8, as its raw bits: ``"<u2"``, ``"u1"``), or to an int below 8: elements of that many
    bits packed into bytes (float4, float6), parsed as their raw bytes (``uint8``, the last dimension
    ``bits / 8`` as long; it must end on a byte). ``skip``: names in the table that are not
    tensors (``__metadata__``). ``length``: the bytes of this field (default: to the end of the input).

    With ``exact=True`` (safetensors' rule) the ranges, in order of begin, tile the field: no gap, no
    overlap, nothing after; otherwise gaps are allowed (written back as zero bytes) but not overlaps. Each
    range must hold exactly its shape's elements. Parsed as a dict name -> array in table order (zero-copy
    views of a buffer or mmap); errors name the tensor (``data.embed``) and the byte offset.
    """

    def __init__(self, table: Any, dtypes: Mapping[Any, Any], *, dtype: str = "dtype", shape: str = "shape",
                 offsets: str = "data_offsets", skip: tuple[str, ...] = (), length: Any = None,
                 exact: bool = True) -> None:
        super().__init__()
        self.table = table
        self.declared = dict(dtypes)
        self.rules = TensorLayout(self.declared, (dtype, shape, offsets), tuple(skip), exact)
        self.dtypes, self.bits, self.keys, self.skip = self.rules.dtypes, self.rules.bits, self.rules.keys, self.rules.skip
        self.length = length
        self.exact = exact

    def layout(self, context: Any, path: str, start: int,
               size: int | None) -> list[tuple[str, Any, tuple[int, ...], int, int]]:
        """(name, dtype, shape, begin, end) of each tensor, in order of begin, every range checked."""
        return self.rules.layout(evaluate(self.table, context), path, start, size)

    def plan(self) -> tuple[str, dict[str, Any]] | None:
        """The step of a cached plan (:mod:`.plans`) that reads this field: a table named by a field before it,
        the data to the end of the input."""
        field = field_of(self.table)
        if field is None or self.length is not None:
            return None
        return "tensors", {"table": field, "dtypes": self.declared, "keys": list(self.keys), "skip": list(self.skip),
                           "exact": self.exact}

    def nbytes(self, code: Any, shape: Any) -> int:
        """The bytes of a tensor of dtype ``code`` and ``shape`` (packed codes: rows in whole bytes)."""
        n = int(np.prod(shape, dtype=object))
        bits = self.bits.get(code)
        return n * bits // 8 if bits is not None else n * self.dtypes[code].itemsize

    def laid_out(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """``table`` (name -> entry with its dtype and shape) with each tensor's byte range where the data
        will hold it: in table order, back to back, as the ranges tile the data (``exact``). What a writer
        gives is dtypes and shapes; the ranges are this declaration's."""
        kd, ks, ko = self.keys
        out: dict[str, Any] = {}
        at = 0
        for name, entry in table.items():
            if name in self.skip:
                out[name] = entry
                continue
            n = self.nbytes(entry[kd], entry[ks])
            out[name] = {**entry, ko: [at, at + n]}
            at += n
        return out

    def _size(self, stream: Any, context: Any, path: str) -> int | None:
        if self.length is not None:
            n = int(evaluate(self.length, context))
            check_length(stream, n, path, "the tensor data")
            return n
        return remaining(stream)

    def _parse(self, stream: Any, context: Any, path: str) -> Arrays:
        size = self._size(stream, context, path)
        return self.rules.read(stream, evaluate(self.table, context), size, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        start = stream.tell()
        layout = self.layout(context, path, start, None)
        missing = {name for name, *_ in layout} ^ set(obj)
        if missing:
            raise fail(path, start, f"the arrays and the table differ in {sorted(missing)}", BuildError)
        at = 0
        for name, dtype, dims, begin, end in layout:
            stream.write(bytes(begin - at))  # a gap the table leaves (none when exact)
            write_array(stream, obj[name], dtype, dims, f"{path}.{name}")
            at = end
        if self.length is not None:
            n = evaluate(self.length, context)
            if n is not None and int(n) != at:
                if self.exact or int(n) < at:
                    raise fail(path, start, "the tensors do not fill the data's length", BuildError,
                               expected=int(n), found=at)
                stream.write(bytes(int(n) - at))
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def parts(self, arrays: Any) -> list[Part]:
        """Each tensor as a field of its own, for dumps: ``data.<name>``, in file order."""
        spans = getattr(arrays, "spans", {})
        order = sorted(spans, key=lambda name: spans[name])
        return [Part(f".{name}", *spans[name], arrays[name], f"{arrays[name].dtype.str} {list(arrays[name].shape)}")
                for name in order]
