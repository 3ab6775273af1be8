"""A zip member's data as a checked construct: a stored ``.npy`` parsed in place (its arrays zero-copy views of
the archive, its errors and dump spans at the archive's offsets), or deflate's raw stream inflated (refused
before inflating where the sizes claim more than deflate can give) and its ``.npy`` parsed from the inflated
bytes. The raw deflated bytes are kept, so an unchanged member is written back as it was compressed."""

from __future__ import annotations

import zlib
from typing import Any

import construct as cs

from ...errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from ...framework import (
    BufferStream,
    Checked,
    Part,
    bounded,
    check_length,
    evaluate,
    fail,
    remaining,
    tell,
    walk_parts,
    zero_copy,
)

STORED, DEFLATED = 0, 8  # the two compression methods an .npz member uses (numpy.savez, savez_compressed)
DEFLATE_RATIO = 1032  # deflate's largest expansion: a member claiming more is refused before inflating
DEFLATE_SLACK = 1024  # (and the few bytes a tiny member may add)
WBITS = -15  # a zip member's deflate stream is raw: no zlib header or trailer
STEP = 1 << 20  # bytes inflated at a time where no size says how many to expect


class Member(cs.Container):
    """A member's data: ``npy`` (the parsed ``.npy``), ``raw`` (its bytes in the archive, a view: the
    ``.npy`` itself, or the deflate stream, written back as it is while ``npy`` is the one read; None in a
    new deflated member: compressed when written), ``crc32`` (of the inflated bytes, computed while
    inflating; None for a stored member, whose CRC ``check`` computes over ``raw``)."""


def compress(raw_writer: Any) -> tuple[bytes, int, int]:
    """``raw_writer(sink)`` written through deflate as Python's zipfile deflates a member (level 6, raw
    stream): (the deflated bytes, CRC-32 of the input, input length)."""
    z = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, WBITS)
    out: list[bytes] = []
    sink = Digest(lambda b: out.append(z.compress(b)))
    raw_writer(sink)
    out.append(z.flush())
    return b"".join(out), sink.crc, sink.n


