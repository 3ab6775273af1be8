"""A zip member's data as a checked construct: a stored ``.npy`` parsed in place (its arrays zero-copy views of
the archive, its errors and dump spans at the archive's offsets), or deflate's raw stream inflated (refused
before inflating where the sizes claim more than deflate can give) and its ``.npy`` parsed from the inflated
bytes. The raw deflated bytes are kept, so an unchanged member is written back as it was compressed.

Building, what the zip records derive from a member (its CRC-32 and sizes: :meth:`MemberData.facts`) is learnt
once by building it, and a table of records (:class:`ZipRecords`) notes where it put each record: the offsets
that the central directory and the end records derive."""

from __future__ import annotations

import zlib
from typing import Any, NamedTuple

import construct as cs

from ...errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from ...framework import (
    BufferStream,
    Checked,
    CheckedBytes,
    Part,
    Records,
    Table,
    bounded,
    check_length,
    evaluate,
    fail,
    remaining,
    size_of,
    tell,
    walk_parts,
    zero_copy,
)

STORED, DEFLATED = 0, 8  # the two compression methods an .npz member uses (numpy.savez, savez_compressed)
DEFLATE_RATIO = 1032  # deflate's largest expansion: a member claiming more is refused before inflating
DEFLATE_SLACK = 1024  # (and the few bytes a tiny member may add)
WBITS = -15  # a zip member's deflate stream is raw: no zlib header or trailer
STEP = 1 << 20  # bytes inflated at a time where no size says how many to expect
KEEP = 1 << 20  # a stored member up to this size is built once, kept while its CRC-32 is taken, then written
HEAD = 1 << 16  # bytes of a deflated member inflated for its .npy header (numpy.load refuses headers past 10,000
# characters unless max_header_size says otherwise: then four bytes a character more)


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
    member's local header records is known before the member is written. ``keep``: the bytes are also kept
    while they are no more than that many (``kept``: None past it)."""

    def __init__(self, passed: Any = None, keep: int = 0) -> None:
        self.passed = passed
        self.crc = 0
        self.n = 0
        self.keep = keep
        self.pieces: list[bytes] | None = [] if keep else None

    def write(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        self.crc = zlib.crc32(view, self.crc)
        self.n += len(view)
        if self.passed is not None:
            self.passed(bytes(view))
        if self.pieces is not None:
            if self.n <= self.keep:
                self.pieces.append(bytes(view))
            else:
                self.pieces = None
        return len(view)

    @property
    def kept(self) -> bytes | None:
        return None if self.pieces is None else b"".join(self.pieces)

    def tell(self) -> int:
        return self.n


def _bytes(stream: Any, n: int) -> Any:
    """The next ``n`` bytes: a view of the archive where the stream has one."""
    view = zero_copy(stream, n)
    return view if view is not None else stream.read(n)


class Facts(NamedTuple):
    """What a member's zip records say of its data: the CRC-32 of its ``.npy``, the bytes it takes in the
    archive and the bytes once inflated; ``raw``: the bytes to write (None: the ``.npy`` built as it is
    written)."""

    crc32: int
    size: int
    length: int
    raw: Any


class MemberData(Checked):
    """The member's bytes after its local header: ``npy`` as they are (``method`` 0, stored) or deflated
    (``method`` 8). ``size``: the bytes the member takes (None: the local header defers its sizes to a data
    descriptor after the data; a stored member then ends where its ``.npy`` ends, a deflated one where its
    deflate stream ends); ``length``: the inflated bytes it claims (None: not known before inflating).
    ``whole``: the ``.npy`` schema bounded by a known size; ``self_ending``: one that ends where the array
    does (a stored member whose size comes after it). ``after``: whether the sizes come after the data
    (building: the member is then written as its ``.npy`` ends)."""

    def __init__(self, whole: cs.Construct, self_ending: cs.Construct, method: Any, size: Any,
                 length: Any, after: Any) -> None:
        super().__init__()
        self.whole = whole
        self.self_ending = self_ending
        self.method = method
        self.size = size
        self.length = length
        self.after = after

    def facts(self, context: Any) -> Facts:
        """The member's :class:`Facts` in the context of its record being built (``context.data``), learnt once
        (kept in the context): a stored ``.npy`` built into a digest (kept to be written when small), a
        deflated one compressed (or, read and unchanged, its deflate stream and CRC-32 as read)."""
        known = context.get("_facts")
        if known is None:
            known = context["_facts"] = self._facts(context["data"], context)
        return known

    def _facts(self, obj: Any, context: Any) -> Facts:
        method = int(evaluate(self.method, context))
        npy = obj["npy"]
        if method == STORED:
            schema = self.self_ending if evaluate(self.after, context) else self.whole
            digest = Digest(keep=KEEP)
            schema._build(npy, digest, context, "(digest)")
            return Facts(digest.crc, digest.n, digest.n, digest.kept)
        raw, crc = obj.get("raw"), obj.get("crc32")
        if raw is not None and crc is not None:  # (read and unchanged: as it was compressed)
            return Facts(crc, len(raw), size_of(self.whole, npy)(context), raw)
        raw, crc, n = compress(lambda sink: self.whole._build(npy, sink, context, "(deflate)"))
        return Facts(crc, len(raw), n, raw)

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
        facts = self.facts(context)
        start = tell(stream) or 0
        if facts.raw is not None:
            stream.write(facts.raw)
        else:
            schema = self.self_ending if evaluate(self.after, context) else self.whole
            schema._build(obj["npy"], stream, context, f"{path}.npy")
        written = (tell(stream) or 0) - start
        if written != facts.size:  # (an .npy that builds to other bytes than it measured)
            raise fail(path, start, f"the member takes {written} bytes where its header says {facts.size}",
                       BuildError, expected=facts.size, found=written)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any, values_of: Any) -> Any:
        """New members: an ``.npy`` drawn from its schema (``values_of``: the kit's strategy of a schema),
        stored or deflated as the record's method says."""
        return values_of(self.whole, context).map(lambda npy: Member(npy=npy, raw=None, crc32=None))

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


class ZipRecords(Table):
    """A :class:`~wvformats.framework.Table` of zip records told by their signature (``lead``) that, building
    them, notes where each starts and where the last ends (``_<note>_at`` in the context, beside the
    records' build contexts as ``_<note>_built``) and gives each its index (``_index``): the offsets the
    central directory and the end records derive, and the member a directory entry lists. Built, its
    value is the records as built (their derived fields computed)."""

    def __init__(self, subcon: cs.Construct, note: str, *, lead: bytes, min_size: int) -> None:
        super().__init__(subcon, lead=lead, min_size=min_size)
        self.note = note

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        starts: list[int] = []
        built: list[Any] = []
        context[f"_{self.note}_at"], context[f"_{self.note}_built"] = starts, built
        for i, item in enumerate(obj):
            context["_index"] = i
            starts.append(tell(stream) or 0)
            built.append(self.subcon._build(item, stream, context, f"{path}[{i}]"))
        context["_index"] = None
        starts.append(tell(stream) or 0)
        return built


class MemberName(CheckedBytes):
    """A member's name (its bytes as stored); drawn by the kit as ``NAME.npy``, the name UTF-8."""

    def __init__(self, length: Any, suffix: bytes) -> None:
        super().__init__(length)
        self.suffix = suffix

    def strategy(self, context: Any) -> Any:
        from hypothesis import strategies as st

        names = st.text(st.characters(codec="utf-8", exclude_characters="/\\\x00"), max_size=6)
        return names.map(lambda n: n.encode("utf-8") + self.suffix)


class AtEach(Checked):
    """Records each at an offset a list gives (``offsets``, an expression: Kaitai's positional ``instances``
    over a table), parsed where they lie and only those: a list (``_index`` the record's index in the
    context); the stream is left where it was. An offset None or past the input is an error naming the
    record and the field that gives it (``told``, of the record's index: ``"directory[{i}].offset"``)."""

    def __init__(self, offsets: Any, subcon: cs.Construct, told: str) -> None:
        super().__init__()
        self.offsets = offsets
        self.subcon = subcon
        self.told = told

    def _parse(self, stream: Any, context: Any, path: str) -> Records:
        back = tell(stream) or 0
        size = back + (remaining(stream) or 0)
        out = Records()
        out.offsets = []
        for i, at in enumerate(evaluate(self.offsets, context)):
            if at is None or not 0 <= at < size:
                raise fail(f"{path}[{i}]", size, f"{self.told.format(i=i)} puts it past the end of the input "
                           f"(at {at} of {size} bytes)", TruncatedError, found=at)
            stream.seek(at)
            context["_index"] = i
            out.offsets.append(at)
            out.append(self.subcon._parsereport(stream, context, f"{path}[{i}]"))
        context["_index"] = None
        stream.seek(back)
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        raise fail(path, tell(stream), "records found at offsets are read only", BuildError)

    def _sizeof(self, context: Any, path: str) -> int:
        return 0


class MemberHead(Checked):
    """A member's data as far as its ``.npy`` header (``header``, the ``.npy`` without its array), for a look
    at an archive: read in place where stored, inflated as far as the header where deflated (``method``;
    ``size``: the bytes the member takes); the array is not read. A Container: ``npy`` and ``start``, where
    the data start."""

    def __init__(self, header: cs.Construct, method: Any, size: Any, option: str) -> None:
        super().__init__()
        self.header = header
        self.method = method
        self.size = size
        self.option = option

    def _parse(self, stream: Any, context: Any, path: str) -> cs.Container:
        start = tell(stream) or 0
        size = min(evaluate(self.size, context) or 0, remaining(stream) or 0)
        if int(evaluate(self.method, context)) == STORED:
            with bounded(stream, size) as inner:
                return cs.Container(npy=self.header._parsereport(inner, context, f"{path}.npy"), start=start)
        want = HEAD + 4 * ((context.get("_params") or {}).get(self.option) or 0)
        try:
            data = zlib.decompressobj(WBITS).decompress(_bytes(stream, size), want)
        except zlib.error as e:
            raise fail(path, start, f"the deflate stream is damaged ({e})", ValueMismatchError) from None
        try:
            npy = self.header._parsereport(BufferStream(data), context, f"{path}.npy")
        except FormatError as e:
            raise fail(e.path, start, f"at byte {e.offset} of the inflated member: {e.message}", type(e),
                       expected=e.expected, found=e.found) from None
        return cs.Container(npy=npy, start=start)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        raise fail(path, tell(stream), "a member's head is read only", BuildError)

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)