class Digest:
    """A write-only stream that passes its bytes on (or drops them) and keeps their CRC-32 and count: what a
    member's local header records is known before the member is written."""

    def __init__(self, passed: Any = None) -> None:
        self.passed = passed
        self.crc = 0
        self.n = 0

    def write(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        self.crc = zlib.crc32(view, self.crc)
        self.n += len(view)
        if self.passed is not None:
            self.passed(bytes(view))
        return len(view)

    def tell(self) -> int:
        return self.n


def _bytes(stream: Any, n: int) -> Any:
    """The next ``n`` bytes: a view of the archive where the stream has one."""
    view = zero_copy(stream, n)
    return view if view is not None else stream.read(n)


class MemberData(Checked):
    """The member's bytes after its local header: ``npy`` as they are (``method`` 0, stored) or deflated
    (``method`` 8). ``size``: the bytes the member takes (None: the local header defers its sizes to a data
    descriptor after the data; a stored member then ends where its ``.npy`` ends, a deflated one where its
    deflate stream ends); ``length``: the inflated bytes it claims (None: not known before inflating).
    ``whole``: the ``.npy`` schema bounded by a known size; ``self_ending``: one that ends where the array
    does (a stored member whose size comes after it)."""

    def __init__(self, whole: cs.Construct, self_ending: cs.Construct, method: Any, size: Any,
                 length: Any) -> None:
        super().__init__()
        self.whole = whole
        self.self_ending = self_ending
        self.method = method
        self.size = size
        self.length = length

    def _parse(self, stream: Any, context: Any, path: str) -> Member:
        method = int(evaluate(self.method, context))
        size = evaluate(self.size, context)
        start = tell(stream) or 0
        if size is not None:
            check_length(stream, size, path, "the member")
        if method == STORED:
            with bounded(stream, size if size is not None else remaining(stream) or 0) as inner:
                npy = (self.whole if size is not None else self.self_ending)._parsereport(inner, context,
                                                                                           f"{path}.npy")
                if size is not None:
                    inner.seek(start + size)
            end = tell(stream) or 0
            stream.seek(start)
            out = Member(npy=npy, raw=_bytes(stream, end - start), crc32=None)
        else:
            out = self._inflate(stream, context, path, start, size)
        out._walked = (stream, context, start, tell(stream))
        return out

    def _inflate(self, stream: Any, context: Any, path: str, start: int, size: int | None) -> Member:
        length = evaluate(self.length, context)
        if size is not None and length is not None and length > DEFLATE_RATIO * size + DEFLATE_SLACK:
            raise fail(path, start, f"the member claims {length} bytes from {size} deflated ones, more than "
                       "deflate can give: refused before inflating", ValueMismatchError, found=length)
        z = zlib.decompressobj(WBITS)
        left = size if size is not None else remaining(stream) or 0
        cap = length if length is not None else DEFLATE_RATIO * left + DEFLATE_SLACK
        pieces: list[bytes] = []
        got = 0
        crc = 0
        try:
            while not z.eof and left > 0:
                chunk = stream.read(min(STEP, left))
                left -= len(chunk)
                data = z.decompress(chunk, cap + 1 - got)
                while True:
                    got += len(data)
                    crc = zlib.crc32(data, crc)
                    pieces.append(data)
                    if got > cap:
                        raise fail(path, start, f"the member inflates past the {cap} bytes it claims",
                                   ValueMismatchError)
                    if not z.unconsumed_tail or z.eof:
                        break
                    data = z.decompress(z.unconsumed_tail, cap + 1 - got)
        except zlib.error as e:
            raise fail(path, start, f"the deflate stream is damaged ({e})", ValueMismatchError) from None
        if not z.eof:
            raise fail(path, start, "the deflate stream ends before its last block", TruncatedError)
        used = (tell(stream) or 0) - start - len(z.unused_data)
        if size is not None and used != size:
            raise fail(path, start, f"the deflate stream ends after {used} of the member's {size} bytes",
                       ValueMismatchError, expected=size, found=used)
        stream.seek(start + used)
        if length is not None and got != length:
            raise fail(path, start, f"the member inflates to {got} bytes, not the {length} it claims",
                       ValueMismatchError, expected=length, found=got)
        inflated = bytearray(b"".join(pieces))  # (a bytearray: the arrays of an inflated member are writable)
        try:
            npy = self.whole._parsereport(BufferStream(inflated), context, f"{path}.npy")
        except FormatError as e:
            raise fail(e.path, start, f"at byte {e.offset} of the inflated member: {e.message}", type(e),
                       expected=e.expected, found=e.found) from None
        stream.seek(start)
        return Member(npy=npy, raw=_bytes(stream, used), crc32=crc)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        method = int(evaluate(self.method, context))
        size = evaluate(self.size, context)
        start = tell(stream) or 0
        if method == STORED:
            schema = self.whole if size is not None else self.self_ending
            schema._build(obj["npy"], stream, context, f"{path}.npy")
        else:
            raw = obj.get("raw")
            if raw is None:  # (a new member: deflated as zipfile deflates it)
                raw = compress(lambda sink: self.whole._build(obj["npy"], sink, context, f"{path}.npy"))[0]
            stream.write(raw)
        written = (tell(stream) or 0) - start
        if size is not None and written != size:
            raise fail(path, start, f"the member takes {written} bytes where its header says {size}", BuildError,
                       expected=size, found=written)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def parts(self, value: Any) -> list[Part]:
        """A stored member's ``.npy`` fields at their offsets in the archive; a deflated member as one span."""
        stream, context, start, end = getattr(value, "_walked", (None, None, 0, 0))
        if stream is None:
            return []
        if value["crc32"] is not None:  # (inflated)
            header = dict(value["npy"]["header"])
            return [Part(".deflated", start, end, f"{end - start} deflated bytes of an .npy {header}",
                         "raw deflate stream (no zlib header): the .npy, compressed")]
        stream.seek(start)
        with bounded(stream, end - start) as inner:
            out = walk_parts(self.whole, inner, context, ".npy")
        stream.seek(end)
        return out
